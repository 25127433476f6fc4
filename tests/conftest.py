"""Shared fixtures: repository paths, an independent LP built from the paper's definitions, and the
quick workflow run once per session (``quick_results``, ``quick_results_resumed``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "lib"))  # the workflow's own modules
from scipy.optimize import linprog
from workflow_copy import copy_workflow_files  # noqa: E402  (workflow/lib, on the path above)

from tests.helpers.xdist_share import schedule, shared_folder

REPO = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(items):
    """Long tests first, for pytest-xdist (tests.helpers.xdist_share)."""
    schedule(items)


@pytest.fixture(autouse=True, scope="session")
def private_mechanism_cache(tmp_path_factory):
    """Releases without ``--cache`` use ``$XDG_CACHE_HOME/countdp``: the tests (and the commands they
    start) get the session's own folder, so they never read or write the user's cache."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


def reference_lp(n: int, alpha: float, properties: set[str], loss: np.ndarray) -> tuple[float, np.ndarray]:
    """Solve the design LP with scipy's linprog, every constraint written out entry by entry.

    Independent of countdp.design.constraints: this follows the paper's definitions literally, one row per
    inequality, so agreement between the two is evidence that both encode the definitions.
    ``loss[i, j]`` is the objective coefficient of P[i, j].
    """
    N = n + 1

    def var(i: int, j: int) -> int:
        return i * N + j

    A_ub, b_ub, A_eq, b_eq = [], [], [], []

    def le(terms: dict[int, float], rhs: float = 0.0) -> None:  # sum coef*x <= rhs
        row = np.zeros(N * N)
        for k, c in terms.items():
            row[k] += c
        A_ub.append(row)
        b_ub.append(rhs)

    def eq(terms: dict[int, float], rhs: float = 0.0) -> None:
        row = np.zeros(N * N)
        for k, c in terms.items():
            row[k] += c
        A_eq.append(row)
        b_eq.append(rhs)

    for j in range(N):
        eq({var(i, j): 1.0 for i in range(N)}, 1.0)
    for i in range(N):
        for j in range(n):
            le({var(i, j + 1): alpha, var(i, j): -1.0})
            le({var(i, j): alpha, var(i, j + 1): -1.0})
    for i in range(N):
        for j in range(N):
            if "RH" in properties and i != j:
                le({var(i, j): 1.0, var(i, i): -1.0})
            if "CH" in properties and i != j:
                le({var(i, j): 1.0, var(j, j): -1.0})
            if "RM" in properties:
                if 1 <= j <= i:
                    le({var(i, j - 1): 1.0, var(i, j): -1.0})
                if i <= j < n:
                    le({var(i, j + 1): 1.0, var(i, j): -1.0})
            if "CM" in properties:
                if 1 <= i <= j:
                    le({var(i - 1, j): 1.0, var(i, j): -1.0})
                if j <= i < n:
                    le({var(i + 1, j): 1.0, var(i, j): -1.0})
            if "S" in properties and (i, j) != (n - i, n - j):
                eq({var(i, j): 1.0, var(n - i, n - j): -1.0})
        if "WH" in properties:
            le({var(i, i): -1.0}, -1.0 / N)
        if "F" in properties and i > 0:
            eq({var(i, i): 1.0, var(0, 0): -1.0})
    res = linprog(loss.ravel(), A_ub=np.array(A_ub), b_ub=b_ub, A_eq=np.array(A_eq), b_eq=b_eq,
                  bounds=(0, 1), method="highs-ipm")
    assert res.status == 0, res.message
    return float(res.fun), res.x.reshape(N, N)


def uniform_l0_loss(n: int) -> np.ndarray:
    """Coefficients of L0 under a uniform prior: (n+1)/n * 1/(n+1) for every off-diagonal entry."""
    return (1 - np.eye(n + 1)) / n


@pytest.fixture
def repo() -> Path:
    return REPO


# ---------------------------------------------------------------------------- workflow runs
# The quick workflow (config/quick.yaml) is run once per session in a temporary copy of the
# repository and shared by every workflow test (tests/workflow/test_workflow.py, test_extrinsic_workflow.py,
# test_resume.py, the notebook test): results/ of the checkout is never touched.

SNAKEMAKE = Path(sys.executable).with_name("snakemake")
QUICK = "config/quick.yaml"


def copy_workflow(dest: Path) -> Path:
    """Copy what Snakemake needs of this checkout (no results/, .snakemake/, caches) to ``dest``; return it."""
    return copy_workflow_files(REPO, dest)


def snakemake(workdir: Path, *args: str, configfile: str = QUICK, timeout: float = 1800
              ) -> subprocess.CompletedProcess:
    """Run ``snakemake --configfile {configfile} *args`` in ``workdir`` (profiles/default applies)."""
    return subprocess.run([str(SNAKEMAKE), "--configfile", configfile, *args], cwd=workdir,
                          capture_output=True, text=True, timeout=timeout)


def stray_temp_files(workdir: Path) -> list[str]:
    """Hidden files under results/, e.g. temporaries of ``atomic_path`` (``.{name}.XXXXXXXX{suffix}``)."""
    results = workdir / "results"
    return sorted(str(p.relative_to(workdir)) for p in results.rglob(".*") if p.is_file()) if results.is_dir() else []


