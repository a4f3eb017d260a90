"""Connections the Airflow-layer tests set up, and the secret value they plant in them.

Test modules import these from here, never from a ``conftest``: which folder's conftest
the module name ``conftest`` means depends on what pytest loaded last (a run of files
from two folders failed to import ``LOCAL_SPARK`` this way).
"""

from __future__ import annotations

import json

import pytest

#: a value planted in connections and options; it must never show up where it should not
SECRET = "s3cr3t-Hunter2-value"
LOCAL_SPARK = {"conn_type": "spark", "host": "local[2]"}


def set_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, conn: dict) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))
