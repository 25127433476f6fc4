"""The library prints nothing of its solvers' own unless asked to be verbose.

Each design runs in a fresh subprocess (HiGHS's banner is printed once per process, by its first
model), whose standard output and standard error are pipes: what the C libraries write to file
descriptors 1 and 2 is captured as well as Python's prints.  The paths (``Design.extra["backend"]``
and the strategy that answered) cover HiGHS's simplex and interior point on the reduced model,
cvxpy's HiGHS and Clarabel models (small n), and the large-n template (Clarabel, then HiGHS).  The
same capture shows the banner and HiGHS's log once ``SolverSettings.of(verbose=True)`` is passed: the
check sees solver output when there is some.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

DESIGNS = {
    "reduced model, HiGHS": "design_named('WM', 40, 0.9{settings})",
    "cvxpy, HiGHS": "design_named('LP', 6, 0.8, objective='L2', properties=('WH', 'S'){settings})",
    "cvxpy, Clarabel": "design_named('LP', 6, 0.8, objective='L1', solver='CLARABEL', method='ipm'{settings})",
    "reduced model, HiGHS ipm": "design_named('WM', 40, 0.9, method='ipm'{settings})",
    "large-n template": "design_named('WM', 200, 0.9{settings})",
}


def _run(call: str) -> subprocess.CompletedProcess:
    script = ("from countdp import design_named\nfrom countdp.design.settings import SolverSettings\n"
              f"design = {call}\nassert design.certificate.certified\n")
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name", list(DESIGNS))
def test_a_design_prints_nothing(name):
    done = _run(DESIGNS[name].format(settings=""))
    assert done.returncode == 0, done.stderr[-2000:]
    assert (done.stdout, done.stderr) == ("", "")


def test_verbose_settings_let_the_solver_print():
    done = _run(DESIGNS["reduced model, HiGHS"].format(settings=", settings=SolverSettings.of(verbose=True)"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Running HiGHS" in done.stderr and "Copyright" in done.stderr
    assert "rows" in done.stdout  # HiGHS's own log of the model it solves
