"""Watching a ledger operation that runs in another process."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
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


DEBIT = r"""
import json, sys
from fractions import Fraction
from countdp.release.ledger import BudgetExceeded, Ledger, LedgerError
try:
    debit = Ledger(sys.argv[1]).debit(Fraction(sys.argv[2]), {}, hold=float(sys.argv[3]))
    print(json.dumps({"debited": debit.entry_id}))
except (BudgetExceeded, LedgerError) as exc:
    print(json.dumps({"refused": str(exc)}))
"""
"""A debit in a process of its own: ``python -c DEBIT LEDGER EPSILON HOLD_SECONDS`` prints one JSON line,
``{"debited": entry id}`` or ``{"refused": message}``."""


def start_debit(path: Path, epsilon: str, hold: float) -> subprocess.Popen:
    """Start :data:`DEBIT` of ``epsilon`` on the ledger ``path``, holding its lock ``hold`` seconds before writing."""
    return subprocess.Popen([sys.executable, "-c", DEBIT, str(path), epsilon, str(hold)], stdout=subprocess.PIPE,
                            text=True)
