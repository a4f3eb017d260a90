#!/usr/bin/env bash
# The README's test command: set up (scripts/bootstrap.sh), lint, run the suite.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh tests/lineage -x`.
# `bash scripts/test.sh --fast [ARGS]`: only tests that start no JVM, no spark-submit, no
# Airflow and no browser (markers set in tests/markers.py), with the guard that fails a
# test starting Spark unmarked (about 3 minutes; the whole suite about 13: docs/testing.md).
set -euo pipefail
if [ "${1:-}" = "--fast" ]; then
    shift
    set -- -m "not spark and not submit and not airflow and not browser" "$@"
    export PAIMON_MARKER_GUARD=1
    export PAIMON_TEST_JVM_ARCHIVE="${PAIMON_TEST_JVM_ARCHIVE:-0}"  # no JVM starts: build no class archive
fi
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh

# Test-only system tools from Debian's packages: Chromium (the UI tests drive it
# headless) and docker-compose (validates docker/docker-compose.yml; no engine needed).
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1 || missing+=(docker-compose)
if [ ${#missing[@]} -gt 0 ]; then
    echo "test: installing ${missing[*]} from Debian's packages" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
export PYSPARK_PYTHON="$PWD/.venv/bin/python" PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
.venv/bin/ruff check airflow_provider_paimon tests dags benchmarks scripts
.venv/bin/mypy airflow_provider_paimon
# The project's own modules' bytecode, once (see scripts/bootstrap.sh: without it every
# Spark Python worker and Airflow task process compiles the package again).
.venv/bin/python -m compileall -q -j 0 airflow_provider_paimon dags tests >/dev/null 2>&1 || true
# Two workers taking whole files (module fixtures stay per file): about half the suite
# waits on other processes (spark-submit, Airflow components, SIGKILL-and-restart
# streams), so the two cores overlap it. PAIMON_TEST_WORKERS=0 runs in one process.
# --no-loadscope-reorder keeps tests/conftest.py's order (the slowest files first, so
# the run does not end on one long file); xdist would otherwise sort files by test count.
exec .venv/bin/python -m pytest -n "${PAIMON_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
