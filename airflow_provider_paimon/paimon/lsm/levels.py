"""The LSM tree of one bucket: its levels and sorted runs, as Paimon's ``Levels`` sees them.

Level 0 holds one sorted run per file (a write's flush), newest first: larger
``maxSequenceNumber`` first, then smaller ``minSequenceNumber``, creation time and file
name (``Levels``' level-0 order). Every higher level is one sorted run of files whose
key ranges do not overlap. The number of levels is the configured one, or more when
files already sit higher (``Levels``: ``max(numLevels, max file level + 1)``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cmp_to_key
from typing import Any

from pypaimon.read.interval_partition import default_key_comparator


@dataclass(frozen=True)
class SortedRun:
    """One sorted run: a level-0 file, or all files of a higher level (by key)."""

    level: int
    files: tuple

    @property
    def total_size(self) -> int:
        return sum(f.file_size for f in self.files)


def _level0_order(f: Any) -> tuple:
    created = f.creation_time_epoch_millis() if f.creation_time else 0
    return (-f.max_sequence_number, f.min_sequence_number, created, f.file_name)


def _compare_min_keys(a: Any, b: Any) -> int:
    return int(default_key_comparator(a.min_key, b.min_key))


def by_min_key(files: Iterable[Any]) -> list[Any]:
    return sorted(files, key=cmp_to_key(_compare_min_keys))


def number_of_levels(files: Sequence[Any], configured: int) -> int:
    return max(configured, max((f.level for f in files), default=-1) + 1)


def sorted_runs(files: Sequence[Any]) -> list[SortedRun]:
    """``Levels.levelSortedRuns()``: level-0 files newest first, then levels 1, 2, ..."""
    runs = [SortedRun(0, (f,)) for f in sorted((f for f in files if f.level == 0), key=_level0_order)]
    for level in sorted({f.level for f in files if f.level > 0}):
        runs.append(SortedRun(level, tuple(by_min_key(f for f in files if f.level == level))))
    return runs


def non_empty_highest_level(files: Sequence[Any]) -> int:
    """``Levels.nonEmptyHighestLevel()``: -1 for an empty bucket."""
    return max((f.level for f in files), default=-1)


def overlapping(files: Sequence[Any]) -> tuple[Any, Any] | None:
    """Two files of one level whose key ranges overlap (a broken sorted run), or None."""
    ordered = by_min_key(files)
    for a, b in itertools.pairwise(ordered):
        if default_key_comparator(a.max_key, b.min_key) >= 0:
            return a, b
    return None
