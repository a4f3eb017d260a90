"""Paimon table operations over pypaimon. Imports neither Spark nor Airflow."""
