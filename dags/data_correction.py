"""Data correction without stopping the pipeline (the branch proposal's correction), as one Airflow DAG.

    validate -> tag_main -> create_branch -+-> run_corrected_job -+-> replace_main
                 (optional) schema_change_wanted -> alter_branch --^   |
                                           +-> wait_catch_up -----+
             replace_main -> check_main -> cleanup_wanted -> delete_branch -> delete_checkpoint

1. ``validate`` checks every param against the warehouse before anything changes:
   the DAG's own params (unknown source table, a job name with no script in
   ``dags/jobs/``, a bad lag or lineage URL, a checkpoint folder left by an earlier
   run), then the preflight of every Paimon task of the DAG, rendered for this run
   (``operators/preflight.py``: a branch or tag name that is invalid or already
   exists, an unknown table, a backup name in use...), against the warehouse as the
   earlier tasks will leave it. A bad run fails here, with every problem named, and
   nothing is changed.
   ``if_exists="skip"`` reruns a correction whose earlier run failed after tagging or
   branching (e.g. the corrected job failed): the tag and branch it left are reused
   (their tasks succeed without submitting) and the corrected job resumes from the
   checkpoint it left. See docs/correction.md, "Rerunning after a failure".
2. ``tag_main`` tags main's latest snapshot (the point the correction starts from).
3. ``create_branch`` creates the branch from that tag. Optionally, ``alter_branch``
   (``AlterTableOperator``) then changes the branch's schema, e.g. adds the column the
   corrected job fills, with the ``branch_schema_changes`` param (a list of
   ``alter_table`` change dicts; empty, the default: ``schema_change_wanted`` skips the
   step). Main keeps its schema until ``replace_main`` publishes the branch's. Give
   ``add_column`` changes ``"if_not_exists": true`` so a rerun (``if_exists=skip``)
   passes. See docs/schema.md, "Walk-through".
4. ``run_corrected_job`` spark-submits the corrected job (``--version fixed --mode
   stream``): a streaming query from the source (on main) into the branch, exactly
   once through its checkpoint, run with ``availableNow`` (drain, then stop). Its
   first run empties the branch (it starts as a copy of the buggy main). The lineage
   capture records every micro-batch (source snapshot consumed, branch snapshot made).
5. ``wait_catch_up`` (``SnapshotCatchUpSensor``) runs *alongside* the job: it waits
   until the job has consumed the source's latest snapshot, within ``max_lag`` data
   snapshots. It waits in ``reschedule`` mode, or in the triggerer when Airflow's
   ``[operators] default_deferrable`` is on; either way it holds no worker slot while
   the job runs, and it starts first (higher priority) so it never queues behind it.
6. ``replace_main`` (after both) makes main read exactly as the branch does, keeping
   the old main as a backup branch (``backup_name``, or a name the job picks), and
   links main's new snapshot to the branch's in the lineage store.
7. ``check_main`` reads main with plain pypaimon and verifies it holds the corrected
   rows (the job's ``verify``), and that the backup exists.
8. ``delete_branch`` and ``delete_checkpoint`` (only when ``cleanup`` is true) delete
   the correction branch and the corrected job's checkpoint.

Run it from the UI/CLI with a conf, or in Python with ``dag.test(run_conf={...})``.
Connections: ``spark_default`` (where jobs run) and, when the ``warehouse`` param is
blank, ``paimon_default`` (where the tables are). See docs/correction.md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, Param, task
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_paimon.deadlines import deadline_from_env

# The DAGs folder, for correction_tasks: the dag-processor puts it on sys.path, the CLI's
# --local parsing and plain imports may not.
_DAGS_DIR = str(Path(__file__).resolve().parent)
if _DAGS_DIR not in sys.path:
    sys.path.insert(0, _DAGS_DIR)
from correction_tasks import (  # noqa: E402
    JOBS_DIR,
    job_path,
    load_job_module,
    paimon_hook_for,
    read_rows,
)

from airflow_provider_paimon.lineage.url import default_url  # noqa: E402
from airflow_provider_paimon.operators.branch import (  # noqa: E402
    BranchCreateOperator,
    BranchDeleteOperator,
    ReplaceMainBranchOperator,
)
from airflow_provider_paimon.operators.preflight import preflight_all  # noqa: E402
from airflow_provider_paimon.operators.schema import AlterTableOperator  # noqa: E402
from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator  # noqa: E402
from airflow_provider_paimon.operators.tag import TagCreateOperator  # noqa: E402
from airflow_provider_paimon.sensors.catchup import SnapshotCatchUpSensor  # noqa: E402

DAG_ID = "paimon_data_correction"
#: the corrected job's name in Spark and the lineage store (what the sensor follows)
CORRECTED_JOB_NAME = "{{ params.job }}.fixed.{{ params.branch }}"
W = "{{ params.warehouse }}"
#: values ``validate`` resolved (warehouse from the connection when the param is blank)
VALIDATED = "ti.xcom_pull(task_ids='validate')"


def default_checkpoint(warehouse: str, table: str, branch: str) -> str:
    """Where the corrected job's streaming checkpoint lives unless the ``checkpoint`` param says.

    Beside the table data, in the warehouse's ``_checkpoints`` folder (not a database:
    catalogs ignore it), one folder per table and branch.
    """
    return f"{warehouse.rstrip('/')}/_checkpoints/{table}/{branch}"


def _filesystem(path: str) -> tuple[Any, str]:
    from pyarrow import fs

    return fs.FileSystem.from_uri(path if "://" in path else f"file://{os.path.abspath(path)}")


def path_exists(path: str) -> bool:
    """Whether a local path or a URI (any pyarrow file system) exists."""
    from pyarrow import fs

    filesystem, inner = _filesystem(path)
    return filesystem.get_file_info(inner).type != fs.FileType.NotFound


def delete_folder(path: str) -> bool:
    """Delete a folder (local path or URI) if it exists; whether it did."""
    if not path_exists(path):
        return False
    filesystem, inner = _filesystem(path)
    filesystem.delete_dir(inner)
    return True


IF_EXISTS = ("fail", "skip")


def validate_params(params: dict[str, Any]) -> dict[str, Any]:
    """Check the DAG's own params against the warehouse; raise ``AirflowFailException`` on the first problem.

    What the Paimon tasks check themselves (branch, tag and backup names, the sink
    table) is left to ``validate_run``'s preflight of those tasks. Reads metadata only:
    a failure here leaves every table as it was.
    """
    from airflow_provider_paimon.paimon.errors import PaimonError
    from airflow_provider_paimon.paimon.names import validate_branch_name

    def fail(message: str) -> None:
        raise AirflowFailException(f"invalid params: {message}; nothing was changed")

    table, source = params["table"], params["source_table"]
    branch = params["branch"]
    if_exists = params.get("if_exists", "fail")
    if if_exists not in IF_EXISTS:
        fail(f"if_exists must be one of {', '.join(IF_EXISTS)}, got {if_exists!r}")
    try:
        job_path(params["job"])
    except ValueError as err:
        fail(f"job: {err}")
    try:
        max_lag = int(params["max_lag"])
    except (TypeError, ValueError):
        max_lag = -1
    if max_lag < 0:
        fail(f"max_lag must be an integer >= 0, got {params['max_lag']!r}")
    try:
        from sqlalchemy.engine import make_url

        make_url(params["lineage_url"])
    except Exception:  # noqa: BLE001 - any parse failure is a bad param
        fail("lineage_url is not a SQLAlchemy URL")
    try:
        hook = paimon_hook_for(params["warehouse"])
        for what, name in (("table", table), ("source_table", source)):
            try:
                hook.get_table(name)
            except PaimonError as err:
                fail(f"{what}: {err}")
        validate_branch_name(branch)
    except (PaimonError, ValueError) as err:
        fail(str(err))
    if hook.get_latest_snapshot_id(table) is None:
        fail(f"{table} has no snapshot on main: there is nothing to correct")
    if hook.get_latest_snapshot_id(source) is None:
        fail(f"source {source} has no snapshot: the corrected job would read nothing")
    checkpoint = (params.get("checkpoint") or "").strip() or default_checkpoint(hook.warehouse, table, branch)
    if path_exists(checkpoint):
        if if_exists != "skip":
            fail(
                f"checkpoint {checkpoint!r} already exists (left by an earlier correction into a "
                f"branch named {branch!r}?): the job would resume from it; delete it or pick "
                "another branch or checkpoint, or rerun that correction with if_exists='skip'"
            )
        if not hook.branch_exists(table, branch):
            fail(
                f"checkpoint {checkpoint!r} exists but branch {branch!r} does not: the job would "
                "resume into a branch without its earlier output; delete the checkpoint"
            )
    return {
        "warehouse": hook.warehouse,
        "checkpoint": checkpoint,
        "main_snapshot_id": hook.get_latest_snapshot_id(table),
    }


def validate_run(params: dict[str, Any], context: Any, tasks: Any = None) -> dict[str, Any]:
    """``validate``: the DAG's params, then the preflight of every Paimon task of the run."""
    validated = validate_params(params)
    tasks = list(dag.tasks if tasks is None else tasks)
    if not params.get("branch_schema_changes"):  # the step is skipped: nothing to check
        tasks = [t for t in tasks if not isinstance(t, AlterTableOperator)]
    checked = preflight_all(tasks, context)
    return {**validated, "preflight": checked}


