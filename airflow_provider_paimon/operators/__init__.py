"""Airflow operators: branch, tag, compaction and maintenance operations submitted as Spark jobs, lineage
upkeep, and ``PaimonSparkSubmitOperator`` for your own jobs on the ``paimon`` data source."""
