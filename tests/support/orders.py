"""The example correction DAG's data: the repo's DAGs folder and the orders its job enriches."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "dags"
VENV_BIN = str(Path(sys.executable).parent)

ORDERS = [
    {"order_id": 1, "customer": "ada", "amount_cents": 1250},
    {"order_id": 2, "customer": "bob", "amount_cents": 25000},
    {"order_id": 3, "customer": "cy", "amount_cents": 999},
    {"order_id": 4, "customer": "dee", "amount_cents": 180000},
]
