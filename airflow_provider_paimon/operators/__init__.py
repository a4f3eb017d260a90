"""Airflow operators: branch, tag and compaction operations submitted as Spark jobs."""
