"""What Airflow's ProvidersManager learns about this package (entry point ``apache_airflow_provider``).

Kept free of Airflow and hook imports: Airflow calls this while it is still starting up.
Connection form fields are declared here (``conn-fields`` / ``ui-field-behaviour``), the
Airflow 3.2+ convention, so the UI can show the ``paimon`` form without importing the hook.

Modules that other parts of the project add later (the lineage hook/operators, the
catch-up sensor and trigger) are listed only when their file is present, so the provider
never advertises a module that cannot be imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow_provider_paimon import __version__

INTEGRATION = "Apache Paimon"
_PACKAGE_DIR = Path(__file__).resolve().parent

# UI of the ``paimon`` connection: the warehouse goes in Host; catalog options in Extra.
PAIMON_UI_FIELD_BEHAVIOUR: dict[str, Any] = {
    "hidden-fields": ["schema", "port"],
    "relabeling": {
        "host": "Warehouse URI",
        "login": "Catalog user (jdbc.user)",
        "password": "Catalog secret (jdbc.password / REST token)",
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
        "description": "JDBC URL (metastore=jdbc) or REST endpoint (metastore=rest)",
        "schema": {"type": ["string", "null"]},
    },
    "warehouse": {
        "label": "Warehouse (if not in Host)",
        "description": "Warehouse path or URI; Host wins when both are set",
        "schema": {"type": ["string", "null"]},
    },
}


def _exists(relative: str) -> bool:
    return (_PACKAGE_DIR / relative).is_file()


def _modules(candidates: list[tuple[str, str]]) -> list[str]:
    """Dotted module names of the candidates whose file exists in this installation."""
    return [module for module, path in candidates if _exists(path)]


def get_provider_info() -> dict[str, Any]:
    """Provider metadata in the shape of Airflow's ``provider_info.schema.json``."""
    hooks = _modules(
        [
            ("airflow_provider_paimon.hooks.paimon", "hooks/paimon.py"),
            ("airflow_provider_paimon.hooks.spark_job", "hooks/spark_job.py"),
            ("airflow_provider_paimon.hooks.lineage", "hooks/lineage.py"),
        ]
    )
    operators = _modules(
        [
            ("airflow_provider_paimon.operators.branch", "operators/branch.py"),
            ("airflow_provider_paimon.operators.tag", "operators/tag.py"),
            ("airflow_provider_paimon.operators.compaction", "operators/compaction.py"),
            ("airflow_provider_paimon.operators.lineage", "operators/lineage.py"),
            ("airflow_provider_paimon.operators.spark_submit", "operators/spark_submit.py"),
            ("airflow_provider_paimon.operators.preflight", "operators/preflight.py"),
        ]
    )
    sensors = _modules([("airflow_provider_paimon.sensors.catchup", "sensors/catchup.py")])
    triggers = _modules([("airflow_provider_paimon.triggers.catchup", "triggers/catchup.py")])

    connection_types: list[dict[str, Any]] = [
        {
            "connection-type": "paimon",
            "hook-class-name": "airflow_provider_paimon.hooks.paimon.PaimonHook",
            "hook-name": "Apache Paimon",
            "ui-field-behaviour": PAIMON_UI_FIELD_BEHAVIOUR,
            "conn-fields": PAIMON_CONN_FIELDS,
        }
    ]
    if _exists("hooks/lineage.py"):
        connection_types.append(
            {
                "connection-type": "paimon_lineage",
                "hook-class-name": "airflow_provider_paimon.hooks.lineage.PaimonLineageHook",
                "hook-name": "Apache Paimon lineage store",
            }
        )

    info: dict[str, Any] = {
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
        "hooks": [{"integration-name": INTEGRATION, "python-modules": hooks}],
        "operators": [{"integration-name": INTEGRATION, "python-modules": operators}],
        "connection-types": connection_types,
    }
    # Paimon tables as Airflow Assets: paimon://... URIs (docs/assets.md).
    if _exists("assets.py"):
        info["asset-uris"] = [
            {
                "schemes": ["paimon"],
                "handler": "airflow_provider_paimon.assets.sanitize_uri",
                "to_openlineage_converter": "airflow_provider_paimon.assets.convert_asset_to_openlineage",
                "factory": "airflow_provider_paimon.assets.create_asset",
            }
        ]
    if sensors:
        info["sensors"] = [{"integration-name": INTEGRATION, "python-modules": sensors}]
    if triggers:
        info["triggers"] = [{"integration-name": INTEGRATION, "python-modules": triggers}]
    # The lineage page in the Airflow UI (a FastAPI app served by the api-server).
    info["plugins"] = [
        {
            "name": "paimon_lineage",
            "plugin-class": "airflow_provider_paimon.plugins.lineage_plugin.PaimonLineagePlugin",
        }
    ]
    return info
