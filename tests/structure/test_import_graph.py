"""The package's rooms and what each may import, read from the code itself.

docs/architecture.md draws the layers: ``paimon/`` (table operations over pypaimon)
imports neither Spark nor Airflow nor the layers above it; ``lineage/`` imports
``paimon/`` only; ``spark/`` imports no Airflow. Every ``import`` statement counts,
those inside functions too (they are real dependencies that only run later).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "airflow_provider_paimon"
ROOT = PACKAGE.name
#: the Airflow layer (and what only it may use)
AIRFLOW_ROOMS = ("hooks", "operators", "sensors", "triggers", "plugins", "assets", "deadlines", "get_provider_info")
RULES = {
    "paimon": ("lineage", "spark", *AIRFLOW_ROOMS),
    "lineage": ("spark", *AIRFLOW_ROOMS),
    "spark": AIRFLOW_ROOMS,
}
FORBIDDEN_LIBRARIES = {"paimon": ("pyspark", "airflow"), "lineage": ("pyspark", "airflow"), "spark": ("airflow",)}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in the file, nested ones included."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            yield node.lineno, name
            for alias in node.names:  # "from . import x" imports the module x
                if not node.module:
                    yield node.lineno, f"{name}.{alias.name}"


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == ROOT else None


@pytest.mark.parametrize("room", sorted(RULES))
def test_no_room_imports_a_room_above_it(room):
    problems = []
    for path in sorted((PACKAGE / room).rglob("*.py")):
        for line, name in imports_of(path):
            target = _room(name)
            if target in RULES[room]:
                problems.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}")
            if name.split(".")[0] in FORBIDDEN_LIBRARIES[room]:
                problems.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}")
    assert not problems, "\n".join(problems)


def test_the_reader_sees_nested_and_relative_imports(tmp_path):
    """The checker itself: a function-level relative import is found and resolved."""
    sample = PACKAGE / "paimon" / "catalog.py"
    names = {name for _, name in imports_of(sample)}
    assert "airflow_provider_paimon.paimon.errors" in names
    assert any(name.startswith("pypaimon") for name in names)
