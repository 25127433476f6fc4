"""The pages researchers read after a run, opened in a real browser: the Snakemake report and
results/claims.html of the shared quick run (``quick_results``; the workflow is not rerun).

For each page: no console error, no uncaught exception, no failed request, no request leaving
the machine, and every image loaded.  In the report the landing page must draw the rule graph
and show the workflow description from its first line (the workflow profile passes
workflow/report/stylesheet.css as ``--report-stylesheet``; switching that stylesheet off in the
open report shows the start cut off again), and every PNG the report lists (its own
``categories``) must appear, loaded, when its eye icon is clicked; damaging one figure's bytes in
the open report shows that a figure that does not load is caught.  Screenshots go to the
``screens`` folder (see conftest.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pages.page_checks import check_page, new_page, watch
from tests.pages.report_app import categories, custom_stylesheet_disabled, landing, save_graph, show_every_file

pytestmark = pytest.mark.workflow

PNG_SIGNATURE_BASE64 = "iVBORw0KGgo"  # the first 8 bytes of every PNG file, base64-encoded
REPORT_STYLESHEET = Path("workflow") / "report" / "stylesheet.css"


def _listed_pngs(report_categories: dict) -> dict[str, str]:
    """Path -> category of every PNG the report lists."""
    return {path: category for category, subcategories in report_categories.items()
            for paths in subcategories.values() for path in paths if path.endswith(".png")}


@pytest.fixture(scope="module")
def report_page(chromium, quick_report):
    """The quick run's report, open on its landing page, with its problems being recorded."""
    page = new_page(chromium)
    problems = watch(page)
    page.goto(quick_report.as_uri(), wait_until="load")
    yield page, problems
    page.close()


def test_the_report_landing_page_draws_the_workflow(report_page, screens):
    page, problems = report_page
    facts = landing(page)
    page.screenshot(path=str(screens / "report-landing.png"))
    save_graph(page, screens / "report-rule-graph.png", scale=0.5)
    print(f"rule graph: {facts.rules} rules, {facts.edges} edges, canvas {facts.graph_css_px[0]:.0f} x "
          f"{facts.graph_css_px[1]:.0f} CSS px; description out of reach: {facts.text_hidden_left_px:.0f} px "
          f"left, {facts.text_hidden_top_px:.0f} px above")
    assert facts.rules > 0 and facts.edges > 0
    assert min(facts.graph_css_px) > 0 and facts.graph_drawn_px > 0, facts
    assert facts.text_hidden_top_px == 0 and facts.text_hidden_left_px == 0, facts
    assert problems.found() == []


def test_without_the_workflow_stylesheet_the_description_starts_out_of_reach(report_page, quick_results, screens):
    """The landing page laid out as a report built without ``--report-stylesheet``: the app's plain
    centring of content taller than the pane puts the description's first lines above the pane.
    Shows that the landing test's "nothing hidden" can fail, and that the stylesheet is the fix."""
    page, _ = report_page
    css = (quick_results / REPORT_STYLESHEET).read_text()
    with custom_stylesheet_disabled(page, css) as found:
        plain = landing(page)
        page.screenshot(path=str(screens / "report-landing-without-stylesheet.png"))
    restored = landing(page)
    print(f"description out of reach without the stylesheet: {plain.text_hidden_left_px:.0f} px left, "
          f"{plain.text_hidden_top_px:.0f} px above; content {plain.content_css_px[1]:.0f} px tall in a "
          f"{plain.pane_css_px[1]:.0f} px pane")
    assert found == 1, "the report does not embed workflow/report/stylesheet.css (is it in the workflow profile?)"
    assert plain.content_css_px[1] > plain.pane_css_px[1], plain  # else centring hides nothing
    assert plain.text_hidden_top_px > 0, plain
    assert restored.text_hidden_top_px == 0 and restored.text_hidden_left_px == 0, restored


def test_the_report_shows_every_figure_loaded(report_page, screens):
    page, problems = report_page
    listed = {Path(path).name for path in _listed_pngs(categories(page))}
    shown = show_every_file(page, screens=screens)
    images = {item.filename for item in shown if item.element == "img"}
    assert images == listed, sorted(images ^ listed)
    assert [item for item in shown if item.broken] == []
    assert any(item.filename == "claims.html" and item.element == "iframe" for item in shown), shown
    assert problems.found() == []
    print(f"{len(images)} figures shown and loaded")


def test_a_figure_that_does_not_load_is_caught(report_page):
    """The same walk after the first listed PNG's bytes are damaged in the open report's data."""
    page, _ = report_page
    path, category = next(iter(_listed_pngs(categories(page)).items()))
    original = page.evaluate("path => results[path].data_uri", path)
    damaged = original.replace(f";base64,{PNG_SIGNATURE_BASE64}", ";base64,AAAAAAAAAAA", 1)
    assert damaged != original, original[:120]
    page.evaluate("([path, uri]) => { results[path].data_uri = uri; }", [path, damaged])
    try:
        shown = show_every_file(page, only={category})
    finally:
        page.evaluate("([path, uri]) => { results[path].data_uri = uri; }", [path, original])
    assert {item.filename for item in shown if item.broken} == {Path(path).name}, shown


def test_the_claims_page_has_no_problems(chromium, quick_results, screens):
    problems = check_page(chromium, (quick_results / "results" / "claims.html").as_uri(), screens / "claims.png")
    assert problems.found() == []
