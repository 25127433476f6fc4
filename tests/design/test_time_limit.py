"""The general path's run control: the caller's time limit, the memory bound, and the progress lines.

A design stopped before its proof must still be exactly DP (the released weights, checked in
integer arithmetic), hold every requested property, and carry a gap that is a true bound: its
lower bound at most the optimum, found here by an independent route (the unreduced HiGHS model of
:mod:`countdp.design.highs_model`), and its upper bound the design's own objective.
"""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import highspy
import numpy as np
import pytest
import scipy.sparse as sp

from countdp.cli import main
from countdp.design.anytime import best_feasible
from countdp.design.constraints import property_rows
from countdp.design.designer import design_lp
from countdp.design.highs_model import DesignModel
from countdp.design.memory import MemoryBoundError, general_path_bytes, memory_refusal
from countdp.design.planner import bound_error
from countdp.design.request import DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.solvers.highs import highs_lp
from countdp.design.watch import ProgressLines, Watch
from countdp.mechanisms.closed_forms import geometric
from countdp.privacy.exact import exact_dp_check
from countdp.validation import available_memory
from countdp.values.objectives import objective_value

PROPS = ("WH", "RM", "CM", "S")


def optimum(n: int, alpha: float, props, objective: str, weights=None) -> float:
    """The LP's optimum by the unreduced HiGHS model (no reduction, no template, no certificate)."""
    model = DesignModel(n, alpha, props, objective)
    return model.minimise(model.cost("sum", weights))[1]


def assert_feasible_with_true_gap(design, n, alpha, props, objective, weights=None):
    """Exactly DP, every property held, and ``lower <= optimum <= upper = objective``."""
    released = design.released
    assert exact_dp_check(released.weights, design.alpha_exact, released.K).holds
    x = design.matrix.ravel()
    for prop in props:
        assert property_rows(prop, n).violation(x) <= 1e-9, prop
    proof = design.extra["optimality"]
    best = optimum(n, alpha, props, objective, weights)
    assert proof["lower_bound"] <= best + 1e-9 <= proof["upper_bound"] + 2e-9
    assert proof["upper_bound"] == pytest.approx(objective_value(design.matrix, objective, weights), rel=1e-12)
    stopped = design.extra["stopped"]
    assert stopped["gap"] == pytest.approx(proof["upper_bound"] - proof["lower_bound"])
    return proof, stopped


def test_a_tiny_time_limit_returns_an_exactly_dp_design_with_a_true_gap():
    n, alpha = 40, 0.9
    design = design_lp(n, "0.9", PROPS, "L1", time_limit=1e-6)
    assert design.status == "not proven optimal"
    proof, stopped = assert_feasible_with_true_gap(design, n, alpha, PROPS, "L1")
    assert stopped["gap"] > 0 and not proof["certified"]
    assert "time limit" in stopped["reason"]
    assert stopped["lower_bound_from"].startswith("the explicit dual of GM remapped")
    full = design_lp(n, "0.9", PROPS, "L1")  # without a limit: proven, inside the stopped design's gap
    assert full.status == "optimal"
    assert proof["lower_bound"] <= full.objective_value <= proof["upper_bound"] + 1e-9


def test_a_limit_inside_a_simplex_stops_it_with_a_true_gap():
    """A cold dual simplex stopped at the limit: the design and the bound are still true ones
    (its duals are offered for the bound: they pass GM remapped's after a few seconds at n = 120)."""
    n, alpha = 120, 0.95
    design = design_lp(n, "0.95", PROPS, "L1", method="simplex", backend="highs", time_limit=1.5)
    proof, stopped = assert_feasible_with_true_gap(design, n, alpha, PROPS, "L1")
    assert design.status == "not proven optimal" and "HiGHS" in stopped["reason"]
    assert design.solve_time < 15


