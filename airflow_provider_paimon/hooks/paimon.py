"""PaimonHook: the ``paimon`` connection, and metadata answers without Spark.

Operators use it to fail fast (does the table/branch/tag exist?) before paying for a
spark-submit, and sensors use it to read snapshot ids. It reads through pypaimon via
``airflow_provider_paimon.paimon.catalog``; it never reads or writes data.

Connection layout:

* **Host** (or extra ``warehouse``): the warehouse path or URI.
* **Extra** (JSON): catalog options passed to pypaimon as they are: ``metastore``
  (``filesystem`` by default, ``jdbc``, ``rest``), ``uri``, ``jdbc.*``, ``fs.*``/``s3.*``...
* **Lineage** (the lineage proposal's catalog options, ``lineage/meta_options.py``):
  ``table-lineage``, ``data-lineage``, ``lineage-meta``, ``jdbc.url``, ``jdbc.username``,
  ``jdbc.password``, ``jdbc.database`` in the extra turn on lineage capture for the
  Spark jobs given this connection (docs/lineage_capture.md); pypaimon never sees them.
* **Login / Password**: shortcuts for ``jdbc.user`` / ``jdbc.password`` (metastore
  ``jdbc``) or the ``token`` (metastore ``rest``); for a file-system catalog whose
  warehouse is on S3 (``s3://``, ``s3a://``), the access key id and secret key
  (``fs.s3.accessKeyId`` / ``fs.s3.accessKeySecret``).
* **S3 shortcuts in Extra** (warehouse on S3): ``endpoint``, ``region`` and
  ``path-style-access`` stand for ``fs.s3.endpoint``, ``fs.s3.region`` and
  ``fs.s3.path-style-access``; the full ``fs.s3.*`` names work too and win.

Secrets are known by where they come from (``common/connection_secrets.py``): the
Password, the Login when it is an S3 access key id, and every extra that is not a known
non-secret option (fail closed) are registered by their whole value the moment the
connection is read, so Airflow's masker and the package's own messages hide them; the
URL credentials inside any value are registered too. A warehouse (Host) with
credentials in it is refused: they go in Login/Password. Spark jobs get every catalog
option of the connection through the ``PAIMON_CATALOG_OPTIONS_JSON`` environment
variable, never the command line.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from airflow.sdk import BaseHook

from airflow_provider_paimon.common.connection_secrets import check_location, connection_secret_keys
from airflow_provider_paimon.common.secret_masking import register_value
from airflow_provider_paimon.get_provider_info import PAIMON_CONN_FIELDS
from airflow_provider_paimon.get_provider_info import PAIMON_UI_FIELD_BEHAVIOUR as UI
from airflow_provider_paimon.lineage.meta_options import pypaimon_catalog_options
from airflow_provider_paimon.paimon.catalog import list_branch_names, load_table, open_catalog
from airflow_provider_paimon.paimon.errors import PaimonError
from airflow_provider_paimon.paimon.names import is_main
from airflow_provider_paimon.paimon.option_values import parse_bool
from airflow_provider_paimon.paimon.secrets import (
    SECRET_KEY_MARKERS,
    is_secret,
    register_secret,
    register_url_secrets,
    scrub,
    secret_values,
)

SECRET_MARKERS = SECRET_KEY_MARKERS
_EXTRA_PREFIX = "extra__paimon__"
#: warehouse schemes served by pypaimon's S3 file IO
S3_SCHEMES = ("s3", "s3a", "s3n")
#: short extra names of a warehouse on S3 -> pypaimon's option names
S3_SHORTCUTS = {
    "endpoint": "fs.s3.endpoint",
    "region": "fs.s3.region",
    "path-style-access": "fs.s3.path-style-access",
    "path_style_access": "fs.s3.path-style-access",
}
S3_ACCESS_KEY_ID = "fs.s3.accessKeyId"
S3_SECRET_KEY = "fs.s3.accessKeySecret"


def is_s3_warehouse(warehouse: str) -> bool:
    """True for ``s3://``, ``s3a://`` and ``s3n://`` warehouses (pypaimon's S3 file IO)."""
    scheme, sep, _ = str(warehouse).strip().partition("://")
    return bool(sep) and scheme.lower() in S3_SCHEMES


