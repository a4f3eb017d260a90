"""Which lineage jobs a reader may see, as a Python test and as a SQL condition.

Jobs are named ``{dag_id}.{task_id}``; a job belongs to the DAG whose id is its longest
dotted prefix among the DAGs Airflow knows, and a reader sees it only if they may read
that DAG (the UI's rule, ``plugins/permissions.py``). Filtering rows in Python after a
bounded query lets hidden rows use up the query's budgets: a restricted reader then
sees ``truncated: true`` with counts that reveal hidden lineage exists. ``JobsOfDags``
therefore also gives the rule as a SQL condition on a job column, so the queries
(``queries.py``) leave hidden rows out in the database and every budget counts only
what the reader may see.

The condition, for the readable DAGs R (known to Airflow) and the known DAGs K:
``OR over r in R of (job = r OR job starts with "r.") AND NOT (job = k OR job starts
with "k.") for every known k nested under r`` (a nested DAG decides its own jobs).
Prefix tests are ``substr(job, 1, n) IN (...)`` grouped by prefix length, so the
statement has one ``IN`` list per distinct length, not one ``LIKE`` per DAG, and DAG
ids need no escaping.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

import sqlalchemy as sa

__all__ = ["JobsOfDags", "dag_of"]


def dag_of(job: str, dag_ids: set[str] | frozenset[str]) -> str | None:
    """The DAG a ``{dag_id}.{task_id}`` job belongs to: its longest dotted prefix that is a DAG."""
    if job in dag_ids:
        return job
    cut = job.rfind(".")
    while cut > 0:
        if job[:cut] in dag_ids:
            return job[:cut]
        cut = job.rfind(".", 0, cut)
    return None


def _owns(dags: Iterable[str], column: sa.ColumnElement) -> sa.ColumnElement[bool]:
    """``column`` is one of ``dags`` or starts with one of them and a dot."""
    names = sorted(set(dags))
    if not names:
        return sa.false()
    by_length: dict[int, list[str]] = {}
    for name in names:
        by_length.setdefault(len(name) + 1, []).append(name + ".")
    prefixes = [sa.func.substr(column, 1, length).in_(group) for length, group in sorted(by_length.items())]
    return sa.or_(column.in_(names), *prefixes)


class JobsOfDags:
    """The jobs of the readable DAGs: call it with a job name, or ``where(column)`` in SQL."""

    def __init__(self, readable: Iterable[str], known: Iterable[str]) -> None:
        self.known = frozenset(known)
        self.readable = frozenset(readable) & self.known

    def __call__(self, job: str) -> bool:
        dag = dag_of(job, self.known)
        return dag is not None and dag in self.readable

    def where(self, column: sa.ColumnElement) -> sa.ColumnElement[bool]:
        """The same rule as a condition on a job column (see the module doc)."""
        plain: list[str] = []
        clauses: list[sa.ColumnElement[bool]] = []
        known = sorted(self.known)
        for dag in sorted(self.readable):
            nested = []
            i = bisect.bisect_left(known, dag + ".")
            while i < len(known) and known[i].startswith(dag + "."):
                nested.append(known[i])
                i += 1
            if nested:
                clauses.append(sa.and_(_owns([dag], column), sa.not_(_owns(nested, column))))
            else:
                plain.append(dag)
        if plain:
            clauses.insert(0, _owns(plain, column))
        return sa.or_(*clauses) if clauses else sa.false()
