"""An import inside a function hides a dependency from readers and tools: keep it only
where it earns its place.

A function-level import of one of the package's own modules is kept when importing
that module at the top would load a heavy library the importing module does not load
already (Spark, pypaimon, Arrow, SQLAlchemy, Airflow, OpenLineage...: import time in
every Spark Python worker and every DAG parse), when it is optional (inside ``try``),
or when a comment beside it says why. Every other one goes to the top of the module.
What a module loads is read statically: its top-level imports, followed through the
package's own modules (their parent packages' ``__init__`` included), ``if
TYPE_CHECKING:`` blocks excluded.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

from support.package_modules import PACKAGE, ROOT, imported_module, module_name

#: libraries whose import costs seconds or drags a stack in: worth a lazy import
HEAVY = frozenset({
    "airflow", "boto3", "botocore", "fastavro", "flask", "flask_appbuilder", "httpx", "numpy",
    "openlineage", "pandas", "polars", "py4j", "pyarrow", "pypaimon", "pyspark", "requests",
    "sqlalchemy", "wtforms",
})


def _files() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _top_level_imports(path: Path) -> set[str]:
    """Modules the file's module imports when it is imported (not its functions' imports)."""
    out: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                out.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                name = imported_module(path, node)
                out.add(name)
                out.update(f"{name}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.If) and not _is_type_checking(node):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)

    visit(ast.parse(path.read_text(), str(path)).body)
    return out


@functools.cache
def _graph() -> dict[str, set[str]]:
    return {module: _top_level_imports(path) for module, path in _files().items()}


def _with_parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts) + 1)]


@functools.cache
def heavy_loads(module: str) -> frozenset[str]:
    """The heavy libraries importing ``module`` loads (statically, through the package)."""
    graph = _graph()
    seen: set[str] = set()
    heavy: set[str] = set()
    todo = _with_parents(module)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name.split(".")[0] != ROOT:
            if name.split(".")[0] in HEAVY:
                heavy.add(name.split(".")[0])
            continue
        for target in graph.get(name, ()):
            todo.extend(_with_parents(target))
    return frozenset(heavy)


def _function_imports(tree: ast.AST) -> Iterator[ast.ImportFrom]:
    """``from ... import`` statements inside functions, except those inside ``try``."""
    todo: list[tuple[ast.AST, bool, bool]] = [(tree, False, False)]
    while todo:
        node, in_function, in_try = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ImportFrom) and in_function and not in_try:
                yield child
            todo.append((child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)),
                         in_try or isinstance(child, ast.Try)))


def unjustified_function_imports() -> list[str]:
    """``file:line module`` of every function-level import of the package's own modules
    that could move to the top (see the module docstring)."""
    found = []
    for module, path in sorted(_files().items()):
        text = path.read_text()
        lines = text.splitlines()
        mine = heavy_loads(module)
        for node in _function_imports(ast.parse(text, str(path))):
            target = imported_module(path, node)
            if target.split(".")[0] != ROOT:
                continue
            said = lines[node.lineno - 2].strip().startswith("#") or any(
                "#" in line for line in lines[node.lineno - 1:node.end_lineno])
            targets = [target, *(f"{target}.{alias.name}" for alias in node.names)]
            needs = set().union(*(heavy_loads(t) for t in targets)) - mine
            if not said and not needs:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {target}")
    return sorted(found)


def test_function_level_imports_of_the_package_earn_their_place():
    found = unjustified_function_imports()
    assert not found, (
        "these imports inside functions load nothing heavy the module does not load already: "
        "move them to the top of the module (or say why beside them):\n  " + "\n  ".join(found))


def test_the_check_sees_what_a_module_loads():
    """Self-test: the reading follows the package's modules to the libraries they load."""
    assert "pypaimon" in heavy_loads(f"{ROOT}.paimon.catalog")
    assert "airflow" in heavy_loads(f"{ROOT}.hooks.paimon")
    assert "pyspark" not in heavy_loads(f"{ROOT}.paimon.catalog")
    assert heavy_loads(f"{ROOT}.job_contract") == frozenset()
