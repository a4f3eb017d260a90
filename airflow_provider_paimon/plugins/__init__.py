"""Airflow plugins of the provider: the lineage page and its JSON API."""
