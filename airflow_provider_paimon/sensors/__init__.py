"""Airflow sensors: ``SnapshotCatchUpSensor`` (the Paimon branch proposal: wait for a branch job to catch up)."""
