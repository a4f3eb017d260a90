"""Changelog producers of primary-key tables, held to Paimon Java's rules on random feeds.

In-process: commits are written with pypaimon's table write as the data source's
tasks write them (``use_input_changelog``), compactions run in-process, and each
snapshot's changes are read with the stream source's own planning and reading
(``changes.py``). Expected changes come from the reference model:

- ``input``: a commit's changelog is every row it was given (retracts that
  ``ignore-delete`` drops excluded), sorted by key, then ``sequence.field``, then
  arrival, as Paimon Java's write buffer hands them to the changelog writer;
- ``full-compaction``: each full compaction's changelog is the difference between the
  state the previous one left and the state now, for the keys written since
  (``+I`` new, ``-D`` gone, ``-U`` old then ``+U`` new, also when equal unless
  ``changelog-producer.row-deduplicate``); a key not written since has no change.
- ``none``: a stream reads the rows each APPEND snapshot added, as its writer merged
  them (one version per key and commit), with their kinds; COMPACT snapshots are
  skipped.

Every state is also read by plain pypaimon and by pypaimon-rust.
"""

from __future__ import annotations

import random

import pytest
from independent_reader import rust_rows

from airflow_provider_paimon.paimon.lsm.compact import compact_primary_keys

from . import tables
from .changes import changes_of
from .scenarios import FIELDS, KEYS, Feed, model_for, seed_for, steps
from .tables import write


def key_of(row) -> tuple:
    return tuple(row[k] for k in KEYS)


def as_change(kind: str, row) -> tuple:
    return (kind, *(row[f] for f in FIELDS))


def input_changes(model, rows) -> list[tuple]:
    """The raw changelog of one commit: Java's write-buffer order, retracts ``ignore-delete`` drops left out."""
    kept = [(i, r) for i, r in enumerate(rows)
            if not (model.ignore_delete and r["op"] in ("-U", "-D"))]

    def order(item):
        i, r = item
        seq = tuple(r[f] for f in model.sequence_fields)
        return (key_of(r), tuple(-v for v in seq) if model.descending else seq, i)

    return [as_change(r["op"], r) for _i, r in sorted(kept, key=order)]


@pytest.mark.parametrize("variant", ["deduplicate", "deduplicate-seq-desc", "partial-update",
                                     "first-row-ignore-delete"])
def test_input_changelog_is_every_row_given_in_write_buffer_order(warehouse, variant):
    seed = seed_for(variant)
    model = model_for(variant, {"changelog-producer": "input"})
    tables.create(warehouse, "db.t", variant, {"changelog-producer": "input"})
    last = 0
    for n, rows in enumerate(Feed(model, seed).commits(steps() // 3)):
        write(tables.reload(warehouse, "db.t"), rows)
        model.commit(rows)
        table = tables.reload(warehouse, "db.t")
        snapshot = table.snapshot_manager().get_latest_snapshot()
        where = f"variant {variant} seed {seed} commit {n}"
        expected = input_changes(model, rows)
        if not expected:  # every row dropped by ignore-delete: nothing committed
            assert snapshot is None or snapshot.id == last, where
            continue
        last = snapshot.id
        assert changes_of(table, snapshot.id) == expected, where
        if n % 7 == 3:  # a COMPACT snapshot has no changelog: a stream skips it
            assert compact_primary_keys(table, "full").committed
            table = tables.reload(warehouse, "db.t")
            last = table.snapshot_manager().get_latest_snapshot().id
            assert changes_of(table, last) == [], where
            model.compacted(list(model.history))
    table = tables.reload(warehouse, "db.t")
    compact_primary_keys(table, "full")
    assert tables.read(tables.reload(warehouse, "db.t")) == model.rows()
    assert rust_rows(warehouse, "db.t") == model.rows()


def full_compaction_changes(model, before: dict, touched: set, dedup: bool) -> list[tuple]:
    """What a full compaction emits, from the model's state before it and now."""
    out = []
    for key in sorted(touched | set(before)):
        if key not in touched:
            continue
        old, new = before.get(key), model.merged(key)
        if old is not None and new is None:
            out.append(as_change("-D", old))
        elif old is None and new is not None:
            out.append(as_change("+I", new))
        elif old is not None and new is not None and not (dedup and old == new):
            out += [as_change("-U", old), as_change("+U", new)]
    return out


def state(model) -> dict:
    return {key: model.merged(key) for key in model.history if model.merged(key) is not None}


@pytest.mark.parametrize(
    ("variant", "dedup"),
    [("deduplicate", False), ("deduplicate-seq", True), ("partial-update", False), ("aggregation", False),
     ("first-row", False)],
)
def test_full_compaction_changelog_is_the_change_of_the_top_level(warehouse, variant, dedup):
    seed = seed_for(variant)
    rng = random.Random(seed + 7)
    extra = {"changelog-producer": "full-compaction", "changelog-producer.row-deduplicate": str(dedup).lower()}
    model = model_for(variant, extra)
    tables.create(warehouse, "db.t", variant, extra)
    before: dict = {}
    touched: set = set()
    compactions = 0
    commits = Feed(model, seed).commits(steps() // 3)
    for n, rows in enumerate(commits):
        write(tables.reload(warehouse, "db.t"), rows)
        model.commit(rows)
        touched |= {key_of(r) for r in rows if not (model.ignore_delete and r["op"] in ("-U", "-D"))}
        table = tables.reload(warehouse, "db.t")
        assert changes_of(table, table.snapshot_manager().get_latest_snapshot().id) == []  # APPEND: none
        # about every third commit, and at the last one if the draw gave none (few commits)
        if rng.random() < 0.3 or (n == len(commits) - 1 and not compactions):
            result = compact_primary_keys(table, "full")
            compactions += 1
            table = tables.reload(warehouse, "db.t")
            where = f"variant {variant} seed {seed} commit {n}: {result.message}"
            got = changes_of(table, result.snapshot_id)
            assert got == full_compaction_changes(model, before, touched, dedup), where
            assert result.extra["changelog_rows"] == len(got)
            model.compacted(list(model.history))
            before, touched = state(model), set()
            assert tables.read(table) == model.rows(), where
    assert compactions, f"seed {seed}: no compaction ran"
    assert rust_rows(warehouse, "db.t") == tables.read(tables.reload(warehouse, "db.t"))


def test_without_a_producer_a_stream_reads_what_each_commit_added(warehouse):
    """``none``: each APPEND snapshot's rows as its writer merged them, with their kinds."""
    variant = "deduplicate-seq"
    seed = seed_for(variant)
    model = model_for(variant)
    tables.create(warehouse, "db.t", variant)
    for n, rows in enumerate(Feed(model, seed).commits(steps() // 5)):
        write(tables.reload(warehouse, "db.t"), rows)
        table = tables.reload(warehouse, "db.t")
        merged: dict = {}
        for _i, r in sorted(enumerate(rows), key=lambda item: (key_of(item[1]), item[1]["ts"], item[0])):
            merged[key_of(r)] = r  # deduplicate: the key's last version of the commit
        expected = [as_change(r["op"], r) for _k, r in sorted(merged.items())]
        assert changes_of(table, table.snapshot_manager().get_latest_snapshot().id) == expected, f"seed {seed} commit {n}"
        if n % 4 == 1:
            assert compact_primary_keys(table, "full").committed
            table = tables.reload(warehouse, "db.t")
            assert changes_of(table, table.snapshot_manager().get_latest_snapshot().id) == []
