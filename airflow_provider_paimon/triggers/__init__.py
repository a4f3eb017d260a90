"""Airflow triggers: ``SnapshotCatchUpTrigger`` (the deferrable side of the catch-up sensor)."""
