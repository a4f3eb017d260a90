"""Extra link from a task instance to the lineage page at the snapshot it committed.

Airflow 3 calls ``get_link`` in the task process when the try ends, with the operator
that ran (its ``last_result`` holds the job's result), and keeps the URL in XCom for
the UI; so the link needs no metadata read at view time. Operators without a
committed snapshot in their result (nothing written, a failed try) get no link.

The URL opens the lineage page (``plugins/lineage_plugin.py``, ``/paimon-lineage/``)
with the drill-down filled in: ``?database=&table=&branch=&snapshot=``. It is relative
to Airflow's ``[api] base_url`` when that is set.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from airflow.sdk import BaseOperatorLink

from airflow_provider_paimon.paimon.names import parse_table_name

#: where the lineage plugin mounts its page (``lineage_plugin.URL_PREFIX``)
LINEAGE_PAGE_PATH = "/paimon-lineage"
# result keys naming the snapshot a job committed, most specific first
_SNAPSHOT_KEYS = ("snapshot_id", "main_snapshot_id", "committed_snapshot_id")


def lineage_page_url(table: str, snapshot_id: int, branch: str | None = None, base_url: str | None = None) -> str:
    """The lineage page opened at ``table`` (``db.t``) snapshot ``snapshot_id``."""
    database, _, name = table.partition(".")
    query = {"database": database, "table": name, "snapshot": str(int(snapshot_id))}
    if branch and branch != "main":
        query["branch"] = branch
    base = (base_url if base_url is not None else _airflow_base_url()).rstrip("/")
    return f"{base}{LINEAGE_PAGE_PATH}/?{urllib.parse.urlencode(query)}"


def committed_snapshot(operator: Any) -> int | None:
    """The snapshot the operator's last run committed, from its result (None: none)."""
    result = getattr(operator, "last_result", None)
    if not isinstance(result, dict):
        return None
    committed = getattr(operator, "ol_committed_snapshot", None)
    if callable(committed):
        value = committed(result)
        if value is not None:
            return int(value)
    for key in _SNAPSHOT_KEYS:
        if isinstance(result.get(key), int) and not isinstance(result.get(key), bool):
            return int(result[key])
    return None


class PaimonLineageLink(BaseOperatorLink):
    """"Paimon lineage": the lineage page at the snapshot this task try committed."""

    name = "Paimon lineage"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        snapshot_id = committed_snapshot(operator)
        table = getattr(operator, "table", None)
        if snapshot_id is None or not isinstance(table, str):
            return ""
        try:
            parse_table_name(table)
        except Exception:  # noqa: BLE001 - an unrendered or bad name: no link, never a failure
            return ""
        outputs = getattr(operator, "output_tables", None)
        branch = None
        if callable(outputs):
            for out_table, out_branch in outputs():
                if out_table == table:
                    branch = out_branch
                    break
        return lineage_page_url(table, snapshot_id, branch)


def _airflow_base_url() -> str:
    try:
        from airflow.configuration import conf

        return conf.get("api", "base_url", fallback="") or ""
    except Exception:  # noqa: BLE001 - outside a configured Airflow: a relative link
        return ""
