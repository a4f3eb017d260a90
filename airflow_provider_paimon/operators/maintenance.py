"""Maintenance operators: expire snapshots, remove orphan files, roll back, expire tags.

Each submits one command of the ``maintenance`` job family (``spark/jobs/maintenance.py``,
which calls ``paimon.maintenance``): the work is metadata reads and file deletes, and
going through spark-submit keeps it where every other change to a table runs (the
cluster's credentials and file systems, one audit trail). The operators check what
metadata can tell first (table, branch, tag or snapshot exists; counts, ages and flags
are sane; the table's own retention options parse), so a bad argument fails before
anything is submitted or changed. The job's result dict is the XCom return value
(relative file names and counts: nothing about the warehouse or its credentials) and
one summary line goes to the task log.

Ages (``older_than``) are a ``timedelta``, seconds (``3600``, also ``"3600"`` as a
template renders it) or Paimon's duration text (``"1 h"``, ``"30 min"``, ``"7 d"``),
meaning "that long ago" (``paimon/durations.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from airflow_provider_paimon.hooks.paimon import PaimonHook
from airflow_provider_paimon.operators.base import (
    PaimonSparkJobOperator,
    optional_int,
    optional_str,
)
from airflow_provider_paimon.operators.compaction import as_bool, human_bytes
from airflow_provider_paimon.operators.tag import is_template
from airflow_provider_paimon.paimon.durations import duration_text, parse_duration
from airflow_provider_paimon.paimon.errors import PaimonError
from airflow_provider_paimon.paimon.maintenance.options import resolve_retention
from airflow_provider_paimon.paimon.names import is_main, validate_tag_name
from airflow_provider_paimon.paimon.option_values import parse_int

#: ``RemoveOrphanFilesOperator`` refuses a shorter ``older_than`` (unless ``dry_run``):
#: the age is all that protects the files of a write in progress, which no snapshot
#: names yet (Paimon's default is 1 day)
MIN_ORPHAN_AGE = timedelta(hours=1)


def age_arg(value: Any, name: str = "older_than") -> timedelta | None:
    """An age as given or rendered; ``None``/blank: not given (the default applies)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return parse_duration(value, name)


def _count_arg(value: Any, name: str) -> int | None:
    """A count (``retain_min``...): an integer >= 1, or ``None``/blank."""
    return parse_int(value, name, minimum=1)


def check_at_parse(value: Any, check: Any) -> Any:
    """Run ``check(value)`` when the DAG is parsed; a template is checked once rendered."""
    if not is_template(value):
        try:
            check(value)
        except PaimonError as err:
            raise ValueError(str(err)) from None
    return value


def _where(table: str, branch: str | None) -> str:
    return table if is_main(branch) else f"{table} (branch {branch})"


def _took(result: Mapping[str, Any]) -> str:
    duration = result.get("duration_s")
    return f"{float(duration):.1f} s" if isinstance(duration, (int, float)) else "? s"


def _ids(ids: Sequence[Any]) -> str:
    ids = list(ids)
    if not ids:
        return "none"
    if ids == list(range(ids[0], ids[0] + len(ids))) and len(ids) > 2:
        return f"{ids[0]}..{ids[-1]}"
    return ", ".join(str(i) for i in ids)


def _deleted(result: Mapping[str, Any], verb: str) -> str:
    return f"{verb} {result.get('deleted_file_count', 0)} files ({human_bytes(result.get('deleted_bytes', 0))})"


def _kept(result: Mapping[str, Any]) -> str:
    kept = result.get("kept_because") or {}
    if not kept:
        return ""
    return "; kept: " + ", ".join(f"{n} for {why}" for why, n in sorted(kept.items()))


class _MaintenanceOperator(PaimonSparkJobOperator):
    job_family = "maintenance"
    ui_color = "#f6e7c8"

    def _branch_args(self) -> list[str]:
        branch = optional_str(getattr(self, "branch", None))
        return [] if branch is None or is_main(branch) else ["--branch", branch]

    def output_tables(self) -> list[tuple[str, str | None]]:
        return [(self.table, optional_str(getattr(self, "branch", None)))]

    def report(self, result: dict[str, Any]) -> None:
        self.log.info("%s", " ".join(self.summary(result).split()))

    def summary(self, result: Mapping[str, Any]) -> str:
        raise NotImplementedError


