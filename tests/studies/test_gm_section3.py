"""Gong and Meng's Section 3 setting and the reproduction's checks.

Independent facts: the negative binomial's moments (closed form and scipy), the invariant
totals printed in their Table 1 (256, 130, 213), the number of block-sum vectors (one free
block sum between max(0, V - M) and min(F, V)), and their proposal index set's complement.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from countdp.invariants.projection import NonNegativeProjection, ProjectionSettings
from countdp.studies import gm_setting as gm
from countdp.studies.checks import CHECK_COLUMNS
from countdp.studies.gm_section3 import (
    METHODS,
    TV_CLAIMS,
    GMSection3Settings,
    conditional_sampler,
    gm_section3_checks,
    gm_section3_study,
    marginal_tv,
)


def test_negative_binomial_parametrisation_gives_their_mean_and_variance():
    mean, variance = gm.nb_moments()
    assert (mean, variance) == (Fraction(100, 19), Fraction(2000, 361))
    assert (round(float(mean), 2), round(float(variance), 2)) == (5.26, 5.54)
    law = stats.nbinom(100, 0.95)
    assert law.mean() == pytest.approx(float(mean)) and law.var() == pytest.approx(float(variance))
    cells = gm.confidential_tables(np.random.default_rng(0), 4000).ravel()
    assert abs(cells.mean() - float(mean)) < 4 * np.sqrt(float(variance) / cells.size)
    assert abs(cells.var() / float(variance) - 1) < 0.03


def test_their_table_gives_their_printed_invariants_and_one_free_block_sum():
    x = gm.GM_CONFIDENTIAL.ravel()
    A, a = gm.equality_system(x)
    assert a.tolist() == [256, 130, 213]
    assert (A @ gm.GM_RELEASE.ravel() == a).all()
    sampler = conditional_sampler(x)
    F, V, M = 130, 213, 126
    assert len(sampler.system.feasible) == min(F, V) - max(0, V - M) + 1
    assert sampler.system.satisfied(gm.GM_RELEASE.ravel()[None, :])[0]
    rest = sorted(set(range(gm.N_CELLS)) - set(gm.PROPOSAL_INDEX))
    assert rest == [0, 22, 45] and round(abs(np.linalg.det(A[:, rest]))) == 1
    assert sampler.alpha >= Fraction(606530659712633, 10**15)  # e^-0.5 = 0.6065306597126334...


def test_nnl2_projection_matches_the_closed_form_away_from_zero_and_its_check_catches_a_bad_one():
    # far from zero the non-negativity is inactive: the projection is m - A'(AA')^-1 (A m - a)
    x = np.full(gm.N_CELLS, 100)
    A, a = gm.equality_system(x)
    noisy = x[None, :] + np.random.default_rng(0).integers(-5, 6, size=(3, gm.N_CELLS))
    projection = NonNegativeProjection(A)
    got = projection.project(noisy, a)
    closed = noisy - (np.linalg.solve(A @ A.T, (noisy @ A.T - a).T).T @ A)
    assert np.abs(got - closed).max() < 1e-8 and projection.kkt_residual(noisy, got, a) < 1e-8
    near_zero = gm.GM_CONFIDENTIAL.ravel()[None, :] + np.random.default_rng(1).integers(-6, 7, size=(5, gm.N_CELLS))
    real_a = gm.equality_system(gm.GM_CONFIDENTIAL.ravel())[1]
    projected = projection.project(near_zero, real_a)
    assert (projected == 0).any() and projection.kkt_residual(near_zero, projected, real_a) < 1e-8
    clipped = np.maximum(near_zero, 0).astype(float)  # not a projection: breaks the equalities
    assert projection.kkt_residual(near_zero, clipped, real_a) > 1e-3


def test_active_set_projection_matches_clarabel_and_its_kkt_test_rejects_a_wrong_zero_set():
    # heavy noise on their table: many cells pinned at zero; max_steps=0 sends every row to Clarabel instead
    x = gm.GM_CONFIDENTIAL.ravel()
    A, a = gm.equality_system(x)
    rng = np.random.default_rng(4)
    noisy = x[None, :] + rng.geometric(0.3, (30, gm.N_CELLS)) - rng.geometric(0.3, (30, gm.N_CELLS))
    fast, slow = NonNegativeProjection(A), NonNegativeProjection(A, ProjectionSettings(max_steps=0))
    got, clarabel = fast.project(noisy, a), slow.project(noisy, a)
    assert (got == 0).sum() >= 30 and np.abs(got - clarabel).max() < 1e-9
    assert fast.kkt_residual(noisy, got, a) < 1e-9
    m, s = noisy[0].astype(float), got[0]
    free = s > 0
    assert fast.passes(*fast.candidate(m, a.astype(float), free), free, a.astype(float))
    for cell in (np.flatnonzero(free)[0], np.flatnonzero(~free)[0]):  # pin a positive cell, free a pinned one
        wrong = free.copy()
        wrong[cell] = not wrong[cell]
        assert not fast.passes(*fast.candidate(m, a.astype(float), wrong), wrong, a.astype(float))


def test_marginal_tv_is_zero_on_equal_samples_and_one_on_disjoint_ones():
    a = np.array([[0, 1], [1, 1]])
    assert marginal_tv(a, a).tolist() == [0.0, 0.0]
    assert marginal_tv(a, a + 5).tolist() == [1.0, 1.0]


def test_a_tiny_run_has_every_table_and_its_invariant_checks_hold():
    tiny = GMSection3Settings(tables=1, releases=5, epsilon_grid=(0.6,), acceptance_steps=300, trace_steps=50,
                              tv_draws=40, tv_thinning=(1, 2), burn_in=10)
    results = gm_section3_study(tiny)
    assert set(results) == {"table1", "figure1", "figure1_medians", "figure2", "figure3", "tv", "checks"}
    checks = results["checks"].set_index("claim")
    assert tuple(results["checks"].columns) == CHECK_COLUMNS
    assert checks.loc["every conditional release satisfies the invariants exactly", "holds"]
    assert checks.loc["every MIS state satisfies the invariants exactly", "holds"]
    assert checks.loc["cell law NB(100, .05) has mean 5.26", "holds"]
    t1 = results["table1"]
    assert (t1.groupby("sex", sort=False)["Total"].nunique() == 1).all()  # the release keeps both totals
    assert list(results["figure1"].method.unique()) == list(METHODS)


def _results(l1, l2, best, rate, tv_last) -> dict[str, pd.DataFrame]:
    return {"figure1_medians": pd.DataFrame({"method": METHODS, "avg_L1": l1, "avg_L2": l2}),
            "figure2": pd.DataFrame({"table": ["G-M Table 1", "seeded table 0"], "epsilon_tilde": [best, 0.6],
                                     "chain": [0, 0], "acceptance_rate": [rate, 0.01], "accepted": [1, 1],
                                     "steps": [1000, 1000]}),
            "tv": pd.DataFrame({"thin": [1, 100], "draws": [500, 500], "mis_steps": [700, 50200],
                                "tv_mean": [0.3, tv_last], "floor_mean": [0.08, 0.08], "floor_high": [0.09, 0.09]})}


def _facts(ok: bool) -> dict:
    cells = np.full(920, 5 if ok else 9)
    return {"cells": cells, "release_satisfies": ok, "conditional_satisfy": ok, "mis_satisfies": ok,
            "their_release_satisfies": ok, "their_release_l1": 82, "exact_l1": np.array([70, 90]),
            "nnl2_kkt": 1e-9 if ok else 1e-2, "nnl2_nonexpansive": ok}


def test_checks_pass_on_good_results_and_fail_on_broken_ones():
    good = gm_section3_checks(_results([40, 41, 70, 90], [9, 8.5, 14, 19], 0.6, 0.017, 0.1), _facts(True))
    assert good.holds.all()
    bad = gm_section3_checks(_results([40, 60, 30, 90], [9, 12, 20, 19], 1.2, 0.002, 0.2), _facts(False))
    kept = {"cell law NB(100, .05) has mean 5.26", "cell law NB(100, .05) has variance 5.54", *TV_CLAIMS[::2]}
    assert not bad[~bad.claim.isin(kept)].holds.any()
    matched = gm_section3_checks(_results([40, 41, 70, 90], [9, 8.5, 14, 19], 0.6, 0.017, 0.085), _facts(True))
    assert not matched.set_index("claim").loc[TV_CLAIMS[2], "holds"]
    stuck = _results([40, 41, 70, 90], [9, 8.5, 14, 19], 0.6, 0.017, 0.1)
    stuck["tv"].loc[0, "tv_mean"] = 0.15  # consecutive draws within 2 x the floor
    assert not gm_section3_checks(stuck, _facts(True)).set_index("claim").loc[TV_CLAIMS[0], "holds"]
