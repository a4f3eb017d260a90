"""Airflow operators: branch, tag, compaction and maintenance operations submitted as Spark jobs, lineage
upkeep, and ``PaimonSparkSubmitOperator`` for your own jobs on the ``paimon`` data source.

``AlterTableOperator`` (schema changes, no Spark) is importable from here; the other
operators from their modules (``operators.branch``, ``operators.tag``, ...). Importing
any of them arms Airflow's secrets masker (``common/secret_masking.py``).
"""

from __future__ import annotations

from typing import Any

from airflow_provider_paimon.common.secret_masking import arm_airflow_masker

arm_airflow_masker()

__all__ = ["AlterTableOperator"]


def __getattr__(name: str) -> Any:
    # lazy: importing one operator module must not import every other one
    if name == "AlterTableOperator":
        from .schema import AlterTableOperator

        return AlterTableOperator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
