"""How tests import their helpers: from ``tests/support`` (or a helper module), never
from a ``conftest``.

Every folder's ``conftest.py`` is imported as the module ``conftest``, and which
folder's that name means depends on what pytest loaded last: inside a test function it
is the folder collected last (a full CI run failed so), and even at the top of a test
module it is another folder's when a run names files of two folders (``pytest
tests/airflow/x.py tests/connect/y.py`` loads both conftests first). Shared constants
and helpers live in ``tests/support/``; conftests keep fixtures.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _conftest_imports(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "conftest" and node.level == 0:
            lines.append(node.lineno)
        if isinstance(node, ast.Import) and any(a.name == "conftest" for a in node.names):
            lines.append(node.lineno)
    return sorted(lines)


def test_no_test_module_imports_a_conftest():
    found = {
        f"{path.relative_to(TESTS)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        if path.name != "conftest.py"
        for line in _conftest_imports(path)
    }
    assert not found, f"import these from tests/support/ (not from a conftest): {sorted(found)}"


def test_the_check_finds_imports_at_any_level(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text("from conftest import a\n\ndef test_x():\n    from conftest import b\n    import conftest\n")
    assert _conftest_imports(sample) == [1, 4, 5]