def test_an_interrupted_interior_point_is_repaired_into_the_design():
    """Clarabel's point at the limit breaks rows by its tolerance; repaired (columns normalised,
    symmetrised, mixed with the least UM) it is a design, and its duals bound it."""
    n, alpha = 120, 0.95
    w = np.linspace(1.0, 2.0, n + 1)
    w /= w.sum()
    design = design_lp(n, "0.95", PROPS, "L1", weights=w, time_limit=0.3)
    proof, stopped = assert_feasible_with_true_gap(design, n, alpha, PROPS, "L1", w)
    if "Clarabel" in stopped["reason"]:  # on a quiet machine the limit strikes inside Clarabel
        assert stopped["design_from"].startswith("the point Clarabel")
    else:  # under load, still in the HiGHS simplex before it (a wall-clock limit: where it strikes varies)
        assert "HiGHS" in stopped["reason"]


def test_the_feasibility_check_refuses_a_design_that_breaks_a_property():
    """GM breaks CM at n = 40 (its tails pile up in the end rows): offered alone it is refused, and
    the design is the fallback that holds every row."""
    request = DesignRequest.of(40, 0.9, PROPS, "L1")
    assert property_rows("CM", 40).violation(geometric(40, 0.9).ravel()) > 0.1
    label, _, x = best_feasible(request, [("GM", geometric(40, 0.9)), ("UM", np.full((41, 41), 1 / 41))])
    assert label == "UM"
    with pytest.raises(RuntimeError):
        best_feasible(request, [("GM", geometric(40, 0.9))])


def test_the_memory_bound_refuses_the_general_path_in_one_line():
    tight = SolverSettings.of(memory_bound=general_path_bytes(40) - 1)
    with pytest.raises(MemoryBoundError) as refused:
        design_lp(40, "0.9", PROPS, "L1", settings=tight)
    assert isinstance(refused.value, ValueError) and "\n" not in str(refused.value)
    assert "memory bound" in str(refused.value)
    design = design_lp(40, "0.9", PROPS, "L1", settings=tight, time_limit=60)  # the best design within the bound
    assert "memory bound" in design.extra["stopped"]["reason"]
    assert_feasible_with_true_gap(design, 40, 0.9, PROPS, "L1")
    assert design_lp(40, "0.9", PROPS, "L1", settings=SolverSettings.of(memory_bound=general_path_bytes(40))).status \
        == "optimal"
    gm = design_lp(40, "0.9", (), "L0", settings=tight)  # a fast path (GM's theorem) is not bounded
    assert gm.status == "optimal" and gm.method == "GM"


def test_a_bound_raised_past_the_machine_does_not_let_the_general_path_run():
    """However high the bound is raised, an estimate above the memory this machine has available is
    refused in one line, without the advice to raise the bound: n = 100,000 needs hundreds of TiB."""
    n, boundless = 100_000, SolverSettings.of(memory_bound=2**62)
    assert available_memory() is not None and general_path_bytes(n) > available_memory()
    refused = memory_refusal(n, boundless)
    assert refused is not None and refused.past_machine
    assert "this machine has available" in refused.reason and "\n" not in refused.reason
    assert "--memory-bound" not in str(bound_error(DesignRequest.of(n, 0.9, PROPS, "L1"), refused))
    assert memory_refusal(40, boundless) is None  # a size that fits is not refused


def test_the_advice_to_raise_the_bound_follows_the_refusals_flag_not_its_words():
    """Past the machine's memory the bound's own refusal (its words name the bound, not the machine)
    gives no advice to raise it; below the machine's memory it does."""
    n = 100_000
    refused = memory_refusal(n, DEFAULT_SETTINGS)  # above the 2 GiB bound, and above the machine
    assert refused.past_machine and "memory bound of 2.00 GiB" in refused.reason and "machine" not in refused.reason
    request = DesignRequest.of(n, 0.9, PROPS, "L1")
    past = str(bound_error(request, refused))
    assert past.endswith("with its gap") and "--memory-bound" not in past
    within = memory_refusal(40, SolverSettings.of(memory_bound=general_path_bytes(40) - 1))
    assert within is not None and not within.past_machine
    assert str(bound_error(DesignRequest.of(40, 0.9, PROPS, "L1"), within)).endswith(
        "or raise the bound (--memory-bound) to run it")


