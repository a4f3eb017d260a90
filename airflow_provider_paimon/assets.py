"""Paimon tables as Airflow Assets: the ``paimon://`` URI scheme.

A DAG can be scheduled on a Paimon table being updated (``schedule=[asset_for(...)]``),
and the operators that change a table name its asset in their outlets. The URI must
identify the same table as the OpenLineage datasets (namespace = warehouse URI, name =
``db.table[$branch_NAME]``), so the converter goes through
:mod:`airflow_provider_paimon.lineage.openlineage` and Marquez sees one dataset.

URI layout (``docs/assets.md``)::

    paimon://<warehouse authority><warehouse path>/<db>/<table>[?branch=NAME][&fs=SCHEME]
    paimon://<REST server><uri path>/<catalog name>/<db>/<table>?catalog=rest[&branch=NAME]

* the last two path segments are the database and the table; what is before them is
  the warehouse path;
* ``fs`` is the warehouse's file system scheme (``s3``, ``oss``, ``hdfs``, ``gs``...);
  omitted for a local warehouse, which has no authority: ``/data/wh`` (or
  ``file:///data/wh``) gives ``paimon:///data/wh/sales/orders``. A URI with an
  authority must say ``fs`` (``paimon://bucket/wh/sales/orders?fs=s3``): guessing
  would silently name another table;
* ``branch`` only for a branch other than main (``?branch=main`` is dropped);
* ``catalog=rest`` for a table of a REST catalog (``metastore=rest``), whose warehouse
  is a catalog name on the server at option ``uri``: the authority is that server's
  (host and port), the path is the ``uri``'s own path, then the catalog name, as the
  OpenLineage namespace ``paimon+rest://server/path/catalog`` is (no ``fs`` then).
  A JDBC catalog's warehouse is a folder: its URIs are the file-system ones.

Credentials never reach a URI: a warehouse with a password in it (or user info that
does not parse) is refused with a message that does not echo it, since asset URIs are
stored in the serialized DAG and shown to every viewer; a user name alone is dropped.
``.``/``..``/``//`` in the warehouse path are folded exactly as the OpenLineage namespace
folds them.

Kept free of Airflow imports at module level: Airflow's ProvidersManager imports the
handler while it is starting, and the lineage layer must stay usable without Airflow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import (
    SplitResult,
    parse_qsl,
    quote,
    unquote,
    urlencode,
    urlsplit,
    urlunsplit,
    uses_netloc,
)

from airflow_provider_paimon.lineage.openlineage import paimon_dataset
from airflow_provider_paimon.lineage.openlineage.naming import (
    REST_SCHEME,
    dataset_name,
    warehouse_namespace,
)
from airflow_provider_paimon.paimon.names import (
    UNICODE_PROFILE,
    is_main,
    parse_table_name,
    validate_branch_name,
)
from airflow_provider_paimon.paimon.secrets import url_userinfo_secrets

if TYPE_CHECKING:
    from airflow.sdk import Asset
    from openlineage.client.event_v2 import Dataset

__all__ = [
    "SCHEME",
    "PaimonAssetRef",
    "asset_for",
    "asset_uri",
    "convert_asset_to_openlineage",
    "create_asset",
    "parse_asset_uri",
    "sanitize_uri",
]

SCHEME = "paimon"
_ALLOWED_QUERY = ("branch", "catalog", "fs")
_REST = "rest"
_SAFE_PATH = "/$-_.~!*'()+,;=@:"

# urlunsplit writes ``scheme://`` with an empty authority only for schemes it knows to
# have one; without this a local warehouse would come out as ``paimon:/data/wh/...``
# (Airflow rebuilds asset URIs with urlunsplit after our handler).
if SCHEME not in uses_netloc:
    uses_netloc.append(SCHEME)


@dataclass(frozen=True)
class PaimonAssetRef:
    """What a ``paimon://`` URI names: a warehouse (normalised URI), a table, a branch."""

    warehouse: str  # normalised, as the OpenLineage namespace: file:///data/wh, s3://bucket/wh, paimon+rest://h/c
    database: str
    table: str
    branch: str | None = None  # None for main

    @property
    def table_name(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def openlineage_name(self) -> str:
        return dataset_name(self.database, self.table, self.branch)

    @property
    def uri(self) -> str:
        return asset_uri(self.warehouse, self.table_name, self.branch)


def _invalid(uri: str, why: str) -> ValueError:
    return ValueError(
        f"invalid Paimon asset URI {uri!r}: {why} "
        "(expected paimon://[authority]/warehouse/path/<db>/<table>[?branch=NAME][&fs=SCHEME], "
        "e.g. paimon:///data/wh/sales/orders or paimon://bucket/wh/sales/orders?fs=s3, "
        "or paimon://server:port/catalog/<db>/<table>?catalog=rest for a REST catalog)"
    )


def asset_uri(
    warehouse: str, table: str, branch: str | None = None, catalog_options: Mapping[str, Any] | None = None
) -> str:
    """The canonical ``paimon://`` URI of ``table`` (``db.table``) on ``branch`` in ``warehouse``.

    ``warehouse`` is what a ``paimon`` connection's Host holds: a local path or a URI
    (for a REST catalog, the catalog name; ``catalog_options`` then carry
    ``metastore=rest`` and the server's ``uri``).
    """
    database, name = parse_table_name(table)
    if branch is not None and not is_main(branch):
        validate_branch_name(branch, UNICODE_PROFILE)  # a reference: the table's ops apply its profile
    if url_userinfo_secrets(warehouse) or url_userinfo_secrets((catalog_options or {}).get("uri") or ""):
        raise ValueError(
            "the warehouse (or the REST catalog's uri) of a Paimon asset carries credentials; asset URIs "
            "are stored in the serialized DAG and shown to every viewer: give the warehouse without "
            "them and put the credentials in the 'paimon' connection"
        )
    namespace = urlsplit(warehouse_namespace(warehouse, catalog_options))
    fs = namespace.scheme
    path = namespace.path if namespace.path not in ("", "/") else ""
    full_path = quote(f"{path}/{database}/{name}", safe=_SAFE_PATH)
    query: list[tuple[str, str]] = []
    if not is_main(branch):
        query.append(("branch", str(branch)))
    if fs == REST_SCHEME:
        query.append(("catalog", _REST))
    elif fs != "file" or namespace.netloc:
        query.append(("fs", fs))
    netloc = namespace.netloc.rsplit("@", 1)[-1]  # a user name alone: not part of the table's identity
    return urlunsplit((SCHEME, netloc, full_path, urlencode(sorted(query)), ""))


def parse_asset_uri(uri: str | SplitResult) -> PaimonAssetRef:
    """Read a ``paimon://`` URI; ``ValueError`` with the reason when it is not one."""
    parts = uri if isinstance(uri, SplitResult) else urlsplit(str(uri))
    text = urlunsplit(parts)
    if parts.scheme.lower() != SCHEME:
        raise _invalid(text, f"scheme must be {SCHEME!r}, not {parts.scheme!r}")
    if parts.fragment:
        raise _invalid(text, "a fragment has no meaning here")
    netloc = parts.netloc.rsplit("@", 1)[-1]  # credentials never belong in an asset URI
    query: dict[str, str] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key not in _ALLOWED_QUERY:
            raise _invalid(text, f"unknown query parameter {key!r} (allowed: {', '.join(_ALLOWED_QUERY)})")
        if key in query:
            raise _invalid(text, f"query parameter {key!r} given twice")
        query[key] = value
    segments = [unquote(s) for s in parts.path.split("/") if s]
    if len(segments) < 2:
        raise _invalid(text, "the path must end with /<db>/<table>")
    database, table = segments[-2], segments[-1]
    if "." in database or "." in table or "$" in table:
        raise _invalid(
            text,
            "database and table are separate path segments without dots or '$' "
            "(a branch goes in ?branch=NAME)",
        )
    catalog = query.get("catalog", "").strip().lower()
    if "catalog" in query and catalog != _REST:
        raise _invalid(text, f"catalog={catalog!r}: the only catalog named in a URI is 'rest'")
    fs = query.get("fs", "").strip().lower()
    if catalog == _REST:
        if fs:
            raise _invalid(text, "a REST catalog's table has no fs (the server places its files)")
        if not netloc or len(segments) < 3:
            raise _invalid(text, "a REST catalog's URI is paimon://<server>[/path]/<catalog>/<db>/<table>")
        fs = REST_SCHEME
    elif not fs:
        if netloc:
            raise _invalid(
                text, f"a warehouse with an authority ({netloc!r}) needs ?fs=SCHEME (s3, oss, hdfs, ...)"
            )
        fs = "file"
    if not fs.replace("+", "").replace("-", "").replace(".", "").isalnum() or (
        fs.startswith(SCHEME) and catalog != _REST
    ):
        raise _invalid(text, f"fs={fs!r} is not a file system scheme")
    branch = query.get("branch")
    if branch is not None:
        if not branch.strip():
            raise _invalid(text, "branch must not be blank")
        if is_main(branch):
            branch = None
        else:
            try:
                validate_branch_name(branch, UNICODE_PROFILE)  # a reference: the table's ops apply its profile
            except ValueError as err:
                raise _invalid(text, str(err)) from None
    warehouse_path = "/" + "/".join(segments[:-2])
    warehouse = warehouse_namespace(f"{fs}://{netloc}{warehouse_path}")
    return PaimonAssetRef(warehouse=warehouse, database=database, table=table, branch=branch)


def sanitize_uri(uri: SplitResult) -> SplitResult:
    """Airflow's ``asset-uris`` handler: validate a ``paimon://`` URI and return its canonical form.

    Two spellings of one table (``paimon:///data/wh/./x/../db/t?branch=main``,
    ``paimon:///data/wh/db/t``) become one URI, so they are one asset.
    """
    return urlsplit(parse_asset_uri(uri).uri)


def asset_for(
    warehouse: str,
    table: str,
    branch: str | None = None,
    *,
    catalog_options: Mapping[str, Any] | None = None,
    **asset_kwargs: Any,
) -> Asset:
    """The Airflow ``Asset`` of ``table`` (``db.table``) on ``branch`` in ``warehouse``.

    ``warehouse`` is the warehouse path or URI (a ``paimon`` connection's Host), or a
    REST catalog's name with ``catalog_options`` saying ``metastore=rest`` and ``uri``. The
    asset's name is its URI, Airflow's default, so ``Asset(uri)`` written by hand in a
    consumer DAG is the same asset. Extra keyword arguments go to ``Asset`` (``extra``,
    ``group``...).
    """
    from airflow.sdk import Asset

    return Asset(uri=asset_uri(warehouse, table, branch, catalog_options), **asset_kwargs)


def create_asset(
    *,
    warehouse: str,
    table: str,
    branch: str | None = None,
    extra: dict[str, Any] | None = None,
    catalog_options: Mapping[str, Any] | None = None,
) -> Asset:
    """Airflow's ``asset-uris`` ``factory`` (used by hook-level lineage): same as :func:`asset_for`."""
    return asset_for(warehouse, table, branch, catalog_options=catalog_options, extra=extra)


def convert_asset_to_openlineage(asset: Any, lineage_context: Any = None) -> Dataset:
    """Airflow's ``to_openlineage_converter``: the OpenLineage dataset of a ``paimon://`` asset.

    Same namespace, name, ``symlinks`` and ``catalog`` facets as the Spark-side events
    (built by ``paimon_dataset``); no version or schema (an asset is not a snapshot).
    """
    from openlineage.client.event_v2 import Dataset

    ref = parse_asset_uri(asset.uri)
    built = paimon_dataset(ref.warehouse, ref.database, ref.table, ref.branch)
    return Dataset(namespace=built.namespace, name=built.name, facets=built.facets)
