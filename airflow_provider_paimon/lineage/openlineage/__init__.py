"""OpenLineage for Paimon tables: dataset mapping, run events, our batch facet, emitter.

Imports neither Spark nor Airflow: the Spark capture, the batch job entry points and
the Airflow operators all use it. See ``docs/openlineage.md`` for the mapping and
the configuration keys.

Typical use on the Spark driver::

    emitter = PaimonLineageEmitter.from_conf(spark_conf(spark))  # airflow_provider_paimon.spark.session
    run = emitter.new_run(app_name, streaming=True, parent_conf=conf)
    emitter.emit(run.start(inputs=[src], outputs=[dst]))
    emitter.emit(run.batch(batch_id, sources=[src_at_snapshot], sinks=[dst_at_snapshot]))
    emitter.emit(run.complete())   # or run.fail(exc) / run.abort()
    emitter.close()
"""

from .config import (
    CONF_PREFIX,
    KEY_API_KEY,
    KEY_ASYNC,
    KEY_ENABLED,
    KEY_ENDPOINT,
    KEY_LOCATION,
    KEY_NAMESPACE,
    KEY_TIMEOUT,
    KEY_TYPE,
    KEY_URL,
    EmitterSettings,
    resolve_settings,
)
from .datasets import (
    DatasetStats,
    SchemaField,
    paimon_dataset,
    schema_fields_from_arrow,
    schema_fields_from_paimon,
)
from .emitter import PaimonLineageEmitter
from .events import (
    PARENT_CONF_KEYS,
    PaimonJobRun,
    PaimonTableRef,
    job_type_facet,
    parent_run_facet,
)
from .facets import (
    PAIMON_BATCH_FACET_KEY,
    PAIMON_BATCH_SCHEMA_ID,
    PAIMON_BATCH_SCHEMA_URL,
    PAIMON_RUN_FACET_KEY,
    PAIMON_RUN_SCHEMA_URL,
    PRODUCER,
    PaimonBatchRunFacet,
    PaimonRunFacet,
    PaimonTableSnapshot,
    paimon_batch_schema_path,
)
from .naming import (
    REST_SCHEME,
    catalog_type,
    dataset_name,
    is_rest_namespace,
    location_identifier,
    rest_namespace,
    table_location,
    warehouse_namespace,
)

__all__ = [
    "CONF_PREFIX",
    "KEY_API_KEY",
    "KEY_ASYNC",
    "KEY_ENABLED",
    "KEY_ENDPOINT",
    "KEY_LOCATION",
    "KEY_NAMESPACE",
    "KEY_TIMEOUT",
    "KEY_TYPE",
    "KEY_URL",
    "PAIMON_BATCH_FACET_KEY",
    "PAIMON_BATCH_SCHEMA_ID",
    "PAIMON_BATCH_SCHEMA_URL",
    "PAIMON_RUN_FACET_KEY",
    "PAIMON_RUN_SCHEMA_URL",
    "PARENT_CONF_KEYS",
    "PRODUCER",
    "REST_SCHEME",
    "DatasetStats",
    "EmitterSettings",
    "PaimonBatchRunFacet",
    "PaimonJobRun",
    "PaimonLineageEmitter",
    "PaimonRunFacet",
    "PaimonTableRef",
    "PaimonTableSnapshot",
    "SchemaField",
    "catalog_type",
    "dataset_name",
    "is_rest_namespace",
    "job_type_facet",
    "location_identifier",
    "paimon_batch_schema_path",
    "paimon_dataset",
    "parent_run_facet",
    "resolve_settings",
    "rest_namespace",
    "schema_fields_from_arrow",
    "schema_fields_from_paimon",
    "table_location",
    "warehouse_namespace",
]
