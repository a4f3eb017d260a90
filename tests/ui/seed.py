"""A lineage store seeded with a small chain and, optionally, many tables."""

from __future__ import annotations

from airflow_provider_paimon.lineage import LineageStore, SnapshotRef


def seed_chain(url: str, extra_tables: int = 0) -> None:
    """raw.events --ingest--> dw.orders --daily--> mart.revenue, plus a branch job.

    Barrier b of ``ingest`` consumed raw.events@b and produced dw.orders@(10+b);
    barrier b of ``daily`` consumed dw.orders@(10+b) and produced mart.revenue@(100+b).
    """
    store = LineageStore.from_url(url)
    try:
        for b in range(1, 4):
            store.record_batch("ingest", b, [SnapshotRef("raw", "events", b)], [SnapshotRef("dw", "orders", 10 + b)])
            store.record_batch("daily", b, [SnapshotRef("dw", "orders", 10 + b)], [SnapshotRef("mart", "revenue", 100 + b)])
        store.record_batch(
            "ingest_fix", 1, [SnapshotRef("raw", "events", 3)], [SnapshotRef("dw", "orders", 2, "fix")]
        )
        for i in range(extra_tables):
            store.record_batch(
                f"load_{i:03d}", 1,
                [SnapshotRef("landing", f"feed_{i:03d}", 1)],
                [SnapshotRef("stage", f"table_with_a_rather_long_name_{i:03d}", 1)],
            )
    finally:
        store.close()
