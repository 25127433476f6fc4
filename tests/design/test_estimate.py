"""The estimate of a design's path and memory against what the designer actually does.

Independent facts: the strategy recorded in ``Design.extra["attempted"]`` (the planner's own
record) for designs actually made, the reduced model actually built for its size, and the peak
resident memory of a fresh process that makes the design (``resource.getrusage``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from countdp.design import lp_solve
from countdp.design.designer import design_named
from countdp.design.estimate import (
    CLOSED_MATRIX,
    SPREAD,
    STRUCTURAL,
    bound_bytes,
    estimate_named,
    named_path,
    reduced_nnz,
)
from countdp.design.request import DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.spread_proof import METHOD as SPREAD_METHOD

SWEEP = {"solver": "HIGHS", "shortcuts": True}
"""The options the workflow's design sweeps pass (countdp.studies.sweeps.lp_options)."""


def actual_path(design) -> str:
    """The path a design took, from its own record."""
    if design.solver == "structural":
        return STRUCTURAL
    if design.method == SPREAD_METHOD:
        return SPREAD
    if "attempted" not in design.extra:
        return CLOSED_MATRIX
    return [a for a in design.extra["attempted"] if a["outcome"] != "skipped"][-1]["strategy"]


GRID = [(m, n, "10/11", "L0", ()) for n in (8, 40, 200) for m in ("GM", "EM", "UM", "WM", "WH")] + [
    ("LP", n, "2/3", objective, props) for n in (8, 40, 200) for objective in ("L0", "L1", "L2", "L0d:1")
    for props in ((), ("WH", "S"), ("CM",), ("RM", "CM", "WH", "S"), ("CH", "S"))] + [
    ("LP", n, "2/3", objective, ("F",)) for n in (8, 40, 200) for objective in ("L0", "L1")]


@pytest.mark.parametrize(("mechanism", "n", "alpha", "objective", "props"), GRID)
def test_predicted_path_is_the_one_taken(mechanism, n, alpha, objective, props):
    predicted = estimate_named(mechanism, n, alpha, objective, props, **SWEEP).path
    design = design_named(mechanism, n, alpha, objective=objective, properties=props, **SWEEP)
    assert predicted == actual_path(design)


@pytest.mark.parametrize(("mechanism", "n", "options", "path"), [
    ("GM", 10**6, {}, STRUCTURAL), ("EM", 5000, {}, STRUCTURAL), ("UM", 3000, {}, STRUCTURAL),
    ("GM", 600, {}, CLOSED_MATRIX), ("WH", 600, SWEEP, "closed form"), ("WM", 1200, SWEEP, SPREAD)])
def test_large_n_closed_and_structural_forms(mechanism, n, options, path):
    assert named_path(mechanism, n, "10/11", **options) == path
    assert actual_path(design_named(mechanism, n, "10/11", **options)) == path


@pytest.mark.parametrize("n", [20, 45])
@pytest.mark.parametrize("props", [(), ("WH", "S"), ("CH",), ("RM", "CM", "WH", "S"), ("F",),
                                   ("RH", "RM", "CH", "CM", "F", "WH", "S")])
def test_reduced_nnz_is_the_built_models(n, props):
    request = DesignRequest.of(n, 0.8, props, "L1")
    built = lp_solve.reduced_lp(request.problem, True, True).A.nnz
    assert 0 <= reduced_nnz(n, request.properties) - built <= 4  # odd n with RM folded: its middle


def test_settings_reach_the_prediction():
    """The one settings object decides: with the templates from n = 10**4, WM at 200 is the general LP."""
    assert named_path("WM", 200, "10/11", settings=DEFAULT_SETTINGS, **SWEEP) == "large-n template"
    later = SolverSettings.of(template_min_n=10_000)
    assert named_path("WM", 200, "10/11", settings=later, **SWEEP) == "reduced LP"


def test_fast_and_bounded():
    """Milliseconds a request once the library is loaded; never above bound_bytes."""
    requests = [(m, n, "10/11", o, p) for (m, _, _, o, p) in GRID for n in (40, 500, 2000)]
    estimate_named("WM", 300, "10/11", **SWEEP)  # the planner's import, once
    start = time.perf_counter()
    found = [estimate_named(*r, **({} if r[0] in ("GM", "EM", "UM") else SWEEP)) for r in requests]
    assert (time.perf_counter() - start) / len(requests) < 0.01
    assert all(e.required_bytes <= bound_bytes(e.n) for e in found)
    assert estimate_named("LP", 20000, "1/2", "L0", ("CM",), **SWEEP).required_bytes > 700 * 2**30


@pytest.mark.parametrize("mechanism, props", [("WM", ()), ("WH", ()), ("LP", ("WH", "S", "RH"))])
def test_a_huge_n_is_estimated_from_numbers(mechanism, props):
    """At n = 10^12 the planner's predicates are not asked (they built (n+1)-sized arrays: MemoryError,
    "Unable to allocate 7.28 TiB"): the general path, needing far more than any machine has."""
    found = estimate_named(mechanism, 10**12, "91/100", "L0", props, **SWEEP)
    assert found.path == "reduced LP" and found.required_bytes > 2**70
    assert named_path(mechanism, 10**12, "1/2", "L1", props, **SWEEP) == "reduced LP"


MEASURE = """
import json, sys
import countdp.design.planner, cvxpy, clarabel, highspy  # the LP stack before the baseline
from countdp.design.designer import design_named

def peak():  # this process's own high-water mark (ru_maxrss would carry the parent's across fork)
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))

m, n, a, o, p, opts = json.loads(sys.argv[1])
before = peak()
design_named(m, n, a, objective=o, properties=tuple(p), **opts)
print(peak() - before)
"""


@pytest.mark.parametrize("request_", [("LP", 200, "10/11", "L1", ["WH", "S"], SWEEP),
                                      ("WM", 300, "10/11", "L0", [], SWEEP),
                                      ("GM", 800, "10/11", "L0", [], {})])
def test_estimate_bounds_measured_peak_growth(request_, tmp_path):
    """The peak estimate is above the peak resident growth of a fresh process making the design
    (with a cache of its own: nothing designed before is read back)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", MEASURE, json.dumps(request_)], capture_output=True, text=True,
                          timeout=600, check=True, env=env)
    grown = int(done.stdout.split()[-1])
    m, n, a, o, p, opts = request_
    assert 0 < grown <= estimate_named(m, n, a, o, tuple(p), **opts).peak_bytes
