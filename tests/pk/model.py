"""A reference model of Paimon's primary-key semantics, transcribed from Paimon Java.

Independent of pypaimon and of this package: per key it keeps the versions written
(the LSM tree's content: one per key and commit, as Paimon's writers merge a key's rows
of one write buffer) and merges them on demand with the rules of Paimon Java's merge
functions (paimon-core ``mergetree/compact``):

- versions of a key are ordered by the ``sequence.field`` values (ascending, or
  descending with ``sequence.field.sort-order=descending``), then by arrival (the
  system sequence number) (``SortMergeReader`` / ``UserDefinedSeqComparator``);
- ``DeduplicateMergeFunction``: the last version; ``ignore-delete`` skips retracts;
- ``FirstRowMergeFunction``: the first version; a retract is an error unless
  ``ignore-delete`` (then skipped);
- ``PartialUpdateMergeFunction`` (no sequence groups): each non-null field of a later
  version replaces the field; a retract is an error without ``ignore-delete`` /
  ``remove-record-on-delete`` / sequence groups; the result is an INSERT;
- ``AggregateMergeFunction``: each field folded by its aggregator
  (``getAggFuncName``: sequence fields ``last_value``, key fields ``primary_key``,
  then ``fields.<f>.aggregate-function``, ``fields.default-aggregate-function``,
  ``last_non_null_value``); the aggregators' ``agg`` as in ``Field*Agg``;
- a result whose kind is a retract (``-U``/``-D``) is not visible (``DropDeleteReader``).

Merging the merged versions again gives the same rows when every merge takes a
contiguous range of versions in merge order (reads, full compaction, and minor
compaction without a ``sequence.field``). With a ``sequence.field`` and late rows, a
minor compaction merges versions that are not contiguous in that order, and
order-dependent engines (partial-update, ``first_*``/``last_*``/``listagg``
aggregates) can then give other rows, in Paimon Java as here; the model does not
follow those, so tests with late rows compact them fully.

``ignore-delete`` is applied when a row is written (Paimon's writers drop the rows).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

ADD_KINDS = ("+I", "+U")
RETRACT_KINDS = ("-U", "-D")


class ModelRefusalError(Exception):
    """The table's merge engine cannot take this row (Paimon Java raises too)."""


def _sum(acc: Any, x: Any) -> Any:
    if acc is None or x is None:
        return x if acc is None else acc
    return acc + x


def _product(acc: Any, x: Any) -> Any:
    if acc is None or x is None:
        return x if acc is None else acc
    return acc * x


def _max(acc: Any, x: Any) -> Any:
    if acc is None or x is None:
        return x if acc is None else acc
    return x if acc < x else acc


def _min(acc: Any, x: Any) -> Any:
    if acc is None or x is None:
        return x if acc is None else acc
    return x if acc > x else acc


def _bool_or(acc: Any, x: Any) -> Any:
    if acc is None or x is None:
        return x if acc is None else acc
    return acc or x


def _bool_and(acc: Any, x: Any) -> Any:
    if acc is None or x is None:
        return x if acc is None else acc
    return acc and x


def _listagg(acc: Any, x: Any, delimiter: str = ",") -> Any:
    if x is None or not str(x).strip():
        return acc
    if acc is None or not str(acc).strip():
        return x
    return f"{acc}{delimiter}{x}"


class _First:
    """``FieldFirstValueAgg`` / ``FieldFirstNonNullValueAgg``: state per key group."""

    def __init__(self, skip_nulls: bool) -> None:
        self.skip_nulls = skip_nulls
        self.initialized = False

    def __call__(self, acc: Any, x: Any) -> Any:
        if not self.initialized and (x is not None or not self.skip_nulls):
            self.initialized = True
            return x
        return acc


# name -> factory of a fold step (a fresh one per key group: first_* keep state)
AGGREGATORS: dict[str, Callable[[], Callable[[Any, Any], Any]]] = {
    "sum": lambda: _sum,
    "product": lambda: _product,
    "max": lambda: _max,
    "min": lambda: _min,
    "bool_or": lambda: _bool_or,
    "bool_and": lambda: _bool_and,
    "listagg": lambda: _listagg,
    "last_value": lambda: (lambda acc, x: x),
    "last_non_null_value": lambda: (lambda acc, x: acc if x is None else x),
    "first_value": lambda: _First(skip_nulls=False),
    "first_non_null_value": lambda: _First(skip_nulls=True),
    "primary_key": lambda: (lambda acc, x: x),
}


@dataclass
class Version:
    seq: tuple
    arrival: int
    kind: str
    row: dict[str, Any]


