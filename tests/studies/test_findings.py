"""Figure 10-13 findings (countdp.studies.fig10_13), on hand-built tables whose verdicts are known."""

from __future__ import annotations

import pandas as pd
import pytest

from countdp.studies.fig10_13 import Thresholds, findings

TH = Thresholds(um_max_deviation=0.01, um_max_z=4, tracks_max_gap=0.02, extreme_p=0.2, high_alpha=0.85,
                balanced_p=0.15, skewed_em_max_excess=0.05, between_slack=0.001, between_min_fraction=0.75,
                em_best_alpha=0.91, mc_max_z=4.5, mc_outlier_z=3, mc_outlier_fraction=0.02,
                mc_min_repetitions=10)


def _fig11(alphas, gm_at_half):
    rows = []
    for a in alphas:
        for p, gm in ((0.1, 0.05), (0.5, gm_at_half)):
            for m, mean in (("GM", gm), ("WM", 0.3), ("EM", 0.2), ("UM", 0.6)):
                rows.append({"alpha": a, "n": 4, "p": p, "d": 1, "mechanism": m, "mean": mean, "z": 0.0,
                             "repetitions": 30})
    return pd.DataFrame(rows)


def _verdict(table, finding):
    return table.loc[table["finding"] == finding, "holds"].tolist()


def test_one_alpha_makes_convergence_not_checkable():
    found = findings({"fig11": _fig11([0.9], 0.5)}, TH)
    assert _verdict(found, "lower alpha: WM and GM converge") == [None]


def test_fig11_verdicts_follow_the_means():
    found = findings({"fig11": _fig11([0.9], 0.5)}, TH)
    assert _verdict(found, "GM good only for p near 0 or 1") == [True]  # GM lowest only at p = 0.1
    assert _verdict(found, "constrained mechanisms beat GM for spread inputs (p = 0.5)") == [True]
    found = findings({"fig11": _fig11([0.9], 0.1)}, TH)  # GM now lowest at p = 0.5 as well
    assert _verdict(found, "GM good only for p near 0 or 1") == [False]
    assert _verdict(found, "constrained mechanisms beat GM for spread inputs (p = 0.5)") == [False]


def test_two_alphas_decide_convergence():
    table = _fig11([0.6, 0.9], 0.5)
    table.loc[(table["alpha"] == 0.6) & (table["mechanism"] == "GM"), "mean"] = 0.3  # WM == GM at the lower alpha
    assert _verdict(findings({"fig11": table}, TH), "lower alpha: WM and GM converge") == [True]


def test_monte_carlo_threshold_comes_from_the_config():
    table = _fig11([0.9], 0.5)
    table.loc[0, "z"] = 4.0  # one cell of 8 above 3: 12.5% of cells
    finding = "Monte Carlo mean agrees with the exact expectation"
    assert _verdict(findings({"fig11": table}, TH), finding) == [False]
    loose = Thresholds(**{**TH.__dict__, "mc_outlier_fraction": 0.2})
    assert _verdict(findings({"fig11": table}, loose), finding) == [True]


def test_monte_carlo_with_too_few_repetitions_is_not_checkable():
    """With 3 repetitions the s.e. is itself a guess (a t with 2 degrees of freedom): |z| = 13.6 happened."""
    table = _fig11([0.9], 0.5)
    table.loc[0, "z"] = 13.6
    finding = "Monte Carlo mean agrees with the exact expectation"
    assert _verdict(findings({"fig11": table}, TH), finding) == [False]
    table["repetitions"] = 3
    assert _verdict(findings({"fig11": table}, TH), finding) == [None]


def test_thresholds_need_every_key():
    with pytest.raises(ValueError, match="missing"):
        Thresholds.from_config({"um_max_z": 4})
