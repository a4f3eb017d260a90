"""Airflow hooks: PaimonHook (catalog metadata) and the spark-submit job runner."""
