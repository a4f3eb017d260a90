"""The ``paimon`` PySpark data source: batch and streaming, read and write.

``source`` is the data source Spark registers; ``reader``/``streaming_reader`` plan and
read splits in Python workers, ``writer``/``streaming_writer`` write files there and
commit on the driver (``write_setup`` plans a write, ``schema_merge`` evolves the
schema, ``fast_append`` is the file-level append path); ``types`` maps Spark, Arrow
and Paimon types, ``partition_pruning`` turns pushed filters into partitions. Each
read and commit is published on the event channel (``spark.commit_events``) for the
lineage capture. Imported lazily: importing this package loads no pyspark.
"""
