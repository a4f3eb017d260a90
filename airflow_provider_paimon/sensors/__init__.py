"""Airflow sensors: ``SnapshotCatchUpSensor`` (the Paimon branch proposal: wait for a branch job to catch up).

Importing any of them arms Airflow's secrets masker (``common/secret_masking.py``).
"""

from airflow_provider_paimon.common.secret_masking import arm_airflow_masker

arm_airflow_masker()
