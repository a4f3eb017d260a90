"""Airflow sensors: ``SnapshotCatchUpSensor`` (seed 004: wait for a branch job to catch up)."""
