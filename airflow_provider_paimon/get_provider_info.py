"""What Airflow's ProvidersManager learns about this package (entry point ``apache_airflow_provider``).

Kept free of Airflow and hook imports: Airflow calls this while it is still starting up.
Connection form fields are declared here (``conn-fields`` / ``ui-field-behaviour``), the
Airflow 3.2+ convention, so the UI can show the ``paimon`` form without importing the hook.

Every module listed here must import (tests/airflow/test_airflow_provider_info.py
imports each one), so a renamed module cannot leave a dangling entry.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_paimon import __version__

INTEGRATION = "Apache Paimon"

# UI of the ``paimon`` connection: the warehouse goes in Host (never with credentials in
# it: they go in Login/Password); catalog options in Extra. Every extra that is not a
# known setting is treated as a secret (common/connection_secrets.py).
PAIMON_UI_FIELD_BEHAVIOUR: dict[str, Any] = {
    "hidden-fields": ["schema", "port"],
    "relabeling": {
        "host": "Warehouse URI",
        "login": "Catalog user (jdbc.user) or S3 access key id",
        "password": "Catalog secret (jdbc.password / REST token / S3 secret key)",
        "extra": "Catalog options (JSON)",
    },
    "placeholders": {
        "host": "file:///data/warehouse or s3://bucket/warehouse",
        "extra": '{"metastore": "filesystem"}',
        "metastore": "filesystem",
        "uri": "jdbc:mysql://db:3306/paimon or http://rest-catalog:8080",
    },
}

PAIMON_CONN_FIELDS: dict[str, Any] = {
    "metastore": {
        "label": "Metastore",
        "description": "filesystem (default), jdbc or rest",
        "schema": {"type": ["string", "null"], "default": "filesystem"},
    },
    "uri": {
        "label": "Catalog URI",
        "description": "JDBC URL (metastore=jdbc) or REST endpoint (metastore=rest); "
        "credentials go in Login/Password, not in the URL",
        "schema": {"type": ["string", "null"]},
    },
    "warehouse": {
        "label": "Warehouse (if not in Host)",
        "description": "Warehouse path or URI, without credentials; Host wins when both are set",
        "schema": {"type": ["string", "null"]},
    },
}


_HOOKS = ["paimon", "spark_job", "local_job", "lineage", "catchup"]
_OPERATORS = [
    "branch", "tag", "compaction", "maintenance", "lineage", "spark_submit", "preflight", "partition", "audit",
    "publish", "schema", "cascade",
]
_SENSORS = ["catchup", "partition"]
_TRIGGERS = ["catchup", "snapshot", "partition"]


def _modules(package: str, names: list[str]) -> list[str]:
    return [f"airflow_provider_paimon.{package}.{name}" for name in names]


def get_provider_info() -> dict[str, Any]:
    """Provider metadata in the shape of Airflow's ``provider_info.schema.json``."""
    return {
        "package-name": "airflow-provider-paimon",
        "name": "Apache Paimon",
        "description": "Apache Paimon lakehouse tables from Apache Airflow: branches for data "
        "correction, small-file compaction and lineage, with the data work on Apache Spark.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": INTEGRATION,
                "external-doc-url": "https://paimon.apache.org/",
                "tags": ["software"],
            }
        ],
        "hooks": [{"integration-name": INTEGRATION, "python-modules": _modules("hooks", _HOOKS)}],
        "operators": [{"integration-name": INTEGRATION, "python-modules": _modules("operators", _OPERATORS)}],
        "sensors": [{"integration-name": INTEGRATION, "python-modules": _modules("sensors", _SENSORS)}],
        "triggers": [{"integration-name": INTEGRATION, "python-modules": _modules("triggers", _TRIGGERS)}],
        "connection-types": [
            {
                "connection-type": "paimon",
                "hook-class-name": "airflow_provider_paimon.hooks.paimon.PaimonHook",
                "hook-name": "Apache Paimon",
                "ui-field-behaviour": PAIMON_UI_FIELD_BEHAVIOUR,
                "conn-fields": PAIMON_CONN_FIELDS,
            },
            {
                "connection-type": "paimon_lineage",
                "hook-class-name": "airflow_provider_paimon.hooks.lineage.PaimonLineageHook",
                "hook-name": "Apache Paimon lineage store",
            },
        ],
        # Paimon tables as Airflow Assets: paimon://... URIs (docs/assets.md).
        "asset-uris": [
            {
                "schemes": ["paimon"],
                "handler": "airflow_provider_paimon.assets.sanitize_uri",
                "to_openlineage_converter": "airflow_provider_paimon.assets.convert_asset_to_openlineage",
                "factory": "airflow_provider_paimon.assets.create_asset",
            }
        ],
        # The lineage page in the Airflow UI (a FastAPI app served by the api-server).
        "plugins": [
            {
                "name": "paimon_lineage",
                "plugin-class": "airflow_provider_paimon.plugins.lineage_plugin.PaimonLineagePlugin",
            }
        ],
    }
