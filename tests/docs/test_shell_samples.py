"""Every shell sample of README.md and docs/*.md is exercised, or listed with the reason it cannot be.

A shell sample is a fenced block marked ``bash``, ``sh``, ``shell`` or ``console`` (of a
``console`` block only the ``$ `` lines are commands). Each block is split into commands
(``\\``-continued lines joined, quotes respected, comments dropped) and every command is
in exactly one of these lists, compared whole: a new or changed sample fails
:func:`test_every_shell_command_is_accounted_for` until it is run by a test or listed.

* ``RUN_HERE``: a test in this file runs it, as written except for the substitutions it
  names (a path or URL of the sample's world -> a temp warehouse, a temp SQLite store, a
  local HTTP receiver; ``python`` -> this interpreter). spark-submits are real, on
  local Spark.
* ``RUN_ELSEWHERE``: the named test (another file) runs it.
* ``NOT_RUN``: cannot run here, with the reason (a Docker engine; the CI run itself).

A fenced block with no language is not a sample, but one that holds a command line
(``$ ...``, ``spark-submit ...``) fails :func:`test_unlabelled_blocks_hold_no_commands`:
mark it ``bash`` (and run it here) or, for a synopsis or an output, ``text``.
"""

from __future__ import annotations

import ast
import http.server
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
import pytest
from orders_tables import create_orders_tables
from support.pypaimon_writes import commit_rows

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL_LANGS = {"bash", "sh", "shell", "console"}
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.S | re.M)
VENV_BIN = Path(sys.executable).parent
TIMEOUT = 900

# -- the commands of the docs, each accounted for once ---------------------------------

CORRECTION_SUBMIT = (
    "spark-submit dags/jobs/enrich_orders.py --warehouse /tmp/wh --source db.orders "
    "--sink db.orders_enriched --version fixed --branch fix1 --lineage-url sqlite:////tmp/lineage.db"
)
DAGS_FOLDER = "export AIRFLOW__CORE__DAGS_FOLDER=$PWD/dags"
CORRECTION_DAGS_TEST = (
    "airflow dags test paimon_data_correction -c '{\"warehouse\": \"/data/wh\", \"branch\": \"fix_2026_11\"}'"
)
CAPTURE_PASSWORD = "export PAIMON_LINEAGE_PASSWORD=..."
CAPTURE_SUBMIT = (
    "spark-submit --conf spark.paimon.lineage.url=mysql+pymysql://lineage@db:3306/paimon "
    "--conf spark.paimon.lineage.job=correction.run_fixed dags/jobs/enrich_orders.py "
    "--warehouse /data/wh --source db.orders --sink db.orders_enriched --version fixed --branch fix1"
)
OPENLINEAGE_SUBMIT = (
    "spark-submit --conf spark.paimon.lineage.url=sqlite:////tmp/lineage.db "
    "--conf spark.paimon.openlineage.transport.type=http "
    "--conf spark.paimon.openlineage.transport.url=http://marquez:5000 "
    "--conf spark.paimon.openlineage.namespace=spark-prod dags/jobs/enrich_orders.py "
    "--warehouse /data/wh --source db.orders --sink db.orders_enriched --version fixed"
)
COMPACT_SUBMIT = (
    "spark-submit airflow_provider_paimon/spark/jobs/launcher.py compact "
    "--warehouse s3://bucket/warehouse --table sales.orders "
    "--partition dt=2024-01-01 --option target-file-size=128mb --max-retries 3"
)
BENCHMARK = "python benchmarks/lineage_store.py"
PAIMON_CONN = (
    "export AIRFLOW_CONN_PAIMON_DEFAULT='{\"conn_type\": \"paimon\", \"host\": \"file:///data/warehouse\", "
    "\"extra\": {\"metastore\": \"filesystem\"}}'"
)
SPARK_CONN_CLUSTER = (
    "export AIRFLOW_CONN_SPARK_DEFAULT='{\"conn_type\": \"spark\", \"host\": \"spark://spark-master\", \"port\": 7077}'"
)
SPARK_CONN_LOCAL = "export AIRFLOW_CONN_SPARK_DEFAULT='{\"conn_type\": \"spark\", \"host\": \"local[*]\"}'"
COMPOSE = "docker compose -f docker/docker-compose.yml"
COMPOSE_CONFIG = f"{COMPOSE} config --quiet"
DEMO = "bash scripts/demo.sh"
TEST = "bash scripts/test.sh"

