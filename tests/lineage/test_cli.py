"""The paimon-lineage command: output, --json, exit codes, passwords kept out."""

from __future__ import annotations

import json
import subprocess
import sys
from urllib.parse import quote

import pytest
from fuzz_passwords import passwords, shown

from airflow_provider_paimon.lineage import LineageStore, SnapshotRef
from airflow_provider_paimon.lineage.cli import main

# each test's output is masked by what that test's URLs register, not by earlier tests'
pytestmark = pytest.mark.usefixtures("fresh_secrets")


@pytest.fixture
def url(tmp_path):
    url = f"sqlite:///{tmp_path}/cli.sqlite"
    assert main(["init", "--url", url]) == 0
    with LineageStore.from_url(url) as store:
        store.record_batch("clean", 1, [SnapshotRef("ods", "raw", 1)], [SnapshotRef("dwd", "orders", 11)])
        store.record_batch("agg", 1, [SnapshotRef("dwd", "orders", 11)], [SnapshotRef("dws", "daily", 21)])
    return url


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_lists_and_queries_human_and_json(url, capsys):
    code, out, _ = run(capsys, "jobs", "--url", url)
    assert code == 0 and "clean" in out and "ods.raw" in out
    code, out, _ = run(capsys, "--url", url, "--json", "tables")
    assert code == 0
    assert {t["table"]: t["writers"] for t in json.loads(out)} == {"raw": [], "orders": ["clean"], "daily": ["agg"]}
    code, out, _ = run(capsys, "upstream", "dws.daily", "21", "--depth", "2", "--url", url, "--json")
    assert [(n["table"], n["snapshot_id"], n["depth"]) for n in json.loads(out)] == [("orders", 11, 1), ("raw", 1, 2)]
    code, out, _ = run(capsys, "downstream", "ods.raw", "1", "--url", url)
    assert code == 0 and "orders" in out and "daily" not in out
    code, out, _ = run(capsys, "impact", "ods.raw", "1", "--url", url, "--json")
    assert [t["table"] for t in json.loads(out)["tables"]] == ["orders", "daily"]
    code, out, _ = run(capsys, "graph", "--url", url, "--job", "agg")
    assert code == 0 and "daily" in out and "raw" not in out
    code, out, _ = run(capsys, "upstream", "ods.raw", "1", "--url", url)
    assert code == 0 and "(no rows)" in out


def test_delete_actions_and_unknown_job(url, capsys):
    code, out, _ = run(capsys, "delete-data-lineage", "--job", "nobody", "--url", url, "--json")
    assert code == 0 and json.loads(out) == {"job": "nobody", "deleted": 0}
    code, out, _ = run(capsys, "delete-data-lineage", "--job", "clean", "--url", url)
    assert code == 0 and "deleted 2 row(s)" in out
    code, out, _ = run(capsys, "delete-table-lineage", "--job", "clean", "--url", url)
    assert code == 0 and "deleted 2 row(s)" in out
    with LineageStore.from_url(url) as store:
        assert {e.job for e in store.source_table_lineages()} == {"agg"}


def test_exit_codes_for_bad_usage_and_missing_store(url, tmp_path, capsys):
    assert run(capsys, "upstream", "no-dot", "1", "--url", url)[0] == 2
    assert run(capsys, "upstream", "a.b", "-4", "--url", url)[0] == 2
    assert run(capsys, "upstream", "a.b", "1", "--depth", "0", "--url", url)[0] == 2
    assert run(capsys, "delete-data-lineage", "--url", url)[0] == 2  # --job is required
    code, _, err = run(capsys, "delete-data-lineage", "--job", " ", "--url", url)
    assert code == 2 and "job" in err
    code, _, err = run(capsys, "jobs", "--url", "oracle://scott:tiger@db/x")
    assert code == 2 and "tiger" not in err and "oracle" in err
    missing = f"sqlite:///{tmp_path}/none.sqlite"
    code, _, err = run(capsys, "jobs", "--url", missing)
    assert code == 1 and "paimon-lineage init" in err
    assert not (tmp_path / "none.sqlite").exists()


@pytest.mark.mysql
def test_unreachable_server_exit_3_without_password(capsys):
    code, out, err = run(capsys, "jobs", "--url", "mysql+pymysql://root:Sup3rSecret@127.0.0.1:1/x")
    assert code == 3
    assert "Sup3rSecret" not in out + err
    assert "root:***@127.0.0.1:1" in err


