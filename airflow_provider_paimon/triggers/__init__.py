"""Airflow triggers: ``SnapshotCatchUpTrigger`` (the deferrable side of the catch-up sensor).

Importing any of them arms Airflow's secrets masker (``common/secret_masking.py``), in
the triggerer too.
"""

from airflow_provider_paimon.common.secret_masking import arm_airflow_masker

arm_airflow_masker()
