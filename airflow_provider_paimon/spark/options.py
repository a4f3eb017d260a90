"""Parse the ``paimon`` data source's options into one typed object.

Spark hands a data source a case-insensitive string map. Reading it in one place
means the reader, the writer and the streaming side agree on names, defaults and
error messages. Options the data source does not interpret itself are split by
``paimon/table_options.py``: Paimon's table options apply to the table (as dynamic
options, and stored in the schema when the write creates the table); catalog options
and unknown keys go to the catalog only, and are never stored in a table or applied to
one (unknown keys are named in a warning: a typo, or a setting for another engine).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_paimon.job_contract import CATALOG_OPTIONS_ENV
from airflow_provider_paimon.lineage.meta_options import (
    lineage_meta_options,
    pypaimon_catalog_options,
)
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.names import is_main, parse_table_name
from airflow_provider_paimon.paimon.option_values import bool_option, int_option
from airflow_provider_paimon.paimon.secrets import register_secret_options
from airflow_provider_paimon.paimon.table_options import split_options

# Options this data source interprets itself; they never reach Paimon as table options.
OWN_OPTIONS = frozenset(
    {
        "warehouse",
        "table",
        "branch",
        "snapshot-id",
        "tag",
        "create-table",
        "partition-keys",
        "primary-keys",
        "overwrite-mode",
        "overwrite-partition",
        "precommit-compact",
        "write.merge-schema",
        "write.merge-schema.explicit-cast",
        "event-listeners",
        "event-log",
        "columns",
        "read.min-partitions",
        "read.partition-target-size",
        "filter-pushdown",
        "partition-filter",
        "path",
        # streaming (interpreted by the streaming modules; Spark passes checkpointLocation
        # and queryName to a sink)
        "scan.mode",
        "consumer-id",
        "read.changelog",
        "max-snapshots-per-trigger",
        "max-files-per-trigger",
        "checkpointlocation",
        "queryname",
        "commit-user",
    }
)

log = logging.getLogger(__name__)
_warned_unknown: set[frozenset[str]] = set()

OVERWRITE_MODES = ("static", "dynamic")

#: the connection's warehouse: its options apply to reads and writes of that warehouse
#: only (and it is the default ``warehouse`` option)
CONNECTION_WAREHOUSE_ENV = "PAIMON_CONNECTION_WAREHOUSE"


def connection_defaults(warehouse: str | None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Catalog options the driver's environment holds for ``warehouse`` (else none).

    This is how credentials (``fs.s3.accessKeySecret``...) reach the data source in a
    submitted job without being ``.option()`` values, which Spark shows in the query
    plan. They are read where Spark plans the query (the driver, whose Python workers
    inherit its environment) and travel to executors inside the pickled reader/writer,
    like every other option. With ``PAIMON_CONNECTION_WAREHOUSE`` set, they apply only to that
    warehouse, so a job reading a second warehouse never sends it these credentials.
    """
    env = os.environ if environ is None else environ
    raw = env.get(CATALOG_OPTIONS_ENV)
    if not raw:
        return {}
    scope = env.get(CONNECTION_WAREHOUSE_ENV, "").strip()
    if scope and not _same_warehouse(scope, warehouse or scope):
        return {}
    try:
        doc = json.loads(raw)
    except ValueError:
        raise InvalidArgumentError(f"${CATALOG_OPTIONS_ENV} is not valid JSON") from None
    if not isinstance(doc, dict):
        raise InvalidArgumentError(f"${CATALOG_OPTIONS_ENV} must be a JSON object")
    options = {str(k): str(v) for k, v in doc.items() if v is not None}
    register_secret_options(options)  # a private channel: its secrets are known from here on
    return {k.lower(): v for k, v in options.items() if k.lower() != "warehouse"}