@pytest.fixture(scope="session")
def quick_results(tmp_path_factory) -> Path:
    """A copy of the repository in which the whole quick workflow ran once, with ``--cores 2``.

    Read-only for the tests that use it: a test that needs to change something copies it.  Under
    pytest-xdist the workers share one run (tests.helpers.xdist_share.shared_folder).
    """
    def build(folder: Path) -> None:
        done = snakemake(copy_workflow(folder / "repo"), "--cores", "2")
        assert done.returncode == 0, done.stderr[-4000:]

    return shared_folder(tmp_path_factory, "quick", build) / "repo"


def _start_and_kill(work: Path, at_least: int, graceful: bool) -> int:
    """Start the quick workflow (--cores 1) in ``work``; kill it once ``at_least`` artifacts exist.

    ``graceful``: SIGINT, then SIGKILL 1 s later (Snakemake usually finishes its clean-up in
    that time); otherwise SIGKILL at once (the lock stays, as after a power loss).
    Returns the number of artifacts when the run was dead.
    """
    mechanisms = work / "results" / "mechanisms"
    proc = subprocess.Popen([str(SNAKEMAKE), "--configfile", QUICK, "--cores", "1"], cwd=work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and proc.poll() is None:
        if mechanisms.is_dir() and sum(1 for _ in mechanisms.rglob("*.json")) >= at_least:
            break
        time.sleep(0.05)
    assert proc.poll() is None, f"the run ended (rc={proc.returncode}) before {at_least} artifacts existed"
    if graceful:
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(1.0)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=60)
    return sum(1 for _ in mechanisms.rglob("*.json"))


def _unlock_if_needed(work: Path) -> bool:
    locks = work / ".snakemake" / "locks"
    if not (locks.is_dir() and any(locks.iterdir())):
        return False
    unlock = snakemake(work, "--unlock", "--cores", "1")
    assert unlock.returncode == 0, unlock.stderr[-2000:]
    return True


@pytest.fixture(scope="session")
def quick_results_resumed(tmp_path_factory) -> dict:
    """The quick workflow with ``--cores 1``, killed part-way twice and started again.

    First start: interrupted with SIGINT (then SIGKILL of the process group 1 s later) once 10
    mechanism artifacts exist.  Second start (plain ``snakemake``; the profile sets
    ``rerun-incomplete``): killed hard with SIGKILL once 20 exist, which leaves Snakemake's
    lock.  Then a stray atomic-write temporary is planted (what a SIGKILL inside
    countdp.services.artifact.atomic_path leaves), ``snakemake --unlock`` is run as a user would, and the
    third start must finish the workflow (and remove the temporary).
    Shared by tests/workflow/test_resume.py (resume leaves no partial file and equals an uninterrupted
    run) and tests/workflow/test_extrinsic_workflow.py (--cores 1 equals --cores 2): one single-core
    run serves both comparisons with ``quick_results``.
    Returns ``{"path", "killed_at", "left_after_kill", "locked", "resumed"}``.  Under pytest-xdist
    the workers share one such run (its record is kept beside it, in ``run.json``).
    """
    def build(folder: Path) -> None:
        work = copy_workflow(folder / "repo")
        first = _start_and_kill(work, 10, graceful=True)
        _unlock_if_needed(work)
        second = _start_and_kill(work, first + 10, graceful=False)
        left = stray_temp_files(work)
        planted = work / "results" / "mechanisms" / "GM" / "L0" / ".alpha=0.5.json.k1ll3d_x.json"
        planted.parent.mkdir(parents=True, exist_ok=True)
        planted.write_text('{"matrix": [[0.5')
        locked = _unlock_if_needed(work)
        resumed = snakemake(work, "--cores", "1")
        assert resumed.returncode == 0, resumed.stderr[-4000:]
        record = {"killed_at": [first, second], "left_after_kill": left, "locked": locked,
                  "resumed": [resumed.args, resumed.returncode, resumed.stdout, resumed.stderr]}
        (folder / "run.json").write_text(json.dumps(record))

    folder = shared_folder(tmp_path_factory, "resume", build)
    record = json.loads((folder / "run.json").read_text())
    return {"path": folder / "repo", "killed_at": tuple(record["killed_at"]),
            "left_after_kill": record["left_after_kill"], "locked": record["locked"],
            "resumed": subprocess.CompletedProcess(*record["resumed"])}


TIMING_FIELDS = frozenset({"solve_time", "build_time", "elapsed_s"})
"""Wall-clock measurements in JSON metadata: the only fields allowed to differ between two runs.

Mechanism JSONs record ``solve_time`` (and ``extra.build_time`` for the fast LP builder), the
Adult sidecar ``elapsed_s``.  Tables (every CSV under results/) carry no timings: jobs write
them to their logs, so tables are compared byte for byte."""

TIMING_COLUMN_WORDS = ("time", "elapsed", "seconds", "duration")
"""A CSV column whose name contains one of these would be a wall-clock measurement."""


def without_timing(value):
    """A JSON value with every timing field (at any depth) removed."""
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if k not in TIMING_FIELDS}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


def timing_columns(data: bytes) -> list[str]:
    """The header cells of a CSV that look like timings (see TIMING_COLUMN_WORDS)."""
    import csv
    import io

    header = next(csv.reader(io.StringIO(data.decode())), [])
    return [name for name in header if any(word in name.lower() for word in TIMING_COLUMN_WORDS)]
