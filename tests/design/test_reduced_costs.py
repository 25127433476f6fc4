"""The certificate's reduced costs in double-double arithmetic, against exact rational arithmetic."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

from countdp.design.optimality import design_lp_model, lower_column_multipliers, reduced_costs

WM = ("RM", "CM", "WH", "S")


def exact_reduced_costs(lp, u, v) -> list[Fraction]:
    """``c - A_ub^T u - A_eq^T v`` in rationals: every float is an exact rational."""
    M = lp.A_ub.T.tocsr(), lp.A_eq.T.tocsr()
    out = []
    for j, c in enumerate(lp.c):
        total = Fraction(float(c))
        for A, y in zip(M, (u, v), strict=True):
            lo, hi = A.indptr[j], A.indptr[j + 1]
            total -= sum((Fraction(float(a)) * Fraction(float(y[i]))
                          for a, i in zip(A.data[lo:hi], A.indices[lo:hi], strict=True)), Fraction(0))
        out.append(total)
    return out


def cancelling(lp, rng):
    """Multipliers with the LP's costs moved so every reduced cost is tiny against its terms: the
    cancellation a near-optimal dual of L2 has, where plain float sums lose ``u`` times the terms."""
    u = rng.uniform(0, 50, lp.b_ub.size)
    v = rng.uniform(-300, 300, lp.b_eq.size)
    base = lp.A_ub.T @ u + lp.A_eq.T @ v
    c = base + rng.uniform(-1e-9, 1e-9, base.size)
    return dataclasses.replace(lp, c=c), u, v


@pytest.mark.parametrize(("n", "alpha", "objective"), [(6, 0.5, "L2"), (9, 0.9, "L1"), (7, 10 / 11, "L2")])
def test_the_error_bound_holds_in_exact_arithmetic(n, alpha, objective):
    lp, u, v = cancelling(design_lp_model(n, alpha, WM, objective), np.random.default_rng(n))
    r, err = reduced_costs(lp, u, v)
    exact = exact_reduced_costs(lp, u, v)
    miss = [abs(Fraction(float(a)) - b) - Fraction(float(e)) for a, b, e in zip(r, exact, err, strict=True)]
    assert max(miss) <= 0
    # the bound is near the final rounding: far below a plain float sum's gamma_k * magnitude
    magnitude = np.abs(lp.c) + abs(lp.A_ub.T) @ u + abs(lp.A_eq.T) @ np.abs(v)
    assert np.all(err < 1e-3 * 2.0**-53 * magnitude)


def test_a_plain_float_sum_breaks_the_bound():
    """The check above can fail: plain float reduced costs miss the exact ones by more than ``err``."""
    lp, u, v = cancelling(design_lp_model(6, 0.5, WM, "L2"), np.random.default_rng(1))
    _, err = reduced_costs(lp, u, v)
    plain = lp.c - lp.A_ub.T @ u - lp.A_eq.T @ v
    exact = exact_reduced_costs(lp, u, v)
    miss = [abs(Fraction(float(a)) - b) - Fraction(float(e)) for a, b, e in zip(plain, exact, err, strict=True)]
    assert max(miss) > 0


def test_lowered_column_multipliers_leave_no_reduced_cost_below_its_bound():
    lp, u, v = cancelling(design_lp_model(6, 0.5, WM, "L2"), np.random.default_rng(2))
    lowered = lower_column_multipliers(lp, u, v)
    r, err = reduced_costs(lp, u, lowered)
    assert np.all(r - err >= 0)
    N = 7
    assert np.all(lowered[N:] == v[N:]) and np.all(lowered[:N] <= v[:N])
