"""Run each job's call in a long-lived worker process, so that local ``run:`` jobs use every core
and stop at once when the run is stopped.

The default profile runs ``run:`` jobs as threads of the Snakemake process
(``force-use-threads``): no Python start-up per job, but one interpreter lock for all of them,
so only one job computes at a time, and a thread cannot be interrupted: on SIGTERM Snakemake
waits for its running jobs to finish.  :func:`call` sends a job's function and its plain
arguments to a pool of ``workers`` spawned processes kept for the whole run (each imports the
library once), waits, and returns the result; an exception in the job is raised in the calling
thread, so the job fails as it would in place.  With ``workers == 0`` (inside a cluster job) the
function runs in place.

:func:`stop_on_signals` (called once from the main thread when the run starts) makes SIGTERM and
SIGINT terminate the workers before Snakemake's own handler runs: the call in progress is cut
short (what it finished and saved stays), the job waiting on it fails at once with
:class:`Stopped`, and Snakemake, with no job left running, exits.  A SIGKILL runs no handler: each
worker watches its parent and ends within :data:`PARENT_POLL` seconds of it (:func:`_watch_parent`).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

_pool: ProcessPoolExecutor | None = None
_lock = threading.Lock()
_stopped = threading.Event()


class Stopped(RuntimeError):
    """The run was stopped by a signal while (or before) this job's call ran in a worker."""


def plain(value: object) -> object:
    """``value`` with Snakemake's str subclasses (paths, wildcards) and named lists made plain."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


PARENT_POLL = 0.5
"""Seconds between a worker's checks that the Snakemake process that started it is still its parent."""


def _watch_parent(parent: int) -> None:
    """In a worker: end it once its parent is gone.  A SIGKILL of Snakemake runs no handler, so nothing
    terminates the workers; re-parented, they would go on computing and saving designs into ``results/``
    beside a rerun, and then wait for work forever."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _pool_of(workers: int) -> ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_watch_parent, initargs=(os.getpid(),))
        return _pool


def call(workers: int, function: Callable, *args: object) -> object:
    """``function(*args)`` in one of ``workers`` worker processes (``workers >= 1``) or in place (0).

    Raises :class:`Stopped` when the run was stopped (:func:`stop`) before or during the call."""
    args = tuple(plain(a) for a in args)
    if workers <= 0:
        return function(*args)
    if _stopped.is_set():
        raise Stopped("the run was stopped by a signal: this job's call did not start")
    try:
        return _pool_of(workers).submit(function, *args).result()
    except BrokenProcessPool:
        if _stopped.is_set():
            raise Stopped("the run was stopped by a signal: this job's call was cut short "
                          "(what it finished and saved is kept)") from None
        raise


def stop() -> None:
    """Terminate the workers (a job waiting on one fails at once) and refuse every later call.

    Safe in a signal handler: it takes no lock.  The pool's workers are the only processes the
    Snakemake process starts through :mod:`multiprocessing`."""
    _stopped.set()
    pool = _pool
    if pool is None:
        return
    terminate = getattr(pool, "terminate_workers", None)  # Python >= 3.14
    if terminate is not None:
        terminate()
        return
    for process in multiprocessing.active_children():
        process.terminate()


def stop_on_signals(signals: Iterable[signal.Signals] = (signal.SIGTERM, signal.SIGINT)) -> None:
    """Make each of ``signals`` call :func:`stop`, then the handler that was there (Snakemake's:
    finish the running jobs, or cancel them); a default action is then taken as before.  Only
    from the main thread (signal handlers are set there); elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in signals:
        previous = signal.getsignal(sig)

        def handler(signum, frame, previous=previous):
            stop()
            if callable(previous):
                previous(signum, frame)
            elif previous == signal.SIG_DFL:
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

        signal.signal(sig, handler)
