"""Using the Snakemake HTML report like a reader: its landing page and every file of every category.

The report is a single-page JavaScript app: the landing page shows the workflow description and
the rule graph (drawn by Vega on a canvas); the menu lists the result categories, a category
lists its subcategories or files, and a file's eye icon shows it in the content pane (PNGs as
``<img>``, PDFs and HTML in an ``<iframe>``, CSV as a download).  Figures exist in the page only
after that click, so ``show_every_file`` clicks every eye icon and records what appeared.

The locators follow the app's markup (Snakemake 9): a change there makes ``show_every_file``
show fewer files, which the tests catch by comparing with the report's own file list.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.pages.page_checks import broken_images, data_uri_filename, drawn_pixels

CONTENT_PANE = "#app > div > div:last-child"  # right of the menu
BREADCRUMB = "#app nav ol"
MENU_LIST = "#app nav div.p-3"
EYE = "a[iconname=eye]"

_LANDING = """() => {
    const pane = document.querySelector('#app > div > div:last-child');
    pane.scrollLeft = 0;
    pane.scrollTop = 0;
    const text = pane.querySelector('.prose');
    const nodes = rulegraph_spec.data.find(d => d.name === 'node-data').values.length;
    const links = (rulegraph_spec.data.find(d => d.name === 'link-data') || {values: []}).values;
    const edges = new Set(links.map(link => link.sourcerule + '>' + link.targetrule)).size;
    const box = pane.getBoundingClientRect();
    const shown = text ? text.getBoundingClientRect() : box;
    const content = (pane.firstElementChild || pane).getBoundingClientRect();
    return {rules: nodes, edges: edges, hidden_left: Math.max(0, box.left - shown.left),
            hidden_top: Math.max(0, box.top - shown.top), pane: [box.width, box.height],
            content: [content.width, content.height]};
}"""
_STYLE_SHEETS_OF = """([css, disabled]) => {
    const mine = [...document.querySelectorAll('head style')].filter(s => s.textContent.trim() === css.trim());
    mine.forEach(style => { style.sheet.disabled = disabled; });
    return mine.length;
}"""
_SHOWN_SRC = """pane => {
    const element = pane.querySelector('img, iframe');
    return element ? element.getAttribute('src') || '' : '';
}"""
_NEWLY_SHOWN = """async ([pane, before, waitMs]) => {
    const deadline = Date.now() + waitMs;
    for (;;) {
        const element = pane.querySelector('img, iframe');
        const src = element ? element.getAttribute('src') || '' : '';
        if (element && src !== before) return {tag: element.tagName.toLowerCase(), src: src};
        if (Date.now() > deadline) return null;
        await new Promise(resolve => setTimeout(resolve, 50));
    }
}"""
_CANVAS_PNG = """(canvas, scale) => {
    const copy = document.createElement('canvas');
    copy.width = Math.max(1, Math.round(canvas.width * scale));
    copy.height = Math.max(1, Math.round(canvas.height * scale));
    const context = copy.getContext('2d');
    context.fillStyle = '#ffffff';
    context.fillRect(0, 0, copy.width, copy.height);
    context.drawImage(canvas, 0, 0, copy.width, copy.height);
    return copy.toDataURL('image/png');
}"""
SHOW_WAIT_MS = 2000  # how long a click may take to show its file; a CSV (downloaded) shows nothing


@dataclass(frozen=True)
class Landing:
    """The landing page as drawn: the rule graph's size and ink, and how much text is cut off."""

    rules: int  # nodes of the rule graph
    edges: int  # its distinct edges (the app's link list repeats some, e.g. design_sweep -> claims)
    graph_css_px: tuple[float, float]  # width, height of the graph canvas
    graph_drawn_px: int  # canvas pixels drawn (not blank, not white)
    # How much of the description lies left of / above the content pane when it is scrolled to its
    # start, where no scrolling reaches it: the app centres its content, so content (description
    # and graph) taller or wider than the pane has its start pushed out of reach unless the
    # centring is `safe` (workflow/report/stylesheet.css); 0: all readable.
    text_hidden_left_px: float
    text_hidden_top_px: float
    pane_css_px: tuple[float, float]  # width, height of the content pane (the window right of the menu)
    content_css_px: tuple[float, float]  # width, height of what it centres (description and graph side by side)


@dataclass(frozen=True)
class Shown:
    """One file shown by an eye icon: where it was listed, what appeared, whether it loaded."""

    category: str
    subcategory: str
    filename: str | None  # from the data URI; None when nothing appeared (a CSV is downloaded)
    element: str | None  # "img", "iframe" or None
    broken: tuple[str, ...]  # images of the page that did not load after the click