class ExpireSnapshotsOperator(_MaintenanceOperator):
    """Expire old snapshots of main or a branch (Paimon's ``expire_snapshots``).

    Unset settings come from the table's options, then Paimon's defaults
    (``snapshot.num-retained.min`` 10, ``snapshot.num-retained.max`` unlimited,
    ``snapshot.time-retained`` 1 h, ``snapshot.expire.limit`` 10). A file goes only
    when no retained snapshot, tag, branch or consumer still needs it.

    :param branch: expire this branch's snapshots instead of main's (templated).
    :param retain_max: keep at most this many snapshots (templated).
    :param retain_min: always keep the newest this many (templated).
    :param older_than: expire only snapshots older than this age (templated).
    :param max_deletes: expire at most this many snapshots in this run (templated).
    :param dry_run: report what would go, change nothing (templated).

    XCom: ``expired_snapshot_ids``, ``stopped_because``, ``settings``,
    ``deleted_file_count``, ``deleted_bytes``, ``deleted_by_kind``, ``deleted_files``
    (at most 200 listed), ``kept_because``, ``dry_run``, ``duration_s``.
    """

    partition_events_allowed = False  # changes no rows a reader sees

    action = "expire-snapshots"
    template_fields: Sequence[str] = (
        *PaimonSparkJobOperator.template_fields,
        "branch", "retain_max", "retain_min", "older_than", "max_deletes", "dry_run",
    )

    def __init__(
        self,
        *,
        branch: str | None = None,
        retain_max: int | str | None = None,
        retain_min: int | str | None = None,
        older_than: timedelta | float | str | None = None,
        max_deletes: int | str | None = None,
        dry_run: bool | str = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.branch = branch
        self.retain_max = check_at_parse(retain_max, lambda v: _count_arg(v, "retain_max"))
        self.retain_min = check_at_parse(retain_min, lambda v: _count_arg(v, "retain_min"))
        self.older_than = check_at_parse(older_than, age_arg)
        self.max_deletes = check_at_parse(max_deletes, lambda v: _count_arg(v, "max_deletes"))
        self.dry_run = check_at_parse(dry_run, as_bool)  # type: ignore[method-assign]  # the public argument name shadows BaseOperator.dry_run(), which Airflow never calls
        rmin, rmax = (None if is_template(v) else _count_arg(v, n) for v, n in
                      ((retain_min, "retain_min"), (retain_max, "retain_max")))
        if rmin is not None and rmax is not None and rmin > rmax:
            raise ValueError(f"retain_min ({rmin}) must not be larger than retain_max ({rmax})")

    def _settings(self) -> dict[str, Any]:
        return {
            "retain_max": _count_arg(self.retain_max, "retain_max"),
            "retain_min": _count_arg(self.retain_min, "retain_min"),
            "older_than": age_arg(self.older_than),
            "max_deletes": _count_arg(self.max_deletes, "max_deletes"),
        }

    def job_args(self) -> list[str]:
        s = self._settings()
        args = self._branch_args()
        for key in ("retain_max", "retain_min", "max_deletes"):
            if s[key] is not None:
                args += [f"--{key.replace('_', '-')}", str(s[key])]
        if s["older_than"] is not None:
            args += ["--older-than", str(s["older_than"].total_seconds())]
        if as_bool(self.dry_run):
            args.append("--dry-run")
        return args

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        as_bool(self.dry_run)
        s = self._settings()
        branch = optional_str(self.branch)
        self.require_branch(hook, branch)
        # the table's own options too: a bad snapshot.* option, or retain_min above the
        # table's snapshot.num-retained.max, fails here rather than in the job
        resolve_retention(hook.get_schema(self.table, branch)["options"], **s)
        return None

    def summary(self, result: Mapping[str, Any]) -> str:
        ids = result.get("expired_snapshot_ids") or []
        dry = bool(result.get("dry_run"))
        head = f"Expire snapshots of {_where(self.table, result.get('branch'))}"
        verb = "would expire" if dry else "expired"
        line = (f"{head}: {verb} {len(ids)} snapshots ({_ids(ids)}), "
                f"{_deleted(result, 'would delete' if dry else 'deleted')}; "
                f"stopped: {result.get('stopped_because') or '-'}{_kept(result)}; took {_took(result)}")
        return line + (" (dry run, nothing changed)" if dry else "")


class RemoveOrphanFilesOperator(_MaintenanceOperator):
    """Delete files under the table that nothing references (Paimon's ``remove_orphan_files``).

    Works on the whole table (main and every branch). Only files older than
    ``older_than`` go (default 1 day, as Paimon): that age is what protects a write in
    progress, so a real run refuses less than ``MIN_ORPHAN_AGE`` (1 h); a dry run
    may look with any age.

    :param older_than: age of the youngest file that may go (templated).
    :param dry_run: list what would go with sizes, delete nothing (templated).

    XCom: ``deleted_files`` (``path``, ``kind``, ``bytes``; at most 200 listed),
    ``deleted_file_count``, ``deleted_bytes``, ``deleted_by_kind``, ``kept_because``,
    ``older_than_millis`` (the cut-off, epoch ms), ``dry_run``, ``duration_s``.
    """

    partition_events_allowed = False  # changes no rows a reader sees

    action = "remove-orphan-files"
    template_fields: Sequence[str] = (*PaimonSparkJobOperator.template_fields, "older_than", "dry_run")

    def __init__(
        self,
        *,
        older_than: timedelta | float | str | None = None,
        dry_run: bool | str = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.older_than = check_at_parse(older_than, age_arg)
        self.dry_run = check_at_parse(dry_run, as_bool)  # type: ignore[method-assign]  # the public argument name shadows BaseOperator.dry_run(), which Airflow never calls
        if not is_template(older_than) and not is_template(dry_run):
            self._check_age()

    def _check_age(self) -> None:
        age, dry_run = age_arg(self.older_than), as_bool(self.dry_run)
        if age is not None and age < MIN_ORPHAN_AGE and not dry_run:
            raise ValueError(
                f"older_than {duration_text(age)} is shorter than {duration_text(MIN_ORPHAN_AGE)}: files "
                "of writes still in progress could be deleted; give at least "
                f"{duration_text(MIN_ORPHAN_AGE)} (default 1 d), or dry_run=True to only look"
            )

    def job_args(self) -> list[str]:
        args: list[str] = []
        age = age_arg(self.older_than)
        if age is not None:
            args += ["--older-than", str(age.total_seconds())]
        if as_bool(self.dry_run):
            args.append("--dry-run")
        return args

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        try:
            self._check_age()
        except ValueError as err:
            self.fail(str(err))
        return None

    def output_tables(self) -> list[tuple[str, str | None]]:
        return [(self.table, None)]

    def summary(self, result: Mapping[str, Any]) -> str:
        dry = bool(result.get("dry_run"))
        line = (f"Remove orphan files of {self.table}: "
                f"{_deleted(result, 'would delete' if dry else 'deleted')}, by kind "
                f"{dict(sorted((result.get('deleted_by_kind') or {}).items())) or '{}'}"
                f"{_kept(result)}; took {_took(result)}")
        return line + (" (dry run, nothing changed)" if dry else "")


class RollbackOperator(_MaintenanceOperator):
    """Roll main or a branch back to a snapshot or tag (Paimon's ``rollback_to``).

    Give exactly one of ``snapshot_id`` and ``tag``. By default destructive, as
    Paimon's ``rollback_to``: the later snapshots and the tags on them go (a tag a
    branch was created from blocks it, naming the branch). ``as_latest=True``
    (Paimon's ``rollback_to_as_latest``) deletes nothing and commits a new snapshot
    that reads as the target, so time travel, streaming readers and consumers keep
    working.

    :param snapshot_id: snapshot to roll back to (templated).
    :param tag: tag to roll back to (templated).
    :param branch: roll this branch back instead of main (templated).
    :param as_latest: commit the target as a new latest snapshot (templated).

    XCom: ``snapshot_id`` (what the branch now reads as latest), ``target_snapshot_id``,
    ``removed_snapshot_ids``, ``removed_tags``, ``deleted_file_count``,
    ``deleted_bytes``, ``as_latest``, ``duration_s``; with ``as_latest``, also
    ``already_rolled_back`` (an earlier try had committed it: a retry commits nothing).
    """

    action = "rollback"
    template_fields: Sequence[str] = (
        *PaimonSparkJobOperator.template_fields, "snapshot_id", "tag", "branch", "as_latest",
    )

    def __init__(
        self,
        *,
        snapshot_id: int | str | None = None,
        tag: str | None = None,
        branch: str | None = None,
        as_latest: bool | str = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.snapshot_id = check_at_parse(snapshot_id, lambda v: parse_int(v, "snapshot_id", minimum=1))
        self.tag = tag
        self.branch = branch
        self.as_latest = check_at_parse(as_latest, lambda v: as_bool(v, "as_latest"))
        if not is_template(snapshot_id) and not is_template(tag):
            given = (optional_str(snapshot_id) is not None) + (optional_str(tag) is not None)
            if given != 1:
                raise ValueError("RollbackOperator: give exactly one of snapshot_id or tag")

    def _target(self) -> tuple[int | None, str | None]:
        snapshot_id = optional_int(self.snapshot_id, "snapshot_id")
        tag = optional_str(self.tag)
        if (snapshot_id is None) == (tag is None):
            self.fail("give exactly one of snapshot_id or tag to roll back to")
        return snapshot_id, tag

    def job_args(self) -> list[str]:
        snapshot_id, tag = self._target()
        args = self._branch_args()
        args += ["--snapshot-id", str(snapshot_id)] if snapshot_id is not None else ["--tag", str(tag)]
        if as_bool(self.as_latest, "as_latest"):
            args.append("--as-latest")
        return args

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        as_bool(self.as_latest, "as_latest")
        snapshot_id, tag = self._target()
        branch = optional_str(self.branch)
        self.require_branch(hook, branch)
        if tag is not None:
            validate_tag_name(tag, self.name_profile(hook))
            self.require_tag(hook, tag, branch)
        elif snapshot_id is not None:  # exactly one of the two (_target)
            if snapshot_id < 1:
                self.fail(f"snapshot_id must be a positive integer, got {snapshot_id}")
            self.require_snapshot(hook, snapshot_id, branch)
        return None

    def summary(self, result: Mapping[str, Any]) -> str:
        where = _where(self.table, result.get("branch"))
        target = f"snapshot {result.get('target_snapshot_id')}"
        if result.get("tag"):
            target += f" (tag {result['tag']})"
        if result.get("already_rolled_back"):
            return (f"Rollback of {where} to {target} as latest: snapshot {result.get('snapshot_id')} "
                    f"already reads as it (an earlier try committed it); nothing committed; took {_took(result)}")
        if result.get("as_latest"):
            return (f"Rollback of {where} to {target} as latest: committed snapshot "
                    f"{result.get('snapshot_id')} reading as it; nothing deleted; took {_took(result)}")
        tags = ", ".join(result.get("removed_tags") or []) or "none"
        return (f"Rollback of {where} to {target}: removed snapshots {_ids(result.get('removed_snapshot_ids') or [])}, "
                f"tags {tags}; {_deleted(result, 'deleted')}{_kept(result)}; took {_took(result)}")


class ExpireTagsOperator(_MaintenanceOperator):
    """Delete the tags of main or a branch whose ``time_retained`` has passed (Paimon's ``expire_tags``).

    Tags without a retention never expire; a tag a branch was created from is kept.
    The files only the expired tags needed are deleted.

    :param branch: expire this branch's tags instead of main's (templated).
    :param dry_run: report what would go, change nothing (templated).

    XCom: ``expired_tags``, ``kept_tags`` (name -> why), ``deleted_file_count``,
    ``deleted_bytes``, ``dry_run``, ``duration_s``.
    """

    partition_events_allowed = False  # changes no rows a reader sees

    action = "expire-tags"
    template_fields: Sequence[str] = (*PaimonSparkJobOperator.template_fields, "branch", "dry_run")

    def __init__(self, *, branch: str | None = None, dry_run: bool | str = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.branch = branch
        self.dry_run = check_at_parse(dry_run, as_bool)  # type: ignore[method-assign]  # the public argument name shadows BaseOperator.dry_run(), which Airflow never calls

    def job_args(self) -> list[str]:
        return self._branch_args() + (["--dry-run"] if as_bool(self.dry_run) else [])

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        as_bool(self.dry_run)
        self.require_branch(hook, optional_str(self.branch))
        return None

    def summary(self, result: Mapping[str, Any]) -> str:
        dry = bool(result.get("dry_run"))
        expired = result.get("expired_tags") or []
        line = (f"Expire tags of {_where(self.table, result.get('branch'))}: "
                f"{'would expire' if dry else 'expired'} {len(expired)} tags ({', '.join(expired) or 'none'}), "
                f"{_deleted(result, 'would delete' if dry else 'deleted')}; "
                f"{len(result.get('kept_tags') or {})} tags kept; took {_took(result)}")
        return line + (" (dry run, nothing changed)" if dry else "")