@dataclass
class PkModel:
    """The visible rows of a primary-key table after the rows written so far."""

    fields: Sequence[str]
    keys: Sequence[str]
    engine: str = "deduplicate"
    rowkind_field: str | None = None
    sequence_fields: Sequence[str] = ()
    descending: bool = False
    ignore_delete: bool = False
    aggregates: dict[str, str] = field(default_factory=dict)
    default_aggregate: str | None = None
    history: dict[tuple, list[Version]] = field(default_factory=dict)
    arrivals: int = 0

    @classmethod
    def for_options(cls, fields: Sequence[str], keys: Sequence[str], options: dict[str, str]) -> PkModel:
        """The model of a table created with Paimon table ``options``."""
        seq = [f.strip() for f in options.get("sequence.field", "").split(",") if f.strip()]
        aggregates = {
            k[len("fields."):-len(".aggregate-function")]: v
            for k, v in options.items()
            if k.startswith("fields.") and k.endswith(".aggregate-function")
        }
        return cls(
            fields=list(fields),
            keys=list(keys),
            engine=options.get("merge-engine", "deduplicate"),
            rowkind_field=options.get("rowkind.field"),
            sequence_fields=seq,
            descending=options.get("sequence.field.sort-order", "ascending") == "descending",
            ignore_delete=options.get("ignore-delete", "false") == "true",
            aggregates=aggregates,
            default_aggregate=options.get("fields.default-aggregate-function"),
        )

    # -- writing ----------------------------------------------------------------

    def kind_of(self, row: dict[str, Any]) -> str:
        return "+I" if self.rowkind_field is None else str(row[self.rowkind_field])

    def accepts(self, rows: Iterable[dict[str, Any]]) -> bool:
        """Whether a commit of ``rows`` is one the engine takes (no refused retract)."""
        try:
            for row in rows:
                self._check(self.kind_of(row))
        except ModelRefusalError:
            return False
        return True

    def _check(self, kind: str) -> None:
        if kind not in ADD_KINDS + RETRACT_KINDS:
            raise ModelRefusalError(f"unknown row kind {kind!r}")
        if kind in RETRACT_KINDS and not self.ignore_delete and self.engine != "deduplicate":
            raise ModelRefusalError(f"{self.engine} cannot take {kind}")

    def commit(self, rows: Iterable[dict[str, Any]]) -> None:
        """Apply one commit's rows, in order; all or nothing.

        As Paimon's writers do (``MergeTreeWriter``: the write buffer is sorted and
        merged with the merge function when it is flushed), the versions of a key
        written in one commit are merged into one version before they reach the tree.
        That matters where merging is not associative across orderings: with a
        ``sequence.field`` and late rows, partial-update takes a late row's fields
        along with the commit's newest sequence value.
        """
        rows = list(rows)
        for row in rows:
            self._check(self.kind_of(row))
        pending: dict[tuple, list[Version]] = {}
        for row in rows:
            kind = self.kind_of(row)
            if kind in RETRACT_KINDS and self.ignore_delete:
                continue  # writers drop them
            key = tuple(row[k] for k in self.keys)
            self.arrivals += 1
            seq = tuple(row[f] for f in self.sequence_fields)
            pending.setdefault(key, []).append(Version(seq, self.arrivals, kind, dict(row)))
        for key, versions in pending.items():
            folded = self._fold(versions)
            if folded is not None:
                self.history.setdefault(key, []).append(folded)

    # -- merging ----------------------------------------------------------------

    def _ordered(self, versions: list[Version]) -> list[Version]:
        if not self.sequence_fields:
            return sorted(versions, key=lambda v: v.arrival)
        if self.descending:
            # Descending sequence field, then arrival ascending: sort twice (stable).
            by_arrival = sorted(versions, key=lambda v: v.arrival)
            return sorted(by_arrival, key=lambda v: v.seq, reverse=True)
        return sorted(versions, key=lambda v: (v.seq, v.arrival))

    def _fold(self, versions: list[Version]) -> Version | None:
        """The merge function over ``versions``: one version (None: nothing to keep)."""
        ordered = self._ordered(versions)
        if not ordered:
            return None
        last = ordered[-1]
        engine = self.engine
        if engine == "deduplicate":
            return last
        if engine == "first-row":
            adds = [v for v in ordered if v.kind in ADD_KINDS]
            return adds[0] if adds else None
        if engine == "partial-update":
            out: dict[str, Any] = {f: None for f in self.fields}
            for v in ordered:
                for f in self.fields:
                    if v.row[f] is not None:
                        out[f] = v.row[f]
        elif engine == "aggregation":
            steps = {f: AGGREGATORS[self._agg_name(f)]() for f in self.fields}
            out = {f: None for f in self.fields}
            for v in ordered:
                for f in self.fields:
                    out[f] = steps[f](out[f], v.row[f])
        else:
            raise AssertionError(f"model has no engine {engine!r}")
        # The result carries the merged row and the newest version's sequence number.
        return Version(tuple(out[f] for f in self.sequence_fields), last.arrival, "+I", out)

    def merged(self, key: tuple) -> dict[str, Any] | None:
        """The visible row of ``key`` (None when it has none)."""
        result = self._fold(self.history.get(key, []))
        if result is None or result.kind not in ADD_KINDS:
            return None
        return dict(result.row)

    def _agg_name(self, name: str) -> str:
        if name in self.sequence_fields:
            return "last_value"
        if name in self.keys:
            return "primary_key"
        return self.aggregates.get(name) or self.default_aggregate or "last_non_null_value"

    def compacted(self, keys: Iterable[tuple]) -> None:
        """A compaction merged every version of ``keys`` into the bottom of their tree.

        Each key keeps one version, and a retract there is dropped (Paimon drops
        deletes when the output is the oldest data: a later late row with a lower
        sequence value is then visible again, in Paimon Java as here).
        """
        for key in list(keys):
            folded = self._fold(self.history.get(key, []))
            if folded is None or folded.kind in RETRACT_KINDS:
                self.history.pop(key, None)
            else:
                self.history[key] = [folded]

    def rows(self) -> list[tuple]:
        """Every visible row as a tuple in ``fields`` order, sorted (as tests compare)."""
        out = []
        for key in self.history:
            row = self.merged(key)
            if row is not None:
                out.append(tuple(row[f] for f in self.fields))
        return sorted(out, key=repr)
