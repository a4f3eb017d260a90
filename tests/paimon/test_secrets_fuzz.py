"""The secret policy against passwords full of punctuation.

Two nets (``paimon/secrets.py``): secrets known by origin are masked by their whole
value wherever they appear; URLs, ``key=value`` pairs and quoted pairs that nobody
registered are parsed, never split into words, so ``,`` ``(`` ``'`` ``@`` ``/`` inside a
password do not let part of it through. Passwords are drawn from the whole printable
ASCII range and Unicode punctuation; the seed is in the test id, and
``PAIMON_SECRET_FUZZ_CASES`` raises the count.
"""

from __future__ import annotations

import json
import os
import random
import sys
from urllib.parse import quote

import pytest
from secret_fuzz import fuzz_password

from airflow_provider_paimon.paimon import secrets
from airflow_provider_paimon.paimon.secrets import (
    MASK,
    is_secret,
    is_secret_key,
    mask_mapping,
    mask_url,
    register_secret,
    scrub,
    secret_values,
)

CASES = int(os.environ.get("PAIMON_SECRET_FUZZ_CASES", "300"))
SEED = int(os.environ.get("PAIMON_SECRET_FUZZ_SEED", "20261126"))


def _password(rng: random.Random, *, spaces: bool = False) -> str:
    return fuzz_password(rng, spaces=spaces)


def _texts(password: str) -> list[str]:
    """The shapes a password takes in the package's messages when nobody registered it."""
    encoded = quote(password, safe="")
    return [
        f"lineage store URL 'mysql+pymysql://root:{password}@127.0.0.1:3306/paimon' is not reachable",
        f"'mysql+pymysql//root:{password}@127.0.0.1:1/x' is not a SQLAlchemy URL",
        f"connect postgresql+psycopg2://postgres:{encoded}@db.example:5432/x failed",
        f"jdbc:mysql://root:{password}@h:3306/x?user=a&password={encoded}",
        f"--catalog-option rest.client.pwd={password} --conf spark.x=1",
        f"uri=http://u:{password}@rest:8080/v1",
        f"OpenLineage event could not be sent to http http://ol:{password}@ol.example:5000/api",
        repr({"oauth.passphrase": password, "metastore": "rest"}),
        json.dumps({"header.Authorization": password, "x": "y"}),
        f"warehouse s3://AKIDEXAMPLE:{password}@bucket/wh",
        f"session-tok: {password}",
    ]


@pytest.mark.parametrize("seed", range(SEED, SEED + 3))
def test_unregistered_passwords_are_masked_whole_in_every_shape(seed):
    rng = random.Random(seed)
    for _ in range(CASES // 3):
        password = _password(rng)
        for text in _texts(password):
            masked = mask_url(text)
            assert password not in masked and quote(password, safe="") not in masked, (seed, text, masked)
            assert MASK in masked


@pytest.mark.parametrize("seed", range(SEED, SEED + 2))
def test_registered_secrets_are_masked_wherever_they_appear(seed):
    rng = random.Random(seed)
    for _ in range(CASES // 2):
        password = _password(rng, spaces=rng.random() < 0.5)
        register_secret(password)
        for text in (f"the value was {password} (sic)", f"x={quote(password, safe='')}",
                     json.dumps({"anything": password}), repr([password]), password):
            masked = scrub(text)
            assert password not in masked and quote(password, safe="") not in masked, (seed, text, masked)
            assert mask_url(text) == masked


def test_registration_reaches_listeners_once_per_form_and_replays_the_known():
    heard: list[str] = []
    register_secret("Known-Before-Listener-1")
    secrets.on_secret_registered(heard.append)
    assert "Known-Before-Listener-1" in heard
    register_secret("New,Secret(After)")
    assert "New,Secret(After)" in heard and quote("New,Secret(After)", safe="") in heard
    count = len(heard)
    register_secret("New,Secret(After)")
    assert len(heard) == count
    secrets._listeners.remove(heard.append)


def test_short_registered_values_do_not_mangle_text_but_still_mask_as_passwords():
    register_secret("ab1")
    assert scrub("tab1e ab1") == "tab1e ab1"
    assert scrub("mysql://u:ab1@h/db") == "mysql://u:***@h/db"


def test_key_names_the_policy_knows():
    for key in ("pwd", "rest.client.pwd", "oauth.passphrase", "jdbc.pass", "bearer", "session-tok",
                "dsn", "sessionTok", "header.X-Auth-Key", "fs.s3.accessKeySecret", "token", "api_key"):
        assert is_secret_key(key), key
    for key in ("primary-key", "bucket-key", "bypass", "stock", "partition.timestamp-pattern",
                "metastore", "warehouse", "file.format", "compaction.min.file-num"):
        assert not is_secret_key(key), key


def test_urls_that_carry_no_credentials_are_left_alone():
    for text in ("http://host:8080/p?mail=a@b.com", "bob@example.com wrote", "s3://bucket/wh",
                 "file:///tmp/wh", "postgresql://db:5432/x", "primary-key=id,dt"):
        assert mask_url(text) == text
        assert not is_secret("uri", text)


def test_mistyped_user_info_is_masked_whole():
    for url in ("mysql+pymysql:/root:Pw,C(9)@h", "mysql+pymysql//root:Pw,C(9)@h", "root:Pw,C(9)@h",
                "mysql://root:pa/ss,x@host/db"):
        masked = mask_url(url)
        assert "root" not in masked and "Pw,C" not in masked and "pa/ss" not in masked, masked
        assert "***@h" in masked


def test_mappings_and_value_lists_use_the_same_parser():
    password = "Pw,(x)'y@z"
    options = {"uri": f"http://u:{password}@rest:80", "jdbc.pass": password, "nested": {"dsn": "x"}}
    assert password in secret_values(options)
    assert password not in json.dumps(mask_mapping(options))


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch):
    """Each test starts from an empty registry (it is process-wide by design) and no
    listeners: these are the policy's own tests, and in a worker where an earlier test
    imported the Airflow layer, every fuzzed form would also go to Airflow's masker, which
    rebuilds its pattern per mask and keeps them for the rest of the session (the two
    seeds took 147 s and 288 s there against 8 s each alone, and every later log line
    paid for the hundreds of masks). tests/airflow/test_secret_policy.py covers that path."""
    monkeypatch.setattr(secrets, "_known", set())
    monkeypatch.setattr(secrets, "_pattern", None)
    monkeypatch.setattr(secrets, "_listeners", [])
    yield
    assert sys.modules["airflow_provider_paimon.paimon.secrets"] is secrets
