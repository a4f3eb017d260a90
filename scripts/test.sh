#!/usr/bin/env bash
# The README's test command: set up (scripts/bootstrap.sh), lint, run the suite.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh tests/lineage -x`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python" PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
.venv/bin/ruff check airflow_provider_paimon tests dags benchmarks scripts
exec .venv/bin/python -m pytest "$@"
