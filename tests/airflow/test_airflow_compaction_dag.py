"""The example compaction DAG parses in a real DagBag, and its templated inputs normalise."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_paimon.operators.compaction import (
    CompactionOperator,
    as_bool,
    as_options,
    as_partition_list,
)

DAG_FILE = Path(__file__).resolve().parents[2] / "dags" / "compaction_dag.py"


def test_compaction_dag_parses_without_errors(monkeypatch):
    from airflow.dag_processing.dagbag import DagBag

    monkeypatch.setenv("PAIMON_COMPACTION_TABLES", "db.a, db.b")
    bag = DagBag(dag_folder=str(DAG_FILE))
    assert bag.import_errors == {}
    dag = bag.dags["paimon_compaction"]
    assert dag.params["tables"] == ["db.a", "db.b"]
    assert dag.params["dry_run"] is False
    compact = dag.get_task("compact")
    assert compact.operator_class is CompactionOperator or compact.operator_name == "CompactionOperator"
    assert dag.get_task("tables_to_compact") in compact.upstream_list


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, []), ("dt=1,hr=2", ["dt=1,hr=2"]), ("['dt=1', 'dt=2']", ["dt=1", "dt=2"]),
     ({"dt": "1"}, [{"dt": "1"}]), ([{"dt": "1"}, "dt=2"], [{"dt": "1"}, "dt=2"])],
)
def test_partitions_normalise(value, expected):
    assert as_partition_list(value) == expected


def test_options_and_dry_run_normalise():
    assert as_options("{'target-file-size': '64 mb'}") == {"target-file-size": "64 mb"}
    assert as_options('{"a": 1}') == {"a": 1} and as_options(None) == {}
    assert as_bool("False") is False and as_bool("true") is True and as_bool(True) is True
    with pytest.raises(TypeError):
        as_options("[1, 2]")
