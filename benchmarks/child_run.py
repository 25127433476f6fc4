"""One benchmark child in a fresh process: its output, wall time, peak resident set and exit status.

Shared by the benchmarks that compare this checkout with a baseline checkout row by row
(``PYTHONPATH`` points the child at one checkout's ``src``).
"""

from __future__ import annotations

import os
import resource
import subprocess
import tempfile
import threading
import time
from pathlib import Path


def run_child(command: list[str], src: Path, timeout: float | None = None, limit_gib: int | None = None) -> dict:
    """Run ``command`` with ``src`` on ``PYTHONPATH``, killed after ``timeout`` seconds and limited to
    ``limit_gib`` GiB of address space if given.

    Returns ``wall`` (seconds), ``rss`` (peak resident set in MB, from ``wait4``), ``code`` (exit
    status), ``killed`` (the timeout struck), ``text`` (stdout) and ``errors`` (stderr).
    """
    env = {**os.environ, "PYTHONPATH": str(src)}

    def limits():
        if limit_gib:
            resource.setrlimit(resource.RLIMIT_AS, (limit_gib << 30, limit_gib << 30))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, env=env, stdout=out, stderr=err, preexec_fn=limits)
        timer = threading.Timer(timeout, child.kill) if timeout else None
        if timer is not None:
            timer.start()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        killed = timer is not None and not timer.is_alive() and wall >= timeout
        if timer is not None:
            timer.cancel()
        out.seek(0)
        err.seek(0)
        text, errors = out.read().decode(), err.read().decode()
    return {"wall": wall, "rss": usage.ru_maxrss / 1024, "code": os.waitstatus_to_exitcode(status),
            "killed": killed, "text": text, "errors": errors}
