"""A one-line progress bar on stderr, shown only once the work has taken more than a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``advance()`` after each of ``total`` steps; ``close()`` at the end (prints nothing for quick work)."""

    def __init__(self, total: int, unit: str, stream: TextIO | None = None, delay: float = 1.0) -> None:
        self.total, self.unit, self.done = total, unit, 0
        self.stream = stream if stream is not None else sys.stderr
        self.start, self.delay, self.shown = time.perf_counter(), delay, False

    def advance(self, steps: int = 1) -> None:
        self.done += steps
        elapsed = time.perf_counter() - self.start
        if elapsed >= self.delay:
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
