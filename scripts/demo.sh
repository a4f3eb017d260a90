#!/usr/bin/env bash
# The README's demo command: set up (scripts/bootstrap.sh), then run scripts/demo.py,
# which corrects a Paimon table with Airflow + Spark and prints rows and lineage.
# `--warehouse s3` puts the warehouse on a loopback S3 server, started and stopped here.
# Output goes to ./demo-output/ (recreated each run); nothing keeps running afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# --warehouse s3 runs a loopback S3 server (moto[server], a test extra bootstrap installs)
if [[ " $* " == *" s3 "* || " $* " == *"--warehouse=s3"* ]] && ! .venv/bin/python -c "import moto.server" 2>/dev/null; then
    .venv/bin/python -m pip install -q "moto[server]>=5.0"
fi
exec .venv/bin/python scripts/demo.py "$@"
