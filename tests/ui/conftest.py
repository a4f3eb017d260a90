"""Shared UI-test fixtures: the run's one Airflow api-server, Debian's headless Chromium
driven by Playwright."""

from __future__ import annotations

import os
import shutil

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="package")
def browser():
    """Chromium for the UI tests, closed when the run leaves tests/ui: Playwright's sync API
    keeps an asyncio loop marked running in the main thread while it is open, and Airflow's
    ``dag.test()`` (``asyncio.run`` for a deferred task) refuses to start inside it."""
    if not os.path.exists(CHROMIUM):
        if IN_CI:
            pytest.fail("Debian's chromium is not installed (.ci/run installs it)")
        pytest.skip("chromium not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def ui_server(tmp_path_factory):
    """The api-server every tests/ui module shares (tests/ui/shared_server.py): started when
    the first module of the run (of this xdist worker) asks for it, stopped at the end. A
    module sets its own lineage store, warehouse and audit reports with ``serving``."""
    from .shared_server import shared_server

    with shared_server(tmp_path_factory.mktemp("airflow-ui-shared")) as server:
        yield server
