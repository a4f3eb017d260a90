"""CompactionOperator: compact a Paimon table with a Spark job.

The ``compact`` job (``spark/jobs/compact.py``) plans as Paimon does, rewrites on
executors and commits one COMPACT snapshot: small files of an append table into
target-size files, or the LSM tree of each bucket of a primary-key table (``mode``
``full`` or ``minor``, docs/primary_keys.md). This operator checks what metadata can
tell (table and branch exist, partition columns are real, ``mode`` fits the table)
and turns the job's summary into a readable log line and the XCom return value.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_paimon.hooks.paimon import PaimonHook
from airflow_provider_paimon.operators.base import (
    PaimonSparkJobOperator,
    optional_int,
    optional_str,
)
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.lsm.options import check_mode
from airflow_provider_paimon.paimon.names import is_main
from airflow_provider_paimon.paimon.option_values import parse_bool
from airflow_provider_paimon.paimon.partitions import (
    default_partition_name,
    parse_partition_values,
    split_partition_text,
)
from airflow_provider_paimon.paimon.predicates import check_where

PartitionSpec = Mapping[str, Any] | str
_POSITIVE_INT_OPTIONS = ("compaction.min.file-num", "compaction.max.file-num")
_POSITIVE_FLOAT_OPTIONS = ("compaction.small-file-ratio",)


def partition_arg(spec: PartitionSpec) -> str:
    """``{"dt": "2026-11-01", "hr": 3}`` or ``"dt=2026-11-01,hr=3"`` -> ``dt=2026-11-01,hr=3``."""
    if isinstance(spec, str):
        return spec.strip()
    return ",".join(f"{key}={value}" for key, value in spec.items())


def partition_keys_of(spec: PartitionSpec) -> list[str]:
    return [pair.partition("=")[0].strip() for pair in partition_arg(spec).split(",") if pair]


def _literal(value: str) -> Any:
    """A rendered template that was not rendered natively: JSON or a Python literal."""
    try:
        return json.loads(value)
    except ValueError:
        return ast.literal_eval(value)


def as_partition_list(value: Any) -> list[PartitionSpec]:
    """``partitions`` as given or as rendered: a list, one spec, or the text of a list."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith(("[", "(")):
            return list(_literal(text))
        return [text]
    if isinstance(value, Mapping):
        return [value]
    return list(value)


def as_options(value: Any) -> dict[str, Any]:
    """``options`` as given or as rendered (``"{...}"`` when not rendered natively)."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        value = _literal(value)
    if not isinstance(value, Mapping):
        raise TypeError(f"options must be a mapping of option -> value, got {value!r}")
    return dict(value)


def as_bool(value: Any, name: str = "dry_run") -> bool:
    """``dry_run`` as given or as rendered (``"False"`` must stay false).

    Fails closed: an unrecognised word (``"ture"``) raises ``InvalidArgumentError``
    instead of running a real compaction.
    """
    return parse_bool(value, name, False)


def human_bytes(size: Any) -> str:
    try:
        value = float(size)
    except (TypeError, ValueError):
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover


def summarize(table: str, branch: str | None, result: Mapping[str, Any]) -> str:
    """One readable line from the compaction job's result."""
    where = table if is_main(branch) else f"{table} (branch {branch})"
    before = f"{result.get('files_before', '?')} files ({human_bytes(result.get('bytes_before'))})"
    after = f"{result.get('files_after', '?')} files ({human_bytes(result.get('bytes_after'))})"
    duration = result.get("duration_s")
    took = f"{float(duration):.1f} s" if isinstance(duration, (int, float)) else "? s"
    if result.get("operation") == "compact_manifest":
        return f"Manifest compaction of {where}: {result.get('message')}"
    if result.get("dry_run"):
        return f"Compaction plan for {where}: {before} -> {after} in {result.get('bins', '?')} bins (dry run, nothing committed)"
    if not result.get("committed"):
        message = result.get("message") or "nothing to compact"
        return f"Compaction of {where}: nothing committed ({message}); {before}; took {took}"
    expired = (result.get("expired") or {}).get("expired_snapshot_ids") or []
    then = f", then expired snapshots {expired[0]}-{expired[-1]}" if expired else ""
    return (
        f"Compaction of {where}: {before} -> {after}, snapshot {result.get('snapshot_id')}, "
        f"{result.get('bins', '?')} bins{then}, took {took}"
    )


class CompactionOperator(PaimonSparkJobOperator):
    """Compact a table (or one branch of it): an append table's small files, or a
    primary-key table's LSM tree.

    :param table: ``database.table`` (templated).
    :param branch: compact this branch instead of main (templated).
    :param partitions: only these partitions: dicts ``{"dt": "2026-11-01"}`` or strings
        ``"dt=2026-11-01,hr=3"`` (templated).
    :param where: a partition predicate instead of ``partitions`` (templated): partition
        columns compared with literals, ``IN``, ``BETWEEN``, ``IS [NOT] NULL``, joined by
        ``AND``/``OR``/``NOT``; anything else (functions, subqueries, other columns) is
        refused before submitting (``paimon/predicates.py``).
    :param options: per-run overrides of table options, e.g. ``target-file-size``,
        ``compaction.small-file-ratio``, ``compaction.min.file-num`` (templated).
    :param dry_run: plan and report, commit nothing.
    :param max_retries: re-plan and retry this many times after a conflicting commit.
    :param mode: primary-key tables only: ``full`` (default; every sorted run of each
        bucket into one at the top level) or ``minor`` (Paimon's universal compaction
        picks the runs). Primary-key options: ``num-sorted-run.compaction-trigger``,
        ``num-levels``, ``compaction.max-size-amplification-percent``,
        ``compaction.size-ratio``, ``target-file-size``.
    :param manifests_only: run Paimon's ``compact_manifest`` instead: fully compact the
        table's manifests into one COMPACT snapshot (no data file read or written, any
        table type, no ``partitions``/``where``; ``options`` may set ``manifest.*``).
        XCom then: operation, committed, snapshot_id, manifests_before/after,
        entries_before/after, message (docs/metadata.md).

    XCom: files_before, bytes_before, files_after, bytes_after, snapshot_id, committed,
    duration_s, bins, message, and ``expired``: what the snapshot expiry after the COMPACT
    commit removed (``expired_snapshot_ids``, counts; ``None`` when nothing expired), as
    Paimon Java's compaction jobs expire after committing (docs/compaction.md).
    """

    partition_events_allowed = False  # changes no rows a reader sees

    job_family = "compact"
    template_fields: Sequence[str] = (
        *PaimonSparkJobOperator.template_fields,
        "branch",
        "partitions",
        "where",
        "options",
        "dry_run",
        "mode",
        "manifests_only",
    )

    def __init__(
        self,
        *,
        branch: str | None = None,
        partitions: Sequence[PartitionSpec] | str | None = None,
        where: str | None = None,
        options: Mapping[str, Any] | str | None = None,
        dry_run: bool | str = False,
        max_retries: int | None = None,
        mode: str | None = None,
        manifests_only: bool | str = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.manifests_only = manifests_only
        self.branch = branch
        # kept as given: they may be templates, normalised when the task runs
        self.partitions = partitions
        self.where = where
        self.options = options
        self.dry_run = dry_run  # type: ignore[method-assign,assignment]  # the public argument name shadows BaseOperator.dry_run(), which Airflow never calls
        self.max_retries = max_retries
        self.mode = mode

    def job_args(self) -> list[str]:
        args: list[str] = []
        branch = optional_str(self.branch)
        if branch is not None and not is_main(branch):
            args += ["--branch", branch]
        for spec in as_partition_list(self.partitions):
            args += ["--partition", partition_arg(spec)]
        where = optional_str(self.where)
        if where is not None:
            args += ["--where", where]
        for key, value in sorted(as_options(self.options).items()):
            args += ["--option", f"{key}={value}"]
        if as_bool(self.dry_run, "dry_run"):
            args.append("--dry-run")
        retries = optional_int(self.max_retries, "max_retries")
        if retries is not None:
            args += ["--max-retries", str(retries)]
        mode = optional_str(self.mode)
        if mode is not None:
            args += ["--mode", mode]
        if as_bool(self.manifests_only, "manifests_only"):
            args.append("--manifests-only")
        return args

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        as_bool(self.dry_run, "dry_run")  # a mistyped flag fails here, before any submit
        branch = optional_str(self.branch)
        partitions = as_partition_list(self.partitions)
        if partitions and optional_str(self.where) is not None:
            self.fail("give either partitions or where, not both")
        self.require_branch(hook, branch)
        if as_bool(self.manifests_only, "manifests_only"):
            if partitions or optional_str(self.where) is not None:
                self.fail("manifests_only compacts the whole manifest list (as Paimon's "
                          "compact_manifest does); leave out partitions and where")
            unknown = sorted(k for k in as_options(self.options) if not str(k).startswith("manifest."))
            if unknown:
                self.fail(f"manifests_only takes only manifest.* options, got {', '.join(unknown)}")
            hook.get_schema(self.table, branch)  # the table exists (any table type)
            return None
        schema = hook.get_schema(self.table, branch)
        mode = optional_str(self.mode)
        if mode is not None and not schema["primary_keys"]:
            self.fail(f"mode is for primary-key tables; {self.table} is an append table (drop mode)")
        if mode is not None:
            try:
                check_mode(mode)
            except InvalidArgumentError as err:
                self.fail(str(err))
        partition_keys = schema["partition_keys"]
        for spec in partitions:
            unknown = [k for k in partition_keys_of(spec) if k not in partition_keys]
            if unknown or not partition_arg(spec):
                known = ", ".join(partition_keys) or "none, the table is not partitioned"
                self.fail(
                    f"partition {partition_arg(spec)!r} names columns that are not partition "
                    f"keys of {self.table}: {', '.join(unknown) or 'none given'} (partition keys: {known})"
                )
            self._check_partition_values(schema, partition_arg(spec))
        self._check_where(schema)
        retries = optional_int(self.max_retries, "max_retries")
        if retries is not None and retries < 0:
            self.fail(f"max_retries must be >= 0, got {retries}")
        self._check_options()
        return None

    def _check_partition_values(self, schema: Mapping[str, Any], text: str) -> None:
        """Each value parses as its column's type (``dt=2026-13-45`` on a DATE fails here)."""
        keys = schema["partition_keys"]
        types = {f["name"]: f["type"] for f in schema["fields"] if f["name"] in keys}
        try:
            parse_partition_values(
                types, split_partition_text(text), default_partition_name(schema["options"]),
                what=f"partition {text!r}", table=self.table,
            )
        except InvalidArgumentError as err:
            self.fail(str(err))

    def _check_where(self, schema: Mapping[str, Any]) -> None:
        """Refuse a ``where`` outside the whitelist (partition columns vs literals) before submitting.

        ``where`` is often templated from params, so whoever can trigger the DAG writes
        it: it must never reach Spark SQL as text (``reflect(...)`` would run on the
        driver). The job checks it again and evaluates it itself.
        """
        where = optional_str(self.where)
        if where is None:
            return
        types = {f["name"]: f["type"] for f in schema["fields"]}
        try:
            check_where(where, {key: types[key] for key in schema["partition_keys"]})
        except InvalidArgumentError as err:
            self.fail(str(err).removesuffix("; nothing is submitted or changed"))

    def _check_options(self) -> None:
        try:
            options = as_options(self.options)
        except (TypeError, ValueError, SyntaxError) as err:
            self.fail(f"options: {err}")
        for key in _POSITIVE_INT_OPTIONS:
            if key in options:
                value = optional_int(options[key], f"option {key}")
                if value is None or value < 1:
                    self.fail(f"option {key} must be at least 1, got {options[key]!r}")
        for key in _POSITIVE_FLOAT_OPTIONS:
            if key in options:
                try:
                    ratio = float(options[key])
                except (TypeError, ValueError):
                    ratio = -1.0
                if ratio <= 0:
                    self.fail(f"option {key} must be a positive number, got {options[key]!r}")
        for key, value in options.items():
            if str(value).strip().startswith("-"):
                self.fail(f"option {key} must not be negative, got {value!r}")

    def ol_committed_snapshot(self, result: dict[str, Any]) -> int | None:
        """The COMPACT snapshot the job committed (not a later writer's)."""
        return None if result.get("snapshot_id") is None else int(result["snapshot_id"])

    def output_tables(self) -> list[tuple[str, str | None]]:
        return [(self.table, optional_str(self.branch))]

    def report(self, result: dict[str, Any]) -> None:
        self.log.info("%s", summarize(self.table, optional_str(self.branch), result))
