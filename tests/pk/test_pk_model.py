"""Plain pypaimon writes random CDC feeds; every commit reads back as the reference model says.

This pins down what Paimon's primary-key semantics are here (the model is transcribed
from Paimon Java, not from pypaimon), for every merge engine pypaimon reads, before the
Spark sinks and the compaction are held to the same model.
"""

from __future__ import annotations

import pytest
from independent_reader import rust_rows

from . import tables
from .scenarios import MODEL_TESTS_STEPS, READS_LEVEL0, Feed, model_for, seed_for, steps


@pytest.mark.parametrize("variant", sorted(READS_LEVEL0))
def test_pypaimon_writes_match_the_model(warehouse, variant):
    seed = seed_for(variant)
    model = model_for(variant)
    table = tables.create(warehouse, "db.t", variant)
    feed = Feed(model, seed)
    reader = tables.Reader()  # each split read once (tables.Reader): the check is the same
    # without compaction every commit adds files that each later read merges: half the rows
    for n, rows in enumerate(feed.commits(steps(MODEL_TESTS_STEPS) // 2)):
        tables.write(table, rows)
        model.commit(rows)
        got = reader.read(tables.reload(warehouse, "db.t"))
        assert got == model.rows(), f"variant {variant} seed {seed}: commit {n} ({rows}) differs"
    assert rust_rows(warehouse, "db.t") == model.rows(), f"variant {variant} seed {seed}: pypaimon-rust"