@dataclass(frozen=True)
class CatalogConfig:
    """Where the warehouse is and how to open its catalog, as resolved from a connection.

    ``secret_keys`` are the options secret by origin (a connection's password and its
    extras that are not known settings); the policy's second net adds any other key
    naming a credential or value holding one.
    """

    warehouse: str
    options: dict[str, str] = field(default_factory=dict)
    secret_keys: frozenset[str] = frozenset()

    def is_secret(self, key: str) -> bool:
        return key in self.secret_keys or is_secret(key, self.options.get(key))

    @property
    def public_options(self) -> dict[str, str]:
        """Options safe to show in logs (jobs get every option through the environment)."""
        return {k: v for k, v in self.options.items() if not self.is_secret(k)}

    @property
    def secret_options(self) -> dict[str, str]:
        """Options that must never be shown."""
        return {k: v for k, v in self.options.items() if self.is_secret(k)}


def config_from_connection(
    host: str | None,
    login: str | None,
    password: str | None,
    extra: dict[str, Any],
) -> CatalogConfig:
    """Turn a ``paimon`` connection's fields into a ``CatalogConfig``.

    Registers the connection's secrets (by origin, whole values) as it reads them; a
    warehouse with credentials in it is refused (``CredentialsInLocationError``).
    """
    register_secret(password)
    options: dict[str, str] = {}
    for key, value in (extra or {}).items():
        name = key[len(_EXTRA_PREFIX):] if key.startswith(_EXTRA_PREFIX) else key
        if value is None or value == "":
            continue
        options[name] = json.dumps(value) if isinstance(value, (dict, list)) else str(value)
    secret_keys = connection_secret_keys(options)
    for key, value in options.items():
        register_url_secrets(value)
        if key in secret_keys:
            register_value(value)
    warehouse = (host or "").strip() or options.pop("warehouse", "")
    options.pop("warehouse", None)
    check_location("warehouse", warehouse, "the paimon connection's Host (or extra 'warehouse')")
    metastore = options.get("metastore", "filesystem").lower()
    if login and metastore == "jdbc":
        options.setdefault("jdbc.user", login)
    if password:
        if metastore == "jdbc":
            options.setdefault("jdbc.password", password)
        elif metastore == "rest":
            options.setdefault("token", password)
    if metastore == "filesystem" and is_s3_warehouse(warehouse):
        if login:
            register_secret(login)  # an S3 access key id: half of the credential
        _s3_options(options, login, password)
    # the options the Password (and an S3 Login) filled in are secret by origin too
    by_origin = {v for v in (password, options.get(S3_ACCESS_KEY_ID)) if v}
    secret_keys = connection_secret_keys(options) | {k for k, v in options.items() if v in by_origin}
    return CatalogConfig(warehouse=warehouse, options=options, secret_keys=secret_keys)


def _s3_options(options: dict[str, str], login: str | None, password: str | None) -> None:
    """Map the connection's S3 shortcuts and credentials onto pypaimon's ``fs.s3.*`` names."""
    for short, full in S3_SHORTCUTS.items():
        if short in options:
            value = options.pop(short)
            options.setdefault(full, value)
    style = "fs.s3.path-style-access"
    if style in options:  # a flag fails closed: "ture" is an error, not virtual-host addressing
        options[style] = "true" if parse_bool(options[style], f"extra {style}") else "false"
    if login:
        options.setdefault(S3_ACCESS_KEY_ID, login)
    if password:
        options.setdefault(S3_SECRET_KEY, password)
    if bool(options.get(S3_ACCESS_KEY_ID)) != bool(options.get(S3_SECRET_KEY)):
        given, missing = (
            ("an access key id", "its secret key (Password)")
            if options.get(S3_ACCESS_KEY_ID)
            else ("a secret key", "its access key id (Login)")
        )
        raise ValueError(
            f"the paimon connection gives {given} for the S3 warehouse but not {missing}; "
            f"set both (Login/Password or extra {S3_ACCESS_KEY_ID}/{S3_SECRET_KEY}) or neither "
            "(then the AWS default credential chain is used)"
        )


