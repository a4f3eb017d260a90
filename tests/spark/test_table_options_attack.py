"""The attack of issue #30, replayed: a job given a REST connection creates a table.

A ``PaimonSparkSubmitOperator(paimon_conn_id=...)`` job gets the connection's options in
``$PAIMON_CATALOG_OPTIONS_JSON`` and its warehouse in ``$PAIMON_CONNECTION_WAREHOUSE``;
the job's code writes with ``create-table``. Before the table-option allowlist, every
connection option without a catalog prefix was a table option, and ``schema-0`` of the
new table held ``header.authorization``, ``oauth.passphrase`` and ``rest.client.pwd``.
Here the job runs as such a driver does (its own process and SparkSession, the
environment as the hook sets it), and no file under the table, nor the job's output,
holds any of the credentials; the table keeps the connection's one table option.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from urllib.parse import quote

from fuzz_passwords import passwords, shown

from airflow_provider_paimon.job_contract import CATALOG_OPTIONS_ENV
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.spark.options import CONNECTION_WAREHOUSE_ENV

JOB = textwrap.dedent("""
    from airflow_provider_paimon.spark.session import local_session

    spark = local_session("issue-30-attack")
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, name STRING")
    (df.write.format("paimon").option("table", "db.attacked").option("create-table", "true")
       .mode("append").save())
    print("ROWS", spark.read.format("paimon").option("table", "db.attacked").load().count())
""")


def test_a_job_with_rest_credentials_creates_a_table_that_holds_none_of_them(warehouse):
    bearer, passphrase, pwd, uri_pw = passwords(3030, 4)
    connection = {  # what the Airflow hook puts in the job's environment
        "header.Authorization": f"Bearer {bearer}",
        "oauth.passphrase": passphrase,
        "rest.client.pwd": pwd,
        "uri": f"http://svc:{uri_pw}@rest.example:8080/v1",
        "snapshot.num-retained.min": "5",
    }
    env = dict(os.environ, **{CATALOG_OPTIONS_ENV: json.dumps(connection), CONNECTION_WAREHOUSE_ENV: warehouse})
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", JOB], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ROWS 2" in proc.stdout

    table = load_table(open_catalog(warehouse), "db.attacked")
    assert table.table_schema.options == {"snapshot.num-retained.min": "5"}
    secret_list = [bearer, passphrase, pwd, uri_pw]
    forms = {f for s in secret_list for f in (s, json.dumps(s)[1:-1], quote(s, safe=""))}
    holding = []
    for folder, _dirs, files in os.walk(warehouse):
        for name in files:
            with open(os.path.join(folder, name), "rb") as fh:
                data = fh.read().decode("utf-8", errors="replace")
            if any(f in data for f in forms) or "Bearer" in data or "oauth" in data or "rest.client" in data:
                holding.append(os.path.relpath(os.path.join(folder, name), warehouse))
    assert holding == []
    assert len([f for _d, _s, files in os.walk(warehouse) for f in files if f.startswith("data-")]) >= 1
    output = proc.stdout + proc.stderr
    assert shown(output, secret_list) == []
    # the unknown keys are named (keys only) where the job plans the write
    assert "oauth.passphrase, rest.client.pwd are not Paimon table options" in output
