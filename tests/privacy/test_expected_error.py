"""The exact error of a release, from its integer weights, against independent facts.

* Brute force: every column enumerated in :class:`~fractions.Fraction` (small n, real designs).
* Closed forms: UM with ``n + 1`` a power of two has weights exactly ``D / (n+1)``, so its
  errors are known rationals (including at n = 2047, where ``sum (i - j)**2 W`` passes 2**63);
  GM's ``Pr[output != input]`` is ``alpha / (1 + alpha)`` at the ends and ``2 alpha / (1 + alpha)``
  inside (the paper's GM, Section IV), up to the rounding of ``W``.
* Hand-made weights whose worst input is a chosen column, with every value worked out by hand.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np
import pytest

from countdp.design.designer import design_named
from countdp.evaluate.metrics import expected_error
from countdp.mechanisms.closed_forms import geometric
from countdp.privacy.exact import RELEASE_K, IntegerMechanism
from countdp.privacy.expected_error import release_errors, squared_error_sums
from countdp.values.objectives import objective_value

D = 2**RELEASE_K


@functools.cache
def designed(name: str, n: int, alpha: str):
    return design_named(name, n, alpha)


def brute_force(W: np.ndarray, D: int) -> dict[str, tuple[Fraction, Fraction, int]]:
    """Per metric ``(uniform mean, worst, first worst input)``, entry by entry in Fractions."""
    N = W.shape[0]
    losses = {"l0": lambda d: d != 0, "l01": lambda d: abs(d) > 1, "mse": lambda d: d * d}
    out = {}
    for name, loss in losses.items():
        per_input = [sum(Fraction(int(W[i, j]), D) * loss(i - j) for i in range(N)) for j in range(N)]
        worst = max(per_input)
        out[name] = (sum(per_input) / N, worst, per_input.index(worst))
    return out


def as_triples(errors) -> dict[str, tuple[Fraction, Fraction, int]]:
    return {name: (getattr(errors, f"{name}_uniform"), getattr(errors, f"{name}_worst"),
                   getattr(errors, f"{name}_worst_input")) for name in ("l0", "l01", "mse")}


@pytest.mark.parametrize("name", ["GM", "EM", "UM", "WM"])
@pytest.mark.parametrize("n", [1, 2, 5, 8])
@pytest.mark.parametrize("alpha", ["1/2", "9/10"])
def test_small_designs_match_brute_force_enumeration(name, n, alpha):
    released = designed(name, n, alpha).released
    errors = release_errors(released)
    assert errors.n == n
    assert as_triples(errors) == brute_force(np.asarray(released.weights), released.denominator)
    assert release_errors(designed(name, n, alpha)) == errors  # a Design is taken as its released form


def test_hand_made_weights_whose_worst_input_is_the_last():
    """Columns (1/2, 1/4, 1/4), (3/8, 3/8, 1/4), (1/2, 1/4, 1/4) of D; 1/2-DP (row ratios <= 4/3)."""
    W = np.array([[4, 3, 4], [2, 3, 2], [2, 2, 2]], dtype=np.int64) * (D // 8)
    errors = release_errors(IntegerMechanism(Fraction(1, 2), RELEASE_K, W))
    # L0 per input: 1/2, 5/8, 3/4; L0,1: 1/4, 0, 1/2; squared error: 1/4 + 4/4, 3/8 + 1/4, 4/2 + 1/4
    assert (errors.l0_uniform, errors.l0_worst, errors.l0_worst_input) == (Fraction(5, 8), Fraction(3, 4), 2)
    assert (errors.l01_uniform, errors.l01_worst, errors.l01_worst_input) == (Fraction(1, 4), Fraction(1, 2), 2)
    assert (errors.mse_uniform, errors.mse_worst, errors.mse_worst_input) == (Fraction(11, 8), Fraction(9, 4), 2)
    assert errors.rmse_worst == 1.5 and errors.rmse_uniform == pytest.approx((11 / 8) ** 0.5, rel=1e-15)


def test_ties_name_the_first_worst_input_and_metrics_differ_in_where_they_are_worst():
    """Columns (1/2, 1/4, 1/4), (3/8, 1/4, 3/8), (1/4, 1/4, 1/2): L0 worst inside, L0,1 and MSE at the ends."""
    W = np.array([[4, 3, 2], [2, 2, 2], [2, 3, 4]], dtype=np.int64) * (D // 8)
    errors = release_errors(IntegerMechanism(Fraction(1, 2), RELEASE_K, W))
    assert (errors.l0_uniform, errors.l0_worst, errors.l0_worst_input) == (Fraction(7, 12), Fraction(3, 4), 1)
    assert (errors.l01_uniform, errors.l01_worst, errors.l01_worst_input) == (Fraction(1, 6), Fraction(1, 4), 0)
    assert (errors.mse_uniform, errors.mse_worst, errors.mse_worst_input) == (Fraction(13, 12), Fraction(5, 4), 0)


@pytest.mark.parametrize("n", [1, 3, 7, 63, 2047])
def test_uniform_mechanism_closed_forms(n):
    """UM, N = n + 1 a power of two: W = D / N exactly.  Per input j, L0 = n / N; over i, j
    uniform, E[(i - j)**2] = 2 Var = (N**2 - 1) / 6; the worst squared error, at j = 0, is
    sum i**2 / N = n (2n + 1) / 6; L0,1 at an end is (N - 2) / N, averaged 1 - (3N - 2) / N**2."""
    N = n + 1
    errors = release_errors(IntegerMechanism(Fraction(1, 2), RELEASE_K, np.full((N, N), D // N, dtype=np.int64)))
    assert errors.l0_uniform == errors.l0_worst == Fraction(n, N) and errors.l0_worst_input == 0
    assert errors.mse_uniform == Fraction(N * N - 1, 6)
    assert errors.mse_worst == Fraction(n * (2 * n + 1), 6) and errors.mse_worst_input == 0
    if n >= 2:
        assert errors.l01_uniform == 1 - Fraction(3 * N - 2, N * N)
        assert errors.l01_worst == Fraction(N - 2, N) and errors.l01_worst_input == 0


def test_uniform_mechanism_with_remainders_is_within_the_rounding():
    """UM at n = 10: D is not a multiple of 11, so each weight is D / 11 give or take one unit."""
    released = designed("UM", 10, "9/10").released
    errors = release_errors(released)
    assert abs(errors.l0_uniform - Fraction(10, 11)) <= Fraction(1, D)
    assert abs(errors.mse_uniform - Fraction(11 * 11 - 1, 6)) <= Fraction(11 * 100, D)


@pytest.mark.parametrize("n", [2, 10, 60, 200])
@pytest.mark.parametrize("alpha", ["1/2", "9/10", "99/100"])
def test_geometric_l0_matches_its_closed_form_and_the_float_matrix(n, alpha):
    design = designed("GM", n, alpha)
    a = Fraction(alpha)
    errors = release_errors(design)
    rounding = design.released.certificate.max_abs_error
    # W / D is the certified float matrix, mixed with UM by repair_lambda (which moves any
    # probability by at most that much), rounded to within `rounding` per entry
    slack = design.certificate.repair_lambda + rounding + 1e-15
    assert rounding < 1e-9 and slack < 1e-10
    # the paper's closed form: L0(GM) = (n+1)/n * Pr[output != input] = 2 alpha / (1 + alpha) for every n
    assert abs(float(errors.l0_uniform - 2 * a / (1 + a) * Fraction(n, n + 1))) <= slack
    assert abs(float(errors.l0_worst - 2 * a / (1 + a))) <= slack  # every interior input
    assert 1 <= errors.l0_worst_input <= n - 1
    P = design.matrix  # the certified float matrix W was rounded from, entry by entry within `rounding`
    assert abs(float(errors.l0_uniform) - objective_value(P, "L0") * n / (n + 1)) <= 1e-12
    uniform_prior = np.full(n + 1, 1 / (n + 1))
    # L0,1 differs by the three entries near the diagonal, MSE by sum_i (i - j)**2 entries at most
    assert abs(float(errors.l01_uniform) - expected_error(P, uniform_prior, "L0d:1")) <= 3 * rounding + 1e-12
    squares = n * (n + 1) * (2 * n + 1) / 6
    assert abs(float(errors.mse_uniform) - expected_error(P, uniform_prior, "L2")) <= squares * (rounding + 1e-15)
    assert abs(float(errors.mse_worst) - objective_value(P, "L2", aggregate="max")) <= squares * (rounding + 1e-15)


def test_squared_error_sums_are_exact_where_int64_would_wrap():
    """Random weights up to 2**62 at n = 400 against Python integers; int64 arithmetic gets them wrong."""
    rng = np.random.default_rng(11)
    N = 401
    W = rng.integers(0, 2**62, size=(N, N), dtype=np.int64, endpoint=True)
    i = np.arange(N)
    squared = (i[:, None] - i[None, :]) ** 2
    exact = (squared.astype(object) * W.astype(object)).sum(axis=0)
    assert list(squared_error_sums(W)) == list(exact)
    with np.errstate(over="ignore"):
        wrapped = (squared * W).sum(axis=0)
    assert any(int(x) != y for x, y in zip(wrapped, exact, strict=True))  # the case this test is for


def test_to_dict_and_refusals():
    errors = release_errors(designed("GM", 5, "1/2"))
    row = errors.to_dict()
    assert Fraction(row["l0_uniform_exact"]) == errors.l0_uniform and row["l0_uniform"] == float(errors.l0_uniform)
    assert row["rmse_worst"] == errors.rmse_worst and row["mse_worst_input"] == errors.mse_worst_input
    with pytest.raises(ValueError, match="certified mechanism"):
        release_errors(geometric(5, 0.5))
