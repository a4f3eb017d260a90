"""The Python sample of docs/primary_keys.md runs as written and does what the page says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark
PAGE = Path(__file__).resolve().parents[2] / "docs" / "primary_keys.md"


def test_primary_keys_page_sample(spark, warehouse):
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    assert len(blocks) == 1
    ns = {"spark": spark, "warehouse": warehouse}
    exec(compile(blocks[0], "primary_keys.md", "exec"), ns)
    assert ns["result"].committed
    # r/c/u/d: id 1 inserted then updated, id 2 inserted then deleted; then id 1 deleted
    assert ns["users"].count() == 0
    assert ns["users"].native_plan.python_file_count == 0  # compacted: all top-level files
