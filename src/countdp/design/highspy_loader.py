"""``highspy`` with its banner kept silent.

highspy 1.16 prints 'Running HiGHS ... Copyright ...' on the C-level standard output once per
process, when the first model is made and before any option can be set, so every design would
print it (and ``countdp design ... --format csv`` would print it ahead of the table).  The
library prints nothing of its solvers' own unless asked to be verbose
(:attr:`countdp.design.settings.SolverTuning.verbose`): :func:`load_highspy` makes that first
model with file descriptor 1 pointing at the null device, or, when verbose, at standard error.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

_LOCK = threading.Lock()
_BANNER_MADE = False


def load_highspy(verbose: bool = False):
    """The ``highspy`` module, after its once-per-process banner was made: silently, or on standard
    error when ``verbose``.

    Every HiGHS model of countdp (its own and cvxpy's) is made after a call to this, so the first
    call of a process decides where the banner goes.  While the first model is made (a few
    microseconds), output of other threads to file descriptor 1 goes there as well.
    """
    global _BANNER_MADE
    import highspy  # lazy: the solver modules import this one; HiGHS loads when a model is made

    with _LOCK:
        if not _BANNER_MADE:
            _BANNER_MADE = True
            saved = _stdout_to(2 if verbose else None)
            try:
                highspy.Highs()
                _flush_c_stdout()
            finally:
                if saved is not None:
                    os.dup2(saved, 1)
                    os.close(saved)
    return highspy


def _stdout_to(target: int | None) -> int | None:
    """Point file descriptor 1 at descriptor ``target``, or at the null device when ``target`` is None;
    a copy of the old one, or ``None`` if there is nothing to redirect (no descriptor 1, or none to
    point it at)."""
    saved = sink = None
    try:
        sys.stdout.flush()
        sink = os.open(os.devnull, os.O_WRONLY) if target is None else target
        saved = os.dup(1)
        os.dup2(sink, 1)
    except (OSError, ValueError, AttributeError):
        if saved is not None:
            os.close(saved)
        saved = None
    finally:
        if target is None and sink is not None:
            os.close(sink)
    return saved


def _flush_c_stdout() -> None:
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no C library to reach (neither Linux nor macOS)
        pass
