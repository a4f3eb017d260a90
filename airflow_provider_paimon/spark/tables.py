"""Open the table a read or write addresses: catalog, branch, time travel, dynamic options.

Both the driver (planning, commit) and the executors (reading splits, writing files)
open the table from the same ``PaimonOptions``, so they see the same branch and
options. Unknown snapshots and tags fail here with a message that lists what exists.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_paimon.paimon.batch_scan import (
    batch_scan_mode,
    batch_scan_options,
    check_with_pypaimon,
)
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.errors import SnapshotNotFoundError, TagNotFoundError

from .options import PaimonOptions


def catalog_for(opts: PaimonOptions) -> Any:
    """The pypaimon catalog of ``opts.warehouse`` with the catalog options given."""
    return open_catalog(opts.warehouse, opts.catalog_options)


def open_table(opts: PaimonOptions, *, time_travel: bool = True, catalog: Any = None) -> Any:
    """The table (on its branch) with dynamic options and, if asked, time travel applied."""
    table = load_table(catalog or catalog_for(opts), opts.table, opts.branch)
    dynamic = dict(opts.table_options)
    if time_travel:
        dynamic.update(_time_travel_options(table, opts))
    return table.copy(dynamic) if dynamic else table


def _time_travel_options(table: Any, opts: PaimonOptions) -> dict[str, str]:
    where = f"table {opts.table} (branch {opts.branch_name})"
    if opts.snapshot_id is not None:
        snapshot = table.snapshot_manager().get_snapshot_by_id(opts.snapshot_id)
        if snapshot is None:
            latest = table.snapshot_manager().get_latest_snapshot()
            have = f"snapshots up to {latest.id}" if latest else "no snapshots"
            raise SnapshotNotFoundError(
                f"snapshot {opts.snapshot_id} does not exist on {where} ({have}); "
                "pick an existing 'snapshot-id' or drop the option to read the latest"
            )
        return {"scan.snapshot-id": str(opts.snapshot_id)}
    if opts.tag is not None:
        tags = table.tag_manager()
        if not tags.tag_exists(opts.tag):
            known = ", ".join(sorted(_tag_names(tags))) or "none"
            raise TagNotFoundError(
                f"tag {opts.tag!r} does not exist on {where} (tags: {known}); "
                "create it first or fix option 'tag'"
            )
        return {"scan.tag-name": opts.tag}
    return {}


def _tag_names(tag_manager: Any) -> list[str]:
    try:
        return [str(name) for name in tag_manager.list_tags()]
    except Exception:  # noqa: BLE001 - listing is only for the error message
        return []


def batch_read_options(opts: PaimonOptions) -> PaimonOptions:
    """``opts`` for a batch read, with ``scan.mode`` resolved (``paimon.batch_scan``).

    Done once on the driver when the read is defined: ``compacted-full`` becomes the
    snapshot the rule picks then (so planning, the schema check, lineage and every
    executor read that one snapshot), the modes pypaimon reads itself are handed to it
    as a dynamic option and checked against the other scan options now. An unknown or
    unsupported mode fails here, naming the accepted ones.
    """
    import dataclasses

    if batch_scan_mode(opts.raw) == "default":
        return opts  # nothing to resolve: no need to open the table for it
    given = [k for k, v in (("snapshot-id", opts.snapshot_id), ("tag", opts.tag)) if v is not None]
    resolved = batch_scan_options(open_table(opts, time_travel=False), opts.raw, tuple(given))
    if not resolved:
        return opts
    opts = dataclasses.replace(opts, table_options={**opts.table_options, **resolved})
    check_with_pypaimon(open_table(opts))
    return opts
