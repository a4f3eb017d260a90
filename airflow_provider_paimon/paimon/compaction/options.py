"""Compaction options: read from the table, overridable per run, validated up front.

The keys and defaults are Paimon's own (``CoreOptions``) so a table tuned for Paimon
Java compacts the same way here:

- ``target-file-size`` (append tables: 256 mb): size the merged files aim for;
- ``compaction.small-file-ratio`` (0.7): a file smaller than
  ``target-file-size x ratio`` is a compaction candidate;
- ``compaction.min.file-num`` (5): a partition's (or bucket's) leftover candidates
  that do not fill a bin are compacted only when there are at least this many;
- ``source.split.open-file-cost`` (4 mb): the cost of opening a file, added to each
  file's size while packing bins, so many tiny files fill a bin sooner.

Validation happens before anything is read or written, so nonsensical values
(negative sizes, a zero minimum file count) fail with a clear message and leave the
table untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from pypaimon.common.memory_size import MemorySize

from ..errors import InvalidArgumentError
from ..option_values import parse_int

TARGET_FILE_SIZE = "target-file-size"
SMALL_FILE_RATIO = "compaction.small-file-ratio"
MIN_FILE_NUM = "compaction.min.file-num"
OPEN_FILE_COST = "source.split.open-file-cost"

DEFAULT_TARGET_FILE_SIZE = 256 * 1024 * 1024  # Paimon's default for append tables
DEFAULT_SMALL_FILE_RATIO = 0.7
DEFAULT_MIN_FILE_NUM = 5
DEFAULT_OPEN_FILE_COST = 4 * 1024 * 1024

KEYS = (TARGET_FILE_SIZE, SMALL_FILE_RATIO, MIN_FILE_NUM, OPEN_FILE_COST)


@dataclass(frozen=True)
class CompactionOptions:
    """The effective settings of one compaction run (all sizes in bytes)."""

    target_file_size: int = DEFAULT_TARGET_FILE_SIZE
    small_file_ratio: float = DEFAULT_SMALL_FILE_RATIO
    min_file_num: int = DEFAULT_MIN_FILE_NUM
    open_file_cost: int = DEFAULT_OPEN_FILE_COST

    def __post_init__(self) -> None:
        if self.target_file_size <= 0:
            raise InvalidArgumentError(
                f"{TARGET_FILE_SIZE} must be a positive size, got {self.target_file_size} bytes"
            )
        if not 0 < self.small_file_ratio <= 1:
            raise InvalidArgumentError(
                f"{SMALL_FILE_RATIO} must be in (0, 1], got {self.small_file_ratio}"
            )
        if self.min_file_num < 1:
            raise InvalidArgumentError(
                f"{MIN_FILE_NUM} must be at least 1, got {self.min_file_num}"
            )
        if self.open_file_cost < 0:
            raise InvalidArgumentError(
                f"{OPEN_FILE_COST} must not be negative, got {self.open_file_cost} bytes"
            )

    @property
    def compaction_file_size(self) -> int:
        """Files strictly smaller than this are candidates (Paimon's ``compactionFileSize``)."""
        return int(self.target_file_size * self.small_file_ratio)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["compaction_file_size"] = self.compaction_file_size
        return out

    @classmethod
    def from_table(
        cls, table: Any, overrides: Mapping[str, Any] | None = None
    ) -> CompactionOptions:
        """Options from ``table``'s own options, then ``overrides`` (same keys) on top."""
        raw: dict[str, Any] = {}
        table_options = _table_option_map(table)
        raw.update({k: v for k, v in table_options.items() if k in KEYS})
        raw.update({k: v for k, v in (overrides or {}).items() if k in KEYS})
        return cls.from_mapping(raw)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> CompactionOptions:
        """Parse Paimon-style option strings (``"128 mb"``, ``"0.5"``, ``"3"``)."""
        kwargs: dict[str, Any] = {}
        if raw.get(TARGET_FILE_SIZE) is not None:
            kwargs["target_file_size"] = parse_size(TARGET_FILE_SIZE, raw[TARGET_FILE_SIZE])
        if raw.get(SMALL_FILE_RATIO) is not None:
            kwargs["small_file_ratio"] = _parse_number(SMALL_FILE_RATIO, raw[SMALL_FILE_RATIO], float)
        if raw.get(MIN_FILE_NUM) is not None:
            kwargs["min_file_num"] = _required_int(MIN_FILE_NUM, raw[MIN_FILE_NUM])
        if raw.get(OPEN_FILE_COST) is not None:
            kwargs["open_file_cost"] = parse_size(OPEN_FILE_COST, raw[OPEN_FILE_COST])
        return cls(**kwargs)


def parse_size(key: str, value: Any) -> int:
    """``"128 mb"`` / ``"1kb"`` / ``4096`` -> bytes; negative or garbled -> clear error."""
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{key} must be a size such as '128 mb', got {value!r}")
    if isinstance(value, int):
        size = value
    else:
        text = str(value).strip()
        if text.startswith("-"):
            raise InvalidArgumentError(f"{key} must not be negative, got {value!r}")
        try:
            size = MemorySize.parse(text).get_bytes()
        except (ValueError, TypeError):
            raise InvalidArgumentError(
                f"{key} must be a size such as '128 mb', '64kb' or '1048576', got {value!r}"
            ) from None
    if size < 0:
        raise InvalidArgumentError(f"{key} must not be negative, got {value!r}")
    return size


def _parse_number(key: str, value: Any, kind: type) -> Any:
    try:
        return kind(str(value).strip())
    except ValueError:
        raise InvalidArgumentError(f"{key} must be a number, got {value!r}") from None


def _required_int(key: str, value: Any) -> int:
    """The project's one integer parser (``option_values.parse_int``); blank is refused too."""
    number = parse_int(value, key)
    if number is None:
        raise InvalidArgumentError(f"{key} must be an integer, got {value!r}")
    return number


def _table_option_map(table: Any) -> dict[str, str]:
    """The table's options as plain strings (pypaimon keeps them in ``table.options``)."""
    options = getattr(table, "options", None)
    inner = getattr(options, "options", None)
    if inner is not None and hasattr(inner, "to_map"):
        return dict(inner.to_map())
    if inner is not None and hasattr(inner, "data"):
        return dict(inner.data)
    schema = getattr(table, "table_schema", None)
    return dict(getattr(schema, "options", {}) or {})
