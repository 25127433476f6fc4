"""Progress of long work on stderr, shown only once the work has taken more than a second: a
one-line progress bar (:class:`Progress`) and the library's stage messages (:class:`StageLog`)."""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import TextIO

REDRAW_SECONDS = 0.25
"""Shortest time between two redraws of a progress bar (many quick steps would flood a log)."""


class Progress:
    """``advance()`` after each of ``total`` steps; ``close()`` at the end (prints nothing for quick work)."""

    def __init__(self, total: int, unit: str, stream: TextIO | None = None, delay: float = 1.0) -> None:
        self.total, self.unit, self.done = total, unit, 0
        self.stream = stream if stream is not None else sys.stderr
        self.start, self.delay, self.shown = time.perf_counter(), delay, False
        self.drawn = float("-inf")

    def advance(self, steps: int = 1) -> None:
        self.done += steps
        now = time.perf_counter()
        elapsed = now - self.start
        if elapsed >= self.delay and (now - self.drawn >= REDRAW_SECONDS or self.done >= self.total):
            self.drawn = now
            width = 30
            filled = width * self.done // max(self.total, 1)
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {self.unit}"
                              f" ({elapsed:.0f} s)")
            self.stream.flush()
            self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


STAGE_DELAY = 1.0
"""Seconds of work before :class:`StageLog` shows anything."""


class StageLog(logging.Handler):
    """The library's stage messages (``logging``, level INFO) as lines on stderr, each with the
    elapsed time, shown only once the work has taken more than :data:`STAGE_DELAY` seconds: then
    the stage under way is shown, and every later one as it starts.  Quick work prints nothing.

    ``with StageLog("countdp"): ...`` attaches it to that logger for the block.  A ``label`` (say,
    which design of a sweep the stages are of) goes in front of every line."""

    def __init__(self, logger: str, stream: TextIO | None = None, delay: float | None = None,
                 label: str = "") -> None:
        super().__init__(logging.INFO)
        self.prefix = f"countdp: {label}: " if label else "countdp: "
        self.logger = logging.getLogger(logger)
        self.stream = stream if stream is not None else sys.stderr
        self.delay = STAGE_DELAY if delay is None else delay
        self.start, self.pending, self.live = time.perf_counter(), None, False
        self.timer = threading.Timer(self.delay, self._go_live)
        self.timer.daemon = True

    def _line(self, message: str, at: float) -> None:
        self.stream.write(f"{self.prefix}[{at:6.1f} s] {message}\n")
        self.stream.flush()

    def _go_live(self) -> None:
        with self.lock:  # the handler's own lock, which handle() holds around emit()
            self.live = True
            if self.pending is not None:
                self._line(*self.pending)
                self.pending = None

    def emit(self, record: logging.LogRecord) -> None:
        entry = (record.getMessage(), time.perf_counter() - self.start)
        if self.live:
            self._line(*entry)
        else:
            self.pending = entry

    def __enter__(self) -> StageLog:
        self.saved_level = self.logger.level
        self.logger.addHandler(self)
        self.logger.setLevel(logging.INFO)
        self.start = time.perf_counter()
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.timer.cancel()
        self.logger.removeHandler(self)
        self.logger.setLevel(self.saved_level)
