"""Paimon's merge-engine rules for primary-key tables, as far as writers must know them.

A primary-key table keeps, per key, every version written (an LSM tree per bucket);
readers and compaction merge them with the table's ``merge-engine``. Which row kinds a
table can take depends on that engine (Paimon Java, ``mergetree/compact/*MergeFunction``):

- ``deduplicate`` (default): the latest version wins; a ``-D`` / ``-U`` as the latest
  version removes the key.
- ``first-row``: the first version wins; ``-D`` / ``-U`` are an error unless
  ``ignore-delete`` is set ("By default, First row merge engine can not accept
  DELETE/UPDATE_BEFORE records").
- ``partial-update``: non-null fields of later versions fill in; ``-D`` / ``-U`` are an
  error unless ``ignore-delete``, ``partial-update.remove-record-on-delete`` or
  ``sequence-group``\\ s are set. pypaimon 2.1 implements none of the three (it refuses
  to read tables that set them), so deletes cannot be written to such tables here.
- ``aggregation``: fields are folded by their aggregate functions; Paimon Java
  retracts ``-D`` / ``-U`` rows per field (or removes the row with
  ``aggregation.remove-record-on-delete``). pypaimon 2.1 implements neither, so
  deletes are refused unless ``ignore-delete`` drops them on write.

With ``ignore-delete`` (any engine) the writer drops ``-D`` / ``-U`` rows (pypaimon does
this on write, as Paimon Java does).

Rows carry their kind through Paimon's ``rowkind.field`` option: a STRING column of the
table holding ``+I``, ``-U``, ``+U`` or ``-D``. ``RowKindCheck`` checks a batch before
any of it is handed to a writer, so a batch a table cannot take fails with the reason
and writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError

ROW_KINDS = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}
RETRACT_KINDS = ("-U", "-D")
ROWKIND_FIELD = "rowkind.field"
MERGE_ENGINE = "merge-engine"
ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
_IGNORE_DELETE_KEYS = (
    "ignore-delete",
    "first-row.ignore-delete",
    "deduplicate.ignore-delete",
    "partial-update.ignore-delete",
)


class DeleteRefusedError(InvalidArgumentError):
    """A ``-D`` / ``-U`` row was given to a table whose merge engine cannot take it."""


def options_map(table: Any) -> dict[str, str]:
    """The table's options (with dynamic ones) as plain strings."""
    return {str(k): str(v) for k, v in table.options.options.to_map().items()}


def merge_engine(table: Any) -> str:
    """The table's ``merge-engine`` (``deduplicate`` when unset)."""
    return str(table.options.merge_engine().value)


def ignore_delete(table: Any) -> bool:
    """Paimon's ``ignore-delete`` (with its fallback keys), strictly ``true``/``false``."""
    raw = options_map(table)
    for key in _IGNORE_DELETE_KEYS:
        value = raw.get(key)
        if value is not None:
            text = value.strip().lower()
            if text not in ("true", "false"):
                raise InvalidArgumentError(
                    f"table option {key!r} must be true or false, got {value!r}"
                )
            return text == "true"
    return False


def rowkind_field(table: Any) -> str | None:
    """The column named by ``rowkind.field``, or None when rows are all ``+I``."""
    name = options_map(table).get(ROWKIND_FIELD)
    return name or None


def sequence_fields(table: Any) -> list[str]:
    """``sequence.field`` columns (empty when versions are ordered by arrival only)."""
    return list(table.options.sequence_field())


def delete_refusal(table: Any) -> str | None:
    """Why ``-D`` / ``-U`` rows cannot be written to ``table``, or None when they can.

    Deletes dropped by ``ignore-delete`` are "taken" (the writer drops them).
    """
    if not table.is_primary_key_table:
        return "it has no primary key (an append table keeps every row it is given)"
    engine = merge_engine(table)
    if engine == "partial-update":
        return (
            "its merge engine is partial-update: Paimon takes deletes there only with "
            "'ignore-delete', 'partial-update.remove-record-on-delete' or sequence-groups, "
            "and pypaimon 2.1 (which reads this table) implements none of them; use the "
            "deduplicate engine for tables that receive deletes"
        )
    if ignore_delete(table):
        return None
    if engine == "deduplicate":
        return None
    if engine == "first-row":
        return (
            "its merge engine is first-row, which keeps the first version of a key and "
            "cannot take DELETE/UPDATE_BEFORE rows; set table option 'ignore-delete'='true' "
            "to drop them on write"
        )
    if engine == "aggregation":
        return (
            "its merge engine is aggregation: Paimon Java would retract the row from each "
            "field's aggregate, which pypaimon 2.1 (which reads this table) does not "
            "implement; set table option 'ignore-delete'='true' to drop deletes on write"
        )
    return f"its merge engine {engine!r} is not one pypaimon reads ({', '.join(ENGINES)})"


@dataclass(frozen=True)
class RowKindCheck:
    """Checks the row-kind column of batches bound for one primary-key table."""

    table_name: str
    column: str
    refusal: str | None

    @classmethod
    def for_table(cls, table: Any, table_name: str) -> RowKindCheck | None:
        """The check for ``table``, or None when it has no ``rowkind.field``."""
        if not table.is_primary_key_table:
            return None
        column = rowkind_field(table)
        if column is None:
            return None
        if column not in table.field_names:
            raise InvalidArgumentError(
                f"table {table_name} sets rowkind.field={column!r}, which is not one of its "
                f"columns ({', '.join(table.field_names)})"
            )
        return cls(table_name, column, delete_refusal(table))

    def check(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Raise (naming the problem and the fix) unless every row's kind is valid here."""
        if self.column not in batch.schema.names:
            raise InvalidArgumentError(
                f"the rows for {self.table_name} have no column {self.column!r}, its "
                "rowkind.field: give each row's kind there (+I, -U, +U or -D)"
            )
        values = batch.column(self.column)
        if values.null_count:
            raise InvalidArgumentError(
                f"column {self.column!r} (rowkind.field of {self.table_name}) is null in "
                f"{values.null_count} row(s); every row needs a kind: +I, -U, +U or -D"
            )
        valid = pc.is_in(values, value_set=pa.array(list(ROW_KINDS), values.type))
        if not pc.all(valid).as_py():
            bad = values.filter(pc.invert(valid))[0].as_py()
            raise InvalidArgumentError(
                f"column {self.column!r} (rowkind.field of {self.table_name}) holds {bad!r}; "
                "a row kind is one of +I, -U, +U, -D"
            )
        if self.refusal is None:
            return
        retracts = pc.is_in(values, value_set=pa.array(list(RETRACT_KINDS), values.type))
        count = pc.sum(retracts).as_py() or 0
        if count:
            raise DeleteRefusedError(
                f"{count} row(s) for {self.table_name} are deletes (-D/-U), which it cannot "
                f"take: {self.refusal}. Nothing was written."
            )
