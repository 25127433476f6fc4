"""Figures 9-13 from structural forms: exact errors at large n, and agreement with the matrix path.

Independent facts: GM's closed form (diagonal 1/(1+a) at the corners, (1-a)/(1+a) inside) and
UM's L0 = n/(n+1); the dense integer weights of a small form, summed entry by entry with the
loss matrix; the matrix path (a design artifact's release weights) evaluated on the same points;
the empirical distribution of many draws against a column's exact probabilities.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np
import pytest

from countdp.design.designer import design_named
from countdp.design.forms import FORMS, structural_form, template_form
from countdp.evaluate.experiments import binomial_sweep, load_mechanisms
from countdp.evaluate.metrics import binomial_distribution
from countdp.evaluate.routing import evaluation_form
from countdp.evaluate.structural import column_losses, structural_expected_errors
from countdp.privacy.sampling import release_each
from countdp.structural.catalogue import served_as_structure
from countdp.structural.errors import structural_errors
from countdp.structural.form import REPRESENTATION, StructuralMechanism

MEASURES = ["L0", "L0d:1", "L0d:3", "RMSE"]


def test_gm_l0_at_ten_thousand_is_the_closed_form_within_the_floor_share():
    n, a = 10_000, Fraction(91, 100)
    form = structural_form("GM", n, a)
    trace = 2 / (1 + a) + (n - 1) * (1 - a) / (1 + a)  # CKS: GM's diagonal, corners and interior
    closed = 1 - trace / (n + 1)
    exact = structural_errors(form).l0_uniform
    assert abs(exact - closed) <= Fraction(form.uniform_share) + Fraction(1, 10**30)
    assert form.uniform_share < 1e-20  # the wide form's floor is negligible, not the closed form's cost
    uniform = np.full(n + 1, 1 / (n + 1))  # the evaluation's float path gives the same number
    assert structural_expected_errors(form, [uniform], "L0")[0] == pytest.approx(float(closed), rel=1e-12)


def test_um_l0_is_n_over_n_plus_one_exactly():
    n = 10_000
    form = structural_form("UM", n, "1/2")
    assert structural_errors(form).l0_uniform == Fraction(n, n + 1)
    assert structural_expected_errors(form, [np.full(n + 1, 1 / (n + 1))], "L0")[0] == pytest.approx(n / (n + 1),
                                                                                                     rel=1e-14)
    losses = column_losses(form, "RMSE")  # uniform output: E(U - j)^2 = (T(j) + T(n - j)) / (n + 1)
    j = np.arange(n + 1, dtype=float)
    T = lambda x: x * (x + 1) * (2 * x + 1) / 6  # noqa: E731
    assert np.allclose(losses, (T(j) + T(n - j)) / (n + 1), rtol=1e-12)


def _dense_losses(form: StructuralMechanism, measure: str) -> np.ndarray:
    """Every column's expected loss from the dense integer weights, entry by entry (the definition)."""
    W = form.dense_weights().astype(object)
    i = np.arange(form.n + 1)
    diff = np.abs(i[:, None] - i[None, :])
    d = {"L0": 0, "L0d:1": 1, "L0d:3": 3}.get(measure)
    loss = diff**2 if d is None else (diff > d).astype(int)
    return np.array([float(Fraction(int((loss[:, j] * W[:, j]).sum()), form.denominator)) for j in i])


@pytest.mark.parametrize("name", ["GM", "EM", "UM"])
@pytest.mark.parametrize("n", [1, 4, 9, 30])
def test_column_losses_equal_the_dense_weights(name, n):
    form = structural_form(name, n, "91/100")
    for measure in MEASURES:
        assert np.allclose(column_losses(form, measure), _dense_losses(form, measure), rtol=1e-12, atol=1e-15), measure


def test_spread_column_losses_equal_the_dense_weights():
    """A template design's spread (WM at alpha = 1/2, canonical size 319) at a size with a long middle: every
    input's loss under every measure, against its dense integer weights summed entry by entry."""
    form = template_form(400, Fraction(1, 2), 62).for_size(400)
    for measure in MEASURES:
        assert np.allclose(column_losses(form, measure), _dense_losses(form, measure), rtol=1e-14, atol=0), measure


@pytest.mark.parametrize("name", sorted(FORMS))
def test_every_form_served_at_large_n_agrees_with_its_exact_errors(name):
    """Any name of the catalogue (a template design's spread included, read column by column): the
    uniform means of the column losses equal structural_errors' exact uniform L0, L0,1 and MSE."""
    n = 3000
    if not served_as_structure(name, n, "L0"):
        pytest.skip(f"{name} is not served as structure at n = {n}")
    form, _ = evaluation_form(name, n, "2/3")
    errors = structural_errors(form)
    for measure, exact in (("L0", errors.l0_uniform), ("L0d:1", errors.l01_uniform), ("RMSE", errors.mse_uniform)):
        assert column_losses(form, measure).mean() == pytest.approx(float(exact), rel=1e-12, abs=1e-14), measure


