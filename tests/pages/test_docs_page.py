"""The documentation site's front page, built with ``mkdocs build --strict`` and opened in a real
browser over HTTP (as ``mkdocs serve`` or any web server shows it): no console error, no
uncaught exception, no failed request, no request leaving the machine (fonts or scripts from a
CDN would fail for an offline reader), and every image loaded.

Skipped while the repository has no mkdocs.yml.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from tests.pages.local_server import serve
from tests.pages.page_checks import check_page

MKDOCS = Path(sys.executable).with_name("mkdocs")
BUILD_TIMEOUT = 300


def build_site(project: Path, site: Path) -> subprocess.CompletedProcess:
    """``mkdocs build --strict --site-dir {site}`` in ``project`` (the folder of mkdocs.yml)."""
    return subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(site)], cwd=project,
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if not (REPO / "mkdocs.yml").exists():
        pytest.skip("the repository has no mkdocs.yml (no docs site to check)")
    if not MKDOCS.exists():
        pytest.skip(f"{MKDOCS} is missing: install the test extra (it brings mkdocs)")
    out = tmp_path_factory.mktemp("site")
    done = build_site(REPO, out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (out / "index.html").exists(), sorted(p.name for p in out.iterdir())
    return out


def test_the_docs_front_page_has_no_problems(chromium, site, screens):
    with serve(site) as base:
        problems = check_page(chromium, base, screens / "docs-front-page.png", local_origins=(base,))
    assert problems.found() == []
