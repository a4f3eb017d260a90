"""The package's rooms and what each may import, read from the code itself.

docs/architecture.md draws the layers: ``paimon/`` (table operations over pypaimon)
imports neither Spark nor Airflow nor the layers above it; ``lineage/`` imports
``paimon/`` only; ``spark/`` imports no Airflow. The Airflow layer has its own order,
``common < hooks < triggers < sensors, operators < task_groups, plugins``: a room
imports only the rooms below it (not its neighbours on the same floor). And no module
imports itself back through others (no cycle). Every ``import`` statement counts,
those inside functions too (they are real dependencies that only run later).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.package_modules import PACKAGE, ROOT, imported_module, module_name

#: the Airflow layer (and what only it may use)
AIRFLOW_ROOMS = (
    "common", "hooks", "operators", "sensors", "triggers", "task_groups", "plugins",
    "assets", "deadlines", "get_provider_info",
)
#: the Airflow layer's floors, lowest first: a room imports only rooms on lower floors.
#: The top-level modules (asset URIs, deadline alerts, provider metadata, the job zip)
#: are the bottom floor: they import no room of the layer.
AIRFLOW_FLOORS: tuple[tuple[str, ...], ...] = (
    ("assets", "deadlines", "get_provider_info", "packaging"),
    ("common",),
    ("hooks",),
    ("triggers",),
    ("sensors", "operators"),
    ("task_groups", "plugins"),
)
FLOOR = {room: n for n, rooms in enumerate(AIRFLOW_FLOORS) for room in rooms}
RULES = {
    # the wire between tasks and jobs (environment names, result lines): every room
    # reads it, it reads none
    "job_contract": ("paimon", "lineage", "spark", *AIRFLOW_ROOMS),
    "paimon": ("lineage", "spark", *AIRFLOW_ROOMS),
    "lineage": ("spark", *AIRFLOW_ROOMS),
    "spark": AIRFLOW_ROOMS,
}
FORBIDDEN_LIBRARIES = {
    "job_contract": ("pyspark", "airflow"),
    "paimon": ("pyspark", "airflow"), "lineage": ("pyspark", "airflow"), "spark": ("airflow",)}


def imports_of(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in the file, nested ones included."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            name = imported_module(path, node)
            yield node.lineno, name
            for alias in node.names:  # "from . import x" imports the module x
                if not node.module:
                    yield node.lineno, f"{name}.{alias.name}"


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == ROOT else None


def _files_of(room: str) -> list[Path]:
    single = PACKAGE / f"{room}.py"
    return [single] if single.exists() else sorted((PACKAGE / room).rglob("*.py"))


@pytest.mark.parametrize("room", sorted(RULES))
def test_no_room_imports_a_room_above_it(room):
    problems = []
    for path in _files_of(room):
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


@pytest.mark.parametrize("room", sorted(FLOOR))
def test_the_airflow_layer_imports_only_the_floors_below(room):
    problems = []
    for path in _files_of(room):
        for line, name in imports_of(path):
            target = _room(name)
            if target in FLOOR and target != room and FLOOR[target] >= FLOOR[room]:
                problems.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {name} "
                                f"(floor {FLOOR[target]}, {room} is on floor {FLOOR[room]})")
    assert not problems, "\n".join(problems)


def test_every_room_of_the_package_has_a_place():
    """A new top-level room or module is placed in RULES / AIRFLOW_FLOORS, not left unchecked."""
    placed = set(RULES) | set(FLOOR) | {"__init__"}
    rooms = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py") or (p.is_dir() and (p / "__init__.py").exists())}
    assert rooms - placed == set()


def imported_names(path: Path) -> Iterator[str]:
    """What each import of the file names: ``import a.b`` -> ``a.b``; ``from a import b``
    -> ``a.b`` (a module ``b``, or a name ``b`` defined in ``a``: resolved against the
    package's modules by ``import_graph``), relative ones made absolute, nested included."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = imported_module(path, node)
            yield from (base if alias.name == "*" else f"{base}.{alias.name}" for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports, nested imports included.

    ``from a import b`` is an edge to ``a.b`` when that is a module, else to ``a``: so
    ``from .. import commit_events`` depends on ``spark.commit_events``, not on what
    ``spark/__init__.py`` imports (Python runs that file first, but it imports nothing
    at load time; its function-level imports are its own edges).
    """
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = {resolve(name) for name in imported_names(path) if name.startswith(ROOT)}
        graph[module] = {t for t in targets if t and t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _edges_within(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    members = set(component)
    return [f"  {m} -> {t}" for m in component for t in sorted(graph[m] & members)]


#: cycles found when this check was written (issue 36), each broken in its own commit;
#: the list only shrinks (a cycle broken must leave it, a new one fails)
KNOWN_CYCLES: list[list[str]] = []


def test_no_module_imports_itself_back():
    graph = import_graph()
    found = cycles(graph)
    known = [[f"{ROOT}.{m}" for m in c] for c in KNOWN_CYCLES]
    new = [c for c in found if c not in known]
    report = ["\n".join([f"cycle of {len(c)} modules:", *_edges_within(graph, c)]) for c in new]
    assert not new, "\n".join(report)
    gone = [c for c in known if c not in found]
    assert not gone, f"broken cycles still listed in KNOWN_CYCLES (remove them): {gone}"


def test_the_cycle_finder_finds_a_cycle_through_a_nested_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