def test_progress_lines_say_the_gap_and_the_solvers_iterations(caplog):
    w = np.linspace(1.0, 2.0, 61)
    with caplog.at_level(logging.INFO, logger="countdp"):
        design_lp(60, "0.9", PROPS, "L1", weights=w / w.sum(), time_limit=600)
    said = [record.getMessage() for record in caplog.records]
    assert any(line.startswith("the general path starts from: ") and "gap" in line for line in said)
    assert any(line.startswith("Clarabel (") and "relative gap" in line for line in said)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="countdp"):  # without a limit no answer uses the start: not computed
        design_lp(60, "0.9", PROPS, "L1", weights=w / w.sum())
    said = [record.getMessage() for record in caplog.records]
    assert not any(line.startswith("the general path starts from: ") for line in said)
    assert any(line.startswith("Clarabel (") and "relative gap" in line for line in said)


def test_highs_log_lines_become_progress_with_the_gap(caplog):
    watch = Watch(upper=12.5)
    with caplog.at_level(logging.INFO, logger="countdp.design.watch"):
        watch.highs_line("HiGHS simplex", "       9554     1.1456030155e+01 Pr: 1153(500.481) 10.6s")
        watch.highs_line("HiGHS simplex", "       6771     8.6835493695e+00 Pr: 1172(347.087); Du: 3(8.3e-08) 5.6s")
        watch.highs_line("HiGHS simplex", "      10097     1.1923857749e+01 12.0s")
        watch.highs_line("HiGHS simplex", "Presolving model")
    said = [record.getMessage() for record in caplog.records]
    assert said == ["HiGHS simplex: iteration 9,554, objective 11.45603016 (a lower bound: rows still broken); "
                    "best design so far 12.5, gap 1.04",
                    "HiGHS simplex: iteration 6,771, objective 8.683549369",  # dual infeasible: no bound
                    "HiGHS simplex: iteration 10,097, objective 11.92385775"]


class Clock:
    """A clock the test moves: ``clock.now`` seconds."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


IPX_LINES = ["   0   -4.05318902e+00  -3.97639711e+00   1.52e+00   7.77e-01  1.53e-02       0.0",
             "   1    8.90362942e+01  -8.12830056e+01   2.95e-01   1.82e+00  3.49e+01       0.0",
             "   2    1.43228034e+02  -3.32367419e+01   3.12e-02   2.66e-01  3.15e+00       0.0",
             "   3    7.09420885e+01  -2.21560875e+01   9.42e-03   8.54e-02  3.67e+00       0.1",
             "   4    3.80713089e+01  -1.74335743e+01   3.37e-03   4.02e-02  4.90e+00       0.1"]


def test_an_interior_points_lines_are_paced_and_its_last_is_said_at_the_end(caplog):
    """HiGHS's interior point logs every iteration: at most one line a second is said, and the last
    iteration, held back, is said when the solve ends (and only once)."""
    clock = Clock()
    watch = Watch(progress_seconds=1.0, clock=clock)
    with caplog.at_level(logging.INFO, logger="countdp.design.watch"):
        with watch.progress_lines() as lines:
            for at, line in zip((0.0, 0.3, 0.9, 1.2, 1.5), IPX_LINES, strict=True):
                clock.now = at
                watch.highs_line("HiGHS ipm", line, lines)
            said_during = [record.getMessage() for record in caplog.records]
    said = [record.getMessage() for record in caplog.records]
    assert said_during == ["HiGHS ipm: iteration 0, objective -4.05318902",
                           "HiGHS ipm: iteration 3, objective 70.9420885"]
    assert said == [*said_during, "HiGHS ipm: iteration 4, objective 38.0713089"]
    caplog.clear()
    lines.close()  # nothing held: nothing said twice
    assert caplog.records == []


def test_clarabels_lines_are_paced_by_the_clock_not_by_its_iterations(caplog):
    clock = Clock()
    lines = ProgressLines(2.0, clock)
    progress = Watch().clarabel_callback("Clarabel (9 rows)", lines, cost_scale=2.0)
    with caplog.at_level(logging.INFO, logger="countdp.design.watch"), lines:
        for k, at in enumerate((0.0, 0.5, 1.0, 2.5, 3.0, 3.5, 4.4), start=1):
            clock.now = at
            assert progress(SimpleNamespace(iterations=k, cost_primal=k, cost_dual=-k, gap_rel=1 / k)) is False
    assert [record.getMessage() for record in caplog.records] == [
        "Clarabel (9 rows): iteration 1, primal 2, dual -2, relative gap 1",
        "Clarabel (9 rows): iteration 4, primal 8, dual -8, relative gap 0.25",
        "Clarabel (9 rows): iteration 7, primal 14, dual -14, relative gap 0.14"]  # 4.4 - 2.5 < 2: held, then said


def _solves(caplog, settings, **options) -> list[list[str]]:
    """The progress lines of each solver run of a design, split where the iterations start again."""
    w = np.linspace(1.0, 2.0, 61)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="countdp.design.watch"):
        design_lp(60, "0.9", PROPS, "L1", weights=w / w.sum(), settings=settings, **options)
    runs: list[list[str]] = []
    for line in (record.getMessage() for record in caplog.records):
        what, rest = line.split(": iteration ", 1)
        iteration = int(rest.split(",", 1)[0].replace(",", ""))
        if not runs or runs[-1][0] != what or iteration <= runs[-1][-1][0]:
            runs.append([what])
        runs[-1].append((iteration, line))
    return [[line for _, line in run[1:]] for run in runs]


@pytest.mark.parametrize("options", [{"method": "ipm"}, {"solver": "CLARABEL"}])
def test_the_pace_is_the_settings_and_each_solve_still_says_its_first_and_last_iteration(caplog, options):
    """With no pace every iteration is said; with an hour's, the same solves say their first and last lines."""
    every = _solves(caplog, SolverSettings.of(progress_seconds=0.0), **options)
    paced = _solves(caplog, SolverSettings.of(progress_seconds=3600.0), **options)
    assert every and max(len(run) for run in every) > 2
    assert paced == [run[:1] + run[1:][-1:] for run in every]