RUN_HERE = {
    ("docs/correction.md", CORRECTION_SUBMIT): "test_correction_job_submit",
    ("docs/correction.md", DAGS_FOLDER): "test_correction_dags_test",
    ("docs/correction.md", CORRECTION_DAGS_TEST): "test_correction_dags_test",
    ("docs/correction.md", DEMO): "test_demo_command",
    ("README.md", DEMO): "test_demo_command",
    ("docs/lineage_capture.md", CAPTURE_PASSWORD): "test_lineage_capture_submit",
    ("docs/lineage_capture.md", CAPTURE_SUBMIT): "test_lineage_capture_submit",
    ("docs/openlineage.md", OPENLINEAGE_SUBMIT): "test_openlineage_submit",
    ("docs/compaction.md", COMPACT_SUBMIT): "test_compaction_submit",
    ("docs/lineage.md", BENCHMARK): "test_lineage_benchmark_command",
    ("docs/operators.md", PAIMON_CONN): "test_connection_exports",
    ("docs/operators.md", SPARK_CONN_CLUSTER): "test_connection_exports",
    ("docs/operators.md", SPARK_CONN_LOCAL): "test_connection_exports",
    ("docs/docker.md", COMPOSE_CONFIG): "test_docker_compose_config",
}
RUN_ELSEWHERE = {
    ("README.md", "paimon-lineage --url sqlite:///lineage.db upstream dw.orders 12 --depth 5"):
        "tests/docs/test_readme.py::test_cli_samples_run",
    ("README.md", "paimon-lineage --url sqlite:///lineage.db --json impact raw.events 3"):
        "tests/docs/test_readme.py::test_cli_samples_run",
    ("README.md", "paimon-lineage --url sqlite:///lineage.db delete-data-lineage --job nightly_load"):
        "tests/docs/test_readme.py::test_cli_samples_run",
    ("docs/lineage.md", "paimon-lineage upstream dws.daily 21 --depth 2"):
        "tests/lineage/test_docs.py::test_cli_sample_output",
}
ENGINE = "needs a Docker engine (none on the development and CI machines); the file is validated instead"
NOT_RUN = {
    ("docs/docker.md", f"{COMPOSE} up -d --build"): ENGINE,
    ("docs/docker.md", f"{COMPOSE} exec airflow-api-server cat "
                       "/opt/airflow/simple_auth_manager_passwords.json.generated"): ENGINE,
    ("docs/docker.md", f"{COMPOSE} down -v"): ENGINE,
    ("README.md", TEST): "is the CI run itself (.ci/run execs it); running it here would recurse",
    ("README.md", f"{DEMO} --warehouse s3"): "the whole demo on S3 takes minutes of spark-submits; its "
    "DAG run on S3 is tests/e2e/test_correction_dag_s3.py's, its other S3 pieces tests/s3's",
}


# -- reading the docs -------------------------------------------------------------------


def _blocks() -> list[tuple[str, str, str]]:
    """(page, language, text) of every fenced block."""
    found = []
    for page in PAGES:
        rel = page.relative_to(REPO).as_posix()
        for match in FENCE.finditer(page.read_text()):
            found.append((rel, match.group(1).strip(), match.group(2)))
    return found


def split_commands(text: str, lang: str = "bash") -> list[str]:
    """The commands of a shell block, raw: continuations joined, comments dropped.

    A newline inside quotes stays part of the command (a JSON value over two lines).
    """
    if lang == "console":
        text = "\n".join(line[2:] for line in text.splitlines() if line.startswith("$ "))
    commands: list[str] = []
    current: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
            elif ch == "\\" and quote == '"' and i + 1 < len(text):
                current.append(text[i + 1])
                i += 1
        elif ch in "'\"":
            quote = ch
            current.append(ch)
        elif ch == "\\" and text[i + 1 : i + 2] == "\n":
            current.append(" ")
            i += 1
        elif ch == "#" and (not current or current[-1].isspace()):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        elif ch == "\n":
            commands.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    assert quote is None, f"unterminated quote in a shell sample:\n{text}"
    commands.append("".join(current))
    return [c.strip() for c in commands if c.strip()]


