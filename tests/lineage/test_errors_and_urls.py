"""URLs, masking and connection failures: a password never shows, errors name the fix."""

from __future__ import annotations

import logging

import pytest

from airflow_provider_paimon.lineage import (
    InvalidLineageArgumentError,
    LineageStore,
    LineageStoreUnavailableError,
    RetryPolicy,
    UnsupportedBackendError,
    mask_url,
)
from airflow_provider_paimon.lineage.url import build_url, parse_url

SECRET = "Pa55:w@rd/x"


def test_mask_url_hides_password_and_secret_query_values():
    from urllib.parse import quote

    url = f"mysql+pymysql://me:{quote(SECRET, safe='')}@db.example:3306/meta?ssl_key=k3y&charset=utf8mb4"
    masked = mask_url(url)
    assert masked == "mysql+pymysql://me:***@db.example:3306/meta?ssl_key=***&charset=utf8mb4"
    assert "k3y" not in masked and quote(SECRET, safe="") not in masked
    assert "hunter2" not in mask_url("mysql://u:hunter2@h:notaport/x")  # unparsable still masked


def test_parse_url_defaults_drivers_and_refuses_other_backends(monkeypatch, tmp_path):
    assert parse_url("mysql://h/x").drivername == "mysql+pymysql"
    assert parse_url("mariadb://h/x").drivername == "mariadb+pymysql"
    assert parse_url("postgres://h/x").drivername == "postgresql+psycopg2"
    monkeypatch.setenv("PAIMON_LINEAGE_URL", f"sqlite:///{tmp_path}/env.sqlite")
    assert parse_url(None).database == f"{tmp_path}/env.sqlite"
    with pytest.raises(UnsupportedBackendError, match="supported are sqlite, mysql"):
        parse_url("oracle://scott:tiger@h/x")
    with pytest.raises(InvalidLineageArgumentError, match="not a SQLAlchemy URL"):
        parse_url("just some text")
    with pytest.raises(InvalidLineageArgumentError, match="plain identifier"):
        LineageStore.from_url("sqlite://", database="paimon; DROP DATABASE x")


def test_build_url_from_connection_parts():
    url = build_url("mysql", host="h", port=3307, username="u", password="p@ss", database="meta")
    assert url.render_as_string(hide_password=False) == "mysql+pymysql://u:p%40ss@h:3307/meta"
    assert build_url("postgres", host="h").drivername == "postgresql+psycopg2"
    with pytest.raises(UnsupportedBackendError, match="oracle"):
        build_url("oracle")


def test_missing_sqlite_directory_is_a_clear_error(tmp_path):
    with pytest.raises(InvalidLineageArgumentError, match="does not exist; create it"):
        LineageStore.from_url(f"sqlite:///{tmp_path}/no/such/dir/l.sqlite")
    assert not (tmp_path / "no").exists()


def test_repr_and_url_never_show_the_password(tmp_path):
    with LineageStore.from_url(f"sqlite:///{tmp_path}/r.sqlite") as store:
        assert repr(store) == f"LineageStore(url='sqlite+pysqlite:///{tmp_path}/r.sqlite', database='paimon')"


@pytest.mark.parametrize("url", [
    pytest.param("mysql+pymysql://root:{pw}@127.0.0.1:1/x", id="mariadb", marks=pytest.mark.mysql),
    pytest.param("postgresql+psycopg2://postgres:{pw}@127.0.0.1:1/x", id="postgresql", marks=pytest.mark.postgres),
])
def test_unreachable_server_names_url_without_password(url, caplog):
    from urllib.parse import quote

    caplog.set_level(logging.DEBUG)
    with pytest.raises(LineageStoreUnavailableError) as info:
        LineageStore.from_url(url.format(pw=quote(SECRET, safe="")), retry=RetryPolicy(attempts=2))
    text = str(info.value) + repr(info.value) + caplog.text
    assert "127.0.0.1:1" in text and ":***@" in str(info.value)
    assert SECRET not in text and quote(SECRET, safe="") not in text
    assert info.value.__cause__ is None  # the driver's exception (and its URL) is not chained
