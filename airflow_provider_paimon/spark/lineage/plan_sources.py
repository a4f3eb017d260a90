"""The Paimon stream relations of a running query's (JVM) logical plan.

Offsets of old checkpoints don't name their table; the query's last executed plan
does: each stream relation keeps the options it was read with, and a source's progress
``description`` is its stream object's text, which links the two.
"""

from __future__ import annotations

from typing import Any

from ..branch.redirect import apply, session_entries
from ..options import parse_options
from .recorder import TableAt


def plan_sources(plan: Any, spark: Any = None) -> dict[str, TableAt]:
    """Paimon stream relations of a (JVM) logical plan: stream description -> table.

    The relation holds the options as written; the branch the source reads is the one
    the session's ``spark.paimon.branch.*`` redirect resolves them to.
    """
    redirects = session_entries(spark) if spark is not None else {}
    found: dict[str, TableAt] = {}
    leaves = plan.collectLeaves()
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        try:
            relation = leaf.relation()
            if str(relation.table().name()) != "paimon":
                continue
            options = dict(relation.options().asCaseSensitiveMap())
            stream = str(leaf.stream().toString())
        except Exception:  # noqa: BLE001 - not a DataSource V2 stream relation
            continue
        opts = apply(parse_options(options), redirects)
        found[stream] = TableAt(
            opts.warehouse, opts.database, opts.table_name, opts.branch_name, namespace=opts.lineage_namespace
        )
    return found
