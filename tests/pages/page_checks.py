"""What a reader's browser would complain about on a page, collected while the page is used.

``watch(page)`` records, from the moment it is called: console messages of type error, uncaught
exceptions (page errors), failed requests (network errors and HTTP status >= 400), and requests
that leave the machine (anything not ``file:``, ``data:``, ``blob:``, the browser's own schemes or
a given local origin); those are aborted, so a page is judged as it works offline, the same with
or without a network.  Chromium echoes every failed load on the console ("Failed to load
resource: ..."); those echoes are left out, as the request itself is recorded with its URL.
``broken_images(page)`` lists every ``<img>``, in every frame, that is not complete or has no
natural width (the browser could not load or decode it).  ``drawn_pixels`` counts what a canvas
shows, for graphs drawn on a canvas (the rule graph of the Snakemake report).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from urllib.parse import urlsplit

LOCAL_SCHEMES = frozenset({"file", "data", "blob", "about", "chrome", "chrome-extension", "devtools"})
IMAGE_WAIT_MS = 10_000
VIEWPORT = (1400, 900)  # a laptop screen, in CSS pixels
LOAD_FAILURE_ECHO = "Failed to load resource:"  # chromium's console line for a failed request

_BROKEN_IMAGES = """async waitMs => {
    const deadline = Date.now() + waitMs;
    while (Date.now() < deadline && !Array.from(document.images).every(i => i.complete)) {
        await new Promise(resolve => setTimeout(resolve, 50));
    }
    return Array.from(document.images)
        .filter(i => !i.complete || i.naturalWidth === 0)
        .map(i => i.getAttribute('src') || '(no src)');
}"""
_DRAWN_PIXELS = """canvas => {
    const context = canvas.getContext('2d');
    if (!context || canvas.width === 0 || canvas.height === 0) return 0;
    const rgba = context.getImageData(0, 0, canvas.width, canvas.height).data;
    let drawn = 0;
    for (let k = 0; k < rgba.length; k += 4) {
        if (rgba[k + 3] > 0 && (rgba[k] < 250 || rgba[k + 1] < 250 || rgba[k + 2] < 250)) drawn++;
    }
    return drawn;
}"""


def short(url: str, keep: int = 120) -> str:
    """A URL cut to ``keep`` characters (data: URIs of figures run to megabytes)."""
    return url if len(url) <= keep else url[:keep] + "..."


@dataclass
class PageProblems:
    """Everything a page did wrong, one human-readable line per finding."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    broken_images: list[str] = field(default_factory=list)

    def found(self) -> list[str]:
        """All findings, each prefixed by its kind; empty for a page without problems."""
        return [f"{f.name}: {text}" for f in fields(self) for text in getattr(self, f.name)]

    def kinds(self) -> set[str]:
        """The kinds of finding present, e.g. ``{"page_errors", "broken_images"}``."""
        return {f.name for f in fields(self) if getattr(self, f.name)}


def is_local(url: str, local_origins: tuple[str, ...] = ()) -> bool:
    """True for URLs that never leave the machine: local schemes and the given origins."""
    return urlsplit(url).scheme in LOCAL_SCHEMES or any(url.startswith(origin) for origin in local_origins)


def watch(page, local_origins: tuple[str, ...] = ()) -> PageProblems:
    """Start recording ``page``'s problems; the returned record fills in as the page runs.

    Requests to other hosts are aborted and recorded once as external (not also as failed); a
    request answered with an HTTP error is recorded once with its status (chromium may then also
    abort it, e.g. a stylesheet answered 404).
    """
    problems = PageProblems()
    external: set[str] = set()
    refused: set[str] = set()

    def route(request_route) -> None:
        url = request_route.request.url
        if is_local(url, local_origins):
            request_route.continue_()
            return
        external.add(url)
        problems.external_requests.append(short(url))
        request_route.abort()

    def failed(request) -> None:
        if request.url not in external and request.url not in refused:
            problems.failed_requests.append(f"{short(request.url)} ({request.failure})")

    def answered(response) -> None:
        if response.status >= 400:
            refused.add(response.url)
            problems.failed_requests.append(f"{short(response.url)} (HTTP {response.status})")

    def console(message) -> None:
        if message.type == "error" and not message.text.startswith(LOAD_FAILURE_ECHO):
            problems.console_errors.append(f"{message.text} at {message.location.get('url', '?')}")

    page.route("**/*", route)
    page.on("requestfailed", failed)
    page.on("response", answered)
    page.on("console", console)
    page.on("pageerror", lambda error: problems.page_errors.append(str(error)))
    return problems


def broken_images(page, wait_ms: int = IMAGE_WAIT_MS) -> list[str]:
    """The src of every image, in every frame of ``page``, that did not load.

    Waits up to ``wait_ms`` per frame for images still loading; an image that never completes
    counts as broken.
    """
    return [short(src) for frame in page.frames for src in frame.evaluate(_BROKEN_IMAGES, wait_ms)]


def drawn_pixels(canvas) -> int:
    """How many pixels of a canvas (a Playwright locator) are drawn: neither transparent nor white."""
    return int(canvas.evaluate(_DRAWN_PIXELS))


def new_page(chromium, viewport: tuple[int, int] = VIEWPORT):
    """A new page of ``chromium`` (a Playwright browser or browsing context) of the given size."""
    page = chromium.new_page()
    page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    return page


def check_page(chromium, url: str, screenshot: Path | None = None, local_origins: tuple[str, ...] = (),
               viewport: tuple[int, int] = VIEWPORT, full_page: bool = False) -> PageProblems:
    """Open ``url`` in a new page of ``chromium`` (a Playwright browser or browsing context), let it
    load, and return its problems (images included).

    ``screenshot``: where to save a PNG of what the reader sees (the first screen, or with
    ``full_page`` the whole page).
    """
    page = new_page(chromium, viewport)
    try:
        problems = watch(page, local_origins)
        page.goto(url, wait_until="load")
        page.wait_for_load_state("networkidle")
        problems.broken_images += broken_images(page)
        if screenshot is not None:
            page.screenshot(path=str(screenshot), full_page=full_page)
        return problems
    finally:
        page.close()


def data_uri_filename(src: str) -> str | None:
    """The ``filename=`` parameter of a data URI (how Snakemake's report names embedded files)."""
    match = re.match(r"data:[^,]*?;filename=([^;,]+)", src)
    return match.group(1) if match else None
