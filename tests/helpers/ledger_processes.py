"""Watching a ledger operation that runs in another process."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import time
from pathlib import Path

from countdp.release.ledger import lock_path


def holding_the_lock(path: Path, process: subprocess.Popen, timeout: float = 120.0) -> None:
    """Return once ``process`` holds the exclusive lock of the ledger ``path`` (a non-blocking try
    of the lock fails), without creating a lock file; fail if ``process`` ends first."""
    deadline = time.monotonic() + timeout
    while True:
        assert time.monotonic() < deadline and process.poll() is None
        with contextlib.suppress(FileNotFoundError):
            fd = os.open(lock_path(path), os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            finally:
                os.close(fd)
        time.sleep(0.01)