def normalise(command: str) -> str:
    return " ".join(command.split())


def doc_commands() -> list[tuple[str, str]]:
    """(page, normalised command) of every shell sample, in page order."""
    return [
        (page, normalise(cmd))
        for page, lang, text in _blocks()
        if lang in SHELL_LANGS
        for cmd in split_commands(text, lang)
    ]


def raw_command(page: str, command: str) -> str:
    """The command as the page writes it (for running it), found by its normalised form."""
    for rel, lang, text in _blocks():
        if rel == page and lang in SHELL_LANGS:
            for cmd in split_commands(text, lang):
                if normalise(cmd) == command:
                    return cmd
    raise AssertionError(f"{page} no longer has the sample {command!r}")


def substitute(command: str, mapping: dict[str, str]) -> str:
    """Replace the sample's paths/URLs; each must be in the command (else the rule is stale)."""
    for old, new in mapping.items():
        assert old in command, f"substitution {old!r} does not apply to {command!r}"
        command = command.replace(old, new)
    return command


# -- the accounting ---------------------------------------------------------------------


def test_split_commands():
    block = "a \\\n  b  # note\n# only a comment\nexport X='{\"k\":\n  1}'  # two lines\n$ c # d\n"
    assert split_commands(block) == ["a    b", "export X='{\"k\":\n  1}'", "$ c"]
    assert split_commands("$ ls -l\ntotal 0\n$ echo '#' # x\n#\n", "console") == ["ls -l", "echo '#'"]


def test_every_shell_command_is_accounted_for():
    found = doc_commands()
    twice = [c for c, n in Counter(found).items() if n > 1]
    assert not twice, f"a page repeats a sample command: {twice}"
    listed = [*RUN_HERE, *RUN_ELSEWHERE, *NOT_RUN]
    assert len(listed) == len(set(listed)), "a command is in two lists"
    new = [c for c in found if c not in set(listed)]
    gone = [c for c in listed if c not in set(found)]
    assert not new, (
        "shell samples no test runs (run them in tests/docs/test_shell_samples.py, or list them "
        f"in NOT_RUN with the reason): {new}"
    )
    assert not gone, f"listed commands no page has any more (update the lists): {gone}"
    here = {f.name for f in ast.parse(Path(__file__).read_text()).body if isinstance(f, ast.FunctionDef)}
    assert set(RUN_HERE.values()) <= here
    for where in set(RUN_ELSEWHERE.values()):
        path, func = where.split("::")
        tree = ast.parse((REPO / path).read_text())
        assert func in {f.name for f in tree.body if isinstance(f, ast.FunctionDef)}, where


COMMAND_LINE = re.compile(
    r"^\s*(\$ |(spark-submit|python3?|bash|airflow|docker|docker-compose|paimon-lineage|pip|export|curl)\s)"
)


def test_unlabelled_blocks_hold_no_commands():
    offenders = [
        (page, text.splitlines()[0])
        for page, lang, text in _blocks()
        if not lang and any(COMMAND_LINE.match(line) for line in text.splitlines())
    ]
    assert not offenders, f"mark these blocks bash/console (and run them) or text: {offenders}"


# -- shared set-up ----------------------------------------------------------------------

ORDERS = [
    {"order_id": 1, "customer": "ada", "amount_cents": 1250},
    {"order_id": 2, "customer": "bob", "amount_cents": 25000},
    {"order_id": 3, "customer": "cy", "amount_cents": 999},
]


