"""Is partition ``dt=...`` there, and is it done? Paimon's ``partition.mark-done`` on files.

Downstream jobs wait for a partition in one of two ways, and this module answers both
without Spark or Airflow:

- **has data**: the latest snapshot of main (or a branch) has at least one live data
  file in the partition. Read from the snapshot's manifests (base + delta, DELETEs
  merged away), so an overwrite that emptied the partition reads as "no data" again.
- **done**: a writer declared the partition complete the way Paimon Java does with
  ``partition.mark-done-action=success-file`` (the default action):
  ``SuccessFileMarkDoneAction`` writes ``<table>/<partition path>/_SUCCESS`` holding
  the JSON of ``SuccessFile``::

      {
        "creationTime" : 1731657600000,
        "modificationTime" : 1731657600000
      }

  (Jackson's default pretty printer, epoch milliseconds). Marking again keeps
  ``creationTime`` and sets ``modificationTime`` to now. ``mark_partition_done``
  writes exactly that, through the table's file IO (so it works on S3), and
  ``partition_status`` reads it back (unknown fields ignored, as Java does).

Where the file goes follows Java too: under the table's *location* (its root, also for
a branch: Java's ``FileStoreTable.location()`` is the same for every branch, so a done
mark is per table, not per branch), in the partition's directory named as Paimon's
writers name it: ``InternalRowPartitionComputer`` text (``partition.legacy-name``,
``partition.default-name`` for null) escaped by ``PartitionPathUtils``, i.e. the very
directory the partition's data files live in. A spec may name a leading prefix of the
partition columns (``{"dt": ...}`` of a ``dt, hr`` table): Java then marks the
``dt=.../`` directory, and "has data" means any file under it.

The other Java actions have no file-system form: ``done-partition`` and
``mark-event`` need a metastore (Hive) and ``http-report``/``custom`` call out; a table
whose ``partition.mark-done-action`` does not list ``success-file`` is refused by
``mark_partition_done`` (nothing written) so we never invent a marker its Java writers
would not produce.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from . import fileops
from .compaction.scan import latest_snapshot
from .errors import InvalidArgumentError, PaimonError
from .names import MAIN_BRANCH
from .partition_keys import escape_path_name as escape_path_name  # public here before it moved
from .partition_keys import partition_key
from .partitions import default_partition_name, format_partition_value, parse_partition_spec
from .snapshots import TableLayout
from .tag._common import resolve_branch

SUCCESS_FILE_NAME = "_SUCCESS"
MARK_DONE_ACTION_OPTION = "partition.mark-done-action"
SUCCESS_FILE_ACTION = "success-file"


class SuccessFileError(PaimonError):
    """A ``_SUCCESS`` file that is not Paimon's JSON (Java's reader would fail on it too)."""


@dataclass(frozen=True)
class SuccessFile:
    """Paimon's ``org.apache.paimon.partition.file.SuccessFile`` (epoch milliseconds)."""

    creation_time: int
    modification_time: int

    def to_json(self) -> str:
        """The bytes Java's ``JsonSerdeUtil.toJson`` writes (Jackson's default pretty printer)."""
        return (
            "{\n"
            f'  "creationTime" : {int(self.creation_time)},\n'
            f'  "modificationTime" : {int(self.modification_time)}\n'
            "}"
        )

    @classmethod
    def from_json(cls, text: str, where: str = SUCCESS_FILE_NAME) -> SuccessFile:
        """Parse Java's JSON; unknown fields are ignored (``@JsonIgnoreProperties``)."""
        try:
            doc = json.loads(text)
            return cls(int(doc["creationTime"]), int(doc["modificationTime"]))
        except (ValueError, TypeError, KeyError) as err:
            raise SuccessFileError(
                f"{where} is not a Paimon success file (JSON with creationTime and "
                f"modificationTime): {type(err).__name__}: {err}; delete it and mark the partition again"
            ) from None

    def updated(self, now_millis: int) -> SuccessFile:
        """Java's ``updateModificationTime``: same creation time, new modification time."""
        return SuccessFile(self.creation_time, now_millis)


