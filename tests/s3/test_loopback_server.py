"""The loopback S3 server behaves as the object-storage tests assume."""

from __future__ import annotations

import botocore.exceptions
import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema


def test_pypaimon_table_round_trips_on_the_loopback_server(s3_warehouse):
    catalog = CatalogFactory.create(s3_warehouse.catalog_options())
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(pa.schema([("id", pa.int64())])), False)
    table = catalog.get_table("db.t")
    for start in (0, 3):
        builder = table.new_batch_write_builder()
        write = builder.new_write()
        write.write_arrow(pa.table({"id": list(range(start, start + 3))}))
        builder.new_commit().commit(write.prepare_commit())
        write.close()
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
