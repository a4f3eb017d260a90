"""The loopback S3 server behaves as the object-storage tests assume."""

from __future__ import annotations

import botocore.exceptions
import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema
from support.pypaimon_writes import commit_arrow


def test_pypaimon_table_round_trips_on_the_loopback_server(s3_warehouse):
    catalog = CatalogFactory.create(s3_warehouse.catalog_options())
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(pa.schema([("id", pa.int64())])), False)
    table = catalog.get_table("db.t")
    for start in (0, 3):
        commit_arrow(table, pa.table({"id": list(range(start, start + 3))}))
    read = table.new_read_builder()
    ids = sorted(read.new_read().to_arrow(read.new_scan().plan().splits()).column("id").to_pylist())
    assert ids == list(range(6))
    keys = s3_warehouse.object_keys("warehouse/db.db/t/")
    assert "warehouse/db.db/t/snapshot/snapshot-2" in keys
    assert sum(k.endswith(".parquet") for k in keys) == 2


def test_conditional_put_refuses_an_existing_key(s3_warehouse):
    client = s3_warehouse.server.client()
    client.put_object(Bucket=s3_warehouse.bucket, Key="k", Body=b"first", IfNoneMatch="*")
    with pytest.raises(botocore.exceptions.ClientError) as err:
        client.put_object(Bucket=s3_warehouse.bucket, Key="k", Body=b"second", IfNoneMatch="*")
    assert err.value.response["Error"]["Code"] == "PreconditionFailed"
    assert client.get_object(Bucket=s3_warehouse.bucket, Key="k")["Body"].read() == b"first"


def test_racing_conditional_puts_have_one_winner(s3_warehouse):
    """As on S3, the check and the write are one step: of 8 racing creators one wins.

    moto alone checks, then stores, with requests on parallel threads (two winners were
    seen); the tests' server serializes conditional writes (tests/moto_atomic_server.py).
    """
    import threading
    from concurrent.futures import ThreadPoolExecutor

    clients = [s3_warehouse.server.client() for _ in range(8)]
    for round_ in range(15):
        barrier = threading.Barrier(len(clients))

        def put(i: int, key: str = f"race-{round_}", barrier: threading.Barrier = barrier) -> str:
            barrier.wait(timeout=30)
            try:
                clients[i].put_object(Bucket=s3_warehouse.bucket, Key=key, Body=str(i).encode(), IfNoneMatch="*")
            except botocore.exceptions.ClientError as err:
                return str(err.response["Error"]["Code"])
            return "won"

        with ThreadPoolExecutor(len(clients)) as pool:
            outcomes = list(pool.map(put, range(len(clients))))
        won = [i for i, outcome in enumerate(outcomes) if outcome == "won"]
        assert len(won) == 1, (round_, outcomes)
        assert set(outcomes) <= {"won", "PreconditionFailed", "ConditionalRequestConflict"}, outcomes
        body = clients[0].get_object(Bucket=s3_warehouse.bucket, Key=f"race-{round_}")["Body"].read()
        assert body == str(won[0]).encode()
