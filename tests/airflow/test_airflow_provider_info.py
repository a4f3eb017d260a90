"""The provider loads through Airflow's real ProvidersManager (entry point, connection type)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import airflow

from airflow_provider_paimon.get_provider_info import get_provider_info

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "airflow_provider_paimon"
OWN_MODULES = [
    "airflow_provider_paimon.hooks.paimon",
    "airflow_provider_paimon.hooks.spark_job",
    "airflow_provider_paimon.operators.branch",
    "airflow_provider_paimon.operators.tag",
    "airflow_provider_paimon.operators.compaction",
    "airflow_provider_paimon.operators.preflight",
]


def test_provider_info_matches_airflow_schema():
    import jsonschema

    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    info = get_provider_info()
    jsonschema.validate(info, schema)
    assert info["package-name"] == "airflow-provider-paimon"
    listed = [m for section in ("hooks", "operators", "sensors", "triggers") for entry in info.get(section, []) for m in entry["python-modules"]]
    assert set(OWN_MODULES) <= set(listed)
    for module in listed:  # only modules whose file exists are advertised
        rel = module.removeprefix("airflow_provider_paimon.").replace(".", "/") + ".py"
        assert (PACKAGE_DIR / rel).is_file(), module
    types = {c["connection-type"] for c in info["connection-types"]}
    assert "paimon" in types
    assert ("paimon_lineage" in types) == (PACKAGE_DIR / "hooks" / "lineage.py").is_file()


def test_own_modules_import():
    for module in OWN_MODULES:
        importlib.import_module(module)


def test_providers_manager_registers_paimon_connection():
    from airflow.providers_manager import ProvidersManager
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

    runtime = ProvidersManagerTaskRuntime()
    assert "airflow-provider-paimon" in runtime.providers
    hook_info = runtime.hooks["paimon"]
    assert hook_info is not None
    assert hook_info.hook_class_name == "airflow_provider_paimon.hooks.paimon.PaimonHook"
    assert hook_info.connection_id_attribute_name == "paimon_conn_id"
    manager = ProvidersManager()  # the UI side: form fields declared in get_provider_info
    assert "extra__paimon__metastore" in manager.connection_form_widgets
    assert manager.field_behaviours["paimon"]["relabeling"]["host"] == "Warehouse URI"


def test_hook_form_methods_agree_with_provider_info():
    from airflow_provider_paimon.hooks.paimon import PaimonHook

    behaviour = PaimonHook.get_ui_field_behaviour()
    assert "port" in behaviour["hidden_fields"]
    assert behaviour["relabeling"]["host"] == "Warehouse URI"
