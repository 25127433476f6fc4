"""G-S Theorem 1 (GM + the consumer's optimal remap = the consumer's optimal alpha-DP mechanism) on
random monotone consumers, a hand-derived non-monotone consumer for which it fails, n = 1 where
G-S's Theorem 2 makes every DP mechanism derivable from GM, and the study's checks."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from countdp.consumers.certificates import exact_private_certificate, exact_remap_certificate, integer_matrix
from countdp.consumers.losses import is_monotone
from countdp.consumers.remap import optimal_private_mechanism, optimal_remap
from countdp.mechanisms.closed_forms import geometric
from countdp.multilevel.exact_forms import gm_exact
from countdp.studies.universal import (
    COLUMNS,
    KINDS,
    UniversalSettings,
    draw_consumers,
    evaluate,
    largest_gaps,
    random_loss,
    random_side,
    universal_checks,
    universal_study,
)

PARITY = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float)
"""n = 2: loss 1 when the answer's parity differs from the truth's, l(i, r) = [|i - r| = 1]."""


def test_theorem_1_on_several_hundred_random_monotone_consumers():
    rng = np.random.default_rng(11)
    families = ("L0", "L1", "L2", "L0d", "random profile")
    largest = 0.0
    for k in range(300):
        n = 2 + k % 7
        alpha = float(rng.choice([0.1, 0.3, 0.5, 0.75, 0.9]))
        loss = random_loss(rng, "monotone", families[k % len(families)], n)
        side = random_side(rng, n, ("all", "interval", "single", "set")[k % 4])
        assert is_monotone(loss)
        remap = optimal_remap(geometric(n, alpha), loss, side)
        own = optimal_private_mechanism(n, alpha, loss, side)
        largest = max(largest, remap.certificate.primal - own.certificate.dual)
        assert remap.worst_loss == pytest.approx(own.value, abs=1e-9)
    assert largest <= 1e-9


def test_parity_consumer_breaks_theorem_1_with_the_hand_derived_values():
    """GM at alpha = 1/2 sends input 1 to (1/3, 1/3, 1/3): with q = Pr[odd answer | release 0 or 2]
    and release 1 answered odd, input 1 loses (2 - 2q)/3 and input 0 loses 5q/6 + 1/6; they meet at
    q = 1/3, so GM + remap is worth 4/9.  Randomized response on parity (below) is 1/2-DP and
    worth 1/3.  It is not derivable from GM: its output-0 row (2/3, 1/3, 2/3) breaks G-S Theorem 2,
    (1 + a^2) x2 >= a (x1 + x3): 5/12 < 8/12."""
    alpha, n = Fraction(1, 2), 2
    assert not is_monotone(PARITY)
    G = gm_exact(n, alpha)
    assert G[:, 1].tolist() == [Fraction(1, 3)] * 3
    remap = optimal_remap(G.astype(float), PARITY)
    G_int, den = integer_matrix(G)
    remap_exact = exact_remap_certificate(G_int, den, PARITY, remap.side, remap.remap, remap.prior, 0.0, 1000)[0]
    assert remap_exact.primal == remap_exact.dual == Fraction(4, 9)
    own = optimal_private_mechanism(n, alpha, PARITY)
    own_exact = exact_private_certificate(alpha, PARITY, np.arange(3), own.matrix, own.prior, own.up, own.down, 0.0,
                                          1000)[0]
    assert own_exact.primal == own_exact.dual == Fraction(1, 3)
    third = Fraction(1, 3)
    parity_rr = np.array([[2, 1, 2], [1, 2, 1], [0, 0, 0]], dtype=object) * third  # [output, input]
    assert all(sum(parity_rr[:, i]) == 1 for i in range(3))
    assert np.all(alpha * parity_rr[:, 1:] <= parity_rr[:, :-1])  # exactly 1/2-DP
    assert np.all(alpha * parity_rr[:, :-1] <= parity_rr[:, 1:])
    assert [sum(int(PARITY[i, r]) * parity_rr[r, i] for r in range(3)) for i in range(3)] == [third] * 3
    x1, x2, x3 = parity_rr[0]
    assert (1 + alpha**2) * x2 - alpha * (x1 + x3) == Fraction(-1, 4)


def test_n_equal_1_has_no_gap_for_any_loss():
    """For n = 1 G-S's Theorem 2 has no three consecutive entries: every DP mechanism is GM + remap."""
    rng = np.random.default_rng(3)
    for _ in range(60):
        loss, alpha = rng.random((2, 2)) * 5, float(rng.choice([0.2, 0.5, 0.9]))
        side = [[0], [1], [0, 1]][int(rng.integers(3))]
        gap = optimal_remap(geometric(1, alpha), loss, side).worst_loss - optimal_private_mechanism(1, alpha, loss,
                                                                                                       side).value
        assert abs(gap) <= 1e-9


def test_draws_are_reproducible_and_classified():
    settings = UniversalSettings(consumers=40, seed=9)
    first, second = draw_consumers(settings), draw_consumers(settings)
    assert len(first) == 3 * 40
    for a, b in zip(first, second, strict=True):
        assert np.array_equal(a.loss, b.loss) and np.array_equal(a.side, b.side) and a.alpha == b.alpha
    for consumer in first:
        assert is_monotone(consumer.loss) == (consumer.kind == "monotone")
        assert consumer.side.size >= 1 and 0 <= consumer.side.min() and consumer.side.max() <= consumer.n


def test_small_study_checks_hold_and_the_table_is_consistent():
    table, checks = universal_study(UniversalSettings(consumers=120, seed=4))
    assert tuple(table.columns) == COLUMNS and len(table) == 360
    assert checks.holds.all(), checks.to_string()
    assert (table.gap_upper >= table.gap - 1e-12).all() and (table.gap_lower <= table.gap + 1e-12).all()
    best = largest_gaps(table)
    assert sorted(best.kind) == sorted(KINDS) and (best.consumers == 120).all()
    assert best.set_index("kind").loc["non-monotone", "gap"] > 1e-6


def test_the_checks_can_fail():
    settings = UniversalSettings()
    rows = [dict(zip(COLUMNS, (kind, "f", "all", 3, 0.5, 4, 1.0, 1.0, 0.0, 0.0, 0.0), strict=True)) for kind in KINDS]
    table = pd.DataFrame(rows)
    checks = universal_checks(table, settings)
    assert not checks.holds.iloc[1]  # no positive non-monotone gap
    table.loc[table.kind == "monotone", ["gap", "gap_upper"]] = 1e-6
    table.loc[table.kind == "one-sided", "gap_upper"] = -1e-6
    checks = universal_checks(table, settings)
    assert not checks.holds.iloc[0] and not checks.holds.iloc[2]


def test_evaluate_reports_the_consumer():
    consumer = draw_consumers(UniversalSettings(consumers=1, seed=2))[0]
    row = evaluate(consumer)
    assert row["kind"] == consumer.kind and row["side_size"] == len(consumer.side)
    assert row["gap"] == pytest.approx(row["gm_remap_value"] - row["optimal_value"])
