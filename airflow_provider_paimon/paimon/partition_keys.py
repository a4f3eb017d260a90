"""Which partitions a commit changed, named as Paimon names their folders.

Airflow 3.2+ asset events carry a ``partition_key`` (a string); a Paimon partition is a
typed row. The key here is the partition's directory under the table root, exactly as
Paimon's writers name it: ``dt=2026-11-03/region=eu`` (``InternalRowPartitionComputer``
text, ``partition.default-name`` for null, ``partition.legacy-name``, each column name
and value escaped by Java's ``PartitionPathUtils.escapePathName``, columns in partition
order, no trailing ``/``). So a key is also the path a user sees in the warehouse.
``parse_partition_key`` splits a key into its text (``{"dt": "2026-11-03", "region":
"eu"}``); ``partition_values`` reads it back as the table's typed values, which every
partition argument of this package accepts. Note Paimon's default
``partition.legacy-name=true``: a DATE column's folder (and key) is then its day
number (``dt=20760``), a TIMESTAMP's its ISO text; a STRING ``dt`` reads as written.

The partitions of a commit are read from the commit itself: a snapshot's *delta*
manifest list names the manifest files holding exactly the files that commit added
and deleted (Paimon Java and pypaimon both write the commit's changes there; merging
only ever rewrites the *base* list). Each entry's partition is decoded once per
distinct partition; the cost is the commit's size, never the table's history. Both
ADD and DELETE entries count: an overwrite that emptied a partition changed it too.

Between two states of a table or branch (before and after a replace-main, a
fast-forward, a rollback, a publish), the changed partitions are those whose live data
files differ: ``partitions_between`` reads only the manifests one state lists and the
other does not (a branch shares most of its manifests with the main it came from), and
compares per partition the files they add and delete. States are snapshot JSONs read
before and after, never ids: a replace-main or rollback reuses ids.

No Airflow or Spark here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import InvalidArgumentError
from .manifest_reader import read_entries
from .partitions import parse_partition_spec, partition_types
from .snapshots import TableLayout, read_snapshot

__all__ = [
    "MAX_KEY_LENGTH",
    "changed_partition_keys",
    "delta_partitions",
    "escape_path_name",
    "parse_partition_key",
    "partition_key",
    "partition_keys_between",
    "partition_values",
    "partitions_between",
]

#: Airflow stores a partition key in a 250-character column (``ID_LEN``)
MAX_KEY_LENGTH = 250

# Java PartitionPathUtils.CHAR_TO_ESCAPE: control characters, DEL and these.
_ESCAPED = set("\"#%'*/:=?\\{}[]^")
_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")


def escape_path_name(text: str) -> str:
    """Java ``PartitionPathUtils.escapePathName``: ``%XX`` for the characters it escapes."""
    return "".join(
        f"%{ord(c):02X}" if ord(c) < 32 or ord(c) == 127 or c in _ESCAPED else c for c in text
    )


def unescape_path_name(text: str) -> str:
    """Java ``PartitionPathUtils.unescapePathName``: ``%XX`` back to the character."""
    return _PERCENT.sub(lambda m: chr(int(m.group(1), 16)), text)


def partition_key(table: Any, values: Iterable[Any]) -> str:
    """``dt=2026-11-03/region=eu``: the folder Paimon writes ``values`` (typed, in
    partition-column order; a leading prefix is allowed) of ``table`` under.

    ``""`` for no values (an unpartitioned table).
    """
    values = tuple(values)
    if not values:
        return ""
    keys = list(table.partition_keys or [])[: len(values)]
    # pypaimon's canonical partition text is Java's InternalRowPartitionComputer
    # (legacy names, float formatting, timestamps, the default name for null).
    names = table.path_factory()._canonical_partition(values)
    return "/".join(f"{escape_path_name(k)}={escape_path_name(v)}" for k, v in zip(keys, names, strict=True))


def parse_partition_key(key: str) -> dict[str, str]:
    """``"dt=2026-11-03/region=eu"`` -> ``{"dt": "2026-11-03", "region": "eu"}`` (text, unescaped).

    The inverse of :func:`partition_key`; the values are partition-spec text (the null
    partition reads as the table's ``partition.default-name``), which
    ``MarkPartitionDoneOperator``, ``PaimonPartitionSensor`` and the ``paimon`` data
    source's ``partition-filter`` / ``overwrite-partition`` accept.
    """
    if not isinstance(key, str) or not key.strip():
        raise InvalidArgumentError(
            f"a Paimon partition key looks like 'dt=2026-11-03/region=eu'; got {key!r}"
        )
    spec: dict[str, str] = {}
    for part in key.strip().strip("/").split("/"):
        name, sep, value = part.partition("=")
        if not sep or not name:
            raise InvalidArgumentError(
                f"partition key {key!r}: {part!r} is not COLUMN=VALUE (keys look like "
                "'dt=2026-11-03/region=eu', as Paimon names partition folders)"
            )
        column = unescape_path_name(name)
        if column in spec:
            raise InvalidArgumentError(f"partition key {key!r} names column {column!r} twice")
        spec[column] = unescape_path_name(value)
    return spec


def partition_values(table: Any, key: str) -> dict[str, Any]:
    """``key`` of ``table`` as typed partition values (``{"dt": date(2026, 11, 3), ...}``).

    The inverse of :func:`partition_key` for that table, legacy names included (a
    DATE folder ``dt=20760`` is day 20760 since 1970-01-01). The answer is checked by
    naming it again: a key the table would not write is an ``InvalidArgumentError``.
    """
    import datetime as dt

    text = parse_partition_key(key)
    types = partition_types(table)
    legacy_days = {
        column for column, value in text.items()
        if str(types.get(column, "")).upper().startswith("DATE") and re.fullmatch(r"-?\d+", value)
    }
    values = parse_partition_spec(table, {k: v for k, v in text.items() if k not in legacy_days}, "partition key")
    for column in legacy_days:
        values[column] = dt.date(1970, 1, 1) + dt.timedelta(days=int(text[column]))
    ordered = {column: values[column] for column in text}
    if list(ordered) != list(table.partition_keys or [])[: len(ordered)] or partition_key(
        table, ordered.values()
    ) != key.strip().strip("/"):
        raise InvalidArgumentError(
            f"partition key {key!r} is not a partition folder of this table (its partition "
            f"columns, in order: {', '.join(table.partition_keys or [])})"
        )
    return ordered


def delta_partitions(table: Any, snapshot: Mapping[str, Any] | int, branch: str | None = None) -> list[tuple]:
    """The distinct partitions (typed value tuples) of the files ``snapshot`` added or
    deleted, in the order its delta manifests first name them.

    ``snapshot`` is a snapshot's JSON (``snapshot/snapshot-N`` as read by
    ``snapshots.read_snapshot``) or its id on ``branch``. ``[]`` for a commit that
    changed no file; ``[()]`` for an unpartitioned table's commit.
    """
    from pypaimon.table.row.generic_row import GenericRowDeserializer

    layout = TableLayout.of(table)
    doc = read_snapshot(layout, branch, int(snapshot)) if isinstance(snapshot, int) else snapshot
    if doc is None:
        raise InvalidArgumentError(f"snapshot {snapshot} of {_where(branch)} does not exist (expired?)")
    delta_list = doc.get("deltaManifestList")
    if not delta_list:
        return []
    manifest_dir = f"{layout.table_path}/manifest"
    fields = table.partition_keys_fields
    seen: dict[bytes, tuple] = {}
    out: list[tuple] = []
    for meta in _manifest_list(table, delta_list, doc.get("deltaManifestListSize")):
        for block in read_entries(layout.file_io, f"{manifest_dir}/{meta.file_name}", meta.file_size):
            for entry in block:
                if entry.partition in seen:
                    continue
                values = tuple(GenericRowDeserializer.from_bytes(entry.partition, fields).values) if fields else ()
                seen[entry.partition] = values
                if values not in out:  # two writers may serialize one partition differently
                    out.append(values)
    return out


def changed_partition_keys(
    table: Any, snapshots: Iterable[Mapping[str, Any] | int], branch: str | None = None
) -> list[str]:
    """The partition keys of every partition ``snapshots`` changed (deduplicated, in
    commit order); ``[]`` for an unpartitioned table."""
    keys: list[str] = []
    for snapshot in snapshots:
        for values in delta_partitions(table, snapshot, branch):
            key = partition_key(table, values)
            if key and key not in keys:
                keys.append(key)
    return keys


def partitions_between(
    table: Any, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> list[tuple]:
    """The partitions (typed value tuples) whose live data files differ between two
    snapshots' states of one table (``None``: no snapshot, an empty state).

    Only the manifests listed by one state and not the other are read; within them,
    each data file counts +1 per ADD and -1 per DELETE on its side, and a partition
    changed when its files' counts differ between the sides. Manifests that merged
    others hold the same live files, so merging alone changes nothing.
    """
    from collections import Counter

    from pypaimon.table.row.generic_row import GenericRowDeserializer

    layout = TableLayout.of(table)
    mine, theirs = _manifests_of(table, after), _manifests_of(table, before)
    fields = table.partition_keys_fields
    values_of: dict[bytes, tuple] = {}
    net: dict[tuple, Counter] = {}
    order: list[tuple] = []
    for metas, sign in (([m for n, m in mine.items() if n not in theirs], 1),
                        ([m for n, m in theirs.items() if n not in mine], -1)):
        for meta in metas:
            for block in read_entries(layout.file_io, f"{layout.table_path}/manifest/{meta.file_name}",
                                      meta.file_size):
                for entry in block:
                    values = values_of.get(entry.partition)
                    if values is None:
                        values = tuple(GenericRowDeserializer.from_bytes(entry.partition, fields).values) if fields else ()
                        values_of[entry.partition] = values
                    if values not in net:
                        net[values] = Counter()
                        order.append(values)
                    identity = entry.identifier()[1:]  # bucket, level, file... (partition: by value)
                    net[values][identity] += sign * (1 if entry.kind == 0 else -1)
    return [values for values in order if any(net[values].values())]


def partition_keys_between(
    table: Any, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> list[str]:
    """:func:`partitions_between` as partition keys; ``[]`` for an unpartitioned table."""
    return [k for k in (partition_key(table, v) for v in partitions_between(table, before, after)) if k]


def _manifests_of(table: Any, doc: Mapping[str, Any] | None) -> dict[str, Any]:
    """The manifest files a snapshot's state is made of (base and delta lists), by name."""
    if not doc:
        return {}
    out: dict[str, Any] = {}
    for key in ("baseManifestList", "deltaManifestList"):
        name = doc.get(key)
        if name:
            for meta in _manifest_list(table, name, doc.get(f"{key}Size")):
                out[meta.file_name] = meta
    return out


def _manifest_list(table: Any, name: str, size: Any) -> list[Any]:
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    return ManifestListManager(table).read(name, int(size) if size is not None else None)


def _where(branch: str | None) -> str:
    return f"branch {branch}" if branch and branch != "main" else "main"