def check_corrected_main(params: dict[str, Any], replaced: dict[str, Any]) -> dict[str, Any]:
    """Verify main now holds the corrected rows and the old main's backup exists."""
    hook = paimon_hook_for(params["warehouse"])
    table = params["table"]
    main_rows = read_rows(hook, table)
    source_rows = read_rows(hook, params["source_table"])
    problems = []
    module = load_job_module(params["job"])
    if hasattr(module, "verify"):
        problems += module.verify(source_rows, main_rows)
    backup = (replaced or {}).get("backup")
    if backup:
        exists = (
            hook.branch_exists(table, backup["name"]) if backup["kind"] == "branch"
            else hook.tag_exists(table, backup["name"])
        )
        if not exists:
            problems.append(f"backup {backup['kind']} {backup['name']!r} of the old main is missing")
    if problems:
        raise AirflowFailException(f"main of {table} is not corrected: " + "; ".join(problems))
    return {"rows": len(main_rows), "main_snapshot_id": hook.get_latest_snapshot_id(table), "backup": backup}


with DAG(
    DAG_ID,
    deadline=deadline_from_env(),  # $PAIMON_PUBLISH_DEADLINE, e.g. "6 h" (docs/publish.md)
    schedule=None,
    catchup=False,
    doc_md=__doc__,
    tags=["paimon", "example"],
    # This example lets whoever triggers it choose the warehouse and the lineage store
    # (params), which the package refuses by default: a production DAG names them in
    # connections (paimon_conn_id, lineage_conn_id) and drops this (docs/security.md).
    default_args={"allow_location_from_params": True},
    params={
        "warehouse": Param(
            os.environ.get("PAIMON_WAREHOUSE", ""),
            type="string",
            description="warehouse path/URI; blank: the paimon_default connection's",
        ),
        "table": Param("db.orders_enriched", type="string", description="the table to correct (db.table)"),
        "source_table": Param("db.orders", type="string", description="what the job reads (db.table)"),
        "job": Param("enrich_orders", type="string", description="corrected job: dags/jobs/<job>.py"),
        "branch": Param("correction", type="string", description="new branch the job writes"),
        "tag": Param("before_correction", type="string", description="new tag on main's latest snapshot"),
        "max_lag": Param(0, type="integer", minimum=0, description="allowed unconsumed source snapshots"),
        "lineage_url": Param(default_url(), type="string", description="lineage store SQLAlchemy URL"),
        "backup_name": Param("", type="string", description="backup branch of the old main; blank: auto"),
        "if_exists": Param(
            "fail", enum=list(IF_EXISTS),
            description="skip: rerun after a failed run, reusing the tag, branch and checkpoint it left",
        ),
        "cleanup": Param(False, type="boolean", description="delete the branch at the end"),
        "checkpoint": Param(
            "", type="string", description="corrected job's checkpoint; blank: <warehouse>/_checkpoints/<table>/<branch>"
        ),
        "branch_schema_changes": Param(
            [], type="array",
            description='schema changes on the branch before the job runs, e.g. [{"op": "add_column", '
            '"name": "discount", "type": "DOUBLE", "if_not_exists": true}]; empty: no change',
        ),
    },
) as dag:

    @task
    def validate(params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Fail fast on bad params and on any Paimon task that would fail (nothing changed)."""
        from airflow.sdk import get_current_context

        return validate_run(params or {}, get_current_context())

    tag_main = TagCreateOperator(
        task_id="tag_main", warehouse=W, table="{{ params.table }}", tag="{{ params.tag }}",
        if_exists="{{ params.if_exists }}",
    )
    create_branch = BranchCreateOperator(
        task_id="create_branch",
        warehouse=W,
        table="{{ params.table }}",
        branch="{{ params.branch }}",
        tag="{{ params.tag }}",
        if_exists="{{ params.if_exists }}",
    )

    @task.short_circuit(ignore_downstream_trigger_rules=False)
    def schema_change_wanted(params: dict[str, Any] | None = None) -> bool:
        """Go on to alter the branch only when ``branch_schema_changes`` lists changes."""
        return bool((params or {}).get("branch_schema_changes"))

    alter_branch = AlterTableOperator(
        task_id="alter_branch",
        warehouse=W,
        table="{{ params.table }}",
        branch="{{ params.branch }}",
        changes="{{ params.branch_schema_changes | tojson }}",
    )
    run_corrected_job = PaimonSparkSubmitOperator(
        task_id="run_corrected_job",
        # runs after alter_branch, or without it when that step is skipped
        trigger_rule="none_failed",
        # blank warehouse param: the paimon_default connection's warehouse, and its catalog
        # options (an S3 endpoint and credentials) reach the job's environment, not argv
        paimon_conn_id="{{ '' if params.warehouse else 'paimon_default' }}",
        application=f"{JOBS_DIR}/{{{{ params.job }}}}.py",
        application_args=[
            "--warehouse", f"{{{{ {VALIDATED}['warehouse'] }}}}",
            "--source", "{{ params.source_table }}",
            "--sink", "{{ params.table }}",
            "--branch", "{{ params.branch }}",
            "--version", "fixed",
            "--mode", "stream",
            "--checkpoint", f"{{{{ {VALIDATED}['checkpoint'] }}}}",
        ],
        lineage_url="{{ params.lineage_url }}",
        lineage_job=CORRECTED_JOB_NAME,
        name=CORRECTED_JOB_NAME,
    )
    wait_catch_up = SnapshotCatchUpSensor(
        task_id="wait_catch_up",
        trigger_rule="none_failed",
        warehouse=W,
        table="{{ params.table }}",
        branch="{{ params.branch }}",
        job=CORRECTED_JOB_NAME,
        lineage_url="{{ params.lineage_url }}",
        max_lag_snapshots="{{ params.max_lag }}",
        # started alongside the job, which records its first lineage a little later
        wait_for_job_start=True,
        mode="reschedule",
        poke_interval=5,
        timeout=1800,
        # start before the job: waiting costs no slot, so it never queues behind it
        priority_weight=2,
    )
    replace_main = ReplaceMainBranchOperator(
        task_id="replace_main",
        warehouse=W,
        table="{{ params.table }}",
        branch="{{ params.branch }}",
        backup_name="{{ params.backup_name }}",
        # main's new snapshot is linked to the branch's in the store: lineage follows it
        lineage_url="{{ params.lineage_url }}",
    )

    @task
    def check_main(replaced: dict[str, Any], params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Main holds the corrected rows; the backup of the old main exists."""
        return check_corrected_main(params or {}, replaced)

    @task.short_circuit
    def cleanup_wanted(params: dict[str, Any] | None = None) -> bool:
        """Go on to delete the branch only when the ``cleanup`` param is true."""
        return bool((params or {}).get("cleanup"))

    delete_branch = BranchDeleteOperator(
        task_id="delete_branch", warehouse=W, table="{{ params.table }}", branch="{{ params.branch }}"
    )

    @task
    def delete_checkpoint(validated: dict[str, Any]) -> dict[str, Any]:
        """The corrected job's checkpoint is of no use once its branch is gone."""
        return {"checkpoint": validated["checkpoint"], "deleted": delete_folder(validated["checkpoint"])}

    validated = validate()
    checked = check_main(replace_main.output)
    validated >> tag_main >> create_branch >> [run_corrected_job, wait_catch_up] >> replace_main
    create_branch >> schema_change_wanted() >> alter_branch >> [run_corrected_job, wait_catch_up]
    checked >> cleanup_wanted() >> delete_branch >> delete_checkpoint(validated)
