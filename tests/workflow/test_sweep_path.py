"""The pipeline designs the way the library does: one sweep through the design job's function
(workflow/lib/jobs_design.py, with the solver setting the configs give) takes, design by design,
the path ``countdp.design_named`` takes by default (the strategy that answered, every strategy
tried, the solver and method), in about the library's time; a solver and method in the setting
choose only the general LP's backend (a template still answers at large n); the plain setting
(``solver.plain``) takes the plain LP's path instead.
"""

from __future__ import annotations

import json
import re
import time
from fractions import Fraction
from pathlib import Path

import pytest
from jobs_design import sweep

from countdp.design.designer import design_named
from countdp.studies.sweeps import design_artifact

ALPHA, EXACT = "0.8", Fraction(4, 5)
NS = [24, 72, 176]  # the reduced LP by HiGHS's simplex, by Clarabel (a larger model), the large-n template


def _record(path: Path) -> dict:
    return json.loads(path.read_text())


def _path_taken(record: dict) -> tuple:
    return record["solver"], record["method"], record["extra"]["attempted"]


def _times(log: Path) -> list[float]:
    """The whole-design time of each design's line (the last line is the sweep's total)."""
    return [float(re.search(r" time=([0-9.]+)s", line)[1]) for line in log.read_text().splitlines()[:-1]]


def _job(tmp_path: Path, solver: str, ns) -> list[Path]:
    paths = [tmp_path / solver.replace("/", "-") / f"n={n}" / f"alpha={ALPHA}.json" for n in ns]
    sweep("WM", "L0", ALPHA, ns, solver, [str(p) for p in paths], str(paths[0].parent.parent / "log"), "4/5",
          str(paths[0].parent.parent / "sweep.json"), "test-version")
    return paths


def test_the_design_job_takes_the_librarys_path_in_its_time(tmp_path):
    design_named("WM", 20, EXACT)  # the LP stack imported, for both
    began = time.perf_counter()
    library = [design_named("WM", n, EXACT) for n in NS]
    library_time = time.perf_counter() - began
    paths = _job(tmp_path, "HIGHS/auto", NS)
    for design, path in zip(library, paths, strict=True):
        assert _path_taken(_record(path)) == (design.solver, design.method, design.extra["attempted"]), path
    answered = [[a["strategy"] for a in d.extra["attempted"] if a["outcome"] == "proven"] for d in library]
    assert answered == [["reduced LP"], ["reduced LP"], ["large-n template"]]  # the sweep covers three paths
    assert [d.method for d in library[:2]] == ["simplex", "ipm"]
    job_time = sum(_times(paths[0].parent.parent / "log"))
    assert job_time < 2 * library_time + 1.0, f"the job took {job_time:.2f} s, the library {library_time:.2f} s"


def test_the_plain_setting_takes_the_plain_lp(tmp_path):
    [path] = _job(tmp_path, "HIGHS/simplex/plain", [72])
    solver, method, attempted = _path_taken(_record(path))
    assert (solver, method) == ("HIGHS", "simplex")  # the planner's own choice is Clarabel here
    skipped = {a["strategy"]: a.get("reason") for a in attempted if a["outcome"] == "skipped"}
    assert skipped["large-n template"] == "method simplex asked for"


@pytest.mark.parametrize(("solver", "n", "answered"), [
    ("HIGHS/simplex", 176, ("CLARABEL", "large-n template", "large-n template")),  # the template stays
    ("HIGHS/simplex", 72, ("HIGHS", "simplex", "reduced LP")),  # the general LP: the method asked for
    ("CLARABEL/auto", 72, ("CLARABEL", "ipm", "reduced LP")),  # Clarabel on the reduced model
    ("CLARABEL/auto", 8, ("CLARABEL", "ipm", "dense cvxpy model")),  # small n: the plain model, as with HiGHS
])
def test_a_solver_setting_chooses_only_the_general_paths_backend(tmp_path, solver, n, answered):
    [path] = _job(tmp_path, solver, [n])
    record = _record(path)
    proven = [a["strategy"] for a in record["extra"]["attempted"] if a["outcome"] == "proven"]
    assert (record["solver"], record["method"], *proven) == answered
    assert record["extra"]["made_by"] == {"code_version": "test-version", "solver": solver}


def test_a_solver_setting_leaves_wm_its_spread(tmp_path):
    """From its canonical size (265 at alpha 0.3) WM under L0 is its proven spread in the library;
    a sweep's setting, even with a method, keeps it; the plain LP does not (a theorem's closed form
    still answers it, as it always has)."""
    planner, plain = tmp_path / "planner.json", tmp_path / "plain.json"
    design_artifact("WM", "L0", 265, "0.3", "HIGHS/simplex", planner)
    design_artifact("WM", "L0", 265, "0.3", "HIGHS/simplex/plain", plain)
    assert _record(planner)["method"] == design_named("WM", 265, Fraction(3, 10)).method == "template spread"
    assert _record(plain)["method"] == "GM"


@pytest.mark.workflow
def test_the_quick_runs_sweeps_leave_the_planner_free(quick_results):
    """config/quick.yaml names no method: every LP sweep's manifest records the planner's setting."""
    manifests = (quick_results / "results/mechanisms").glob("*/*/*.sweep.json")
    settings = {json.loads(p.read_text())["solver"] for p in manifests}
    assert settings == {"closed-form", "HIGHS/auto"}
