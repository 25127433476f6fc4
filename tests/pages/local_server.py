"""A folder served over HTTP on 127.0.0.1, for pages that do not work from ``file:`` URLs.

A MkDocs site fetches its search index and loads scripts by relative URL, which browsers
refuse or restrict for ``file:`` pages; readers get it from ``mkdocs serve`` or a web server,
so the test serves it the same way (the standard library's server, in a thread, on a free port).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args) -> None:  # noqa: A002 - the base class names it so
        """Keep the test output clean: the browser records failed requests itself."""


@contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serve ``folder`` while the block runs; yields its base URL, e.g. ``http://127.0.0.1:41234/``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
