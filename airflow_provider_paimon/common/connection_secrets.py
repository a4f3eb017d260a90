"""What in an Airflow connection is secret, and which locations may carry no credentials.

**Connection extras fail closed.** An option in a ``paimon`` connection's extra is secret
unless it is a known non-secret option: one of Paimon's own catalog, file-IO and table
options (the keys pypaimon declares, ``fields.*``), or one of this connection's own
settings (``metastore``, ``warehouse``, the S3 shortcuts, the lineage proposal's
``table-lineage``...), and then only if its name names no credential and its value holds
no URL credentials (the second net of ``paimon/secrets.py``). So a new credential option
pypaimon adds tomorrow is secret today. Secret values are registered by their whole
value the moment the connection is read; every value's URL credentials are registered
too (``uri=http://u:p@rest``, ``jdbc.url=...?password=``).

**Locations carry no credentials.** ``warehouse``, ``lineage_url`` and the URLs inside
``conf`` / ``warehouse_options`` are shown in places a secret must not be (rendered
fields, serialized DAGs and trigger rows, the job's command line, OpenLineage dataset
namespaces, asset URIs). A URL holding a password (or user info that does not parse,
or a secret query value) is refused there with ``CredentialsInLocationError``, which
names the field (never the value) and the connection that carries such credentials.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.secrets import is_secret, is_secret_key, url_userinfo_secrets

__all__ = [
    "CONNECTION_OWN_OPTIONS",
    "CredentialsInLocationError",
    "check_location",
    "connection_secret_keys",
    "is_known_public_option",
    "known_public_options",
    "location_has_credentials",
]

#: settings of the ``paimon`` connection itself (hooks/paimon.py) and the lineage
#: proposal's options (lineage/meta_options.py) that name no credential
CONNECTION_OWN_OPTIONS = frozenset({
    "metastore", "warehouse", "uri", "catalog-key",
    "endpoint", "region", "path-style-access", "path_style_access",
    "fs.s3.endpoint", "fs.s3.region", "fs.s3.path-style-access",
    "table-lineage", "data-lineage", "lineage-meta",
    "jdbc.url", "jdbc.driver", "jdbc.database", "jdbc.user", "jdbc.username",
})
#: prefixes of Paimon table options with a column or level in their name
_PUBLIC_PREFIXES = ("fields.", "file.compression.per.level", "file.format.per.level")

#: what to use instead, per location field
CONNECTION_HINT = {
    "warehouse": "put the storage credentials in a 'paimon' connection (Login/Password, or its "
                 "extra) and pass paimon_conn_id",
    "lineage_url": "put the store in a 'paimon_lineage' connection and pass lineage_conn_id",
    "warehouse_options": "put catalog credentials in a 'paimon' connection and pass paimon_conn_id",
    "conf": "put the URL's credentials in the connection it belongs to (an OpenLineage transport's "
            "in Airflow's [openlineage] config, a lineage store's in a 'paimon_lineage' connection)",
}


class CredentialsInLocationError(InvalidArgumentError):
    """A location field (warehouse, lineage URL, a URL in conf/options) carries credentials."""


@functools.lru_cache(maxsize=1)
def known_public_options() -> frozenset[str]:
    """The option keys that are settings, not credentials: pypaimon's declared options
    whose names name no credential, plus the connection's own."""
    from pypaimon.common.options import config as catalog_config
    from pypaimon.common.options import core_options
    from pypaimon.common.options.config_option import ConfigOption

    keys: set[str] = set(CONNECTION_OWN_OPTIONS)
    for module in (catalog_config, core_options):
        for holder in vars(module).values():
            if isinstance(holder, type):
                keys.update(
                    option.key() for option in vars(holder).values()
                    if isinstance(option, ConfigOption) and not is_secret_key(option.key())
                )
    return frozenset(keys)


def is_known_public_option(key: str) -> bool:
    """True for a key known to hold a setting (its value may still hold URL credentials)."""
    return key in known_public_options() or key.startswith(_PUBLIC_PREFIXES)


def connection_secret_keys(options: Mapping[str, Any]) -> frozenset[str]:
    """The keys of a connection's options that are secret: unknown keys (fail closed),
    keys naming a credential, values holding credentials or a registered secret."""
    return frozenset(
        key for key, value in options.items()
        if not is_known_public_option(key) or is_secret(key, value if isinstance(value, str) else str(value))
    )


def location_has_credentials(value: Any) -> bool:
    """True when a URL (or any text) in a location field holds a password, user info that
    does not parse, or a secret query value."""
    return bool(url_userinfo_secrets(str(value or "").strip()))


def check_location(field: str, value: Any, where: str = "") -> None:
    """Raise ``CredentialsInLocationError`` when ``value`` (of ``field``) carries credentials.

    ``value`` may be a string or a mapping (``conf``, ``warehouse_options``: each value is
    checked). The message names the field (and key), never the value.
    """
    hint = CONNECTION_HINT.get(field, CONNECTION_HINT["warehouse"])
    prefix = f"{where}: " if where else ""
    if isinstance(value, Mapping):
        bad = sorted(str(k) for k, v in value.items() if isinstance(v, str) and location_has_credentials(v))
        if bad:
            raise CredentialsInLocationError(
                f"{prefix}{field} holds a URL with credentials (key {', '.join(bad)}); Airflow would "
                f"show it in rendered fields and the serialized DAG: {hint}"
            )
        return
    if isinstance(value, str) and location_has_credentials(value):
        raise CredentialsInLocationError(
            f"{prefix}{field} carries credentials (a password in its URL); Airflow would show it in "
            f"rendered fields, the serialized DAG and trigger rows: {hint}"
        )
