"""The docs site builds with ``mkdocs build --strict``, and the strict build fails on a broken link.

The build runs in a subprocess, as CI runs it (``.ci/run``).  The API pages must show the
docstrings of the modules they name (read here from the source with :mod:`ast`, independently of
mkdocstrings), and a docstring's Sphinx role must come out as a link.
"""

from __future__ import annotations

import ast
import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).with_name("mkdocs")
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}

pytestmark = pytest.mark.skipif(not MKDOCS.exists(), reason="mkdocs is not installed (pip install -e '.[docs]')")


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(MKDOCS), "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
                          capture_output=True, text=True, timeout=300, env=ENV, cwd=config.parent)


def _first_docstring_line(module: str, name: str) -> str:
    """The first line of ``name``'s docstring in ``module``, read from the source file."""
    tree = ast.parse((REPO / "src" / Path(*module.split("."))).with_suffix(".py").read_text())
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == name)
    return ast.get_docstring(node).splitlines()[0]


def _text(page: Path) -> str:
    """A built page's text: tags dropped, entities decoded, whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page.read_text())).split())


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = _build(REPO / "mkdocs.yml", out)
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def test_every_page_of_the_nav_is_built(site):
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    pages = []

    def walk(items):
        for item in items:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            walk(value) if isinstance(value, list) else pages.append(value)

    walk(config["nav"])
    assert {"index.md", "findings.md", "guarantees.md", "design.md", "performance.md", "cluster.md",
            "environments.md", "layout.md", "contributing.md", "release.md", "multilevel.md", "consumers.md",
            "congenial.md", "invariants.md", "changelog.md"} <= set(pages)
    for page in pages:
        built = site / ("index.html" if page == "index.md" else page.removesuffix(".md").removesuffix("/index")
                        + "/index.html")
        assert built.is_file(), page


@pytest.mark.parametrize(("page", "module", "name"), [
    ("exact", "countdp.privacy.exact", "exact_dp_check"),
    ("alpha", "countdp.values.alpha", "epsilon_upper_bound"),
    ("closed_forms", "countdp.mechanisms.closed_forms", "geometric"),
    ("designer", "countdp.design.designer", "design_lp"),
    ("release", "countdp.release.ledger", "Ledger"),
])
def test_api_pages_show_the_docstrings(site, page, module, name):
    built = site / "api" / page / "index.html"
    line = re.sub(r":\w+:`~?([^`]+)`", r"\1", _first_docstring_line(module, name))  # a role shows its target
    assert f'id="{module}.{name}"' in built.read_text()
    assert " ".join(line.replace("`", "").split())[:40] in _text(built)


def test_sphinx_roles_become_links_or_code(site):
    page = (site / "api" / "exact" / "index.html").read_text()
    assert re.search(r'<a [^>]*href="#countdp\.privacy\.exact\.exact_dp_check"', page)  # :func:`exact_dp_check`
    assert ":func:" not in page and ":mod:" not in page


def test_pages_fetch_nothing_from_another_host(site):
    """No stylesheet, script, font or image from a CDN: the site reads offline (links may leave)."""
    fetched = re.compile(r"<(?:link|script|img|source)\b[^>]*\b(?:href|src)=\"(?:https?:)?//", re.I)
    assert not [str(p.relative_to(site)) for p in site.rglob("*.html") if fetched.search(p.read_text())]


def test_changelog_page_includes_the_changelog(site):
    first_entry = next(line for line in (REPO / "CHANGELOG.md").read_text().splitlines() if line.startswith("## "))
    assert first_entry[3:].split("—")[0].strip() in _text(site / "changelog" / "index.html")


def test_the_strict_build_fails_on_a_broken_link(tmp_path):
    """A copy of the docs with one broken link: the strict build must fail, naming that link as its
    only warning (so the copy itself builds cleanly)."""
    shutil.copy2(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copy2(REPO / "CHANGELOG.md", tmp_path / "CHANGELOG.md")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    (tmp_path / "src").symlink_to(REPO / "src")
    findings = tmp_path / "docs" / "findings.md"
    findings.write_text(findings.read_text() + "\nSee [the missing page](no-such-page.md).\n")
    done = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert "contains a link 'no-such-page.md'" in said and "Aborted with 1 warnings in strict mode" in said, said


def test_the_links_extension_lists_exactly_the_api_pages():
    """``documented`` (modules rendered with their members) and ``packages`` (docstring only) in
    mkdocs.yml are the identifiers of the ``:::`` blocks of docs/api/."""
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    handler = next(p["mkdocstrings"] for p in config["plugins"] if isinstance(p, dict) and "mkdocstrings" in p)
    (extension,) = handler["handlers"]["python"]["options"]["extensions"]
    options = next(iter(extension.values()))
    pages = "".join(page.read_text() for page in (REPO / "docs/api").glob("*.md"))
    blocks = re.findall(r"^::: (\S+)\n((?:    .*\n)*)", pages, re.M)
    packages = {name for name, body in blocks if "members: false" in body}
    assert set(options["packages"]) == packages
    assert set(options["documented"]) == {name for name, _ in blocks} - packages
