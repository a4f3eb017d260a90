"""The UI's job visibility rule, in Python and as SQL, gives the same jobs on every backend.

``JobsOfDags`` is what the lineage page filters with: jobs are ``{dag_id}.{task_id}`` and
belong to the DAG that is their longest dotted prefix. Its SQL condition must pick
exactly the jobs its Python test picks (nested DAG ids, ids that prefix others without a
dot, jobs of no DAG), so the queries can leave hidden rows out in the database.
"""

from __future__ import annotations

from airflow_provider_paimon.lineage import SnapshotRef
from airflow_provider_paimon.lineage.job_visibility import JobsOfDags
from airflow_provider_paimon.lineage.queries import table_graph, walk_bounded

KNOWN = {"etl", "etl.daily", "etl.daily.fix", "other", "a_b", "x%y", "é.t"}
JOBS = ["etl", "etl.load", "etl.group.task", "etl.daily", "etl.daily.load", "etl.daily.fix.run", "etlx.load",
        "other.x", "adhoc", "a_b.t", "axb.t", "x%y.t", "xzy.t", "é.t.run", "e.t.run", "etl.dailyx.load"]
CASES = [
    ({"etl"}, ["etl", "etl.load", "etl.group.task", "etl.dailyx.load"]),
    ({"etl", "etl.daily.fix"}, ["etl", "etl.load", "etl.group.task", "etl.dailyx.load", "etl.daily.fix.run"]),
    ({"etl.daily"}, ["etl.daily", "etl.daily.load"]),
    ({"a_b", "x%y", "é.t"}, ["a_b.t", "x%y.t", "é.t.run"]),
    ({"nope"}, []),
    (set(), []),
]


def test_sql_and_python_pick_the_same_jobs(store):
    for i, job in enumerate(JOBS):
        store.record_batch(job, 1, [SnapshotRef("src", "t", 1)], [SnapshotRef("dst", f"t{i}", 1)])
    for readable, expected in CASES:
        rule = JobsOfDags(readable, KNOWN)
        assert sorted(j for j in JOBS if rule(j)) == sorted(expected), readable
        # the graph's SQL leaves hidden jobs out in the database: max_jobs counts visible ones
        graph = table_graph(store, job_filter=rule, max_jobs=len(expected) or 1)
        assert graph.jobs == sorted(expected) and graph.truncated is False, readable
        walk = walk_bounded(store, "downstream", "src", "t", 1, job_filter=rule)
        assert sorted(n.job for n in walk.nodes) == sorted(expected), readable
