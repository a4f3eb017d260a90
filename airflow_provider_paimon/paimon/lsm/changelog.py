"""Changelog files of primary-key tables, as Paimon's writers produce them.

A primary-key table's ``changelog-producer`` says who writes the changes a streaming
reader consumes (Paimon's changelog manifest of a snapshot lists their files):

- ``none`` (default): no changelog files; streaming readers read the files each commit
  added (Paimon's ``DeltaFollowUpScanner``);
- ``input``: the writer stores what it was given. Paimon Java's ``MergeTreeWriter``
  hands every row of its write buffer, in key and sequence order and before any merge,
  to the changelog writer (``SortBufferWriteBuffer.forEach``'s raw consumer), and the
  merged rows to the data writer. pypaimon 2.1 writes the *merged* rows as changelog
  (a ``-U``/``+U`` pair of one write loses its ``-U``), so ``input_changelog.use_input_changelog``
  makes a pypaimon table write do what Java does;
- ``full-compaction``: a full compaction (output at the top level) emits the changes
  between the top level before and after it (``FullChangelogMergeFunctionWrapper``):
  a key new at the top is ``+I``, a key gone is ``-D`` of its old row, a key whose
  row changed is ``-U`` old then ``+U`` new (also when equal, unless
  ``changelog-producer.row-deduplicate``); a key that only had its top-level row is
  unchanged. ``full_compaction_changelog`` computes them with Arrow;
- ``lookup``: Paimon Java's lookup compaction writes it; not produced here
  (``LOOKUP_REFUSAL``).

Changelog files are key-value files like data files (system columns ``_KEY_*``,
``_SEQUENCE_NUMBER``, ``_VALUE_KIND``), named ``changelog-...``; a change carries the
sequence number of the row it came from.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from ..option_values import parse_bool
from .engines import options_map
from .retracts import VALUE_KIND

PRODUCER = "changelog-producer"
PRODUCERS = ("none", "input", "full-compaction", "lookup")
ROW_DEDUPLICATE = "changelog-producer.row-deduplicate"
ROW_DEDUPLICATE_IGNORE = "changelog-producer.row-deduplicate-ignore-fields"
CHANGELOG_PREFIX = "changelog-"
LOOKUP_REFUSAL = (
    "its changelog-producer is 'lookup': Paimon Java writes that changelog during its "
    "lookup compaction, which is not done here (use 'input' or 'full-compaction', or "
    "compact it with Paimon Java)"
)

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
KEY_PREFIX = "_KEY_"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
_SYSTEM = (SEQUENCE_NUMBER, VALUE_KIND)
_ORDER = "__changelog_order"


def changelog_producer(table: Any) -> str:
    """The table's ``changelog-producer`` (``none`` when unset); an unknown value is refused."""
    raw = options_map(table).get(PRODUCER)
    value = "none" if raw is None or not raw.strip() else raw.strip().lower()
    if value not in PRODUCERS:
        raise InvalidArgumentError(
            f"table option {PRODUCER!r} is {raw!r}; Paimon's values are {', '.join(PRODUCERS)}"
        )
    return value


def row_deduplicate(table: Any) -> tuple[bool, tuple[str, ...]]:
    """``changelog-producer.row-deduplicate`` and the fields its comparison ignores."""
    raw = options_map(table)
    dedup = parse_bool(raw.get(ROW_DEDUPLICATE), f"table option {ROW_DEDUPLICATE!r}", False)
    ignored = tuple(f.strip() for f in (raw.get(ROW_DEDUPLICATE_IGNORE) or "").split(",") if f.strip())
    unknown = [f for f in ignored if f not in table.field_names]
    if unknown:
        raise InvalidArgumentError(
            f"table option {ROW_DEDUPLICATE_IGNORE!r} names {', '.join(unknown)}, not columns of the table"
        )
    return dedup, ignored


def changelog_prefix(data_prefix: str | None) -> str:
    """The changelog file prefix of a write or compaction whose data files start with ``data_prefix``.

    ``data-compact-3f2a-`` -> ``changelog-compact-3f2a-``, so a failed attempt's changelog
    files are found by prefix like its data files.
    """
    if not data_prefix:
        return CHANGELOG_PREFIX
    rest = data_prefix[len("data-"):] if data_prefix.startswith("data-") else data_prefix
    return CHANGELOG_PREFIX + rest


def is_changelog_file(meta: Any) -> bool:
    return str(meta.file_name).startswith(CHANGELOG_PREFIX)


# ------------------------------------------------------------------ full compaction