def test_console_script_entry_point(url):
    proc = subprocess.run([sys.executable, "-m", "airflow_provider_paimon.lineage.cli", "--json", "jobs", "--url", url],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert [j["job"] for j in json.loads(proc.stdout)] == ["agg", "clean"]


PW = "Cli-Pw-8d7c"
MISTYPED = [f"mysql+pymysql:/root:{PW}@h", f"mysql+pymysql//root:{PW}@h", f"root:{PW}@h",
            f"mysql+pymysql:root:{PW}@h", f"mysql+pymysql://root:{PW}@h:abc/db"]


@pytest.mark.parametrize("url", MISTYPED)
def test_mistyped_urls_are_masked_and_exit_2(url, capsys):
    code, out, err = run(capsys, "jobs", "--url", url)
    assert code == 2 and PW not in out + err and ":***@h" in err
    assert err.startswith("paimon-lineage: error: lineage store URL ")


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["jobs", "--ulr", f"mysql://root:{PW}@h"], "unrecognized arguments: --ulr <value not shown>"),
        (["jobs", f"--ulr=mysql://root:{PW}@h"], "unrecognized arguments: --ulr=<value not shown>"),
        (["jobs", "--pasword", PW], "unrecognized arguments: --pasword <value not shown>"),
        ([f"mysql://root:{PW}@h", "jobs"], "invalid choice: <value not shown> (choose from"),
        (["jbos"], "invalid choice: 'jbos' (choose from"),
    ],
)
def test_usage_errors_never_echo_argument_values(argv, shown, capsys):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and PW not in err
    assert shown in err and err.startswith("usage: paimon-lineage")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (f"mysql+pymysql://root:{PW}@127.0.0.1:abc/x", "has a port that is not a number"),
        (f"mysql+pymysql://root:{PW}@127.0.0.1:3306/x?connect_timeout=abc",
         "has a bad connection argument in its query string"),
    ],
)
def test_bad_port_or_query_argument_is_a_usage_error_and_json_prints_it(url, message, capsys):
    code, out, err = run(capsys, "jobs", "--url", url)
    assert code == 2 and message in err and "Traceback" not in err and PW not in err
    code, out, err = run(capsys, "--json", "jobs", "--url", url)
    assert code == 2 and PW not in out + err
    error = json.loads(out)
    assert error["exit_code"] == 2 and message in error["error"] and "root:***@127.0.0.1" in error["error"]


def test_json_errors_for_usage_and_unreachable_store(capsys):
    code, out, _ = run(capsys, "--json", "jobs", "--ulr", f"mysql://root:{PW}@h")
    assert code == 2 and json.loads(out) == {
        "error": "unrecognized arguments: --ulr <value not shown>", "exit_code": 2,
    }
    code, out, _ = run(capsys, "--json", "jobs", "--url", f"mysql+pymysql://root:{PW}@127.0.0.1:1/x")
    assert code == 3 and json.loads(out)["exit_code"] == 3 and PW not in out


def test_real_cli_process_masks_and_exits_2():
    """The installed entry point as a process: no traceback, no password, exit 2."""
    for argv in (["jobs", "--url", f"mysql+pymysql:/root:{PW}@h"],
                 ["--json", "jobs", "--url", f"mysql+pymysql://root:{PW}@127.0.0.1:abc/x"],
                 ["jobs", "--ulr", f"mysql://root:{PW}@h"]):
        proc = subprocess.run([sys.executable, "-m", "airflow_provider_paimon.lineage.cli", *argv],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert PW not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr
        if "--json" in argv:
            assert json.loads(proc.stdout)["exit_code"] == 2


def _fuzz_urls(password: str) -> list[str]:
    """The shapes of #30 that fail before any connection: mistyped, JDBC, query credential."""
    encoded = quote(password, safe="")
    return [
        f"mysql+pymysql//root:{password}@127.0.0.1:1/x",  # "... is not a SQLAlchemy URL"
        f"mysql+pymysql:/root:{password}@127.0.0.1:1/x",
        f"root:{password}@127.0.0.1",
        f"mysql+pymysql://root:{password}@127.0.0.1:abc/x",  # port not a number
        f"jdbc:mysql://root:{password}@127.0.0.1:1/x?useSSL=false&frob=1",  # JDBC property refused
        f"jdbc:mysql://root:{password}@h1,h2/x",  # several hosts
        f"mysql+pymysql://root@127.0.0.1:1/x?pwd={encoded}",  # the driver refuses 'pwd'
        f"mysql+pymysql://u@127.0.0.1:1/x?password={encoded}&connect_timeout=abc",
    ]


def test_punctuation_full_passwords_never_appear_in_cli_errors(capsys):
    """Passwords from the fuzz generator in every shape the issue saw echoed."""
    for password in passwords(3032, 25):
        for url in _fuzz_urls(password):
            for extra in ((), ("--json",)):
                code, out, err = run(capsys, *extra, "jobs", "--url", url)
                assert code == 2, (url, err)
                assert shown(out + err, [password]) == [], (url, out + err)


def test_punctuation_full_passwords_never_appear_when_the_store_is_unreachable(capsys):
    for password in passwords(3033, 2):
        for url in (f"mysql+pymysql://root:{password}@127.0.0.1:1/x",
                    f"jdbc:postgresql://u:{password}@127.0.0.1:1/x"):
            code, out, err = run(capsys, "--json", "jobs", "--url", url)
            # 3: unreachable; 2: pymysql cannot encode a non-Latin-1 password at all
            assert code in (2, 3), (url, err)
            assert shown(out + err, [password]) == [] and "***@127.0.0.1" in err
    password = passwords(3034, 1)[0]
    proc = subprocess.run([sys.executable, "-m", "airflow_provider_paimon.lineage.cli", "jobs", "--url",
                           f"mysql+pymysql//root:{password}@127.0.0.1:1/x"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "is not a SQLAlchemy URL" in proc.stderr
    assert shown(proc.stdout + proc.stderr, [password]) == []
