"""``highspy`` with its banner kept off standard output.

highspy 1.16 prints 'Running HiGHS ...' on the C-level standard output once per process, when
the first model is made and before any option can be set; ``countdp design ... --format csv``
would then print that banner ahead of the table.  :func:`load_highspy` makes that first model
with file descriptor 1 pointing at standard error, so the banner goes there.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

_LOCK = threading.Lock()
_BANNER_SHOWN = False


def load_highspy():
    """The ``highspy`` module, after its once-per-process banner went to standard error.

    Every HiGHS model of countdp (its own and cvxpy's) is made after a call to this.  While the
    first model is made (a few microseconds), output of other threads to file descriptor 1 goes
    to standard error as well.
    """
    global _BANNER_SHOWN
    import highspy  # lazy: the solver modules import this one; HiGHS loads when a model is made

    with _LOCK:
        if not _BANNER_SHOWN:
            _BANNER_SHOWN = True
            saved = _stdout_to_stderr()
            try:
                highspy.Highs()
                _flush_c_stdout()
            finally:
                if saved is not None:
                    os.dup2(saved, 1)
                    os.close(saved)
    return highspy


def _stdout_to_stderr() -> int | None:
    """Point file descriptor 1 at standard error; a copy of the old one, or ``None`` if there is
    nothing to redirect (no descriptor 1 or 2)."""
    saved = None
    try:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(2, 1)
    except (OSError, ValueError, AttributeError):
        if saved is not None:
            os.close(saved)
        return None
    return saved


def _flush_c_stdout() -> None:
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no C library to reach (neither Linux nor macOS)
        pass
