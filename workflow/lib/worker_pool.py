"""Run each job's call in a long-lived worker process, so that local ``run:`` jobs use every core.

The default profile runs ``run:`` jobs as threads of the Snakemake process
(``force-use-threads``): no Python start-up per job, but one interpreter lock for all of them,
so only one job computes at a time.  :func:`call` sends a job's function and its plain
arguments to a pool of ``workers`` spawned processes kept for the whole run (each imports the
library once), waits, and returns the result; an exception in the job is raised in the calling
thread, so the job fails as it would in place.  With ``workers <= 1`` (``--cores 1``, or a
one-core cluster job) the function runs in place.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

_pool: ProcessPoolExecutor | None = None
_lock = threading.Lock()


def plain(value: object) -> object:
    """``value`` with Snakemake's str subclasses (paths, wildcards) and named lists made plain."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _pool_of(workers: int) -> ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
        return _pool


def call(workers: int, function: Callable, *args: object) -> object:
    """``function(*args)`` in a worker process (``workers`` > 1) or in place."""
    args = tuple(plain(a) for a in args)
    if workers <= 1:
        return function(*args)
    return _pool_of(workers).submit(function, *args).result()
