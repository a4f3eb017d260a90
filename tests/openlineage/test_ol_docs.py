"""The Python samples in docs/openlineage.md run as written."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "openlineage.md"
SAMPLES = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_doc_has_samples():
    assert len(SAMPLES) >= 2


@pytest.mark.parametrize("index", range(len(SAMPLES)))
def test_doc_sample_runs(index, tmp_path, monkeypatch):
    for key in [k for k in os.environ if k.startswith("OPENLINEAGE")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    exec(compile(SAMPLES[index], f"{DOC.name}[sample {index}]", "exec"), {})
