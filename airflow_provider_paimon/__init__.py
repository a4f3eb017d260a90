"""Apache Airflow provider for Apache Paimon tables, with the data work on Apache Spark.

Layers (see docs/architecture.md): ``paimon`` (table operations over pypaimon),
``lineage`` (the lineage store and OpenLineage mapping) and ``spark`` (the PySpark
data source and job entry points) import no Airflow; ``hooks``, ``operators``,
``sensors``, ``triggers`` and ``plugins`` are the thin Airflow layer.
"""

__version__ = "0.1.0"