def landing(page) -> Landing:
    """Measure the landing page of a report already loaded in ``page``."""
    canvas = page.locator(f"{CONTENT_PANE} canvas").first
    canvas.wait_for(state="attached")
    page.wait_for_function("c => c.width > 0 && c.height > 0", arg=canvas.element_handle())
    facts = page.evaluate(_LANDING)
    box = canvas.bounding_box()
    return Landing(rules=facts["rules"], edges=facts["edges"], graph_css_px=(box["width"], box["height"]),
                   graph_drawn_px=drawn_pixels(canvas), text_hidden_left_px=facts["hidden_left"],
                   text_hidden_top_px=facts["hidden_top"], pane_css_px=tuple(facts["pane"]),
                   content_css_px=tuple(facts["content"]))


@contextmanager
def custom_stylesheet_disabled(page, css: str) -> Iterator[int]:
    """Switch off, while the block runs, the ``<style>`` elements of the report in ``page`` whose
    text is ``css`` (Snakemake embeds the file given by ``--report-stylesheet`` as one such
    element), so the page lays out as a report built without it; yields how many were found."""
    found = page.evaluate(_STYLE_SHEETS_OF, [css, True])
    try:
        yield found
    finally:
        page.evaluate(_STYLE_SHEETS_OF, [css, False])


def save_graph(page, path: Path, scale: float = 1.0) -> None:
    """Save the rule graph as drawn, the whole canvas (a screenshot shows only what is scrolled
    into view), shrunk by ``scale`` on a white background."""
    data_url = page.locator(f"{CONTENT_PANE} canvas").first.evaluate(_CANVAS_PNG, scale)
    path.write_bytes(base64.b64decode(data_url.split(",", 1)[1]))


def categories(page) -> dict[str, dict[str, list[str]]]:
    """The report's own list: category -> subcategory -> file paths (the app's ``categories``)."""
    return page.evaluate("categories")


def _menu_link(page, where: str, name: str):
    return page.locator(where).get_by_role("link", name=name, exact=True).first


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _show_eyes(page, category: str, subcategory: str, skip: tuple[str, ...], screens: Path | None) -> list[Shown]:
    """Click the eye icon of every listed file but those ending with ``skip``; screenshot the first
    file that appears into ``screens`` (when given)."""
    shown = []
    pane = page.locator(CONTENT_PANE)
    rows = page.locator(f"{MENU_LIST} tr", has=page.locator(EYE))
    for k in range(rows.count()):
        if rows.nth(k).inner_text().strip().endswith(skip):
            continue
        before = pane.evaluate(_SHOWN_SRC)
        rows.nth(k).locator(EYE).click()
        found = page.evaluate(_NEWLY_SHOWN, [pane.element_handle(), before, SHOW_WAIT_MS])
        element, src = (found["tag"], found["src"]) if found else (None, "")
        shown.append(Shown(category, subcategory, data_uri_filename(src), element, tuple(broken_images(page))))
        if screens is not None and element is not None:
            page.screenshot(path=str(screens / f"report-{_slug(category)}-{_slug(subcategory)}.png"))
            screens = None
    return shown


def show_every_file(page, only: set[str] | None = None, skip: tuple[str, ...] = (".pdf",),
                    screens: Path | None = None) -> list[Shown]:
    """Click through every category (or those in ``only``) and every eye icon in it.

    From the landing page: menu -> category -> (subcategory ->) eye icons, back through the
    breadcrumb.  Rows whose file ends with one of ``skip`` are not opened: a PDF opens
    chromium's PDF viewer (seconds per file, and nothing the report itself controls).
    ``screens``: a folder for one screenshot per category (its first file shown).
    Returns one ``Shown`` per eye icon clicked.
    """
    shown = []
    for category, subcategories in categories(page).items():
        if only is not None and category not in only:
            continue
        _menu_link(page, MENU_LIST, category).click()
        if len(subcategories) == 1:
            shown += _show_eyes(page, category, next(iter(subcategories)), skip, screens)
        else:
            for number, subcategory in enumerate(subcategories):
                _menu_link(page, MENU_LIST, subcategory).click()
                shown += _show_eyes(page, category, subcategory, skip, screens if number == 0 else None)
                _menu_link(page, BREADCRUMB, category).click()
        _menu_link(page, BREADCRUMB, "Results").click()
    return shown
