"""The publish deadline: parsed at DAG parse time, carried by the example DAGs when
``$PAIMON_PUBLISH_DEADLINE`` is set, and its default callback names the late run."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from datetime import timedelta
from pathlib import Path

import pytest

from airflow_provider_paimon.deadlines import (
    deadline_from_env,
    notify_missed_publish,
    publish_deadline,
)

DAGS = Path(__file__).resolve().parents[2] / "dags"


def test_deadline_parses_durations_and_refuses_nonsense():
    alert = publish_deadline("6 h")
    assert alert.interval == timedelta(hours=6)
    assert alert.callback.serialize()["path"] == "airflow_provider_paimon.deadlines.notify_missed_publish"
    assert deadline_from_env({}) is None and deadline_from_env({"PAIMON_PUBLISH_DEADLINE": " "}) is None
    assert deadline_from_env({"PAIMON_PUBLISH_DEADLINE": "90"}).interval == timedelta(seconds=90)
    for bad in ("soon", "0", "-5"):
        with pytest.raises(ValueError, match="PAIMON_PUBLISH_DEADLINE"):
            deadline_from_env({"PAIMON_PUBLISH_DEADLINE": bad})


def test_missed_publish_names_the_run(tmp_path, caplog):
    marker = tmp_path / "missed.txt"
    context = {"dag_run": {"dag_id": "paimon_data_correction", "dag_run_id": "manual__1"}}
    with caplog.at_level(logging.ERROR, logger="airflow_provider_paimon.deadlines"):
        asyncio.run(notify_missed_publish(context=context, within="6 h", marker=str(marker)))
    assert "paimon_data_correction run manual__1 did not publish within 6 h" in caplog.text
    assert marker.read_text() == "paimon_data_correction manual__1\n"


@pytest.mark.parametrize("name", ["data_correction.py", "cascade_correction.py"])
def test_example_dags_take_the_deadline_from_the_environment(name, monkeypatch):
    def load():
        spec = importlib.util.spec_from_file_location(f"deadline_{name[:-3]}", DAGS / name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.dag

    monkeypatch.delenv("PAIMON_PUBLISH_DEADLINE", raising=False)
    assert not load().deadline
    monkeypatch.setenv("PAIMON_PUBLISH_DEADLINE", "6 h")
    deadline = load().deadline
    alerts = deadline if isinstance(deadline, list) else [deadline]
    assert [a.interval for a in alerts] == [timedelta(hours=6)]
