"""Repeated evaluations: seeding, Monte Carlo vs exact, summaries, mechanism loading."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

from countdp.design.designer import design_named
from countdp.evaluate.experiments import (
    adult_sweep,
    binomial_sweep,
    load_mechanisms,
    rng_for,
    seed_sequence,
    simulate,
    summarise,
)
from countdp.evaluate.metrics import binomial_distribution, expected_error
from countdp.mechanisms.closed_forms import explicit_fair, geometric, uniform

CLOSED = {"GM": geometric, "EM": explicit_fair, "UM": lambda n, a: uniform(n)}


@functools.cache
def _designed(mechanism: str, n: int, alpha: float):
    return design_named(mechanism, n, alpha)


def mechanism_for(mechanism, point):
    """The certified design (sampled through its integer release weights)."""
    return _designed(mechanism, int(point["n"]), float(point["alpha"]))


def matrix_for(mechanism, point):
    """The closed-form matrix: an independent reference for the exact expectations."""
    return CLOSED[mechanism](int(point["n"]), float(point["alpha"]))


def test_seed_depends_on_parameters_not_on_order():
    a = seed_sequence(7, study="fig11", n=4, p=0.5, rep=0).generate_state(4)
    b = seed_sequence(7, rep=0, p=0.5, n=4, study="fig11").generate_state(4)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, seed_sequence(8, study="fig11", n=4, p=0.5, rep=0).generate_state(4))
    assert not np.array_equal(a, seed_sequence(7, study="fig11", n=4, p=0.5, rep=1).generate_state(4))
    assert not np.array_equal(a, seed_sequence(7, study="fig11", n=4, p=0.55, rep=0).generate_state(4))
    assert rng_for(1, x=1).random() == rng_for(1, x=1).random()


def test_results_independent_of_sweep_composition():
    """A point's numbers do not depend on which other points or mechanisms share the job."""
    pts = [{"n": 4, "p": 0.3, "alpha": 0.8}, {"n": 6, "p": 0.5, "alpha": 0.8}]
    _, both = binomial_sweep(pts, ["GM", "EM"], mechanism_for, ["L0"], 5, seed=3, study="t", population=600)
    _, one = binomial_sweep(pts[1:], ["EM"], mechanism_for, ["L0"], 5, seed=3, study="t", population=600)
    row = both[(both["n"] == 6) & (both["mechanism"] == "EM")].reset_index(drop=True)
    pd.testing.assert_frame_equal(row, one.reset_index(drop=True))


def test_common_random_numbers_across_mechanisms():
    """Within a repetition every mechanism sees the same drawn counts (its own noise)."""
    seen = []

    def draw(point, rng):
        counts = rng.integers(0, point["n"] + 1, size=50)
        seen.append(counts)
        return counts

    raw = simulate("t", 1, [{"n": 3, "alpha": 0.7}], ["GM", "UM"], mechanism_for, draw, ["L0"], 2)
    assert len(seen) == 2  # drawn once per repetition, not once per mechanism
    assert set(raw["mechanism"]) == {"GM", "UM"} and len(raw) == 4


@pytest.mark.parametrize("measure", ["L0", "L0d:1", "L0d:3", "RMSE"])
def test_monte_carlo_within_standard_errors_of_exact(measure):
    pts = [{"n": n, "p": p, "alpha": a} for n, p, a in [(4, 0.5, 0.91), (8, 0.1, 0.67), (8, 0.5, 0.91)]]
    _, s = binomial_sweep(pts, ["GM", "EM", "UM"], mechanism_for, [measure], 30, seed=11, study="test")
    assert (s["repetitions"] == 30).all()
    assert s["z"].abs().max() < 4.5, s[["n", "p", "mechanism", "mean", "exact", "se", "z"]]
    for r in s.to_dict("records"):
        q = binomial_distribution(r["n"], r["p"])
        assert r["exact"] == pytest.approx(expected_error(matrix_for(r["mechanism"], r), q, measure))


def test_adult_style_sweep_exact_is_conditional_on_groups():
    rng = np.random.default_rng(0)
    bits = (rng.random(3001) < 0.3).astype(int)
    raw, s = adult_sweep(bits, "young", 0.9, [2, 5], ["GM", "EM", "UM"], mechanism_for, 40, seed=5)
    um = s[s["mechanism"] == "UM"].set_index("n")
    assert um.loc[2, "exact"] == pytest.approx(2 / 3) and um.loc[5, "exact"] == pytest.approx(5 / 6)
    assert s["z"].abs().max() < 4.5
    em = s[s["mechanism"] == "EM"].set_index("n")  # EM is fair: its L0 does not depend on the data
    for n in (2, 5):
        assert em.loc[n, "exact"] == pytest.approx(1 - explicit_fair(n, 0.9)[0, 0])
    assert (s["groups"] == [1500] * 3 + [600] * 3).all()
    assert raw.groupby(["n", "mechanism"]).size().eq(40).all()


def test_summarise_statistics():
    raw = pd.DataFrame({"k": ["a"] * 4, "value": [1.0, 2.0, 3.0, 4.0], "groups": 10,
                        "exact_given_data": [2.0, 2.5, 2.5, 3.0]})
    s = summarise(raw, ["k"]).iloc[0]
    assert s["mean"] == 2.5 and s["sd"] == pytest.approx(np.std([1, 2, 3, 4], ddof=1))
    assert s["se"] == pytest.approx(s["sd"] / 2) and s["exact"] == 2.5 and s["z"] == 0


def test_load_mechanisms_checks_certificate_and_parameters(tmp_path):
    from countdp.design.designer import design_named
    from countdp.services.artifact import save_design

    path = tmp_path / "gm.json"
    save_design(design_named("GM", 4, 0.9), path)
    mats = load_mechanisms([["GM", 4, str(path)]], 0.9)
    assert np.allclose(mats[("GM", 4)].matrix, geometric(4, 0.9), rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="expected n=5"):
        load_mechanisms([["GM", 5, str(path)]], 0.9)
    with pytest.raises(ValueError, match="alpha=0.8"):
        load_mechanisms([["GM", 4, str(path)]], 0.8)


def test_a_deterministic_mismatch_is_not_hidden_when_se_is_zero():
    """Every repetition gives the same value (se = 0): a gap to the exact value is certain, not z = 0."""
    same = pd.DataFrame({"k": ["a", "a", "b", "b", "c"], "value": [0.5, 0.5, 0.5, 0.5, 0.7], "groups": 10,
                         "exact_given_data": [0.4, 0.4, 0.5, 0.5, 0.6]})
    s = summarise(same, ["k"]).set_index("k")
    assert (s["se"] == 0).all()
    assert s.loc["a", "z"] == np.inf  # 0.5 every time, expected 0.4
    assert s.loc["b", "z"] == 0  # exact match
    assert np.isnan(s.loc["c", "z"])  # one repetition: no spread to judge by
