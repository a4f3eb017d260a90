"""The catch-up sensor's failure text never shows the password of a mistyped store URL."""

from __future__ import annotations

import pytest
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_paimon.sensors.catchup import SnapshotCatchUpSensor

PW = "Sens0r-Pw-1a2b"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (f"mysql+pymysql:/root:{PW}@h", "'mysql+pymysql:/***@h' is not a SQLAlchemy URL"),
        (f"mysql+pymysql//root:{PW}@h", "'mysql+pymysql//***@h' is not a SQLAlchemy URL"),
        (f"root:{PW}@h", "'***@h' is not a SQLAlchemy URL"),
        (f"mysql+pymysql://root:{PW}@h:abc/x", "port that is not a number"),
    ],
)
def test_mistyped_lineage_url_fails_masked(tables, url, message):
    tables.create("db.sink")
    sensor = SnapshotCatchUpSensor(task_id="wait", table="db.sink", job="j", warehouse=tables.warehouse,
                                   lineage_url=url, timeout=1)
    with pytest.raises(AirflowFailException) as err:
        sensor.poke({})
    assert message in str(err.value) and PW not in str(err.value)
