"""Paimon's universal compaction picker (``UniversalCompaction.java``), transcribed.

Given a bucket's sorted runs (newest first, ``levels.sorted_runs``) it picks the runs
to merge and the level the result goes to, or nothing:

1. size amplification: with at least ``trigger`` runs, when the runs above the oldest
   are more than ``max-size-amplification-percent`` of the oldest, all runs are merged
   to the top level;
2. size ratio: with at least ``trigger`` runs, starting from the newest run, the next
   run joins while the candidates' size (with ``size-ratio`` percent of slack) is at
   least its size (a larger run at level > 1 always stops it);
3. run count: with more than ``trigger`` runs, at least ``runs - trigger + 1`` of the
   newest runs are merged, more by the size-ratio rule.

The output level is the top level when every run is picked, else the level of the
first run left out minus one; level 0 is never an output (the pick grows to the next
non-level-0 run). Paimon's early full compaction (``compaction.optimization-interval``
and the size thresholds) and off-peak ratios are writer-side schedules and are not
taken here. The same picker, with every run, gives a full compaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .levels import SortedRun


@dataclass(frozen=True)
class CompactUnit:
    """Runs to merge (newest first) and the level their result is written to."""

    output_level: int
    runs: tuple

    @property
    def files(self) -> list:
        return [f for run in self.runs for f in run.files]


def pick(num_levels: int, runs: Sequence[SortedRun], trigger: int, max_size_amp: int,
         size_ratio: int, force_level0: bool = False) -> CompactUnit | None:
    """``UniversalCompaction.pick``, then the compact manager's filter: a unit of one
    file already at its output level is no compaction.

    ``force_level0``: ``ForceUpLevel0Compaction`` (Paimon's strategy when reads skip
    level 0, as first-row's do): when the picker finds nothing, all level-0 runs are
    merged up anyway (``forcePickL0``), so every write becomes visible.
    """
    unit = _pick(num_levels - 1, list(runs), trigger, max_size_amp, size_ratio)
    if unit is None and force_level0:
        level0 = 0
        while level0 < len(runs) and runs[level0].level == 0:
            level0 += 1
        if level0:
            unit = _size_ratio(num_levels - 1, list(runs), level0, size_ratio, force_pick=True)
    if unit is None or not unit.files:
        return None
    if len(unit.files) == 1 and unit.files[0].level == unit.output_level:
        return None
    return unit


def pick_full(num_levels: int, runs: Sequence[SortedRun]) -> CompactUnit | None:
    """Every run into one at the top level (``CompactStrategy.pickFullCompaction``);
    nothing when the bucket already is one sorted run at the top level (its files
    never overlap: rewriting them would change nothing)."""
    max_level = num_levels - 1
    if not runs:
        return None
    if len(runs) == 1 and runs[0].level == max_level:
        return None
    return CompactUnit(max_level, tuple(runs))


def _pick(max_level: int, runs: list[SortedRun], trigger: int, max_size_amp: int,
          size_ratio: int) -> CompactUnit | None:
    unit = _pick_for_size_amp(max_level, runs, trigger, max_size_amp)
    if unit is not None:
        return unit
    unit = _pick_for_size_ratio(max_level, runs, trigger, size_ratio)
    if unit is not None:
        return unit
    if len(runs) > trigger:
        return _size_ratio(max_level, runs, len(runs) - trigger + 1, size_ratio)
    return None


def _pick_for_size_amp(max_level: int, runs: list[SortedRun], trigger: int,
                       max_size_amp: int) -> CompactUnit | None:
    if len(runs) < trigger:
        return None
    candidate_size = sum(r.total_size for r in runs[:-1])
    earliest_size = runs[-1].total_size
    if candidate_size * 100 > max_size_amp * earliest_size:
        return CompactUnit(max_level, tuple(runs))
    return None


def _pick_for_size_ratio(max_level: int, runs: list[SortedRun], trigger: int,
                         size_ratio: int) -> CompactUnit | None:
    if len(runs) < trigger:
        return None
    return _size_ratio(max_level, runs, 1, size_ratio)


def _size_ratio(max_level: int, runs: list[SortedRun], candidate_count: int, size_ratio: int,
                force_pick: bool = False) -> CompactUnit | None:
    candidate_size = sum(r.total_size for r in runs[:candidate_count])
    triggered = force_pick or candidate_count > 1
    for i in range(candidate_count, len(runs)):
        nxt = runs[i]
        bigger = candidate_size * (100.0 + size_ratio) / 100.0 < nxt.total_size
        if bigger and (not triggered or nxt.level > 1):
            break
        candidate_size += nxt.total_size
        candidate_count += 1
        triggered = True
    return _create_unit(runs, max_level, candidate_count) if triggered else None


def _create_unit(runs: list[SortedRun], max_level: int, run_count: int) -> CompactUnit:
    # all runs: the top level; else the level of the next run - 1
    output_level = max_level if run_count == len(runs) else max(0, runs[run_count].level - 1)
    if output_level == 0:  # never output level 0
        for i in range(run_count, len(runs)):
            nxt = runs[i]
            run_count += 1
            if nxt.level != 0:
                output_level = nxt.level
                break
    if run_count == len(runs):
        output_level = max_level
    return CompactUnit(output_level, tuple(runs[:run_count]))
