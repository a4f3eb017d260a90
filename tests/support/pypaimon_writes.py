"""One commit through plain pypaimon, for tests that set a table up or move it on.

Tests write their fixtures with pypaimon's own writer, the independent reference, not
with this package's code. The write-and-commit sequence is always the same (builder,
write the Arrow data, prepare, commit, close both), so it lives here once; a test that
is about the sequence itself (a writer that dies before committing, a raced or wrapped
commit, several writers' messages in one commit) keeps its own steps.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa


def commit_arrow(
    table: Any,
    data: pa.Table | None,
    *,
    overwrite: dict[str, str] | None = None,
    snapshot_properties: dict[str, str] | None = None,
) -> int | None:
    """Commit ``data`` to ``table`` as one snapshot; the table's latest snapshot id after it.

    ``table`` is a pypaimon table, of main or of a branch (``load_table(catalog, name,
    branch)``). ``overwrite``: an OVERWRITE of that static partition (``{}``: the whole
    table) instead of an APPEND; with no rows (``data`` None or empty) it empties it.
    ``snapshot_properties`` go into the snapshot as pypaimon writes them.
    """
    builder = table.new_batch_write_builder()
    if overwrite is not None:
        builder = builder.overwrite(overwrite)
    write, commit = builder.new_write(), builder.new_commit()
    try:
        if data is not None:
            write.write_arrow(data)
        commit.commit(write.prepare_commit(), snapshot_properties=snapshot_properties or None)
    finally:
        write.close()
        commit.close()
    latest = table.snapshot_manager().get_latest_snapshot()
    return None if latest is None else latest.id


def commit_rows(table: Any, rows: list[dict], schema: pa.Schema, **kwargs: Any) -> int | None:
    """``commit_arrow`` of ``rows`` (dicts by column name) in ``schema``."""
    return commit_arrow(table, pa.Table.from_pylist(rows, schema=schema), **kwargs)
