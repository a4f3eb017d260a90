"""A job's secrets never reach its output (``spark/jobs/job_secrets.py``).

The jobs the operators submit get their secrets through private channels (the catalog
options' JSON, ``PAIMON_LINEAGE_URL``, OpenLineage settings, the private properties
file's Spark conf). A job registers them before it starts, and scrubs its log
records, its traceback, its ``PAIMON_ERROR`` and its ``PAIMON_RESULT``. The real run
uses the launcher as spark-submit does (a process of its own, the environment the
hook sets); passwords come from the fuzz generator, punctuation and all.
"""

from __future__ import annotations

import json
import logging
import os
import random
import subprocess
import sys
from urllib.parse import quote

import pytest
from fuzz_passwords import shown
from secret_fuzz import fuzz_password

from airflow_provider_paimon import job_contract
from airflow_provider_paimon.paimon import secrets
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.secrets import ScrubFilter
from airflow_provider_paimon.spark.jobs import common, launcher
from airflow_provider_paimon.spark.jobs.job_secrets import register_private_secrets

pytestmark = pytest.mark.usefixtures("fresh_secrets")





def test_a_failing_job_prints_none_of_the_secrets_it_was_given(tmp_path):
    """``tag list`` against a REST catalog whose ``uri`` carries a password: the REST
    client's parse error and the traceback quote the URL's authority."""
    rng = random.Random(1130)
    passwords = ["Pw,(x)/y?z#1@9z", *(fuzz_password(rng) for _ in range(2))]
    for password in passwords:
        token, lineage_pw, ol_key = fuzz_password(rng), fuzz_password(rng), fuzz_password(rng)
        env = dict(os.environ)
        env.update({
            "PYTHONPATH": os.pathsep.join([os.getcwd(), env.get("PYTHONPATH", "")]),
            job_contract.CATALOG_OPTIONS_ENV: json.dumps({
                "metastore": "rest", "token.provider": "bear", "token": token,
                "uri": f"http://svc:{password}@127.0.0.1:9/v1",
            }),
            "PAIMON_LINEAGE_URL": f"mysql+pymysql://root:{lineage_pw}@127.0.0.1:9/x",
            "OPENLINEAGE_API_KEY": ol_key,
            job_contract.RESULT_FILE_ENV: str(tmp_path / "result.json"),
        })
        proc = subprocess.run(
            [sys.executable, launcher.__file__, "tag", "list", "--warehouse", "catalog1", "--table", "db.t"],
            capture_output=True, text=True, timeout=300, env=env,
        )
        assert proc.returncode == 1 and "PAIMON_ERROR" in proc.stderr, proc.stderr[-2000:]
        assert "Traceback" in proc.stderr  # the traceback is printed, scrubbed
        record = (tmp_path / "result.json").read_text()
        assert shown(proc.stdout + proc.stderr + record, [password, token, lineage_pw, ol_key]) == []


def test_log_records_error_and_result_of_a_job_are_scrubbed(capsys, caplog, monkeypatch):
    rng = random.Random(1131)
    password, key = fuzz_password(rng), fuzz_password(rng)
    monkeypatch.setenv(job_contract.CATALOG_OPTIONS_ENV, json.dumps({"fs.s3.accessKeySecret": key}))
    monkeypatch.setenv("PAIMON_LINEAGE_URL", f"postgresql+psycopg2://u:{quote(password, safe='')}@db:5432/x")
    log = logging.getLogger("airflow_provider_paimon.jobs.test")

    def failing() -> dict:
        try:
            raise RuntimeError(f"driver said: access key {key} refused")
        except RuntimeError:
            log.warning("store %s unreachable (%r)", f"u:{password}@db", {"k": key}, exc_info=True)
        raise InvalidArgumentError(f"could not use {password} nor {key}")

    with caplog.at_level(logging.INFO):
        assert common.run_job(failing) == 2
    out, err = capsys.readouterr()
    logged = caplog.text + " ".join(r.getMessage() for r in caplog.records)
    assert "store ***@db unreachable" in logged and "RuntimeError: driver said: access key *** refused" in logged
    assert shown(out + err + logged, [password, key]) == []
    assert "PAIMON_ERROR could not use *** nor ***" in err
    # the filters come off with the job: later records are the caller's business
    assert not any(isinstance(f, ScrubFilter) for h in logging.getLogger().handlers for f in h.filters)

    assert common.run_job(lambda: {"echo": [f"x {key} y", {"nested": password}], "n": 3}) == 0
    out, _err = capsys.readouterr()
    assert job_contract.parse_result(out) == {"echo": ["x *** y", {"nested": "***"}], "n": 3}


def test_the_private_spark_conf_and_openlineage_settings_are_registered():
    rng = random.Random(1132)
    api_key, url_pw, header, plain = (fuzz_password(rng) for _ in range(4))
    register_private_secrets(
        {"OPENLINEAGE_URL": f"http://ol:{url_pw}@ol.example:5000", "OPENLINEAGE_NAMESPACE": "plain-ns"},
        spark_conf={
            "spark.openlineage.transport.auth.apiKey": api_key,
            "spark.openlineage.transport.headers.X-Token": header,
            "spark.app.name": plain,
        },
    )
    known = secrets.known_secrets()
    assert {api_key, url_pw, header} <= known
    assert plain not in known and "plain-ns" not in known
