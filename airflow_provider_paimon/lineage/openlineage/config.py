"""Where OpenLineage events go, decided from a plain dict of settings and the environment.

Off unless configured. In order of precedence:

1. our keys (``spark.paimon.openlineage.*``, usually Spark conf of the job);
2. the ``spark.openlineage.transport.*`` keys that Airflow's OpenLineage provider
   injects into ``spark-submit`` when ``[openlineage] spark_inject_transport_info``
   is on (same meaning as for OpenLineage's own Spark integration);
3. openlineage-python's usual configuration: ``OPENLINEAGE_CONFIG`` /
   ``./openlineage.yml`` / ``~/.openlineage/openlineage.yml``, ``OPENLINEAGE__...``
   environment variables, or ``OPENLINEAGE_URL`` (+ ``OPENLINEAGE_API_KEY``).

``OPENLINEAGE_DISABLED=true`` or ``spark.paimon.openlineage.enabled=false`` turns it
off whatever else is set. Taking a dict (not a SparkConf) keeps this module free of
Spark; callers pass ``airflow_provider_paimon.spark.session.spark_conf(spark)``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_paimon.paimon.option_values import parse_bool
from airflow_provider_paimon.paimon.secrets import register_secret_options, strip_userinfo

__all__ = [
    "CONF_PREFIX",
    "DEFAULT_RETRY",
    "DEFAULT_TIMEOUT_SECONDS",
    "KEY_API_KEY",
    "KEY_ASYNC",
    "KEY_ENABLED",
    "KEY_ENDPOINT",
    "KEY_LOCATION",
    "KEY_NAMESPACE",
    "KEY_TIMEOUT",
    "KEY_TYPE",
    "KEY_URL",
    "EmitterSettings",
    "resolve_settings",
]

CONF_PREFIX = "spark.paimon.openlineage."
KEY_ENABLED = CONF_PREFIX + "enabled"
KEY_NAMESPACE = CONF_PREFIX + "namespace"
KEY_ASYNC = CONF_PREFIX + "async"
KEY_TYPE = CONF_PREFIX + "transport.type"
KEY_URL = CONF_PREFIX + "transport.url"
KEY_ENDPOINT = CONF_PREFIX + "transport.endpoint"
KEY_API_KEY = CONF_PREFIX + "transport.apiKey"
KEY_TIMEOUT = CONF_PREFIX + "transport.timeout"
KEY_LOCATION = CONF_PREFIX + "transport.location"

SPARK_OL_TRANSPORT_PREFIX = "spark.openlineage.transport."
SPARK_OL_NAMESPACE = "spark.openlineage.namespace"

DEFAULT_TIMEOUT_SECONDS = 2.0
DEFAULT_ENDPOINT = "api/v1/lineage"
#: Few, quick retries: lineage must not hold up a micro-batch (or the end of a job).
DEFAULT_RETRY: dict[str, Any] = {
    "total": 2,
    "connect": 2,
    "read": 1,
    "backoff_factor": 0.2,
    "status_forcelist": [500, 502, 503, 504],
    "allowed_methods": ["POST"],
}
ENV_DISABLED = "OPENLINEAGE_DISABLED"


@dataclass
class EmitterSettings:
    """Resolved settings. ``transport`` is None to use openlineage's usual config.

    ``transport`` may hold an API key: ``repr`` masks it, never log the dict itself.
    """

    enabled: bool
    source: str  # "paimon-conf", "spark-openlineage-conf", "openlineage-config" or "off"
    job_namespace: str = "default"
    asynchronous: bool = True
    transport: dict[str, Any] | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        summary = describe_transport(self.transport) if self.transport else None
        return (
            f"EmitterSettings(enabled={self.enabled}, source={self.source!r}, "
            f"job_namespace={self.job_namespace!r}, asynchronous={self.asynchronous}, "
            f"transport={summary!r})"
        )


def resolve_settings(
    conf: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> EmitterSettings:
    """Decide whether and where to emit, from ``conf`` and the environment."""
    conf = {str(k): v for k, v in (conf or {}).items()}
    env = os.environ if environ is None else environ
    # API keys, transport URLs with user info, headers: secrets from here on, wherever
    # they would show (the emitter's messages, Airflow's masker in a task process)
    register_secret_options({k: v for k, v in conf.items() if _openlineage_key(k)})
    register_secret_options({k: v for k, v in env.items() if k.startswith("OPENLINEAGE")})
    namespace = str(
        conf.get(KEY_NAMESPACE)
        or conf.get(SPARK_OL_NAMESPACE)
        or env.get("OPENLINEAGE_NAMESPACE")
        or "default"
    )
    asynchronous = parse_bool(conf.get(KEY_ASYNC), KEY_ASYNC, True)

    def off() -> EmitterSettings:
        return EmitterSettings(False, "off", namespace, asynchronous)

    if not parse_bool(conf.get(KEY_ENABLED), KEY_ENABLED, True):
        return off()
    if parse_bool(env.get(ENV_DISABLED), f"${ENV_DISABLED}", False):
        return off()
    if conf.get(KEY_TYPE):
        return EmitterSettings(True, "paimon-conf", namespace, asynchronous, _from_paimon_conf(conf))
    spark_transport = _from_spark_openlineage_conf(conf)
    if spark_transport:
        return EmitterSettings(
            True, "spark-openlineage-conf", namespace, asynchronous, spark_transport
        )
    if _openlineage_config_present(env):
        return EmitterSettings(True, "openlineage-config", namespace, asynchronous, None)
    return off()


def _openlineage_key(key: str) -> bool:
    return key.startswith((CONF_PREFIX, SPARK_OL_TRANSPORT_PREFIX))


def _from_paimon_conf(conf: Mapping[str, Any]) -> dict[str, Any]:
    kind = str(conf[KEY_TYPE]).strip().lower()
    if kind == "http":
        url = conf.get(KEY_URL)
        if not url:
            raise ValueError(f"{KEY_TYPE}=http needs {KEY_URL} (e.g. http://marquez:5000)")
        transport: dict[str, Any] = {
            "type": "http",
            "url": str(url),
            "endpoint": str(conf.get(KEY_ENDPOINT) or DEFAULT_ENDPOINT),
            "timeout": float(conf.get(KEY_TIMEOUT) or DEFAULT_TIMEOUT_SECONDS),
            "retry": dict(DEFAULT_RETRY),
        }
        if conf.get(KEY_API_KEY):
            transport["auth"] = {"type": "api_key", "apiKey": str(conf[KEY_API_KEY])}
        return transport
    if kind == "file":
        location = conf.get(KEY_LOCATION)
        if not location:
            raise ValueError(f"{KEY_TYPE}=file needs {KEY_LOCATION} (a file path)")
        # append: one JSON event per line in one file, easy to tail and to test
        return {"type": "file", "log_file_path": str(location), "append": True}
    if kind == "console":
        return {"type": "console"}
    raise ValueError(f"{KEY_TYPE} must be http, file or console, not {kind!r}")


def _from_spark_openlineage_conf(conf: Mapping[str, Any]) -> dict[str, Any] | None:
    """Nest ``spark.openlineage.transport.a.b=v`` keys into openlineage's dict form."""
    nested: dict[str, Any] = {}
    for key, value in conf.items():
        if not key.startswith(SPARK_OL_TRANSPORT_PREFIX):
            continue
        path = key[len(SPARK_OL_TRANSPORT_PREFIX) :].split(".")
        node = nested
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        else:
            node[path[-1]] = value
    if not nested.get("type"):
        return None
    _fix_spark_style(nested)
    for sub in (nested.get("transports") or {}).values():
        if isinstance(sub, dict):
            _fix_spark_style(sub)
    return nested


