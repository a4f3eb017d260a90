"""One name per concept: a public function or class name is defined in one module only.

Two modules defining ``mask_url`` (one registering masks, one returning text) or
``parse_partition_spec`` (one splitting text, one parsing by column types) made readers
and imports pick the wrong one. A name defined twice is either one concept (one home)
or two (two names). The entry points every job module has by contract (``main``,
``build_parser``, ``run``) and the per-operation plan protocol (``make_plan`` /
``apply_plan``) are the same name on purpose.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "airflow_provider_paimon"

#: the same name on purpose: an interface every such module implements
BY_CONTRACT = {"main", "build_parser", "run", "make_plan", "apply_plan"}
#: found when this check was written (issue 36); the list only shrinks
KNOWN = {
    "check_supported", "delete_files", "journal_path", "latest_snapshot", "next_barrier_id", "resolve",
    "rollback", "scrub", "spark_path", "summarize", "table_name", "unsupported_reason",
}
#: the names issue 36 found with several contracts: each has one home now
ONE_HOME = {
    "parse_partition_spec": "paimon/partitions.py",
    "latest_snapshot_id": "paimon/snapshots.py",
    "mask_url": "paimon/secrets.py",
    "table_history": "paimon/history.py",
}


def definitions() -> dict[str, list[str]]:
    """Public top-level function and class name -> the modules defining it."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                found[node.name].append(str(path.relative_to(PACKAGE)))
    return found


def test_a_public_name_is_defined_in_one_module():
    twice = {name: homes for name, homes in definitions().items() if len(homes) > 1 and name not in BY_CONTRACT}
    new = {name: homes for name, homes in twice.items() if name not in KNOWN}
    assert not new, f"one concept, one home; two concepts, two names: {new}"
    gone = sorted(KNOWN - set(twice))
    assert not gone, f"defined once now: remove from KNOWN: {gone}"


def test_the_names_that_had_several_contracts_have_one_home():
    found = definitions()
    assert {name: found[name] for name in ONE_HOME} == {name: [home] for name, home in ONE_HOME.items()}
