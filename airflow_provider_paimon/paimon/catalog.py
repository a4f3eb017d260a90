"""Open a Paimon catalog and load tables (optionally on a branch) through pypaimon.

Everything that touches a table starts here, so that warehouse options, branch
handling and "not found" errors are the same for the Spark data source, the table
operations, the hook and the CLI.
"""

from __future__ import annotations

import logging
from typing import Any

from pypaimon import CatalogFactory
from pypaimon.catalog.catalog_exception import (
    DatabaseNotExistException,
    TableNotExistException,
)

from .errors import BranchNotFoundError, InvalidArgumentError, TableNotFoundError
from .names import MAIN_BRANCH, is_main, parse_table_name
from .secrets import register_secret_options
from .storage import guard as guard_file_io
from .storage import resolve as resolve_atomicity

# Options that address the catalog rather than a table (kept beside the table options)
from .table_options import CATALOG_OPTION_PREFIXES as CATALOG_OPTION_PREFIXES

log = logging.getLogger(__name__)


def open_catalog(warehouse: str, options: dict[str, str] | None = None) -> Any:
    """Return a pypaimon catalog for ``warehouse`` (filesystem metastore by default).

    ``options`` are passed to pypaimon unchanged (``metastore=jdbc``/``rest``, ``uri``,
    credentials, file-system settings): pypaimon's options only, never the lineage
    proposal's (whoever merges options drops those: ``pypaimon_catalog_options``);
    ``warehouse`` wins over an option of that name.
    Their secrets (values of credential options, passwords of URL values) are registered
    with the secret policy (``paimon/secrets.py``) here, where they are read.

    On object storage the catalog's file IO is replaced by one whose create-if-absent
    is real (``commit.atomicity``), so every table loaded from it commits safely; a
    store with no safe mode configured is refused here, before anything is written.
    """
    if not warehouse or not str(warehouse).strip():
        raise InvalidArgumentError(
            "no warehouse given: set option 'warehouse' (a path or URI such as "
            "'file:///data/warehouse' or 's3://bucket/warehouse')"
        )
    # pypaimon's options only: callers that merge a connection's options drop the
    # lineage proposal's keys first (lineage.meta_options.pypaimon_catalog_options)
    conf = {str(k): str(v) for k, v in (options or {}).items()}
    conf["warehouse"] = str(warehouse)
    # where credentials are read: from now on they are masked wherever they would show
    register_secret_options(conf)
    resolve_atomicity(conf["warehouse"], conf)  # fail closed before any I/O
    catalog = CatalogFactory.create(conf)
    file_io = getattr(catalog, "file_io", None)  # filesystem and JDBC catalogs; REST commits server-side
    if file_io is not None:
        catalog.file_io = guard_file_io(file_io, conf["warehouse"], conf)
    return catalog


def table_identifier(name: str, branch: str | None = None) -> str:
    """``db.table`` or ``db.table$branch_NAME``, as pypaimon and Paimon's lineage name it."""
    database, table = parse_table_name(name)
    if is_main(branch):
        return f"{database}.{table}"
    return f"{database}.{table}$branch_{branch}"


def load_table(catalog: Any, name: str, branch: str | None = None) -> Any:
    """Load ``db.table`` from ``catalog``, on ``branch`` when given.

    Raises ``TableNotFoundError`` / ``BranchNotFoundError`` with a message that says
    what exists, so a typo is easy to spot.
    """
    database, table = parse_table_name(name)
    try:
        base = catalog.get_table(f"{database}.{table}")
    except (TableNotExistException, DatabaseNotExistException):
        raise TableNotFoundError(_not_found_message(catalog, database, table)) from None
    if is_main(branch):
        return base
    branches = list_branch_names(base)
    if branch not in branches:
        known = ", ".join(sorted(branches)) or "none"
        raise BranchNotFoundError(
            f"branch {branch!r} does not exist on table {database}.{table} "
            f"(branches: {known}); create it first"
        )
    return catalog.get_table(table_identifier(name, branch))


def list_branch_names(table: Any) -> list[str]:
    """Branch names of ``table`` (not including main)."""
    return [b for b in table.branch_manager().branches() if b != MAIN_BRANCH]


def _not_found_message(catalog: Any, database: str, table: str) -> str:
    try:
        databases = catalog.list_databases()
    except Exception:  # noqa: BLE001 - listing is best effort  # pragma: no cover
        databases = None
    if databases is not None and database not in databases:
        known = ", ".join(sorted(databases)) or "none"
        return f"database {database!r} does not exist in the warehouse (databases: {known})"
    try:
        tables = catalog.list_tables(database)
        known = ", ".join(sorted(tables)) or "none"
        return f"table {database}.{table} does not exist (tables in {database}: {known})"
    except Exception:  # noqa: BLE001 - the message only  # pragma: no cover
        return f"table {database}.{table} does not exist"