def _key_names(table: Any) -> list[str]:
    return [f"{KEY_PREFIX}{k}" for k in table.trimmed_primary_keys]


def full_compaction_changelog(table: Any, versions: pa.Table, top: pa.Table, merged: pa.Table) -> pa.Table:
    """The changes a full compaction makes to the top level, sorted by key (``-U`` before ``+U``).

    ``versions``: every row the compaction read (all runs, all versions); ``top``: the
    rows of the files that were at the top level (one per key); ``merged``: the
    compaction's output (one row per key, retracts already dropped).
    """
    keys = _key_names(table)
    if versions.num_rows == 0:
        return versions.slice(0, 0)
    counts = versions.select(keys).group_by(keys, use_threads=False).aggregate([([], "count_all")])
    # top-level keys with other versions beside them (a key alone at the top is unchanged)
    touched = counts.filter(pc.greater(counts.column("count_all"), 1)).select(keys)
    top_changed = _semi(top, touched, keys)
    inserted = _anti(merged, top, keys)
    deleted = _anti(top_changed, merged, keys)
    after = _semi(merged, top_changed, keys)
    before = _semi(top_changed, merged, keys)
    dedup, ignored = row_deduplicate(table)
    if dedup and after.num_rows:
        before, after = _drop_equal(table, before, after, keys, ignored)
    parts = [
        _as_kind(inserted, INSERT, 0),
        _as_kind(deleted, DELETE, 0),
        _as_kind(before, UPDATE_BEFORE, 0),
        _as_kind(after, UPDATE_AFTER, 1),
    ]
    out = pa.concat_tables([p for p in parts if p.num_rows] or [parts[0]])
    order = pc.sort_indices(
        out, sort_keys=[(k, "ascending") for k in keys] + [(_ORDER, "ascending")], null_placement="at_start"
    )
    out = out.take(order)
    return out.drop_columns([_ORDER])


def _semi(rows: pa.Table, other: pa.Table, keys: list[str]) -> pa.Table:
    return _filter_by_keys(rows, other, keys, keep_matches=True)


def _anti(rows: pa.Table, other: pa.Table, keys: list[str]) -> pa.Table:
    return _filter_by_keys(rows, other, keys, keep_matches=False)


def _filter_by_keys(rows: pa.Table, other: pa.Table, keys: list[str], keep_matches: bool) -> pa.Table:
    """``rows`` whose key is (or is not) in ``other``, in their original order."""
    if rows.num_rows == 0:
        return rows
    if other.num_rows == 0:
        return rows.slice(0, 0) if keep_matches else rows
    marked = rows.select(keys).append_column("__row", pa.array(range(rows.num_rows), pa.int64()))
    distinct = other.select(keys).group_by(keys, use_threads=False).aggregate([])
    hits = marked.join(distinct, keys=keys, join_type="left semi", use_threads=False).column("__row")
    inside = pc.is_in(pa.array(range(rows.num_rows), pa.int64()), value_set=hits.combine_chunks())
    return rows.filter(inside if keep_matches else pc.invert(inside))


def _sorted_by_key(rows: pa.Table, keys: list[str]) -> pa.Table:
    return rows.take(pc.sort_indices(rows, sort_keys=[(k, "ascending") for k in keys], null_placement="at_start"))


def _drop_equal(table: Any, before: pa.Table, after: pa.Table, keys: list[str],
                ignored: tuple[str, ...]) -> tuple[pa.Table, pa.Table]:
    """``changelog-producer.row-deduplicate``: drop the pairs whose values are equal."""
    before, after = _sorted_by_key(before, keys), _sorted_by_key(after, keys)
    same = pa.array([True] * before.num_rows)
    for name in table.field_names:
        if name in ignored:
            continue
        a, b = before.column(name), after.column(name)
        equal = pc.fill_null(pc.equal(a, b), False)
        both_null = pc.and_(pc.is_null(a), pc.is_null(b))
        same = pc.and_(same, pc.or_(equal, both_null))
    keep = pc.invert(same)
    return before.filter(keep), after.filter(keep)


def _as_kind(rows: pa.Table, kind: int, order: int) -> pa.Table:
    index = rows.schema.get_field_index(VALUE_KIND)
    rows = rows.set_column(index, rows.schema.field(VALUE_KIND), pa.array([kind] * rows.num_rows, pa.int8()))
    return rows.append_column(_ORDER, pa.array([order] * rows.num_rows, pa.int8()))


# ------------------------------------------------------------------ input changelog
