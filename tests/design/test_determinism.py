"""The same design request gives the same design under any load: no step of the engine is limited
by the clock (``countdp.design.settings``: every limit counts work).

The load here is real: one busy-loop process per core, spawned for the run and stopped after it
(no mock of the clock or of a solver).  The design is the relaxed large-n template, whose template
vertex (the simplex from Clarabel's basis, then a cold simplex) and completion LP were bounded by
60 s of wall clock before; the design's artifact (its JSON record, timing fields left out) must be
byte-identical quiet and busy.

That such a test can fail: the toy at the end shows a step limited by the clock answering
differently under load while the same step limited by a count of rounds does not.  Against the
engine as it was with wall-clock limits (the commit before they became counts), this module's
comparison was run with that engine's per-simplex bound shrunk to about the guided simplex's own
time (``SolverSettings.of(simplex_safety_seconds=0.01)``, and ``0.015``: a loaded machine then
meets it as a machine many times slower meets the 60 s default).  Quiet, the relaxed template
answered; with every core busy, the HiGHS interior point did, with another matrix, so the
comparison failed; at 0.03 s even two quiet runs gave different matrices.  At the default 60 s,
the n = 300 request of ``test_relaxed_template.py`` at load 17 on two cores had each simplex of
its template vertex stopped at 'Time limit reached' and ended "no vertex dual of the
template-size LP", where the same request without the time limits finds the vertex (29,938
pivots of the cold simplex).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from countdp.design.designer import design_lp
from countdp.design.strategies.relaxed_template import LABEL
from countdp.privacy.certify import certify, is_alpha_dp
from countdp.services.artifact import design_to_dict, to_json

TIMING = frozenset({"solve_time", "seconds"})
"""Keys of a design's record that hold times (of the record only: they decide nothing)."""


SPIN = "print('spinning', flush=True)\nwhile True:\n    pass\n"
"""A busy loop on one core, after saying it runs."""


@contextmanager
def busy(cores: int | None = None):
    """``cores`` (default every core) busy-loop processes running for the ``with`` block."""
    hogs = [subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE, text=True)
            for _ in range(cores or os.cpu_count() or 1)]
    try:
        for hog in hogs:
            assert hog.stdout.readline() == "spinning\n", "a busy-loop process did not start"
        yield hogs
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait(10)
            hog.stdout.close()


def cpu_seconds(hog: subprocess.Popen) -> float:
    """The CPU time (user and system) a process has used so far, from ``/proc`` (Linux)."""
    fields = Path(f"/proc/{hog.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def untimed(record):
    """``record`` without its timing fields, at any depth."""
    if isinstance(record, dict):
        return {k: untimed(v) for k, v in record.items() if k not in TIMING}
    if isinstance(record, list):
        return [untimed(v) for v in record]
    return record


def artifact_bytes(design) -> bytes:
    """The design's JSON artifact (as ``countdp design`` writes it), timing fields left out."""
    return to_json(untimed(design_to_dict(design))).encode()


def relaxed_design():
    """L1 with WM's properties at n = 160, alpha = 0.8: the relaxed large-n template answers."""
    return design_lp(160, 0.8, ("RM", "CM", "WH", "S"), "L1")


def test_a_design_is_byte_identical_quiet_and_with_every_core_busy():
    quiet = relaxed_design()
    with busy() as hogs:
        before = [cpu_seconds(hog) for hog in hogs]
        loaded = relaxed_design()
        spun = [cpu_seconds(hog) - used for hog, used in zip(hogs, before, strict=True)]
        assert all(hog.poll() is None for hog in hogs)  # the load lasted the whole design
    assert min(spun) > 0  # every busy loop took CPU while the design ran
    assert quiet.method == LABEL and quiet.extra["optimality"]["certified"]
    assert is_alpha_dp(certify(quiet.matrix, 0.8)[0], 0.8)
    assert artifact_bytes(loaded) == artifact_bytes(quiet)
    assert hashlib.sha256(np.ascontiguousarray(loaded.released.weights).tobytes()).digest() == \
        hashlib.sha256(np.ascontiguousarray(quiet.released.weights).tobytes()).digest()


def test_the_artifact_left_to_compare_holds_the_design_and_its_certificate():
    """What the comparison above keeps: the matrix, the released weights and the certificate (only
    the times are left out), so a different vertex or an open certificate would show."""
    design = relaxed_design()
    kept = json.loads(artifact_bytes(design))
    assert np.array_equal(np.array(kept["matrix"]), design.matrix)
    assert kept["release"]["weights"] == design.released.weights.tolist()
    assert kept["extra"]["optimality"]["certified"] and "seconds" not in kept["extra"]["optimality"]
    assert "solve_time" not in kept and "solve_time" in design_to_dict(design)


def rounds_within(seconds: float) -> int:
    """The toy step limited by the clock: how many rounds of a fixed hash chain end within ``seconds``."""
    digest, rounds, end = b"", 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        digest = hashlib.sha256(digest).digest()
        rounds += 1
    return rounds


def chain_of(rounds: int) -> bytes:
    """The toy step limited by a count: the hash chain after ``rounds`` rounds."""
    digest = b""
    for _ in range(rounds):
        digest = hashlib.sha256(digest).digest()
    return digest


def test_a_step_limited_by_the_clock_answers_differently_under_load():
    """The failure this module guards against, on a toy: a clock-limited step's outcome changes
    with the load (here the rounds it completes), a count-limited step's does not."""
    quiet_rounds, quiet_chain = rounds_within(0.3), chain_of(20_000)
    with busy():
        time.sleep(0.2)  # the busy loops are scheduled
        loaded_rounds, loaded_chain = rounds_within(0.3), chain_of(20_000)
    assert loaded_rounds != quiet_rounds
    assert loaded_chain == quiet_chain
