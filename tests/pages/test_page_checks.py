"""The page checker on crafted pages: each defect is found, and only where it is (no pipeline run).

The base page is a claims page rendered by ``countdp.claims.render.claims_html`` (what
results/claims.html is) with one valid embedded PNG; each case plants one defect before
``</body>`` and the checker must report exactly that kind of finding.  The canvas check is shown
to tell a drawn graph from a blank or white one.
"""

from __future__ import annotations

import pandas as pd
import pytest

from countdp.claims.render import claims_html
from tests.pages.local_server import serve
from tests.pages.page_checks import check_page, drawn_pixels, is_local

# A 1x1 PNG (the PNG specification's smallest truecolour+alpha image), valid by construction.
PNG_1X1 = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
GOOD_IMAGE = f'<img alt="ok" src="data:image/png;base64,{PNG_1X1}">'

DEFECTS = {  # name -> (markup planted in the page, the kinds of finding it must cause)
    "console error": ("<script>console.error('planted console error')</script>", {"console_errors"}),
    "uncaught exception": ("<script>throw new Error('planted exception')</script>", {"page_errors"}),
    "missing stylesheet": ('<link rel="stylesheet" href="missing.css">', {"failed_requests"}),
    "missing image": ('<img alt="gone" src="missing.png">', {"failed_requests", "broken_images"}),
    "undecodable image": ('<img alt="text" src="not-a-png.png">', {"broken_images"}),
    "broken data image": ('<img alt="bad" src="data:image/png;base64,AAAAAAAA">', {"broken_images"}),
    "external script": ('<script src="https://cdn.example.invalid/lib.js"></script>', {"external_requests"}),
}


def _claims_page() -> str:
    table = pd.DataFrame([
        {"id": "a-1", "source": "Lemma 2", "statement": "GM is weakly honest", "paper_value": "1",
         "our_value": "1", "test": "equal", "verdict": "reproduced", "explanation": float("nan")},
        {"id": "b-2", "source": "Figure 9", "statement": "WM reaches GM", "paper_value": "yes",
         "our_value": "no", "test": "LP", "verdict": "differs", "explanation": "only WH alone can"},
    ])
    return claims_html(table).replace("</body>", GOOD_IMAGE + "\n</body>")


def _write(folder, html: str):
    (folder / "not-a-png.png").write_text("this is text, not an image")
    page = folder / "claims.html"
    page.write_text(html)
    return page


def test_the_clean_claims_page_has_no_problems(chromium, tmp_path):
    problems = check_page(chromium, _write(tmp_path, _claims_page()).as_uri(), tmp_path / "clean.png")
    assert problems.found() == []
    assert (tmp_path / "clean.png").stat().st_size > 0


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_each_planted_defect_is_reported(chromium, tmp_path, defect):
    markup, kinds = DEFECTS[defect]
    page = _write(tmp_path, _claims_page().replace("</body>", markup + "\n</body>"))
    problems = check_page(chromium, page.as_uri())
    assert problems.kinds() == kinds, problems.found()


def test_broken_image_and_exception_together(chromium, tmp_path):
    """The brief's example: a claims page with a broken <img src> and ``throw new Error()``."""
    planted = '<img src="nowhere/figure.png"><script>throw new Error()</script>'
    problems = check_page(chromium, _write(tmp_path, _claims_page().replace("</body>", planted + "</body>")).as_uri())
    assert any("nowhere/figure.png" in line for line in problems.broken_images), problems.found()
    assert len(problems.page_errors) == 1, problems.found()


def test_an_image_in_a_frame_is_checked_too(chromium, tmp_path):
    (tmp_path / "inner.html").write_text('<img src="missing-in-frame.png">')
    outer = _write(tmp_path, _claims_page().replace("</body>", '<iframe src="inner.html"></iframe></body>'))
    problems = check_page(chromium, outer.as_uri())
    assert any("missing-in-frame.png" in line for line in problems.broken_images), problems.found()


def test_a_missing_file_on_a_web_server_is_reported(chromium, tmp_path):
    """Over HTTP a missing file is a 404 answer, not a network error: it is reported all the same."""
    _write(tmp_path, _claims_page().replace("</body>", '<link rel="stylesheet" href="missing.css"></body>'))
    with serve(tmp_path) as base:
        problems = check_page(chromium, base + "claims.html", local_origins=(base,))
    assert problems.found() == [f"failed_requests: {base}missing.css (HTTP 404)"]


@pytest.mark.parametrize(("script", "drawn"), [
    ("", False),  # a canvas nothing was drawn on
    ("c.fillStyle = '#ffffff'; c.fillRect(0, 0, 200, 100);", False),  # only a white background
    ("c.strokeStyle = '#888'; c.beginPath(); c.moveTo(0, 0); c.lineTo(200, 100); c.stroke();", True),
])
def test_a_blank_canvas_is_told_from_a_drawn_one(chromium, script, drawn):
    page = chromium.new_page()
    try:
        page.set_content(f"<canvas width=200 height=100></canvas><script>"
                         f"const c = document.querySelector('canvas').getContext('2d'); {script}</script>")
        assert (drawn_pixels(page.locator("canvas")) > 0) == drawn
    finally:
        page.close()


def test_local_urls():
    assert is_local("file:///tmp/report.html") and is_local("data:image/png;base64,AA")
    assert is_local("http://127.0.0.1:8123/index.html", ("http://127.0.0.1:8123/",))
    assert not is_local("https://fonts.googleapis.com/css?family=Roboto")
    assert not is_local("http://127.0.0.1:9999/", ("http://127.0.0.1:8123/",))
