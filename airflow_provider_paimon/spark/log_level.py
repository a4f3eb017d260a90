"""How loud Spark is in a task log: the driver JVM's log level, set before it starts.

A spark-submit logs a few hundred INFO lines (startup, every stage, shutdown) into the
Airflow task log. ``sc.setLogLevel`` comes too late for the startup lines, and the
branch/tag jobs create no SparkContext at all; so the submit gives the driver JVM a
log4j2 configuration of ours (``log4j2.properties`` next to this module) through
``spark.driver.extraJavaOptions``, with the level as a system property. In client
deploy mode (the only one the operators use) spark-submit reads that option before it
starts the driver JVM. Executors on a cluster keep their own configuration (their logs
are not in the task log).

``None`` leaves Spark's (or the cluster's) own log configuration alone. A conf that
already names a log4j2 configuration file wins over ours.

Operators hand the level to the hook that runs the job, not to the conf: the
spark-submit hook (``hooks/spark_job.py``) applies ``with_log_level``; a Spark Connect
session gets nothing (its server's driver started long ago with its own configuration,
a driver Java option is static conf it would refuse, and the Connect client has no
``setLogLevel``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from airflow_provider_paimon.paimon.errors import InvalidArgumentError

DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
LEVEL_PROPERTY = "paimon.spark.log.level"
LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "ALL")
DEFAULT_LEVEL = "WARN"
CONFIG_FILE = Path(__file__).with_name("log4j2.properties")


def check_log_level(level: Any) -> str | None:
    """``level`` as a log4j2 level name (case-insensitive), ``None`` for "leave it"; else an error."""
    if level is None:
        return None
    text = str(level).strip().upper()
    if text not in LEVELS:
        raise InvalidArgumentError(
            f"spark_log_level must be one of {', '.join(LEVELS)} (or None to keep Spark's own "
            f"log configuration), got {level!r}"
        )
    return text


def with_log_level(conf: Mapping[str, Any], level: Any) -> dict[str, Any]:
    """``conf`` plus the driver Java options that set Spark's log level to ``level``."""
    checked = check_log_level(level)
    out = dict(conf)
    if checked is None:
        return out
    existing = str(out.get(DRIVER_JAVA_OPTIONS) or "").strip()
    if "log4j2.configurationFile" in existing or "log4j.configurationFile" in existing:
        return out  # the user's own log configuration wins
    ours = f"-Dlog4j2.configurationFile={CONFIG_FILE.as_uri()} -D{LEVEL_PROPERTY}={checked}"
    out[DRIVER_JAVA_OPTIONS] = f"{existing} {ours}".strip()
    return out

