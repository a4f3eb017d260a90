"""The native path: pypaimon plans and commits, Spark's built-in file sources move the bytes.

``read_table`` reads a Paimon table through Spark's own Parquet/ORC readers (see
``read.py``); ``plan_read`` shows what such a read would do without reading.
``write_table`` writes with Spark's Parquet writer into Paimon's layout and commits one
snapshot (``write.py``); ``foreach_batch_writer`` does the same per micro-batch,
exactly once.
"""

from __future__ import annotations

from .foreach_batch import foreach_batch_writer
from .plan import ReadPlan, plan_read
from .read import read_table
from .views import register_views
from .write import write_table

__all__ = ["ReadPlan", "foreach_batch_writer", "plan_read", "read_table", "register_views", "write_table"]
