"""``run_tag`` on the Spark-job operators: the run's tag on the snapshot the job committed.

The end-to-end case (a real spark-submit under ``dag.test()``) is in
``test_run_snapshot_link.py``; here the tagging step on a real table, and the argument.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from airflow_provider_paimon.hooks.paimon import PaimonHook
from airflow_provider_paimon.operators.run_tagging import (
    check_run_tag,
    run_tag_for,
    tag_committed_snapshot,
)
from airflow_provider_paimon.paimon.errors import InvalidArgumentError

pytestmark = pytest.mark.airflow


def test_the_run_tag_goes_on_the_committed_snapshot_once_per_run(wh):
    hook = PaimonHook(warehouse=wh.path)
    context = {"run_id": "scheduled__2026-11-24T09:00:00+00:00",
               "logical_date": datetime(2026, 11, 24, 9, 0, tzinfo=timezone.utc)}
    tag = run_tag_for("", "orders_daily", context)
    assert tag == "orders_daily-20261124T090000Z"
    assert run_tag_for("nightly", "orders_daily", {"run_id": "manual__x y"}) == "nightly-manual__x_y"

    done = tag_committed_snapshot(hook, "db.events", None, 2, tag)
    assert done == {"tag": tag, "branch": "main", "snapshot_id": 2, "existing": False}
    assert hook.get_tag("db.events", tag)["id"] == 2  # read back with plain pypaimon
    # the same run again (a retry, another task writing the table): the run's tag stays
    again = tag_committed_snapshot(hook, "db.events", None, 3, tag)
    assert again == {"tag": tag, "branch": "main", "snapshot_id": 2, "existing": True}
    assert hook.get_tag("db.events", tag)["id"] == 2
    # on a branch: the branch's snapshot
    on_fix = tag_committed_snapshot(hook, "db.events", "fix", 2, tag)
    assert on_fix["branch"] == "fix" and hook.get_tag("db.events", tag, "fix")["id"] == 2


def test_run_tag_argument():
    from airflow_provider_paimon.operators.compaction import CompactionOperator

    assert check_run_tag(False) is None and check_run_tag(None) is None
    assert check_run_tag(True) == "" and check_run_tag(" nightly ") == "nightly"
    for bad in ("", "  ", 1, ["x"]):
        with pytest.raises(InvalidArgumentError, match="run_tag must be True"):
            check_run_tag(bad)
    assert CompactionOperator(task_id="c", table="db.t", run_tag=True).run_tag_prefix == ""
    assert CompactionOperator(task_id="c", table="db.t").run_tag_prefix is None
    with pytest.raises(ValueError, match="c: run_tag must be"):
        CompactionOperator(task_id="c", table="db.t", run_tag=3)


WRITING_APP = '''
import sys

import pyarrow as pa
from pypaimon import CatalogFactory, Schema

from airflow_provider_paimon.paimon.commit_properties import commit_properties

schema = pa.schema([("id", pa.int64())])
catalog = CatalogFactory.create({"warehouse": sys.argv[1]})
catalog.create_database("db", True)
catalog.create_table("db.out", Schema.from_pyarrow_schema(schema), True)
table = catalog.get_table("db.out")


def commit(properties):
    builder = table.new_batch_write_builder()
    write, done = builder.new_write(), builder.new_commit()
    write.write_arrow(pa.table({"id": [1, 2]}, schema=schema))
    done.commit(write.prepare_commit(), snapshot_properties=properties or None)
    write.close()
    done.close()


commit(commit_properties())  # snapshot 1: this task try's (AIRFLOW_CTX_* from the operator)
commit({})                   # snapshot 2: as if another writer committed after it
print("PAIMON_RESULT {}")
'''


@pytest.mark.submit
def test_spark_submit_operator_tags_the_snapshot_its_try_committed(wh, tmp_path):
    """Real spark-submit: the try's snapshot is found by its properties, not by being latest."""
    from types import SimpleNamespace

    from airflow.sdk import DAG

    from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator

    app = tmp_path / "writer.py"
    app.write_text(WRITING_APP)
    with DAG("orders_daily", schedule=None):
        op = PaimonSparkSubmitOperator(
            task_id="load", application=str(app), application_args=[wh.path],
            run_tag=True, run_tag_tables=["db.out"], spark_kwargs={"driver_memory": "512m"},
        )
        with pytest.raises(ValueError, match="run_tag needs run_tag_tables"):
            PaimonSparkSubmitOperator(task_id="x", application=str(app), run_tag=True)
    ti = SimpleNamespace(dag_id="orders_daily", run_id="manual__1", task_id="load", try_number=1, map_index=-1)
    context = {"ti": ti, "run_id": "manual__1",
               "logical_date": datetime(2026, 11, 24, 9, 0, tzinfo=timezone.utc)}
    result = op.execute(context)
    assert result["run_tag"] == [{"table": "db.out", "tag": "orders_daily-20261124T090000Z",
                                  "branch": "main", "snapshot_id": 1, "existing": False}]
    hook = PaimonHook(warehouse=wh.path)
    assert hook.get_latest_snapshot_id("db.out") == 2
    assert hook.get_tag("db.out", "orders_daily-20261124T090000Z")["id"] == 1
