"""``scan.mode`` for batch reads: which snapshot (or range) a batch scan reads.

Paimon Java interprets ``scan.mode`` in batch reads too (``AbstractDataTableScan``'s
starting scanners with ``isStreaming`` false):

* ``default``, ``latest-full``, ``full``, ``latest``: the latest snapshot;
* ``from-snapshot``, ``from-snapshot-full``: the snapshot ``scan.snapshot-id`` (or the
  tag ``scan.tag-name``); ``from-timestamp``: the newest snapshot at or before
  ``scan.timestamp-millis``; ``incremental``: the changes between two points
  (``incremental-between-timestamp``). pypaimon's batch scan does all of these itself
  (and refuses the option combinations Paimon refuses): the mode is handed to it.
* ``compacted-full``: the snapshot ``stream_scan.latest_full_compaction`` picks (the
  newest COMPACT one, with ``full-compaction.delta-commits`` its identifier rule), the
  latest when there is none. pypaimon refuses the mode, so the snapshot is resolved
  here and handed to it as ``scan.snapshot-id``; streaming starts use the same rule.

Anything else fails, naming the accepted values: ``from-file-creation-time`` and
``from-creation-timestamp`` (pypaimon cannot read them; streaming reads take the
former), and unknown values, which would otherwise read the latest snapshot without a
word. ``incremental-between`` (snapshot ids or tags) is refused too: pypaimon would
ignore it and read the whole table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import InvalidArgumentError
from .stream_scan import latest_full_compaction

#: scan.mode values a batch read accepts (Paimon's names; "full" is latest-full's old alias)
BATCH_SCAN_MODES = (
    "default",
    "latest-full",
    "full",
    "latest",
    "from-snapshot",
    "from-snapshot-full",
    "from-timestamp",
    "incremental",
    "compacted-full",
)
_REFUSED_MODES = {
    "from-file-creation-time": "pypaimon's batch scan cannot filter files by creation time "
    "(a streaming read can: spark.readStream with the same options)",
    "from-creation-timestamp": "pypaimon's batch scan cannot read it; use 'from-timestamp'",
}
#: options that pick a start point; compacted-full picks its own
_START_KEYS = (
    "scan.snapshot-id",
    "scan.tag-name",
    "scan.timestamp-millis",
    "scan.timestamp",
    "scan.watermark",
    "scan.version",
    "scan.file-creation-time-millis",
    "scan.creation-time-millis",
    "incremental-between-timestamp",
)


def batch_scan_mode(options: Mapping[str, str]) -> str:
    """The ``scan.mode`` option, checked for a batch read (``default`` when unset)."""
    lowered = {str(k).lower(): v for k, v in options.items() if v is not None}
    mode = (str(lowered.get("scan.mode") or "").strip().lower()) or "default"
    if mode in _REFUSED_MODES:
        raise InvalidArgumentError(
            f"scan.mode {mode!r} is not supported for batch reads: {_REFUSED_MODES[mode]}; "
            f"a batch read takes one of: {', '.join(BATCH_SCAN_MODES)}"
        )
    if mode not in BATCH_SCAN_MODES:
        raise InvalidArgumentError(
            f"scan.mode {mode!r} is unknown; a batch read takes one of: {', '.join(BATCH_SCAN_MODES)}"
        )
    if "incremental-between" in lowered:
        raise InvalidArgumentError(
            "option 'incremental-between' (snapshot ids or tags) is not supported here: pypaimon "
            "would ignore it and read the whole table; use 'incremental-between-timestamp' "
            "(start exclusive, end inclusive, epoch millis)"
        )
    between_mode = str(lowered.get("incremental-between-scan-mode") or "auto").strip().lower()
    if between_mode != "auto":
        raise InvalidArgumentError(
            f"option 'incremental-between-scan-mode' = {between_mode!r} is not supported here: "
            "pypaimon reads incremental ranges as 'auto' only (changelog files with a "
            "changelog-producer, else the APPEND snapshots' files); drop the option"
        )
    return mode


def batch_scan_options(table: Any, options: Mapping[str, str], start_keys: tuple[str, ...] = ()) -> dict[str, str]:
    """Dynamic table options that make pypaimon's batch scan of ``table`` follow ``scan.mode``.

    ``options`` are the read's options (``scan.mode`` and the ``scan.*`` start points);
    ``start_keys`` names start points given another way (the data source's own
    ``snapshot-id`` / ``tag``). Returns ``{}`` for ``default``, ``{"scan.mode": mode}``
    for the modes pypaimon reads itself, ``{"scan.snapshot-id": id}`` for
    ``compacted-full`` (nothing on an empty table). Raises ``InvalidArgumentError``.
    """
    mode = batch_scan_mode(options)
    if mode == "default":
        return {}
    if mode != "compacted-full":
        return {"scan.mode": mode}
    lowered = {str(k).lower() for k, v in options.items() if v is not None}
    given = [*start_keys, *(k for k in _START_KEYS if k in lowered)]
    if given:
        raise InvalidArgumentError(
            f"scan.mode 'compacted-full' reads the newest full compaction and takes no start "
            f"point, but {', '.join(given)} was given; drop it or use the matching mode "
            "('from-snapshot', 'from-timestamp', ...)"
        )
    snapshot_id = latest_full_compaction(table)
    if snapshot_id is None:
        latest = table.snapshot_manager().get_latest_snapshot()
        if latest is None:
            return {}  # an empty table reads nothing, whatever the mode
        snapshot_id = int(latest.id)
    return {"scan.snapshot-id": str(snapshot_id)}


def check_with_pypaimon(table: Any) -> None:
    """pypaimon's own check of ``scan.mode`` against the other scan options (as Paimon's
    ``SchemaValidation``), run up front so a conflict fails when the read is defined."""
    from pypaimon.read.table_scan import _validate_scan_mode

    try:
        _validate_scan_mode(table)
    except ValueError as exc:
        raise InvalidArgumentError(f"{exc} (options of the batch read)") from None