def _orders_warehouse(path: Path, branch: str | None = None) -> str:
    """``db.orders`` (3 orders) and an empty ``db.orders_enriched`` (with ``branch``)."""
    from airflow_provider_paimon.paimon.branch import create_branch
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

    warehouse = str(path)
    create_orders_tables(warehouse, ORDERS)
    if branch:
        create_branch(load_table(open_catalog(warehouse), "db.orders_enriched"), branch)
    return warehouse


def _rows(warehouse: str, table: str, branch: str | None = None) -> list[dict]:
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

    t = load_table(open_catalog(warehouse), table, branch)
    read = t.new_read_builder()
    return sorted(read.new_read().to_arrow(read.new_scan().plan().splits()).to_pylist(), key=lambda r: r["order_id"])


def _fixed_rows() -> list[dict]:
    from correction_tasks import load_job_module

    job = load_job_module("enrich_orders")
    return [job.enrich_row(r, "fixed") for r in ORDERS]


def _run(command: str, *, env: dict[str, str] | None = None, shell: bool = False) -> subprocess.CompletedProcess:
    """Run a sample from the repository root (its paths are relative to it)."""
    full_env = {**os.environ, **(env or {})}
    full_env["PATH"] = f"{VENV_BIN}{os.pathsep}{full_env.get('PATH', '')}"
    argv: str | list[str] = ["bash", "-c", command] if shell else shlex.split(command)
    return subprocess.run(argv, cwd=REPO, env=full_env, capture_output=True, text=True, timeout=TIMEOUT)


