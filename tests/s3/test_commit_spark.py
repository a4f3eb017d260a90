"""Spark data source appends racing on S3: the driver commits through the commit-safe catalog."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from commit_race import create_table, read_ids
from s3support import ACCESS_KEY, SECRET_KEY

pytestmark = pytest.mark.spark
JOBS = 2


def _spark_options(s3_warehouse) -> dict[str, str]:
    """The warehouse's options as a data source takes them.

    Spark lower-cases data source option keys, so pypaimon's camel-case
    ``fs.s3.accessKeyId`` would be lost; its ``access-key``/``secret-key`` spellings are not.
    """
    options = {k: v for k, v in s3_warehouse.options.items() if "accessKey" not in k}
    return {
        "warehouse": s3_warehouse.uri,
        "table": "db.t",
        **options,
        "fs.s3.access-key": ACCESS_KEY,
        "fs.s3.secret-key": SECRET_KEY,
    }


def test_concurrent_spark_appends_on_s3_keep_every_row(spark, s3_warehouse):
    create_table(s3_warehouse.uri, s3_warehouse.options)
    options = _spark_options(s3_warehouse)
    frames = [
        spark.createDataFrame([(j * 100 + i, f"job{j}") for i in range(20)], "id BIGINT, writer STRING").coalesce(1)
        for j in range(JOBS)
    ]
    barrier = threading.Barrier(JOBS)

    def append(j: int) -> None:
        # a new Python thread has no active Spark session, and Python data sources are
        # looked up on the active one (DATA_SOURCE_NOT_FOUND otherwise)
        spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
        barrier.wait(timeout=60)
        frames[j].write.format("paimon").options(**options).mode("append").save()

    with ThreadPoolExecutor(JOBS) as pool:
        for f in [pool.submit(append, j) for j in range(JOBS)]:
            f.result()
    expected = sorted(j * 100 + i for j in range(JOBS) for i in range(20))
    assert read_ids(s3_warehouse.uri, s3_warehouse.options) == expected  # plain pypaimon reads it back
    prefix = "warehouse/db.db/t/snapshot/snapshot-"
    assert sorted(int(k[len(prefix):]) for k in s3_warehouse.object_keys(prefix)) == list(range(1, JOBS + 1))
