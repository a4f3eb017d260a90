"""Random CDC feeds for primary-key tables, and the table variants the model tests run.

A feed is a list of commits, each a list of rows in order: upserts (``+I``/``+U``),
deletes (``-D``), update pairs (``-U`` then ``+U``) and, for tables with a
``sequence.field``, late rows (a sequence value below what the key already has) and
ties. Engines that cannot take deletes get none (their refusal is tested apart).

``PAIMON_PK_MODEL_STEPS`` (rows per variant) scales every model test; unset, the
suite runs 120 (``steps()``), and the two reference-model files (test_pk_model,
test_pk_compaction_model) run ``MODEL_TESTS_STEPS`` = 300 per engine variant (the
issue's "a few hundred"): they read each split of the table once (``tables.Reader``)
and decode each data file once (``kept_files``), and the compaction's sweep and commit
got cheaper, so 300 steps cost about 110 s of CPU for both files (docs/primary_keys.md).
Seeds are new every run, so runs add up; a deep run is
``PAIMON_PK_MODEL_STEPS=600 bash scripts/test.sh tests/pk``. Cost: the model tests
read the table after every commit; without compaction a bucket's files grow with the
history, so test_pk_model costs more than linearly.
``PAIMON_PK_MODEL_SEED`` fixes the seed; every model test prints the one it used, so a
failure's output names it.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pyarrow as pa

from .model import PkModel

SCHEMA = pa.schema(
    [
        pa.field("p", pa.string(), nullable=False),
        pa.field("k", pa.int32(), nullable=False),
        ("v", pa.string()),
        ("n", pa.int64()),
        ("m", pa.float64()),
        ("ts", pa.int64()),
        ("op", pa.string()),
    ]
)
FIELDS = SCHEMA.names
KEYS = ["p", "k"]
PARTITION_KEYS = ["p"]
BASE_OPTIONS = {"bucket": "2", "rowkind.field": "op"}

VARIANTS: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "deduplicate-seq": {"sequence.field": "ts"},
    "deduplicate-seq-desc": {"sequence.field": "ts", "sequence.field.sort-order": "descending"},
    "deduplicate-ignore-delete": {"ignore-delete": "true"},
    "partial-update": {"merge-engine": "partial-update"},
    "partial-update-seq": {"merge-engine": "partial-update", "sequence.field": "ts"},
    "aggregation": {
        "merge-engine": "aggregation",
        "fields.n.aggregate-function": "sum",
        "fields.m.aggregate-function": "max",
        "fields.v.aggregate-function": "listagg",
        "fields.ts.aggregate-function": "min",
    },
    "aggregation-seq": {
        "merge-engine": "aggregation",
        "sequence.field": "ts",
        "fields.n.aggregate-function": "sum",
        "fields.m.aggregate-function": "min",
        "fields.v.aggregate-function": "max",
    },
    "first-row": {"merge-engine": "first-row"},
    "first-row-ignore-delete": {"merge-engine": "first-row", "ignore-delete": "true"},
}
# Variants whose batch reads see level-0 files: first-row reads skip level 0 (as
# Paimon Java's do: its writers compact first-row tables at every commit), so those
# are checked after compaction.
READS_LEVEL0 = {name for name, opts in VARIANTS.items() if opts.get("merge-engine") != "first-row"}


#: steps of test_pk_model and test_pk_compaction_model when PAIMON_PK_MODEL_STEPS is unset
MODEL_TESTS_STEPS = 300


def steps(default: int = 120) -> int:
    return int(os.environ.get("PAIMON_PK_MODEL_STEPS", str(default)))


def seed_for(name: str) -> int:
    """The test's seed, printed: pytest shows a failed test's output, so every failure
    (an assertion without the seed in its message, an exception) says how to replay it."""
    fixed = os.environ.get("PAIMON_PK_MODEL_SEED")
    seed = int(fixed) if fixed else random.SystemRandom().randrange(1 << 30)
    print(f"{name}: seed {seed} (replay: PAIMON_PK_MODEL_SEED={seed}, same PAIMON_PK_MODEL_STEPS)")
    return seed


def table_options(variant: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**BASE_OPTIONS, **VARIANTS[variant], **(extra or {})}


def model_for(variant: str, extra: dict[str, str] | None = None) -> PkModel:
    return PkModel.for_options(FIELDS, KEYS, table_options(variant, extra))


class Feed:
    """Random commits for one table variant (deterministic per seed)."""

    def __init__(self, model: PkModel, seed: int, keys_per_partition: int = 12,
                 max_rows_per_commit: int = 8, partitions: tuple[str, ...] = ("a", "b")) -> None:
        self.model = model
        self.rng = random.Random(seed)
        self.keys = [(p, k) for p in partitions for k in range(keys_per_partition)]
        self.max_rows = max_rows_per_commit
        self.clock = 0  # the sequence field's "now"
        self.deletes = model.engine == "deduplicate" or model.ignore_delete
        self.sequenced = bool(model.sequence_fields)

    def _values(self) -> dict[str, Any]:
        r = self.rng
        return {
            "v": r.choice([None, "a", "b", "c", "d", "e"]),
            "n": r.choice([None, r.randint(-5, 100)]),
            "m": r.choice([None, round(r.uniform(-10, 10), 3)]),
        }

    def _ts(self) -> int:
        r = self.rng.random()
        if self.sequenced and r < 0.2 and self.clock > 1:
            return self.rng.randint(0, self.clock - 1)  # late row
        if self.sequenced and r < 0.3:
            return self.clock  # a tie: arrival decides
        self.clock += 1
        return self.clock

    def _row(self, key: tuple, kind: str) -> dict[str, Any]:
        return {"p": key[0], "k": key[1], **self._values(), "ts": self._ts(), "op": kind}

    def commit(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        while len(rows) < self.rng.randint(1, self.max_rows):
            key = self.rng.choice(self.keys)
            roll = self.rng.random()
            if self.deletes and roll < 0.15:
                rows.append(self._row(key, "-D"))
            elif self.deletes and roll < 0.25:
                rows.append(self._row(key, "-U"))
                rows.append(self._row(key, "+U"))
            else:
                rows.append(self._row(key, self.rng.choice(["+I", "+U"])))
        return rows

    def commits(self, total_rows: int) -> list[list[dict[str, Any]]]:
        out: list[list[dict[str, Any]]] = []
        written = 0
        while written < total_rows:
            rows = self.commit()
            out.append(rows)
            written += len(rows)
        return out


def arrow_rows(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def as_tuples(table: pa.Table) -> list[tuple]:
    """Rows of ``table`` as tuples in ``FIELDS`` order, sorted like ``PkModel.rows()``."""
    table = table.select(FIELDS)
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return sorted(zip(*columns, strict=True), key=repr) if columns else []