@pytest.mark.parametrize("value", ["0", "-1", "abc", "inf", "nan", ""])
def test_the_cli_refuses_a_bad_time_limit_in_one_line(value, capsys):
    assert main(["design", "LP", "--n", "8", "--alpha", "0.5", "--time-limit", value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "time-limit" in err


def test_the_cli_writes_the_stopped_design_with_its_gap(tmp_path, capsys):
    out = tmp_path / "d.json"
    argv = ["design", "LP", "--props", "WH,RM,CM,S", "--objective", "L1", "--n", "40", "--alpha", "0.9",
            "--time-limit", "0.000001", "--out", str(out)]
    assert main(argv) == 0
    assert "certified gap" in capsys.readouterr().err
    record = json.loads(out.read_text())
    assert record["status"] == "not proven optimal"
    assert record["extra"]["stopped"]["gap"] > 0


@pytest.mark.parametrize("rows", [12, 200])
def test_an_interior_points_objective_is_the_designs_whether_or_not_it_dualized_the_model(caplog, rows):
    """IPX dualizes a model with many more rows than columns, and its log's objective is then the dual
    model's, the sign turned: its last progress line must still say the optimum HiGHS reports."""
    rng = np.random.default_rng(rows)
    A = sp.random(rows, 20, density=0.3, random_state=rows, format="csc")
    A.data = rng.random(A.nnz) + 0.1
    h = highspy.Highs()
    h.setOptionValue("solver", "ipm")
    h.setOptionValue("run_crossover", "off")
    h.passModel(highs_lp(A, rng.random(20) + 0.5, np.zeros(20), np.full(20, np.inf), np.ones(rows),
                         np.full(rows, np.inf)))
    watch = Watch(progress_seconds=0.0)
    with caplog.at_level(logging.INFO, logger="countdp.design.watch"), watch.progress_lines() as lines:
        watch.attach_highs(h, "HiGHS ipm", False, lines)
        h.run()
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("HiGHS ipm: iteration")]
    optimum = h.getInfo().objective_function_value
    assert optimum > 0 and said
    assert float(said[-1].rsplit(" ", 1)[-1]) == pytest.approx(optimum, rel=1e-6)