@dataclass(frozen=True)
class PartitionStatus:
    """What a sensor needs to know about one partition of main or a branch."""

    table: str
    branch: str
    #: the spec as text, in partition-column order (``{"dt": "2026-11-03"}``)
    partition: dict[str, str]
    #: the partition's directory under the table root (``dt=2026-11-03``)
    path: str
    #: the snapshot the data answer was read from (``None``: the branch has none)
    snapshot_id: int | None
    has_data: bool
    file_count: int
    row_count: int
    done: bool
    success_file: SuccessFile | None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (for XCom and trigger events)."""
        out = asdict(self)
        out["success_file"] = (
            None
            if self.success_file is None
            else {
                "creationTime": self.success_file.creation_time,
                "modificationTime": self.success_file.modification_time,
            }
        )
        return out

    def summary(self) -> str:
        data = f"{self.file_count} file(s), {self.row_count} row(s)" if self.has_data else "no data"
        return (
            f"{self.table} branch {self.branch} partition {self.path} at snapshot "
            f"{self.snapshot_id}: {data}; {'done' if self.done else 'not done'}"
        )


@dataclass(frozen=True)
class _Partition:
    """A validated spec: typed values of a leading prefix of the partition columns."""

    text: dict[str, str]
    values: tuple[Any, ...]
    path: str


def partition_status(table: Any, partition: Mapping[str, Any], *, branch: str | None = None) -> PartitionStatus:
    """Has ``partition`` live data in the latest snapshot of ``branch``, and is it done?

    ``table`` is a pypaimon table; ``branch`` defaults to the one it was loaded on
    (main). ``partition`` maps partition columns to values (text as in a partition spec,
    e.g. ``{"dt": "2026-11-03"}``, or typed values); it must name a leading prefix of
    the partition columns. Raises ``InvalidArgumentError`` for a bad spec and
    ``BranchNotFoundError`` for an unknown branch.
    """
    layout = TableLayout.of(table)
    br = resolve_branch(layout, branch, table)
    on_branch = _on_branch(table, br)
    spec = _validate(on_branch, partition)
    snapshot = latest_snapshot(on_branch)
    n = len(spec.values)
    files = rows = 0
    for entry in _live_entries_in(on_branch, snapshot, spec):
        if _same(tuple(entry.partition.values)[:n], spec.values):
            files += 1
            rows += int(entry.file.row_count or 0)
    success = read_success_file(table, spec.path)
    return PartitionStatus(
        table=_table_name(table),
        branch=br or MAIN_BRANCH,
        partition=spec.text,
        path=spec.path,
        snapshot_id=None if snapshot is None else int(snapshot.id),
        has_data=files > 0,
        file_count=files,
        row_count=rows,
        done=success is not None,
        success_file=success,
    )


def mark_partition_done(
    table: Any, partition: Mapping[str, Any], *, branch: str | None = None, now_millis: int | None = None
) -> SuccessFile:
    """Write ``_SUCCESS`` in the partition's directory exactly as Paimon Java does.

    A new file gets ``creationTime = modificationTime = now``; an existing one keeps its
    ``creationTime``. The write replaces the file whole (Java's ``overwriteFileUtf8``):
    atomic rename locally, one PUT on object storage. ``branch`` only selects the schema
    the spec is checked against (and must exist): the file is the table's, as in Java.
    Bad input (spec, branch, a table whose ``partition.mark-done-action`` has no
    ``success-file``) raises ``InvalidArgumentError`` before anything is written.
    """
    layout = TableLayout.of(table)
    br = resolve_branch(layout, branch, table)
    on_branch = _on_branch(table, br)
    _require_success_file_action(on_branch)
    spec = _validate(on_branch, partition)
    now = int(time.time() * 1000) if now_millis is None else int(now_millis)
    previous = read_success_file(table, spec.path)
    success = SuccessFile(now, now) if previous is None else previous.updated(now)
    fileops.write_atomic(layout.file_io, success_file_path(table, spec.path), success.to_json())
    return success


def read_success_file(table: Any, partition_path: str) -> SuccessFile | None:
    """The partition's ``_SUCCESS`` (``None`` if absent), as Java's ``safelyFromPath``."""
    path = success_file_path(table, partition_path)
    text = fileops.read_text(TableLayout.of(table).file_io, path)
    return None if text is None else SuccessFile.from_json(text, path)


def success_file_path(table: Any, partition_path: str) -> str:
    """``<table root>/<partition path>/_SUCCESS`` (the root is shared by all branches)."""
    return f"{TableLayout.of(table).table_path}/{partition_path}/{SUCCESS_FILE_NAME}"


def partition_path(table: Any, partition: Mapping[str, Any]) -> str:
    """The partition's directory under the table root, as Paimon's writers name it."""
    return _validate(table, partition).path


# --- helpers --------------------------------------------------------------------------


def _on_branch(table: Any, branch: str | None) -> Any:
    """``table`` read on ``branch`` (``None``: main). The root path stays the table's."""
    current = getattr(table, "current_branch", lambda: MAIN_BRANCH)()
    if (branch or MAIN_BRANCH) == current:
        return table
    return table.copy({"branch": branch or MAIN_BRANCH})


def _validate(table: Any, partition: Mapping[str, Any]) -> _Partition:
    keys = list(table.partition_keys or [])
    if not isinstance(partition, Mapping) or not partition:
        raise InvalidArgumentError(
            f"partition must be a non-empty mapping of partition column to value, e.g. "
            f"{{{keys[0] if keys else 'dt'!r}: '2026-11-03'}}; got {partition!r}"
            + (f" (partition columns of {_table_name(table)}: {', '.join(keys)})" if keys else "")
        )
    typed = parse_partition_spec(table, partition)  # unknown column / bad value / unpartitioned
    prefix = keys[: len(typed)]
    if set(typed) != set(prefix):
        raise InvalidArgumentError(
            f"partition {dict(partition)!r} must name the leading partition columns of "
            f"{_table_name(table)} in order ({', '.join(keys)}): give {', '.join(prefix)}; "
            "a partition's directory nests the columns in that order"
        )
    values = tuple(typed[k] for k in prefix)
    default = default_partition_name(table)
    text = {k: format_partition_value(v, default) for k, v in zip(prefix, values, strict=True)}
    return _Partition(text=text, values=values, path=partition_key(table, values))


def _live_entries_in(table: Any, snapshot: Any, spec: _Partition) -> list[Any]:
    """Live ADD entries of ``snapshot`` in the partition (DELETEs merged away).

    The partition predicate lets pypaimon skip manifests by their partition stats and
    entries before decoding them, so a sensor polling one day of a big table reads only
    the manifests that may hold it.
    """
    if snapshot is None:
        return []
    from pypaimon.manifest.manifest_list_manager import ManifestListManager
    from pypaimon.read.scanner.file_scanner import FileScanner

    builder = table.new_read_builder().new_predicate_builder()
    keys = list(table.partition_keys)
    leaves = [
        builder.is_null(k) if v is None else builder.equal(k, v)
        for k, v in zip(keys, spec.values, strict=False)
    ]
    predicate = leaves[0] if len(leaves) == 1 else builder.and_predicates(leaves)
    manifests = ManifestListManager(table).read_all(snapshot)
    return (
        FileScanner(table, lambda: ([], None), partition_predicate=predicate)
        .with_all_buckets()
        .read_manifest_entries(manifests)
    )


def _same(actual: tuple[Any, ...], wanted: tuple[Any, ...]) -> bool:
    return all(a == w or (a is None and w is None) for a, w in zip(actual, wanted, strict=True))


def _require_success_file_action(table: Any) -> None:
    options = table.options.options.to_map()
    raw = options.get(MARK_DONE_ACTION_OPTION)
    if raw is None:
        return  # Java's default: success-file
    actions = [a.strip().lower() for a in str(raw).split(",") if a.strip()]
    if SUCCESS_FILE_ACTION not in actions:
        raise InvalidArgumentError(
            f"table {_table_name(table)} sets {MARK_DONE_ACTION_OPTION}={raw!r}, without "
            f"{SUCCESS_FILE_ACTION!r}: its Java writers mark partitions done another way "
            "(a metastore, an HTTP report or a custom class) and would not write or read a "
            f"_SUCCESS file; add {SUCCESS_FILE_ACTION!r} to the option to mark done with files"
        )


def _table_name(table: Any) -> str:
    ident = getattr(table, "identifier", None)
    getter = getattr(ident, "get_full_name", None)
    name = str(getter()) if getter else str(ident)
    return name.split("$branch_")[0]
