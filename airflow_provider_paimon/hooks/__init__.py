"""Airflow hooks: PaimonHook (catalog metadata) and the spark-submit job runner.

Importing any of them arms Airflow's secrets masker with the package's secret registry
(``secret_masking.py``).
"""

from airflow_provider_paimon.common.secret_masking import arm_airflow_masker

arm_airflow_masker()