def _fix_spark_style(transport: dict[str, Any]) -> None:
    """Spark-integration spellings -> openlineage-python's (timeout, flags, headers)."""
    millis = transport.pop("timeoutInMillis", None)
    if millis is not None and "timeout" not in transport:
        transport["timeout"] = float(millis) / 1000.0
    if "timeout" in transport:
        transport["timeout"] = float(transport["timeout"])
    headers = transport.pop("headers", None)
    if isinstance(headers, dict):
        transport["custom_headers"] = {str(k): str(v) for k, v in headers.items()}
    if "continueOnFailure" in transport:
        transport["continue_on_failure"] = parse_bool(
            transport.pop("continueOnFailure"), SPARK_OL_TRANSPORT_PREFIX + "continueOnFailure", True
        )
    if transport.get("type") == "file" and "location" in transport:
        transport.setdefault("log_file_path", transport.pop("location"))
        transport.setdefault("append", True)
    if transport.get("type") == "http":
        transport.setdefault("retry", dict(DEFAULT_RETRY))
        transport.setdefault("timeout", DEFAULT_TIMEOUT_SECONDS)


def _openlineage_config_present(env: Mapping[str, str]) -> bool:
    """True if openlineage-python would find a transport of its own (not its console fallback)."""
    if env.get("OPENLINEAGE_URL"):
        return True
    if any(key.startswith("OPENLINEAGE__TRANSPORT") for key in env):
        return True
    candidates = [
        env.get("OPENLINEAGE_CONFIG"),
        os.path.join(os.getcwd(), "openlineage.yml"),
        os.path.join(os.path.expanduser("~/.openlineage"), "openlineage.yml"),
    ]
    return any(path and os.path.isfile(path) for path in candidates)


def describe_transport(transport: Mapping[str, Any] | None) -> str:
    """A log-safe one-line description: type and destination, never credentials."""
    if not transport:
        return "openlineage default configuration"
    kind = transport.get("type", "?")
    if kind == "http":
        return f"http {_redact_url(str(transport.get('url', '')))}/{transport.get('endpoint', '')}"
    if kind == "file":
        return f"file {transport.get('log_file_path')}"
    if kind == "composite":
        names = ", ".join(sorted((transport.get("transports") or {}).keys()))
        return f"composite [{names}]"
    return str(kind)


def _redact_url(url: str) -> str:
    """The URL without user info, query and fragment.

    The user info goes first, found as the secret policy finds it (``strip_userinfo``):
    cutting at the first ``?`` or ``#`` before that would cut a password holding one in
    two and leave its first part in front of an ``@``-less remainder, unmasked.
    """
    return strip_userinfo(url).split("?", 1)[0].split("#", 1)[0].rstrip("/")
