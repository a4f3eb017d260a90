"""AlterTableOperator: change a table's schema on main or on a branch, from a DAG.

A schema change is a metadata write (one new ``schema-N`` file), so it runs in the
Airflow worker with pypaimon (``airflow_provider_paimon.paimon.schema.alter_table``),
no Spark job. The change list is checked when the DAG is parsed wherever it holds no
template; after rendering, every change is checked against the table before anything
is written, and a refused change fails the task without retries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_paimon.common.templated_secrets import MaskRenderedSecrets
from airflow_provider_paimon.common.templating import is_templated
from airflow_provider_paimon.paimon.errors import ConcurrentModificationError, PaimonError
from airflow_provider_paimon.paimon.names import parse_table_name


def _rendered_changes(value: Any) -> Any:
    """A change list rendered from one template string arrives as JSON text."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            from airflow_provider_paimon.paimon.schema import SchemaChangeError

            raise SchemaChangeError(
                "changes rendered to a string that is not a JSON list of change dicts; "
                "pass a list, or set render_template_as_native_obj=True on the DAG"
            ) from None
    return value


class AlterTableOperator(MaskRenderedSecrets, BaseOperator):
    """Apply ``changes`` to ``table`` (on ``branch``) as one new schema.

    :param table: ``db.table``.
    :param changes: list of change dicts, templated: ``{"op": "add_column", "name":
        "discount", "type": "DECIMAL(10,2)", "after": "price"}``, ``drop_column``,
        ``rename_column`` (``new_name``), ``update_column_type`` (widening only),
        ``update_column_nullability`` (``nullable``), ``update_comment`` (``comment``),
        ``set_option`` (``key``, ``value``), ``remove_option`` (``key``). See docs/schema.md.
    :param branch: alter this branch (it must exist); default main.
    :param warehouse: warehouse path/URI; blank: the ``paimon_conn_id`` connection's.
    :param warehouse_options: extra catalog options.
    :param paimon_conn_id: a ``paimon`` connection.

    Returns (XCom) ``table``, ``branch``, ``old_schema_id``, ``new_schema_id``,
    ``changes``, ``columns``, ``changed``, ``skipped``. ``if_not_exists: true`` on
    ``add_column`` and ``if_exists: true`` on ``drop_column`` make a retried task pass
    when its change already landed. A change the rules refuse fails the task
    (no retries) with every problem named and nothing written; losing a race against
    another schema change fails it retryably (a retry re-checks on the new schema).
    """

    template_fields: Sequence[str] = ("table", "changes", "branch", "warehouse", "warehouse_options", "paimon_conn_id")
    secret_url_fields: ClassVar[tuple[str, ...]] = ("warehouse",)
    secret_option_fields: ClassVar[tuple[str, ...]] = ("warehouse_options",)
    ui_color = "#f5e1c8"

    def __init__(
        self,
        *,
        table: str,
        changes: list[dict[str, Any]] | str,
        branch: str | None = None,
        warehouse: str | None = None,
        warehouse_options: dict[str, str] | None = None,
        paimon_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not is_templated(table):
            parse_table_name(table)
        if not is_templated(changes) and not isinstance(changes, str):
            from airflow_provider_paimon.paimon.schema import parse_changes

            parse_changes(changes)  # raises ValueError naming the change and the fix
        self.table = table
        self.changes = changes
        self.branch = branch
        self.warehouse = warehouse
        self.warehouse_options = warehouse_options
        self.paimon_conn_id = paimon_conn_id
        self.check_literal_locations()

    def execute(self, context: Any) -> dict[str, Any]:
        from airflow_provider_paimon.hooks.paimon import PaimonHook
        from airflow_provider_paimon.paimon.schema import alter_table

        branch = (self.branch or "").strip() or None
        try:
            changes = _rendered_changes(self.changes)
            hook = PaimonHook.for_task(self.warehouse, self.paimon_conn_id, catalog_options=self.warehouse_options)
            table = hook.get_table(self.table)
            result = alter_table(table, changes, branch=branch)
        except ConcurrentModificationError:
            raise
        except (PaimonError, ValueError) as err:
            raise AirflowFailException(f"{type(err).__name__}: {err}") from None
        where = result["branch"]
        if result["changed"]:
            self.log.info("altered %s on %s: schema %s -> %s, %d change(s); columns: %s", result["table"], where,
                          result["old_schema_id"], result["new_schema_id"], len(result["changes"]),
                          ", ".join(result["columns"]))
        else:
            self.log.info("%s on %s already has the requested schema (schema %s); nothing written",
                          result["table"], where, result["old_schema_id"])
        return result
