"""Beyond-the-paper studies (countdp.studies: subsets, baselines, minimax, ...) against independent facts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from countdp.design.highs_model import DesignModel, lexicographic_design
from countdp.evaluate.metrics import binomial_distribution, expected_error
from countdp.mechanisms.closed_forms import explicit_fair, geometric
from countdp.mechanisms.properties import is_gm_derivable
from countdp.privacy.certify import is_alpha_dp
from countdp.studies.baselines import baseline_checks, baseline_table
from countdp.studies.derivability import derivability_summary, derivability_table
from countdp.studies.minimax import MINIMAX_SETS, minimax_checks, minimax_study
from countdp.studies.objectives import matrices_frame, objective_checks, objective_study
from countdp.studies.prior import binomial_distributions, prior_checks, prior_study
from countdp.studies.subsets import (
    all_subsets,
    flowchart_prediction,
    subset_checks,
    subset_map,
    subset_name,
    subset_summary,
)
from countdp.values.objectives import loss_matrix, objective_value
from countdp.values.properties import PROPERTIES
from tests.conftest import REPO, reference_lp, uniform_l0_loss


@pytest.fixture(scope="module")
def subset_detail():
    return subset_map([4], [0.4, 0.76])


def test_all_subsets_are_128_distinct():
    subsets = all_subsets()
    assert len(subsets) == 128 and len({frozenset(s) for s in subsets}) == 128
    assert subset_name(()) == "none" and subset_name(["S", "rh", "RM"]) == "RH+RM+S"


@pytest.mark.parametrize("props", [(), ("WH",), ("CM", "WH"), ("CH",), ("F",), ("RH", "CH", "S")])
def test_design_model_matches_independent_lp(props):
    n, alpha = 4, 0.76
    model = DesignModel(n, alpha, props)
    _, value = model.minimise(model.cost("sum"))
    ref, _ = reference_lp(n, alpha, set(props), uniform_l0_loss(n))
    assert value == pytest.approx(ref, abs=1e-8)


def test_flowchart_prediction():
    assert flowchart_prediction(("F", "CM"), 4, 0.76) == "EM"
    assert flowchart_prediction(("CH",), 20, 0.76) == "WH+CM"
    assert flowchart_prediction(("WH", "RM"), 4, 0.76) == "WH"  # 4 < 2a/(1-a) = 6.33
    assert flowchart_prediction(("WH", "RM"), 7, 0.76) == "GM"
    assert flowchart_prediction(("RH", "S"), 4, 0.76) == "GM"
    assert flowchart_prediction(("CM", "WH"), 4, 0.4) == "GM"


def test_theorem_3_and_4_on_every_subset(subset_detail):
    d = subset_detail
    for _, r in d.iterrows():
        props = set(r.subset.split("+")) - {"none"}
        if "F" in props:  # Theorem 4: EM's L0, closed form
            assert r.value == pytest.approx(objective_value(explicit_fair(r.n, r.alpha)), abs=1e-8)
        if props <= {"RH", "RM", "S"}:  # Theorem 3: GM's 2a/(1+a)
            assert r.value == pytest.approx(2 * r.alpha / (1 + r.alpha), abs=1e-8)
    gm_row = d[(d.subset == "none")]
    assert (gm_row.gm_distance < 1e-6).all()  # the canonical BasicDP optimum is GM itself
    assert d.symmetric.all()  # the min-norm optimum is centrosymmetric (S is free)


def test_behaviour_counts_follow_from_the_flowchart(subset_detail):
    # n = 4 < 2a/(1-a) = 6.33 at alpha = 0.76: 64 subsets with F -> EM; of the 64 without F,
    # the 16 subsets of {RH, RM, WH, S} have no column property: 8 with WH -> WH, 8 without -> GM.
    d = subset_detail[subset_detail.alpha == 0.76]
    assert d.behaviour.value_counts().to_dict() == {"EM": 64, "WH+CM": 48, "GM": 8, "WH": 8}
    low = subset_detail[subset_detail.alpha == 0.4]
    assert low.behaviour.value_counts().to_dict() == {"GM": 64, "EM": 64}
    summary = subset_summary(subset_detail)
    assert summary.holds.all() and (summary.exceptions == 0).all()
    assert summary.set_index("alpha").distinct_values.to_dict() == {0.4: 2, 0.76: 4}
    assert (summary.distinct_matrices >= summary.distinct_values).all()
    assert subset_checks(subset_detail, summary).holds.all()


def test_lexicographic_design_is_optimal_in_both_orders():
    n, alpha = 5, 0.76
    P_b, rec_b = lexicographic_design(n, alpha, (), "L0", "sum")
    P_m, rec_m = lexicographic_design(n, alpha, (), "L0", "max")
    assert is_alpha_dp(P_b, alpha) and is_alpha_dp(P_m, alpha)
    assert objective_value(P_b, "L0") == pytest.approx(2 * alpha / (1 + alpha), abs=1e-8)
    assert objective_value(P_m, "L0", aggregate="max") <= objective_value(P_b, "L0", aggregate="max") + 1e-9


def test_minimax_worst_column_is_smallest():
    t = minimax_study([3, 6], [0.62, 0.91])
    for (n, a), g in t.groupby(["n", "alpha"]):
        mm = g[(g.properties == "BasicDP") & (g.design == "minimax")].worst_L0.iloc[0]
        # every design here is BasicDP-feasible (1e-8: the optimal-face slack and certification)
        assert mm <= g.worst_L0.min() + 1e-8
        gm_worst = objective_value(geometric(n, a), "L0", aggregate="max")
        assert mm <= gm_worst + 1e-8
        bayes = g[(g.properties == "BasicDP") & (g.design == "bayes")].avg_L0.iloc[0]
        assert bayes == pytest.approx(2 * a / (1 + a), abs=1e-8)
    assert minimax_checks(t).holds.all()


def test_prior_study_gains_and_fairness():
    n, alpha = 6, 0.91
    dists = binomial_distributions(n, [0.2, 0.5])
    table, gains = prior_study(n, alpha, dists)
    assert (gains.gain >= -1e-9).all()
    # under F every column has the same L0, so the prior cannot help L0 (Theorem 4: EM)
    f = gains[(gains.family == "F") & (gains.objective == "L0")]
    assert np.allclose(f.gain, 0, atol=1e-8)
    assert (table[table.family == "F"].diag_spread < 1e-9).all()
    # the unconstrained prior-aware L0 optimum equals an independent LP with those weights
    q = dists["Binomial(p=0.2)"]
    ref, _ = reference_lp(n, alpha, set(), loss_matrix(n, "L0") * q[None, :] * n / (n + 1))
    row = table[(table.distribution == "Binomial(p=0.2)") & (table.mechanism == "prior[none]/L0")].iloc[0]
    assert row.expected_L0 == pytest.approx(ref, abs=1e-8)
    assert row.diag_spread > 0.5  # the price: some inputs are (almost) never reported truthfully
    assert prior_checks(gains).holds.all()


def test_prior_study_with_uniform_prior_reproduces_gm():
    n, alpha = 5, 0.76
    table, _ = prior_study(n, alpha, {"uniform": np.full(n + 1, 1 / (n + 1))}, objectives=("L0",),
                              property_sets={"none": ()})
    row = table[table.mechanism == "prior[none]/L0"].iloc[0]
    assert row.expected_L0 == pytest.approx(n / (n + 1) * 2 * alpha / (1 + alpha), abs=1e-8)


def test_objective_study():
    n, alpha = 5, 0.62
    sets = {"none": (), "WH+S": ("WH", "S"), "all": PROPERTIES}
    table, mats = objective_study(n, alpha, [0.5, 0.1], property_sets=sets)
    assert objective_checks(table).holds.all()
    assert len(table) == 3 * 3 * 2 and set(mats) == {(s, o) for s in sets for o in ("L0", "L1", "L2")}
    for (s, o), P in mats.items():
        assert is_alpha_dp(P, alpha)
        r = table[(table.properties == s) & (table.objective == o) & (table.p == 0.1)].iloc[0]
        q = binomial_distribution(n, 0.1)
        i = np.arange(n + 1)
        msq = sum(q[j] * P[k, j] * (k - j) ** 2 for j in i for k in i)
        assert r.expected_RMSE == pytest.approx(np.sqrt(msq), rel=1e-12)
    frame = matrices_frame(mats, n, alpha)
    assert len(frame) == len(mats) * (n + 1) ** 2


def test_derivability():
    t = derivability_table([1, 3, 5], [0.62, 0.91], mechanisms=("GM", "UM", "EM", "RR"))
    s = derivability_summary(t).set_index("mechanism").verdict
    assert s["GM"] == "always" and s["UM"] == "always" and s["EM"] == "never"
    assert t[t.n == 1].derivable.all()  # no interior column: nothing to test
    # independent fact (Gupte-Sundararajan): any post-processing of GM is derivable
    rng = np.random.default_rng(0)
    T = rng.random((6, 6))
    T /= T.sum(axis=0)
    assert is_gm_derivable(T @ geometric(5, 0.76), 0.76)


def test_baseline_table():
    t = baseline_table([4], [0.76])
    assert baseline_checks(t).holds.all()
    rr = t[t.mechanism == "RR"].iloc[0]
    assert rr.L0 == pytest.approx(0.76 * 5 / (1 + 0.76 * 4), rel=1e-12)
    y = 1 / (1 + 0.76 * 4)  # RR's truthful probability; the rest spread evenly over 4 outputs
    P = np.eye(5) * y + (1 - np.eye(5)) * (1 - y) / 4
    assert rr.RMSE_uniform == pytest.approx(expected_error(P, np.full(5, 0.2), "RMSE"), rel=1e-9)


def test_study_tables_carry_no_timings():
    """Solver times go to the caller's ``timings`` list (the job log), never into a table."""
    timings = []
    detail = subset_map([3], [0.76], timings=timings)
    assert not [c for c in detail.columns if "time" in c]
    assert not [c for c in subset_summary(detail).columns if "time" in c]
    assert len(timings) == 128 and all(t["solve_time"] >= 0 for t in timings)
    timings = []
    table = minimax_study([2], [0.76], timings=timings)
    assert not [c for c in table.columns if "time" in c]
    assert len(timings) == 2 * len(MINIMAX_SETS)


