"""How tests import their helpers.

A folder's ``conftest.py`` is imported as the module ``conftest``; which folder's module
that name means changes as pytest collects more folders. At collection a test module's
``from conftest import x`` gets its own folder's; inside a test function it gets the
folder collected last (a full CI run failed this way), so such imports stay at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _function_level_conftest_imports(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and inner.module == "conftest" and inner.level == 0:
                    lines.append(inner.lineno)
                if isinstance(inner, ast.Import) and any(a.name == "conftest" for a in inner.names):
                    lines.append(inner.lineno)
    return lines


def test_no_test_imports_conftest_inside_a_function():
    found = {
        f"{path.relative_to(TESTS)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        for line in _function_level_conftest_imports(path)
    }
    assert not found, f"import from conftest at module level (the folder's own), not in a function: {sorted(found)}"


def test_the_check_finds_a_function_level_import(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text("from conftest import a\n\ndef test_x():\n    from conftest import b\n    import conftest\n")
    assert _function_level_conftest_imports(sample) == [4, 5]