class PaimonHook(BaseHook):
    """Open a Paimon catalog from a ``paimon`` connection and answer metadata questions.

    :param paimon_conn_id: the ``paimon`` connection (default ``paimon_default``).
    :param warehouse: overrides the connection's warehouse (handy in tests and notebooks).
    :param catalog_options: extra catalog options, merged over the connection's.
    """

    conn_name_attr = "paimon_conn_id"
    default_conn_name = "paimon_default"
    conn_type = "paimon"
    hook_name = "Apache Paimon"

    def __init__(
        self,
        paimon_conn_id: str = default_conn_name,
        warehouse: str | None = None,
        catalog_options: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.paimon_conn_id = paimon_conn_id
        self._warehouse_override = warehouse
        self._options_override = {str(k): str(v) for k, v in (catalog_options or {}).items()}

    @classmethod
    def for_task(
        cls,
        warehouse: str | None = None,
        paimon_conn_id: str | None = None,
        catalog_options: dict[str, Any] | None = None,
    ) -> PaimonHook:
        """The hook an operator or sensor uses: an explicit warehouse, else a connection.

        Templated values arrive as strings, so blank means "not given". With a
        ``warehouse``, the connection is read only when ``paimon_conn_id`` names one (for
        its catalog options and credentials); without, the connection (default
        ``paimon_default``) must name the warehouse.
        """
        warehouse = (warehouse or "").strip() or None
        conn_id = (paimon_conn_id or "").strip()
        if warehouse is None and not conn_id:
            conn_id = cls.default_conn_name
        return cls(paimon_conn_id=conn_id, warehouse=warehouse, catalog_options=catalog_options)

    # -- connection form (Airflow reads the declarative copy in get_provider_info) --

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """Field behaviour of the connection form (same content as the provider info)."""
        return {
            "hidden_fields": list(UI["hidden-fields"]),
            "relabeling": dict(UI["relabeling"]),
            "placeholders": dict(UI["placeholders"]),
        }

    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        """Extra form fields (same content as the provider info's ``conn-fields``)."""
        from flask_appbuilder.fieldwidgets import BS3TextFieldWidget
        from flask_babel import lazy_gettext
        from wtforms import StringField

        return {
            name: StringField(
                lazy_gettext(spec["label"]),
                widget=BS3TextFieldWidget(),
                description=spec.get("description", ""),
                default=spec["schema"].get("default"),
            )
            for name, spec in PAIMON_CONN_FIELDS.items()
        }

    # -- configuration --

    @cached_property
    def catalog_config(self) -> CatalogConfig:
        """The resolved warehouse and options; secret values are registered for masking."""
        if self.paimon_conn_id:
            conn = self.get_connection(self.paimon_conn_id)
            config = config_from_connection(conn.host, conn.login, conn.password, conn.extra_dejson)
        else:
            config = CatalogConfig(warehouse="")
        options = {**config.options, **self._options_override}
        warehouse = self._warehouse_override or config.warehouse
        if not warehouse:
            raise ValueError(
                f"connection {self.paimon_conn_id!r} names no warehouse: set Host to the "
                "warehouse URI (or extra 'warehouse')"
            )
        check_location("warehouse", warehouse)
        # options given by the task (warehouse_options): secret when the policy says so
        for value in secret_values(self._options_override):
            register_value(value)
        return CatalogConfig(warehouse=warehouse, options=options, secret_keys=config.secret_keys)

    @property
    def warehouse(self) -> str:
        return self.catalog_config.warehouse

    def get_conn(self) -> Any:
        """The pypaimon catalog (opened once per hook)."""
        return self._catalog

    @cached_property
    def _catalog(self) -> Any:
        config = self.catalog_config
        return open_catalog(config.warehouse, pypaimon_catalog_options(config.options))

    def get_table(self, table: str, branch: str | None = None) -> Any:
        """The pypaimon table ``db.table`` (on ``branch``); raises a ``PaimonError`` if absent."""
        return load_table(self.get_conn(), table, branch)

    # -- metadata answers --

    def list_databases(self) -> list[str]:
        return sorted(self.get_conn().list_databases())

    def list_tables(self, database: str) -> list[str]:
        return sorted(self.get_conn().list_tables(database))

    def table_exists(self, table: str) -> bool:
        try:
            self.get_table(table)
        except PaimonError:
            return False
        return True

    def get_schema(self, table: str, branch: str | None = None) -> dict[str, Any]:
        """Fields, partition keys, primary keys and options of the table's current schema."""
        schema = self.get_table(table, branch).table_schema
        return {
            "schema_id": schema.id,
            "fields": [
                {"id": f.id, "name": f.name, "type": str(f.type), "description": f.description}
                for f in schema.fields
            ],
            "partition_keys": list(schema.partition_keys),
            "primary_keys": list(schema.primary_keys),
            "options": dict(schema.options),
            "comment": schema.comment,
        }

    def is_primary_key_table(self, table: str, branch: str | None = None) -> bool:
        return bool(self.get_table(table, branch).table_schema.primary_keys)

    def get_latest_snapshot(self, table: str, branch: str | None = None) -> dict[str, Any] | None:
        """The latest snapshot of ``table`` on ``branch`` (main by default), or None if empty."""
        snapshot = self.get_table(table, branch).snapshot_manager().get_latest_snapshot()
        return _snapshot_dict(snapshot) if snapshot is not None else None

    def get_latest_snapshot_id(self, table: str, branch: str | None = None) -> int | None:
        snapshot = self.get_latest_snapshot(table, branch)
        return snapshot["id"] if snapshot else None

    def list_snapshots(self, table: str, branch: str | None = None) -> list[dict[str, Any]]:
        """All snapshots still on storage, oldest first."""
        snapshots = self.get_table(table, branch).snapshot_manager().list_snapshots()
        return [_snapshot_dict(s) for s in sorted(snapshots, key=lambda s: s.id)]

    def list_tags(self, table: str, branch: str | None = None) -> list[str]:
        return sorted(self.get_table(table, branch).tag_manager().list_tags())

    def get_tag(self, table: str, tag: str, branch: str | None = None) -> dict[str, Any] | None:
        """The tag's snapshot (as a dict), or None when the tag does not exist."""
        found = self.get_table(table, branch).tag_manager().get(tag)
        return _snapshot_dict(found) if found is not None else None

    def tag_exists(self, table: str, tag: str, branch: str | None = None) -> bool:
        return self.get_table(table, branch).tag_manager().tag_exists(tag)

    def list_branches(self, table: str) -> list[str]:
        """Branch names of the table, main not included."""
        return sorted(list_branch_names(self.get_table(table)))

    def branch_exists(self, table: str, branch: str) -> bool:
        return is_main(branch) or branch in self.list_branches(table)

    def get_snapshot(self, table: str, snapshot_id: int, branch: str | None = None) -> dict[str, Any] | None:
        found = self.get_table(table, branch).snapshot_manager().get_snapshot_by_id(int(snapshot_id))
        return _snapshot_dict(found) if found is not None else None

    def list_consumers(self, table: str, branch: str | None = None) -> dict[str, int]:
        """Streaming consumers of the table (on ``branch``) and the next snapshot each will read."""
        return dict(sorted(self.get_table(table, branch).consumer_manager().consumers().items()))

    def test_connection(self) -> tuple[bool, str]:
        """Open the catalog and list its databases (Airflow's "Test" button)."""
        try:
            databases = self.list_databases()
        except Exception as err:  # noqa: BLE001 - reported to the UI, not raised
            secrets = secret_values(self._options_override)
            with contextlib.suppress(Exception):  # the config itself failed: nothing to add
                secrets += secret_values(self.catalog_config.options)
            return False, scrub(f"cannot open the Paimon catalog: {type(err).__name__}: {err}", secrets)
        return True, f"opened warehouse {self.warehouse} ({len(databases)} databases)"


def _snapshot_dict(snapshot: Any) -> dict[str, Any]:
    return {
        "id": snapshot.id,
        "schema_id": snapshot.schema_id,
        "commit_kind": snapshot.commit_kind,
        "commit_user": snapshot.commit_user,
        "commit_identifier": snapshot.commit_identifier,
        "time_millis": snapshot.time_millis,
        "total_record_count": snapshot.total_record_count,
        "delta_record_count": snapshot.delta_record_count,
        "watermark": snapshot.watermark,
    }


def resolve_catalog_config(
    warehouse: str | None, paimon_conn_id: str | None, catalog_options: dict[str, str] | None
) -> tuple[str, dict[str, str]]:
    """Warehouse and options: ``warehouse`` alone, or through a ``paimon`` connection.

    With neither (e.g. a templated warehouse rendered blank), the default
    ``paimon_default`` connection. Runs where a check runs (worker or triggerer), so
    secrets come from the connection there and are never serialized.
    """
    if warehouse and not paimon_conn_id:
        return warehouse, dict(catalog_options or {})
    config = PaimonHook.for_task(warehouse, paimon_conn_id, catalog_options=dict(catalog_options or {})).catalog_config
    return config.warehouse, pypaimon_catalog_options(config.options)
