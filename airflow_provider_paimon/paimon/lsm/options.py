"""Options of primary-key compaction: Paimon's own keys and defaults (``CoreOptions``).

- ``num-sorted-run.compaction-trigger`` (5): sorted runs in a bucket (each level-0 file
  is one, each non-empty higher level one) before a minor compaction starts;
- ``num-levels`` (unset: the trigger + 1): levels of the LSM tree, so the top level is
  ``num-levels - 1`` (more if files already sit higher);
- ``compaction.max-size-amplification-percent`` (200): when the runs above the oldest
  hold more than this percentage of its size, everything is merged (full compaction);
- ``compaction.size-ratio`` (1): a run joins the candidates when they are, with this
  percentage of slack, at least as large as it;
- ``target-file-size`` (primary-key tables: 128 mb): the size of the merged files;
- ``num-sorted-run.stop-trigger`` (the compaction trigger + 3, never below it): a
  writer whose bucket holds more sorted runs waits for the running compaction
  (Paimon's ``MergeTreeWriter``: the only backpressure compaction puts on writes);
- ``full-compaction.delta-commits`` (unset): writers fully compact the buckets they
  wrote every so many commits (a batch write: at each commit when it is above 0);
- ``changelog-producer`` (``none``): ``input`` and ``full-compaction`` are produced here
  (``changelog``), ``lookup`` is not; ``changelog-producer.row-deduplicate`` (false)
  drops ``-U``/``+U`` pairs of equal values from a full-compaction changelog.

Modes: ``full`` merges every sorted run of a bucket into one run at the top level
(Paimon's full compaction, as its ``compact`` procedure does for primary-key tables);
``minor`` picks runs with Paimon's universal compaction (``universal.py``), so a
stream can keep level 0 bounded without rewriting whole buckets.

Values are checked before anything is read: a bad one fails with its name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..compaction.options import _required_int, _table_option_map, parse_size
from ..errors import InvalidArgumentError

NUM_LEVELS = "num-levels"
TRIGGER = "num-sorted-run.compaction-trigger"
MAX_SIZE_AMP = "compaction.max-size-amplification-percent"
SIZE_RATIO = "compaction.size-ratio"
TARGET_FILE_SIZE = "target-file-size"
STOP_TRIGGER = "num-sorted-run.stop-trigger"
DELTA_COMMITS = "full-compaction.delta-commits"
KEYS = (NUM_LEVELS, TRIGGER, MAX_SIZE_AMP, SIZE_RATIO, TARGET_FILE_SIZE, STOP_TRIGGER, DELTA_COMMITS)
MODES = ("full", "minor")

DEFAULT_TRIGGER = 5
DEFAULT_MAX_SIZE_AMP = 200
DEFAULT_SIZE_RATIO = 1
DEFAULT_TARGET_FILE_SIZE = 128 * 1024 * 1024  # Paimon's default for primary-key tables


def check_mode(mode: str) -> str:
    """``full`` or ``minor`` (case and blanks ignored); anything else is refused."""
    value = str(mode or "").strip().lower()
    if value not in MODES:
        raise InvalidArgumentError(
            f"compaction mode must be 'full' (every sorted run into one at the top level) or "
            f"'minor' (Paimon's universal compaction picks runs), got {mode!r}"
        )
    return value


@dataclass(frozen=True)
class LsmOptions:
    """The effective settings of one primary-key compaction run."""

    trigger: int = DEFAULT_TRIGGER
    num_levels: int | None = None
    max_size_amp: int = DEFAULT_MAX_SIZE_AMP
    size_ratio: int = DEFAULT_SIZE_RATIO
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE
    stop_trigger_option: int | None = None
    delta_commits: int | None = None

    def __post_init__(self) -> None:
        if self.trigger < 1:
            raise InvalidArgumentError(f"{TRIGGER} must be at least 1, got {self.trigger}")
        if self.num_levels is not None and self.num_levels < 2:
            raise InvalidArgumentError(f"{NUM_LEVELS} must be at least 2, got {self.num_levels}")
        if self.max_size_amp < 0:
            raise InvalidArgumentError(f"{MAX_SIZE_AMP} must not be negative, got {self.max_size_amp}")
        if self.size_ratio < 0:
            raise InvalidArgumentError(f"{SIZE_RATIO} must not be negative, got {self.size_ratio}")
        if self.target_file_size <= 0:
            raise InvalidArgumentError(
                f"{TARGET_FILE_SIZE} must be a positive size, got {self.target_file_size} bytes"
            )
        if self.stop_trigger_option is not None and self.stop_trigger_option < 1:
            raise InvalidArgumentError(f"{STOP_TRIGGER} must be at least 1, got {self.stop_trigger_option}")
        if self.delta_commits is not None and self.delta_commits < 0:
            raise InvalidArgumentError(f"{DELTA_COMMITS} must not be negative, got {self.delta_commits}")

    @property
    def stop_trigger(self) -> int:
        """``num-sorted-run.stop-trigger``, or Paimon's default (the trigger + 3); never below the trigger."""
        given = self.stop_trigger_option if self.stop_trigger_option is not None else self.trigger + 3
        return max(self.trigger, given)

    @property
    def levels(self) -> int:
        """``num-levels``, or Paimon's default: the trigger + 1 (the top level is never 0)."""
        return self.num_levels if self.num_levels is not None else self.trigger + 1

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["levels"] = self.levels
        out["stop_trigger"] = self.stop_trigger
        return out

    @classmethod
    def from_table(cls, table: Any, overrides: Mapping[str, Any] | None = None) -> LsmOptions:
        """Options from ``table``'s own options, then ``overrides`` (same keys) on top."""
        raw = {k: v for k, v in _table_option_map(table).items() if k in KEYS}
        raw.update({k: v for k, v in (overrides or {}).items() if k in KEYS})
        kwargs: dict[str, Any] = {}
        for key, name in ((TRIGGER, "trigger"), (NUM_LEVELS, "num_levels"),
                          (MAX_SIZE_AMP, "max_size_amp"), (SIZE_RATIO, "size_ratio"),
                          (STOP_TRIGGER, "stop_trigger_option"), (DELTA_COMMITS, "delta_commits")):
            if raw.get(key) is not None and str(raw[key]).strip():
                kwargs[name] = _required_int(key, raw[key])
        if raw.get(TARGET_FILE_SIZE) is not None:
            kwargs["target_file_size"] = parse_size(TARGET_FILE_SIZE, raw[TARGET_FILE_SIZE])
        return cls(**kwargs)
