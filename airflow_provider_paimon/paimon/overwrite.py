"""Replace exactly a given set of partitions in one OVERWRITE snapshot.

pypaimon overwrites either one static partition or, dynamically, the partitions the
new files fall in. Neither can empty a partition among others in the same commit: a
partition whose every row is removed has no new file to name it. Moving violating
rows out of a branch (``spark/branch/quarantine.py``) needs exactly that: each
affected partition is replaced by its passing rows, some by none. This builds the
partition filter from the given partitions and runs pypaimon's own overwrite commit
with it (its conflict detection, retries and snapshot writing), so the result is
one OVERWRITE snapshot, as Paimon Java's ``INSERT OVERWRITE ... PARTITION`` writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InvalidArgumentError

#: Paimon's BatchWriteBuilder.COMMIT_IDENTIFIER: the identifier of batch commits.
BATCH_COMMIT_IDENTIFIER = 2**63 - 1


def partitions_filter(table: Any, partitions: Sequence[Mapping[str, Any]]) -> Any:
    """pypaimon's predicate matching any of ``partitions`` (typed values, None = NULL)."""
    from pypaimon.common.predicate_builder import PredicateBuilder

    keys = list(table.partition_keys)
    builder = PredicateBuilder(table.partition_keys_fields)
    ors = []
    for spec in partitions:
        if sorted(spec) != sorted(keys):
            raise InvalidArgumentError(
                f"partition {dict(spec)} must name every partition column ({', '.join(keys)})"
            )
        ands = [builder.is_null(k) if spec[k] is None else builder.equal(k, spec[k]) for k in keys]
        ors.append(builder.and_predicates(ands))
    return builder.or_predicates(ors)


def overwrite_partitions(
    table_commit: Any,
    messages: list[Any],
    partitions: Sequence[Mapping[str, Any]],
    snapshot_properties: Mapping[str, str] | None = None,
) -> None:
    """Commit ``messages`` as one OVERWRITE snapshot that replaces ``partitions``.

    ``table_commit`` is a batch commit from the table's write builder (its commit user
    is the snapshot's). Every new file must lie in one of ``partitions``; partitions
    with no new file end up empty. An empty ``partitions`` commits nothing.
    """
    if not partitions:
        return
    from pypaimon.table.row.offset_row import OffsetRow

    file_store_commit = table_commit.file_store_commit
    table = file_store_commit.table
    if not table.partition_keys:
        raise InvalidArgumentError("the table is not partitioned: overwrite it whole instead")
    predicate = partitions_filter(table, partitions)
    for message in messages:
        if not predicate.test(OffsetRow(message.partition, 0, len(message.partition))):
            raise InvalidArgumentError(
                f"a new file lies in partition {tuple(message.partition)}, outside the partitions replaced"
            )
    provider = file_store_commit._overwrite_changes_provider(predicate, messages)
    file_store_commit._try_commit(
        commit_kind="OVERWRITE",
        commit_identifier=BATCH_COMMIT_IDENTIFIER,
        commit_entries_plan=provider.provide,
        changelog_entries=[],
        detect_conflicts=True,
        allow_rollback=False,
        index_deletes=[],
        index_adds=[],
        snapshot_properties=dict(snapshot_properties or {}) or None,
        allow_empty_commit=True,
    )
