"""Compaction of primary-key tables, held to the reference model after every step.

Random CDC feeds per merge engine are written with plain pypaimon; after random
commits the table is compacted in-process, fully or with Paimon's universal picker
(``num-sorted-run.compaction-trigger`` 3, tiny target files so levels hold several
files). After every commit and every compaction plain pypaimon reads what the model
says; the LSM tree stays valid (levels above 0 are sorted runs; first-row keys live
in one of them); pypaimon-rust reads the same rows. First-row tables are read only
after compactions: their batch reads skip level 0, as Paimon's do.

Where a compaction drops deletes (its output is the oldest data of a bucket), the
model forgets them too (``PkModel.compacted``). Variants whose merge depends on order
with late rows (partial-update with a ``sequence.field``) are compacted fully only.
"""

from __future__ import annotations

import random

import pytest
from independent_reader import rust_rows

from airflow_provider_paimon.paimon.lsm.compact import compact_primary_keys, plan_lsm_compaction
from airflow_provider_paimon.paimon.lsm.options import LsmOptions

from . import lsm_checks, tables
from .scenarios import MODEL_TESTS_STEPS, READS_LEVEL0, VARIANTS, Feed, model_for, seed_for, steps

SMALL_LSM = {"num-sorted-run.compaction-trigger": "3", "target-file-size": "2kb"}
FULL_ONLY = {"partial-update-seq"}


def compact_and_follow(warehouse: str, model, mode: str) -> dict:
    table = tables.reload(warehouse, "db.t")
    plan = plan_lsm_compaction(table, mode, LsmOptions.from_table(table))
    dropping = {(u.partition, u.bucket) for u in plan.units if u.drop_delete}
    keys = lsm_checks.keys_of_buckets(table, dropping)
    result = compact_primary_keys(table, mode)
    assert result.extra["buckets"] == plan.buckets and result.bins == len(plan.units)
    model.compacted(keys)
    return result.to_dict()


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_compaction_keeps_what_the_model_reads(warehouse, variant):
    seed = seed_for(variant)
    rng = random.Random(seed + 1)
    model = model_for(variant, SMALL_LSM)
    tables.create(warehouse, "db.t", variant, SMALL_LSM)
    first_row = variant not in READS_LEVEL0
    compactions = 0
    reader = tables.Reader()  # each split read once (tables.Reader): the checks are the same
    for n, rows in enumerate(Feed(model, seed).commits(steps(MODEL_TESTS_STEPS))):
        tables.write(tables.reload(warehouse, "db.t"), rows)
        model.commit(rows)
        where = f"variant {variant} seed {seed} commit {n}"
        if not first_row:
            assert reader.read(tables.reload(warehouse, "db.t")) == model.rows(), where
        if rng.random() < 0.3:
            mode = "full" if variant in FULL_ONLY or rng.random() < 0.4 else "minor"
            result = compact_and_follow(warehouse, model, mode)
            compactions += 1
            table = tables.reload(warehouse, "db.t")
            assert reader.read(table) == model.rows(), f"{where}: after {mode} compaction {result}"
            lsm_checks.check_levels(table, first_row)
            if compactions % 5 == 0:
                assert rust_rows(warehouse, "db.t") == model.rows(), f"{where}: pypaimon-rust"
    compact_and_follow(warehouse, model, "full")
    table = tables.reload(warehouse, "db.t")
    assert reader.read(table) == model.rows(), f"variant {variant} seed {seed}: final full compaction"
    assert rust_rows(warehouse, "db.t") == model.rows(), f"variant {variant} seed {seed}: pypaimon-rust"
    lsm_checks.check_levels(table, first_row)
    levels = {f.level for files in lsm_checks.buckets(table).values() for f in files}
    assert levels <= {3}, levels  # everything at the top level: num-levels = trigger + 1
