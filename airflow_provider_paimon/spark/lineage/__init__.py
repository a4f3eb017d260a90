"""Lineage in a Spark job: capture at commits and micro-batches, and the store's tables as a source.

``capture`` is the lineage "listener" (one per session; ``enable_lineage_capture``),
built from ``event_log`` (the workers' published scans and commits), ``offsets``
(Paimon stream offsets), ``plan_sources`` (the JVM plan's Paimon relations) and
``openlineage`` (events per query and batch write); ``recorder`` writes barriers to the
store (spool on outages), ``config`` parses ``spark.paimon.lineage.*``, ``guard``
checks the store before a commit, ``direct`` records lineage asked for in a write's
own options, and ``source`` is the read-only ``paimon-lineage`` data source.
"""
