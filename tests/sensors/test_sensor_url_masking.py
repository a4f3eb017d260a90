"""A store URL with a password, however mistyped, is refused where Airflow would show it,
and the refusal never echoes the password."""

from __future__ import annotations

import pytest
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_paimon.common.connection_secrets import CredentialsInLocationError
from airflow_provider_paimon.sensors.catchup import SnapshotCatchUpSensor

PW = "Sens0r-Pw,(1a2b)"
URLS = [f"mysql+pymysql:/root:{PW}@h", f"mysql+pymysql//root:{PW}@h", f"root:{PW}@h",
        f"mysql+pymysql://root:{PW}@h:abc/x", f"postgresql+psycopg2://postgres:{PW}@127.0.0.1:5432/x"]


@pytest.mark.parametrize("url", URLS)
def test_literal_lineage_url_with_a_password_is_refused_when_the_dag_is_parsed(tables, url):
    with pytest.raises(CredentialsInLocationError, match="lineage_conn_id") as err:
        SnapshotCatchUpSensor(task_id="wait", table="db.sink", job="j", warehouse=tables.warehouse,
                              lineage_url=url, timeout=1)
    assert PW not in str(err.value) and "Sens0r" not in str(err.value)


@pytest.mark.parametrize("url", URLS)
def test_rendered_lineage_url_with_a_password_fails_the_task_masked(tables, url):
    """From a Variable: refused once rendered, before Airflow stores the rendered fields;
    its password is known to the masker by then."""
    from airflow.sdk.log import redact

    sensor = SnapshotCatchUpSensor(task_id="wait", table="db.sink", job="j", warehouse=tables.warehouse,
                                   lineage_url="{{ var.value.store }}", timeout=1)
    with pytest.raises(AirflowFailException, match="lineage_url carries credentials") as err:
        sensor.render_template_fields({"var": {"value": {"store": url}}})
    assert PW not in str(err.value)
    assert PW not in str(redact(f"the url was {url}"))
