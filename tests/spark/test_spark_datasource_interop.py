"""Tables written by plain pypaimon read the same through Spark, and the other way round."""

from __future__ import annotations

import pyarrow as pa
import pytest

pytestmark = pytest.mark.spark

T = "db.interop"
ARROW = pa.schema(
    [pa.field("k", pa.int32(), nullable=False), ("region", pa.string()), ("amount", pa.float64())]
)

LAYOUTS = {
    "unpartitioned": {},
    "partitioned": {"partition_keys": ["region"]},
    "primary-key": {"primary_keys": ["k"], "options": {"bucket": "2"}},
}


def _data(start: int, n: int) -> pa.Table:
    ks = list(range(start, start + n))
    return pa.table(
        {"k": ks, "region": [["eu", "us", "apac"][k % 3] for k in ks], "amount": [k * 0.5 for k in ks]},
        schema=ARROW,
    )


def _tuples(table: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_pypaimon_to_spark_and_spark_to_pypaimon(spark, paimon_io, probe, layout):
    read, write = paimon_io
    probe.create(T, ARROW, **LAYOUTS[layout])
    probe.write_arrow(T, _data(0, 30))

    # written by pypaimon, read by Spark
    assert sorted(tuple(r) for r in read(T).collect()) == _tuples(_data(0, 30))

    # written by Spark (rows 20..39: for the PK table 20..29 are updates), read by pypaimon
    update = _data(20, 20).to_pandas()
    update["amount"] = update["amount"] + 1000
    write(spark.createDataFrame(update, "k INT, region STRING, amount DOUBLE"), T)
    got = _tuples(probe.read_arrow(T))
    spark_rows = [(k, r, a + 1000) for k, r, a in _tuples(_data(20, 20))]
    if layout == "primary-key":
        expected = sorted([row for row in _tuples(_data(0, 20))] + spark_rows)
    else:
        expected = sorted(_tuples(_data(0, 30)) + spark_rows)
    assert got == expected
    assert probe.snapshot_ids(T) == [1, 2]