@functools.cache
def _matrix(mechanism: str, n: int, alpha: float):
    return design_named(mechanism, n, alpha).released


def test_structural_path_equals_the_matrix_path_at_small_n():
    """The same sweep with the matrix artifacts' release weights and with the structural forms: exact columns
    equal to rounding, Monte Carlo means consistent (different samplers, same distribution)."""
    points = [{"n": n, "p": p, "alpha": 0.91} for n, p in [(6, 0.5), (12, 0.1)]]
    forms = {(m, n): structural_form(m, n, "91/100") for m in ("GM", "EM", "UM") for n in (6, 12)}
    runs = {}
    for label, pick in [("matrix", lambda m, pt: _matrix(m, pt["n"], pt["alpha"])),
                        ("structural", lambda m, pt: forms[m, pt["n"]])]:
        runs[label] = binomial_sweep(points, ["GM", "EM", "UM"], pick, MEASURES, 20, seed=5, study="t",
                                     population=3000)[1]
    a, b = runs["matrix"], runs["structural"]
    assert np.allclose(a["exact"], b["exact"], rtol=0, atol=1e-9)
    assert np.allclose(a["exact_given_data"], b["exact_given_data"], rtol=0, atol=1e-9)  # same drawn data
    gap = (a["mean"] - b["mean"]) / np.sqrt(a["se"] ** 2 + b["se"] ** 2).where(lambda s: s > 0, 1.0)
    assert gap.abs().max() < 4.5, gap
    assert b["z"].abs().max() < 4.5


def test_wide_sampler_draws_the_exact_column_distribution():
    """n = 10^4 (K = 124, two words per draw): 2 * 10^5 releases of one input against its exact column."""
    form = structural_form("GM", 10_000, "91/100")
    assert form.wide
    j = 5_000
    out = release_each(form, [np.full(200_000, j)], [np.random.default_rng(3)])[0]
    column = form.column(j).astype(object)
    near = np.arange(j - 8, j + 9)
    p = np.array([float(Fraction(int(column[i]), form.denominator)) for i in near])
    seen = np.array([(out == i).mean() for i in near])
    z = (seen - p) / np.sqrt(p * (1 - p) / out.size)
    assert np.abs(z).max() < 4.5, z
    squares = (out - j).astype(float) ** 2
    z_msd = (squares.mean() - column_losses(form, "RMSE")[j]) / (squares.std(ddof=1) / np.sqrt(out.size))
    assert abs(z_msd) < 4.5, z_msd


def test_load_mechanisms_builds_structural_rows_and_checks_alpha():
    files = [["GM", 300, REPRESENTATION, "91/100", "code"], ["WH", 300, REPRESENTATION, "91/100", "code"]]
    loaded = load_mechanisms(files, 0.91)
    assert isinstance(loaded["GM", 300], StructuralMechanism) and loaded["WH", 300].mechanism == "GM"
    with pytest.raises(ValueError, match="not alpha"):
        load_mechanisms(files[:1], 0.9)


def test_wh_is_gm_only_where_the_sampled_weights_are_weakly_honest():
    """The check can fail: at n = 2a/(1-a) = 198 (alpha = 0.99) closed-form GM's diagonal is exactly 1/(n+1),
    and its integer weights fall just below; at 197 it is below in any form; at 199 it passes."""
    for n in (197, 198):
        with pytest.raises(ValueError, match="not weakly honest"):
            evaluation_form("WH", n, "99/100")
    form, provenance = evaluation_form("WH", 199, "99/100")
    assert provenance.evaluated_as == "GM" and "Theorem 3" in provenance.reason
    W = form.dense_weights()
    assert int(W.diagonal().min()) * (199 + 1) >= form.denominator  # weakly honest, entry by entry
    with pytest.raises(ValueError, match="no structural form"):
        evaluation_form("ZM", 300, "91/100")


def test_expected_errors_under_binomial_match_the_dense_sum():
    form = structural_form("EM", 40, "2/3")
    q = binomial_distribution(40, 0.3)
    for measure in MEASURES:
        dense = float(q @ _dense_losses(form, measure))
        expected = np.sqrt(dense) if measure == "RMSE" else dense
        assert structural_expected_errors(form, [q], measure)[0] == pytest.approx(expected, rel=1e-12)