def connection_catalog_options(warehouse: str | None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``connection_defaults`` under pypaimon's own (mixed-case) names, for ``open_catalog``.

    ``connection_defaults`` lower-cases its keys so they merge with Spark's lower-cased
    data source options; a job that opens a catalog itself with them would pass
    ``fs.s3.accesskeyid``, which pypaimon ignores (it looks keys up case-sensitively),
    and fall back to the AWS default credentials: access denied on a private endpoint.
    """
    canonical = _canonical_keys()
    return {canonical.get(k, k): v for k, v in connection_defaults(warehouse, environ).items()}


def _canonical_keys() -> dict[str, str]:
    """pypaimon's mixed-case option names by their lower-case form.

    Spark lower-cases data source option keys, but pypaimon looks its credentials up
    case-sensitively (``fs.s3.accessKeyId``): a lower-cased key would be silently
    ignored and the AWS default credential chain used instead.
    """
    import inspect

    from pypaimon.common.options import config

    names: dict[str, str] = {}
    for _, cls in inspect.getmembers(config, inspect.isclass):
        for value in vars(cls).values():
            key = getattr(value, "key", None)
            if callable(key):
                try:
                    name = key()
                except TypeError:
                    continue
                if isinstance(name, str) and name != name.lower():
                    names[name.lower()] = name
    return names


def _same_warehouse(a: str, b: str) -> bool:
    return a.strip().rstrip("/") == b.strip().rstrip("/")
def _names(options: Mapping[str, str], key: str) -> list[str]:
    raw = options.get(key)
    if raw is None:
        return []
    return [part.strip() for part in str(raw).split(",") if part.strip()]


def parse_overwrite_partition(raw: str) -> dict[str, str]:
    """The ``overwrite-partition`` option, ``"dt=2024-01-01,region=eu"`` -> ``{"dt": "2024-01-01", "region": "eu"}``
    (text: the write parses it by the table's types, ``paimon.partitions.parse_partition_spec``)."""
    spec: dict[str, str] = {}
    for part in str(raw).split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise InvalidArgumentError(
                f"option 'overwrite-partition' must look like 'col=value[,col=value]', got {raw!r}"
            )
        key, value = part.split("=", 1)
        spec[key.strip()] = value.strip()
    if not spec:
        raise InvalidArgumentError("option 'overwrite-partition' is empty; give 'col=value[,col=value]'")
    return spec


@dataclass(frozen=True)
class PaimonOptions:
    """What a read or write asked for, validated (but not yet checked against the table)."""

    warehouse: str
    table: str
    branch: str | None = None
    snapshot_id: int | None = None
    tag: str | None = None
    catalog_options: dict[str, str] = field(default_factory=dict, repr=False)  # may hold secrets
    table_options: dict[str, str] = field(default_factory=dict)
    # write side
    create_table: bool = False
    partition_keys: list[str] = field(default_factory=list)
    primary_keys: list[str] = field(default_factory=list)
    overwrite_mode: str = "static"
    overwrite_partition: dict[str, str] | None = None
    precommit_compact: bool = False
    merge_schema: bool = False
    merge_schema_explicit_cast: bool = False
    # read side
    columns: list[str] = field(default_factory=list)
    min_partitions: int | None = None
    partition_target_size: int | None = None
    partition_filter: str | None = None
    # events
    event_listeners: list[str] = field(default_factory=list)
    event_log: str | None = None
    raw: dict[str, str] = field(default_factory=dict, repr=False)  # may hold secrets
    # the lineage proposal's options (lineage/meta_options.py; None: not asked for) and
    # the registering session's job name and spool folder (lineage_direct.session_info)
    lineage: Any = field(default=None, repr=False, compare=False)
    lineage_session: dict[str, str] = field(default_factory=dict, compare=False)
    # a Spark Connect capture's OpenLineage settings (``lineage.connect_openlineage``);
    # may hold an API key
    openlineage: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # a classic session's capture: event log, session descriptor, store check file, keyed
    # by their variables' names (``lineage.routing_state``; no secret)
    capture_routing: dict[str, str] = field(default_factory=dict, compare=False)
    # branch redirect (spark/branch/redirect.py): the conf key that chose ``branch``, and
    # whether the redirects were resolved at all (tasks then re-check them)
    redirect_key: str | None = None
    redirect_checked: bool = False

    @property
    def database(self) -> str:
        return parse_table_name(self.table)[0]

    @property
    def table_name(self) -> str:
        return parse_table_name(self.table)[1]

    @property
    def branch_name(self) -> str:
        return "main" if is_main(self.branch) else str(self.branch)

    @property
    def lineage_namespace(self) -> str:
        """The warehouse's OpenLineage namespace, as the Airflow operators name it.

        For a REST catalog that is ``paimon+rest://server/catalog`` (its ``warehouse``
        is a catalog name, not a path); otherwise the normalised warehouse URI. Empty
        when it cannot be computed (the lineage package is not importable here).
        """
        try:
            from ..lineage.openlineage.naming import warehouse_namespace

            return warehouse_namespace(self.warehouse, self.catalog_options)
        except Exception:  # noqa: BLE001 - naming is for lineage only; never fail a read
            return ""

    @property
    def time_travel(self) -> bool:
        return self.snapshot_id is not None or self.tag is not None


def _merge_schema_option(opts: Mapping[str, str]) -> tuple[bool, bool]:
    """``write.merge-schema`` and ``write.merge-schema.explicit-cast`` (``spark/datasource/schema_merge.py``).

    explicit-cast alone is refused: it only means something while merging, and a flag
    that silently does nothing would hide a typo in the other one.
    """
    merge = bool_option(opts, "write.merge-schema", False)
    explicit = bool_option(opts, "write.merge-schema.explicit-cast", False)
    if explicit and not merge:
        raise InvalidArgumentError(
            "option 'write.merge-schema.explicit-cast' needs 'write.merge-schema'='true' as well"
        )
    return merge, explicit


def parse_options(options: Mapping[str, str]) -> PaimonOptions:
    """Validate Spark's option map; raise ``InvalidArgumentError`` naming the fix."""
    opts = {str(k).lower(): str(v) for k, v in dict(options).items() if v is not None}
    warehouse = opts.get("warehouse", "").strip() or os.environ.get(CONNECTION_WAREHOUSE_ENV, "").strip()
    opts = {**connection_defaults(warehouse), **opts}  # options given explicitly win
    if warehouse:
        opts["warehouse"] = warehouse
    if not warehouse:
        raise InvalidArgumentError(
            "option 'warehouse' is missing: add .option('warehouse', 'file:///path/to/warehouse')"
        )
    table = opts.get("table", "").strip() or opts.get("path", "").strip()
    if not table:
        raise InvalidArgumentError(
            "option 'table' is missing: add .option('table', 'database.table')"
        )
    parse_table_name(table)
    snapshot_id = int_option(opts, "snapshot-id", minimum=1)
    tag = opts.get("tag", "").strip() or None
    if snapshot_id is not None and tag is not None:
        raise InvalidArgumentError(
            "options 'snapshot-id' and 'tag' both given; time travel takes one of them"
        )
    mode = opts.get("overwrite-mode", "static").strip().lower() or "static"
    if mode not in OVERWRITE_MODES:
        raise InvalidArgumentError(
            f"option 'overwrite-mode' must be 'static' or 'dynamic', got {mode!r}"
        )
    overwrite_partition = (
        parse_overwrite_partition(opts["overwrite-partition"]) if opts.get("overwrite-partition") else None
    )
    if overwrite_partition is not None and mode == "dynamic":
        raise InvalidArgumentError(
            "options 'overwrite-partition' and 'overwrite-mode=dynamic' conflict; use one"
        )
    lineage = lineage_meta_options(opts, where="option")
    # lineage keys go to the lineage store, never to pypaimon
    opts_for_paimon = pypaimon_catalog_options(opts) if lineage is not None else opts
    split = split_options({k: v for k, v in opts_for_paimon.items() if k != "warehouse" and k not in OWN_OPTIONS})
    _warn_unknown(split.unknown)
    canonical = _canonical_keys()
    # unknown keys go to the catalog with the catalog options (pypaimon's catalog takes
    # the keys it knows), never to the table
    catalog_options = {canonical.get(k, k): v for k, v in {**split.catalog, **split.unknown}.items()}
    table_options = split.table
    branch = opts.get("branch", "").strip() or None
    _refuse_filter_pushdown(opts)
    partition_filter = opts.get("partition-filter")
    if partition_filter is not None and not partition_filter.strip():
        raise InvalidArgumentError(
            "option 'partition-filter' is blank; give a predicate over partition columns, "
            "e.g. \"dt >= DATE '2026-11-01'\", or leave the option out"
        )
    merge_schema, explicit_cast = _merge_schema_option(opts)
    return PaimonOptions(
        warehouse=warehouse,
        table=table,
        branch=None if is_main(branch) else branch,
        snapshot_id=snapshot_id,
        tag=tag,
        catalog_options=catalog_options,
        table_options=table_options,
        create_table=bool_option(opts, "create-table", False),
        partition_keys=_names(opts, "partition-keys"),
        primary_keys=_names(opts, "primary-keys"),
        overwrite_mode=mode,
        overwrite_partition=overwrite_partition,
        precommit_compact=bool_option(opts, "precommit-compact", False),
        merge_schema=merge_schema,
        merge_schema_explicit_cast=explicit_cast,
        columns=_names(opts, "columns"),
        min_partitions=int_option(opts, "read.min-partitions", minimum=1),
        partition_target_size=int_option(opts, "read.partition-target-size", minimum=1),
        partition_filter=partition_filter.strip() if partition_filter else None,
        event_listeners=_names(opts, "event-listeners"),
        event_log=opts.get("event-log", "").strip() or None,
        raw=opts,
        lineage=lineage,
    )


def _warn_unknown(unknown: Mapping[str, str]) -> None:
    """Say once per process which options are neither the data source's, Paimon's table
    options nor catalog options (keys only: the values may be credentials)."""
    keys = frozenset(unknown)
    if not keys or keys in _warned_unknown:
        return
    _warned_unknown.add(keys)
    log.warning(
        "option(s) %s are not Paimon table options: they are passed to the catalog only, "
        "never applied to the table nor stored in its schema (paimon/table_options.py lists "
        "Paimon's table options; check the spelling)", ", ".join(sorted(keys)),
    )


def _refuse_filter_pushdown(opts: Mapping[str, str]) -> None:
    """``filter-pushdown=true`` is refused: Spark would leak one query's filters into the next.

    The option existed when the reader pushed Spark's filters to pypaimon. Spark 4.x
    caches the read plan of the last query with pushable filters on the loaded
    DataFrame and reuses it for later queries without filters, which then lose rows
    (see ``reader.py``). ``false`` is still accepted: it is what every read does now.
    """
    if "filter-pushdown" in opts and bool_option(opts, "filter-pushdown", False):
        raise InvalidArgumentError(
            "option 'filter-pushdown=true' is no longer supported: Spark 4.x reuses the read plan "
            "made for one query's filters in later queries on the same DataFrame, which would "
            "lose rows. Remove the option; Spark applies every filter itself."
        )