def test_study_entry_points_in_threads_without_pyplot(tmp_path):
    """Extension jobs run as threads of Snakemake: two studies at once, in a fresh interpreter,
    write byte-identical tables to a sequential run, figures and logs, atomically, never importing pyplot."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import sys, threading
        from pathlib import Path

        root = Path(sys.argv[1])
        sys.path.insert(0, sys.argv[2])
        import jobs_extensions

        def job(study, run, ns, alphas):
            d = root / run / study
            figs = [str(d / f"fig.{e}") for e in ("pdf", "png")]
            paths = [str(d / "table.csv")] + ([str(d / "summary.csv")] if study == "derivability" else [])
            return lambda: getattr(jobs_extensions, study)(ns, alphas, *paths, str(d / "checks.csv"), figs,
                                                           str(d / "job.log"))

        jobs = [("derivability", dict(ns=[2, 3], alphas=[0.76])), ("baselines", dict(ns=[1, 2, 3], alphas=[0.62])),
                ("minimax", dict(ns=[2], alphas=[0.76]))]
        threads = [threading.Thread(target=job(s, "threads", **p)) for s, p in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for s, p in jobs:
            job(s, "sequential", **p)()
        assert "matplotlib.pyplot" not in sys.modules, "pyplot imported"
    """)
    lib = REPO / "workflow" / "lib"
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path), str(lib)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    for study in ("derivability", "baselines", "minimax"):
        a, b = tmp_path / "threads" / study, tmp_path / "sequential" / study
        for name in ("table.csv", "checks.csv") + (("summary.csv",) if study == "derivability" else ()):
            assert (a / name).read_bytes() == (b / name).read_bytes(), (study, name)
        assert (a / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (a / "fig.pdf").read_bytes()[:5] == b"%PDF-"
        assert "figures drawn at" in (a / "job.log").read_text()
    assert "solve_time=" in (tmp_path / "threads" / "minimax" / "job.log").read_text()
    assert not [p for p in tmp_path.rglob(".*") if p.is_file()]  # no atomic-write temporaries left


def test_theorem_3_is_checked_on_all_eight_subsets_of_rh_rm_s():
    """A subset of {RH, RM, S} whose value differs from 2a/(1+a) makes the Theorem 3 check fail."""
    subsets = ["none", "RH", "RM", "S", "RH+RM", "RH+S", "RM+S", "RH+RM+S", "F"]
    a = 0.76
    for broken in subsets[:-1]:
        detail = pd.DataFrame({"subset": subsets, "alpha": a, "n": 3,
                               "value": [2 * a / (1 + a) + (0.1 if s == broken else 0.0) for s in subsets],
                               "ref_EM": 2 * a / (1 + a)})
        summary = pd.DataFrame({"n": [3], "alpha": [a], "distinct_values": [1], "exceptions": [0], "holds": [True],
                                "distinct_matrices": [1], "flowchart_disagreements": [0], "disagreeing_subsets": [""]})
        checks = subset_checks(detail, summary)
        assert not checks.loc[checks["claim"].str.startswith("Theorem 3"), "holds"].item(), broken
