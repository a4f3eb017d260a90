"""The package's modules as the structure tests read them: names and where imports point."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "airflow_provider_paimon"
ROOT = PACKAGE.name


def module_name(path: Path) -> str:
    """``airflow_provider_paimon.x.y`` for ``.../x/y.py`` (a package's ``__init__`` is ``x``)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_module(path: Path, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` in ``path`` names, relative ones made absolute."""
    if not node.level:
        return node.module or ""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    parts = package.split(".")
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, node.module] if node.module else parts)
