"""The application file spark-submit runs: ``launcher.py FAMILY ARGS...``.

It stays a plain script (no relative imports) so spark-submit can run it directly;
the package comes from ``--py-files`` (or is installed on the cluster).
"""

from __future__ import annotations

import importlib
import sys

# Every family names a module with ``main(argv) -> int`` (a test imports each one).
# Streaming jobs are user applications (``PaimonSparkSubmitOperator``), not a family.
FAMILIES = {
    "branch": "airflow_provider_paimon.spark.jobs.branch",
    "tag": "airflow_provider_paimon.spark.jobs.tag",
    "compact": "airflow_provider_paimon.spark.jobs.compact",
    "maintenance": "airflow_provider_paimon.spark.jobs.maintenance",
    "audit": "airflow_provider_paimon.spark.jobs.audit",
    "publish": "airflow_provider_paimon.spark.jobs.publish",
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in FAMILIES:
        known = ", ".join(sorted(FAMILIES))
        sys.stderr.write(f"PAIMON_ERROR first argument must be a job family ({known})\n")
        return 2
    module = importlib.import_module(FAMILIES[argv[0]])
    return int(module.main(argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
