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
    import highspy

    with _LOCK:
        if not _BANNER_SHOWN:
            _BANNER_SHOWN = True
            try:
                sys.stdout.flush()
                saved = os.dup(1)
            except (OSError, ValueError, AttributeError):  # no standard output to protect
                highspy.Highs()
                return highspy
            try:
                os.dup2(2, 1)
                highspy.Highs()
                _flush_c_stdout()
            finally:
                os.dup2(saved, 1)
                os.close(saved)
    return highspy


def _flush_c_stdout() -> None:
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to flush (the banner is written unbuffered there)
        pass