def _result(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    lines = [line for line in done.stdout.splitlines() if line.startswith("PAIMON_RESULT ")]
    assert lines, done.stdout[-3000:]
    return json.loads(lines[-1].split(" ", 1)[1])


# -- spark-submit samples (real Spark, local) --------------------------------------------


@pytest.mark.submit
def test_correction_job_submit(tmp_path):
    """docs/correction.md: the corrected job by hand, into branch fix1, recording its own lineage."""
    from airflow_provider_paimon.lineage import LineageStore

    warehouse = _orders_warehouse(tmp_path / "wh", branch="fix1")
    store = tmp_path / "lineage.db"
    command = substitute(
        raw_command("docs/correction.md", CORRECTION_SUBMIT),
        {"/tmp/wh": warehouse, "sqlite:////tmp/lineage.db": f"sqlite:///{store}"},
    )
    result = _result(_run(command))
    assert (result["branch"], result["rows"], result["lineage"]) == ("fix1", 3, "job")
    assert _rows(warehouse, "db.orders_enriched", "fix1") == _fixed_rows()
    assert _rows(warehouse, "db.orders_enriched") == []  # main untouched
    with LineageStore.from_url(f"sqlite:///{store}") as lineage:
        (sink,) = lineage.sink_data_lineages(job=result["lineage_job"])
        assert (sink.table, sink.branch, sink.snapshot_id) == ("orders_enriched", "fix1", result["sink_snapshot_id"])


@pytest.mark.submit
def test_lineage_capture_submit(tmp_path):
    """docs/lineage_capture.md: the capture records the job's batch from --conf alone."""
    from airflow_provider_paimon.lineage import LineageStore

    warehouse = _orders_warehouse(tmp_path / "wh", branch="fix1")
    store = tmp_path / "lineage.db"
    (export,) = [c for c in split_commands(_block_of("docs/lineage_capture.md", CAPTURE_SUBMIT))
                 if normalise(c) == CAPTURE_PASSWORD]
    submit = substitute(
        raw_command("docs/lineage_capture.md", CAPTURE_SUBMIT),
        {"mysql+pymysql://lineage@db:3306/paimon": f"sqlite:///{store}", "/data/wh": warehouse},
    )
    # The block as one script: the password export applies to the spark-submit (a
    # SQLite URL has no user, so the store opens without it).
    home = {"PAIMON_HOME": str(tmp_path / "paimon-home")}  # the capture's spool, not ~/.paimon
    result = _result(_run(f"set -e\n{export}\n{submit}", shell=True, env=home))
    assert (result["lineage"], result["lineage_job"]) == ("capture", "correction.run_fixed")
    assert _rows(warehouse, "db.orders_enriched", "fix1") == _fixed_rows()
    with LineageStore.from_url(f"sqlite:///{store}") as lineage:
        assert [(t.database, t.table) for t in lineage.source_table_lineages(job="correction.run_fixed")] == [
            ("db", "orders")
        ]
        (sink,) = lineage.sink_data_lineages(job="correction.run_fixed")
        assert (sink.table, sink.branch) == ("orders_enriched", "fix1")


def _block_of(page: str, command: str) -> str:
    for rel, lang, text in _blocks():
        if rel == page and lang in SHELL_LANGS and command in map(normalise, split_commands(text, lang)):
            return text
    raise AssertionError(f"{page} no longer has the sample {command!r}")


class _Receiver(http.server.BaseHTTPRequestHandler):
    events: ClassVar[list[dict]] = []

    def do_POST(self) -> None:  # http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).events.append({"path": self.path, "event": json.loads(body)})
        self.send_response(201)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.mark.submit
def test_openlineage_submit(tmp_path):
    """docs/openlineage.md: the job's events reach an HTTP receiver (here a local one, not Marquez)."""
    warehouse = _orders_warehouse(tmp_path / "wh")
    store = tmp_path / "lineage.db"
    handler = type("Receiver", (_Receiver,), {"events": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        command = substitute(
            raw_command("docs/openlineage.md", OPENLINEAGE_SUBMIT),
            {
                "sqlite:////tmp/lineage.db": f"sqlite:///{store}",
                "http://marquez:5000": f"http://127.0.0.1:{server.server_address[1]}",
                "/data/wh": warehouse,
            },
        )
        result = _result(_run(command, env={"PAIMON_HOME": str(tmp_path / "paimon-home")}))
    finally:
        server.shutdown()
        server.server_close()
    assert result["lineage"] == "capture"
    events = [e["event"] for e in handler.events]
    assert {e["path"] for e in handler.events} == {"/api/v1/lineage"}
    assert next(e["eventType"] for e in events) == "START" and "COMPLETE" in [e["eventType"] for e in events]
    assert {e["job"]["namespace"] for e in events} == {"spark-prod"}
    namespace = "file://" + warehouse
    outputs = {(d["namespace"], d["name"]) for e in events for d in e.get("outputs", [])}
    inputs = {(d["namespace"], d["name"]) for e in events for d in e.get("inputs", [])}
    assert (namespace, "db.orders_enriched") in outputs and (namespace, "db.orders") in inputs


@pytest.mark.submit
def test_compaction_submit(tmp_path):
    """docs/compaction.md: the launcher compacts one partition's small files into one COMPACT snapshot."""
    from pypaimon import CatalogFactory, Schema

    warehouse = str(tmp_path / "wh")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("sales", True)
    catalog.create_table("sales.orders", Schema.from_pyarrow_schema(schema, partition_keys=["dt"]), False)
    table = catalog.get_table("sales.orders")
    for i in range(6):  # six small files in the partition (above compaction.min.file-num)
        commit_rows(table, [{"id": i, "v": str(i), "dt": "2024-01-01"}], schema)
    commit_rows(table, [{"id": 99, "v": "other", "dt": "2024-01-02"}], schema)
    command = substitute(raw_command("docs/compaction.md", COMPACT_SUBMIT), {"s3://bucket/warehouse": warehouse})
    result = _result(_run(command))
    assert result["committed"] and (result["files_before"], result["files_after"]) == (6, 1), result
    latest = catalog.get_table("sales.orders").snapshot_manager().get_latest_snapshot()
    assert (latest.id, latest.commit_kind) == (result["snapshot_id"], "COMPACT")


# -- Airflow ------------------------------------------------------------------------------


@pytest.mark.airflow
def test_correction_dags_test(tmp_path, airflow_db):
    """docs/correction.md: ``airflow dags test`` finds the DAG, takes the documented conf and runs it.

    The warehouse ``/data/wh`` is replaced by an empty temp folder, so the run stops at
    ``validate`` (the table is not there) before any spark-submit; the successful run of
    the same DAG with real spark-submits is tests/e2e/test_correction_dag.py's.
    """
    empty = tmp_path / "wh"
    empty.mkdir()
    command = substitute(raw_command("docs/correction.md", CORRECTION_DAGS_TEST), {"/data/wh": str(empty)})
    # both lines as the page has them, from the repository root (the DAGs folder export first)
    done = _run(f"set -e\n{raw_command('docs/correction.md', DAGS_FOLDER)}\n{command}", shell=True)
    out = done.stdout + done.stderr
    assert "paimon_data_correction" in out and "validate" in out, out[-4000:]
    assert "does not exist" in out, out[-4000:]  # validate's message about db.orders_enriched
    assert sorted(p.name for p in empty.iterdir()) == []  # nothing written


# -- connections, benchmark, docker -------------------------------------------------------


def test_connection_exports(monkeypatch):
    """docs/operators.md: each export, run by bash, defines a connection the hooks read as documented."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from airflow_provider_paimon.hooks.paimon import PaimonHook

    def exported(command: str, name: str) -> str:
        done = _run(f"set -e\n{command}\nprintf %s \"${name}\"", shell=True)
        assert done.returncode == 0, done.stderr
        json.loads(done.stdout)  # the value is JSON, as Airflow reads it
        return done.stdout

    value = exported(raw_command("docs/operators.md", PAIMON_CONN), "AIRFLOW_CONN_PAIMON_DEFAULT")
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_DEFAULT", value)
    config = PaimonHook().catalog_config
    assert (config.warehouse, config.options) == ("file:///data/warehouse", {"metastore": "filesystem"})
    for command, master in ((SPARK_CONN_CLUSTER, "spark://spark-master:7077"), (SPARK_CONN_LOCAL, "local[*]")):
        value = exported(raw_command("docs/operators.md", command), "AIRFLOW_CONN_SPARK_DEFAULT")
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", value)
        assert SparkSubmitHook(conn_id="spark_default")._connection["master"] == master


def test_lineage_benchmark_command():
    """docs/lineage.md: the benchmark runs; shrunk by appended options (its default size takes minutes)."""
    small = " --backends sqlite --rows 2000 --single-calls 5 --batched-calls 2 --queries 5 --seed-queries 2"
    command = substitute(raw_command("docs/lineage.md", BENCHMARK), {"python ": f"{sys.executable} "}) + small
    done = _run(command)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "upstream 5-hop" in done.stdout, done.stdout[-3000:]


def _compose_tool() -> list[str] | None:
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]  # Debian's 1.29: the same subcommands and flags
    return None


def test_docker_compose_config():
    """docs/docker.md: the validation command runs; the engine-only ones name what the file defines."""
    import yaml

    tool = _compose_tool()
    if tool is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("neither `docker compose` nor `docker-compose` is installed (scripts/test.sh installs it)")
        pytest.skip("no docker compose tool installed")
    argv = shlex.split(raw_command("docs/docker.md", COMPOSE_CONFIG))
    assert argv[:2] == ["docker", "compose"]
    done = subprocess.run([*tool, *argv[2:]], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # What the engine-only commands and the page's comments rely on.
    spec = yaml.safe_load((REPO / "docker" / "docker-compose.yml").read_text())
    assert "airflow-api-server" in spec["services"]
    ports = {p.split(":")[0] for s in spec["services"].values() for p in s.get("ports", [])}
    page = (REPO / "docs" / "docker.md").read_text()
    for port in re.findall(r"http://localhost:(\d+)", page):
        assert port in ports, port


def test_ci_runs_the_readme_test_command():
    """README's ``bash scripts/test.sh`` is what CI runs, so every CI run exercises it."""
    assert "exec bash scripts/test.sh" in (REPO / ".ci" / "run").read_text()
    script = (REPO / "scripts" / "test.sh").read_text()
    assert "bash scripts/bootstrap.sh" in script
    # the whole suite (testpaths) unless arguments narrow it, on the xdist workers
    assert re.search(r'^exec \.venv/bin/python -m pytest -n "\$\{PAIMON_TEST_WORKERS:-2\}" --dist loadfile --no-loadscope-reorder "\$@"$', script, re.M)


# -- the demo -----------------------------------------------------------------------------

_DEMO_DRIVER = r"""
import sys
sys.path.insert(0, {scripts!r})
import demo
from airflow_provider_paimon.lineage import LineageStore, SnapshotRef
from airflow_provider_paimon.paimon.branch import create_branch, replace_main
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.tag import create_tag

def commit_rows(table, version):
    import pyarrow as pa
    from correction_tasks import load_job_module
    job = load_job_module("enrich_orders")
    source = load_table(open_catalog(str(demo.WAREHOUSE)), "db.orders")
    read = source.new_read_builder()
    rows = read.new_read().to_arrow(read.new_scan().plan().splits()).to_pylist()
    schema = pa.schema([("order_id", pa.int64()), ("customer", pa.string()),
                        ("amount", pa.float64()), ("size", pa.string())])
    builder = table.new_batch_write_builder().overwrite()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(pa.Table.from_pylist([job.enrich_row(r, version) for r in rows], schema=schema))
    commit.commit(write.prepare_commit())
    write.close(); commit.close()

def run_dag(module_name, conf=None):
    # Stands in for dag.test(): the tables end as the DAG leaves them (its real run with
    # spark-submits is tests/e2e/test_correction_dag.py's).
    conf = conf or {{}}
    catalog = open_catalog(str(demo.WAREHOUSE))
    sink = load_table(catalog, "db.orders_enriched")
    with LineageStore.from_url(demo.LINEAGE_URL) as store:
        if module_name == "etl_original":
            commit_rows(sink, "buggy")
            store.record_batch("enrich_orders.original", 1, [SnapshotRef("db", "orders", 1)],
                               [SnapshotRef("db", "orders_enriched", 1)])
        else:
            create_tag(sink, conf["tag"])
            create_branch(sink, conf["branch"], tag=conf["tag"])
            commit_rows(load_table(catalog, "db.orders_enriched", conf["branch"]), "fixed")
            replace_main(load_table(catalog, "db.orders_enriched"), conf["branch"], backup_name=conf["backup_name"])
            store.record_batch("enrich_orders.fixed.correction", 1, [SnapshotRef("db", "orders", 1)],
                               [SnapshotRef("db", "orders_enriched", 2, branch=conf["branch"])])
    return {{}}

demo.run_dag = run_dag
demo.migrate_airflow_db = lambda: None
sys.exit(demo.main())
"""


def test_demo_command(tmp_path):
    """README.md / docs/correction.md: ``bash scripts/demo.sh`` bootstraps, then runs scripts/demo.py.

    The whole demo (two DAG runs, five spark-submits) takes minutes, and its DAG run is
    tests/e2e's; here demo.py's own steps run for real (tables, rows shown, lineage
    printed, output folder, temp AIRFLOW_HOME removed) with ``dag.test()`` and the DB
    migration stood in for.
    """
    script = (REPO / "scripts" / "demo.sh").read_text()
    assert "bash scripts/bootstrap.sh" in script and 'exec .venv/bin/python scripts/demo.py "$@"' in script
    out = tmp_path / "demo-output"
    temp = tmp_path / "tmp"  # where the demo makes its temp AIRFLOW_HOME
    temp.mkdir()
    driver = _DEMO_DRIVER.format(scripts=str(REPO / "scripts"))
    done = subprocess.run(
        [sys.executable, "-c", driver], cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PAIMON_DEMO_OUTPUT": str(out), "TMPDIR": str(temp)},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    text = done.stdout
    for step in range(1, 8):
        assert f"\n== {step}." in text, text
    assert "Timings:" in text and f"Output kept in {out}" in text
    assert "backup branch main_before_correction" in text
    assert "enrich_orders.fixed.correction" in text and "consumed db.orders" in text, text
    assert (out / "warehouse").is_dir() and (out / "lineage.db").is_file()
    assert not [p.name for p in temp.iterdir() if p.name.startswith("paimon-demo-airflow-home-")]
