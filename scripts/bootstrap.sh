#!/usr/bin/env bash
# Set up everything the demo and the tests need on a fresh Debian machine with
# Python 3.11: a Java 17 runtime (from Debian's packages, only if `java` is
# missing), a virtualenv in .venv, and this package with its test extras.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v java >/dev/null 2>&1; then
    echo "bootstrap: java not found, installing openjdk-17-jre-headless" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi

PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
    echo "bootstrap: creating .venv with $PY" >&2
    "$PY" -m venv .venv
fi

stamp=.venv/.bootstrap-stamp
want="$(cat pyproject.toml constraints/overrides.txt | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "bootstrap: installing Python dependencies into .venv" >&2
    .venv/bin/python -m pip install -q --upgrade pip uv
    # uv applies constraints/overrides.txt (see pyproject.toml for why).
    .venv/bin/python -m uv pip install -q --python .venv/bin/python \
        --override constraints/overrides.txt -e ".[test]"
    echo "$want" > "$stamp"
fi

# Cached bytecode, written once here. uv installs without it, and where
# PYTHONDONTWRITEBYTECODE is set (as on the machines this project runs on) Python never writes
# it: every Python process (pytest's workers, Spark's Python workers, Airflow's task
# processes, the demo's spark-submits) then compiles each module it imports from source,
# ~4 s of CPU for pyspark + pypaimon + Airflow (measured 2026-11-27: 6.4-7.3 s of CPU for
# those imports without it, 2.7-3.3 s with it). Python reads it even when it may not write.
bytecode_stamp=.venv/.bytecode-stamp
if [ ! -f "$bytecode_stamp" ] || [ "$(cat "$bytecode_stamp")" != "$want" ]; then
    echo "bootstrap: compiling the virtualenv's modules once" >&2
    .venv/bin/python -m compileall -q -j 0 .venv/lib/python3*/site-packages >/dev/null 2>&1 || true
    echo "$want" > "$bytecode_stamp"
fi

# The same for the zips Spark's own Python processes import pyspark and py4j from (Spark
# puts them first on those processes' PYTHONPATH, and Python never writes bytecode into a
# zip): without it each Spark daemon, worker and spark-submit driver compiled pyspark again.
# See the script's docstring for the figures. Checks and returns when it was done before.
.venv/bin/python scripts/compile_spark_zips.py .venv/lib/python3*/site-packages/pyspark/python/lib
