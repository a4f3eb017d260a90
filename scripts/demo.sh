#!/usr/bin/env bash
# The README's demo command: set up (scripts/bootstrap.sh), then run scripts/demo.py,
# which corrects a Paimon table with Airflow + Spark and prints rows and lineage.
# Output goes to ./demo-output/ (recreated each run); nothing keeps running afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/python scripts/demo.py "$@"
