"""Ctrl-C stops a design in its solver: a real ``countdp design`` process gets SIGINT while HiGHS's simplex
or Clarabel's interior point runs, and ends at once with status 130 and one line, writing nothing.

A solver calls Python back (progress lines, its interrupt check), and an interrupt raised there was
swallowed: the solver ended as a failure, the planner went on to the next method, and the design
was written with status 0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

SLOW = ["LP", "--props", "RH,CH", "--n", "150", "--alpha", "0.9", "--objective", "L1"]
"""A design whose first solve takes tens of seconds (HiGHS's simplex: about 25,000 iterations)."""


@pytest.mark.parametrize("solver", [["--method", "simplex"], ["--solver", "CLARABEL"]], ids=["highs", "clarabel"])
def test_ctrl_c_in_the_solver_stops_the_design_and_writes_nothing(tmp_path, solver):
    out = tmp_path / "d.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.Popen([sys.executable, "-m", "countdp.cli", "design", *SLOW, *solver, "--out", str(out)],
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = []
    for line in proc.stderr:  # a progress line from inside the solver, past its first iteration
        seen.append(line)
        if "iteration" in line and not line.split("iteration", 1)[1].lstrip().startswith("0,"):
            break
    else:
        pytest.fail("the design ended before its solver said any progress:\n" + "".join(seen))
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    proc.wait(timeout=60)
    assert proc.returncode == 130, rest
    assert time.monotonic() - sent < 20
    assert rest.strip().splitlines()[-1] == "countdp: interrupted", rest
    assert "Traceback" not in rest and "not proven" not in rest and "next:" not in rest, rest
    assert sorted(p.name for p in tmp_path.iterdir()) == []
