"""Fixtures of the page tests: a headless Debian chromium under Playwright, a screenshot folder,
and the Snakemake report of the shared quick run (``quick_results`` of tests/conftest.py).

Screenshots are written to a session temporary folder (its path is printed) and, when the
environment variable COUNTDP_SCREENSHOTS names a folder, copied there at the end of the session.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import snakemake

from tests.pages.debian_chromium import cannot_install_chromium, install_chromium, launch


@pytest.fixture(scope="module")
def chromium():
    """A browsing context of Debian's headless chromium (installed first if missing and the machine
    allows it, else the test is skipped).  Pages opened in one context start faster than in fresh
    browsers; each test opens and closes its own pages.

    Module-scoped, not session-scoped: while Playwright's sync API is started it marks its asyncio
    loop as running in this thread, so ``asyncio.run`` in any later test (nbclient, ...) would fail.
    """
    reason = cannot_install_chromium()
    if reason:
        pytest.skip(reason)
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the test extra) is not installed")
    install_chromium()
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            yield browser.new_context()
        finally:
            browser.close()


@pytest.fixture(scope="session")
def screens(tmp_path_factory) -> Path:
    """Where the page tests save their screenshots (copied to $COUNTDP_SCREENSHOTS at the end)."""
    folder = tmp_path_factory.mktemp("screens")
    print(f"screenshots: {folder}")
    yield folder
    target = os.environ.get("COUNTDP_SCREENSHOTS")
    if target:
        shutil.copytree(folder, target, dirs_exist_ok=True)


@pytest.fixture(scope="session")
def quick_report(quick_results, tmp_path_factory) -> Path:
    """``report.html`` of the shared quick run (``snakemake --report``; the workflow is not rerun)."""
    out = tmp_path_factory.mktemp("pages-report") / "report.html"
    done = snakemake(quick_results, "--report", str(out), timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return out
