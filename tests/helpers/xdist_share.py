"""Running the suite on several pytest-xdist workers: folders built once for all workers, and the
order in which the modules are handed out.

Each xdist worker is its own process with its own session, so a session fixture runs once per
worker.  ``shared_folder`` makes the expensive ones (the quick workflow runs) run once per
``pytest`` invocation: the first worker to need the folder builds it under an exclusive lock in
the run's common temporary folder, the others wait for it and reuse it.  Without xdist it is a
plain ``tmp_path_factory`` folder.

``schedule`` orders the tests so that, with ``--dist loadfile`` (whole modules to a worker), the
longest modules (the SLURM run, the interrupted workflow run) start at once instead of ending
the run alone.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

DONE = ".built"
"""Written in a shared folder once it is complete: a folder without it is rebuilt from scratch."""


def shared_folder(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder ``name`` after ``build(folder)`` ran on it once for the whole run.

    Under xdist the folder sits beside the workers' own temporary folders, and a lock file
    serialises the workers: the first builds, the others block until it is done and reuse it.
    A build that fails leaves no ``DONE`` mark, so the next worker to ask builds it again (and
    fails the same way, in its own test).
    """
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.mktemp(name)
        build(folder)
        return folder
    root = tmp_path_factory.getbasetemp().parent
    folder = root / name
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (folder / DONE).exists():
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                build(folder)
                (folder / DONE).write_text("")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return folder


SHARED_RUNS = ("quick_results", "quick_results_resumed")
"""Session fixtures of tests/conftest.py that run the whole quick workflow (``shared_folder``)."""

LONG_MODULES = (
    "tests/design/strategies/test_relaxed_template.py",
    "tests/release/test_empirical_audit.py",
    "tests/release/test_atomic.py",
    "tests/release/test_commit_folder.py",
    "tests/release/test_neighbour_audit.py",
    "tests/release/test_ledger_identity.py",
    "tests/structural/test_two_representations.py",
    "tests/structural/test_corner_design.py",
)
"""Modules without a workflow run that still take half a minute or more (``--durations``): handed
out before the short ones, so that none of them is the last to finish.  Only the order depends
on this list."""


def _tier(item: pytest.Item) -> int:
    """How early the module of ``item`` is handed out: the SLURM run first, then the interrupted
    workflow run, then the other users of the quick run, then the long modules, then the rest."""
    if item.get_closest_marker("slurm"):
        return 0
    if "quick_results_resumed" in item.fixturenames:
        return 1
    if any(name in item.fixturenames for name in SHARED_RUNS) or item.get_closest_marker("workflow"):
        return 2
    return 3 if item.nodeid.split("::", 1)[0] in LONG_MODULES else 4


def schedule(items: list[pytest.Item]) -> None:
    """Sort ``items`` (in place, stably) so that the long modules come first, each module's tests
    still together and in their own order.

    With ``--dist loadfile`` xdist hands out whole modules in the order their first test appears,
    each worker taking the next module when it runs short, so a module's fixtures are built on one
    worker only.  pyproject's addopts switch off xdist's own reordering (by the number of tests in
    a module): a module of many quick tests is no reason to start before the SLURM run, which
    would otherwise finish last and alone.
    """
    tiers: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        tiers[module] = min(tiers.get(module, 4), _tier(item))
    items.sort(key=lambda item: tiers[item.nodeid.split("::", 1)[0]])  # a module's own order is kept
