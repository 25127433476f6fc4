"""Gong and Meng's Algorithm 1 (MIS) against the exact conditional law on a small table.

The 2 x 3 table and invariants of ``test_invariants_block_sums``; the proposal index set leaves
cells 0, 2 and 5 to be solved (as their {2..22, 24..45} leaves 1, 23 and 46).  The exact law is
brute-force enumeration; a long thinned chain must match it, whatever epsilon~.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from countdp.invariants.mis import MISProblem, MISSettings, double_geometric, run_mis

X = np.array([1, 0, 2, 1, 2, 1])
A = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [0, 1, 1, 0, 1, 1]])
INDEX = (1, 3, 4)
ALPHA = math.exp(-0.5)


def exact_law() -> dict[tuple[int, ...], float]:
    """The conditional law by enumeration: every non-negative table with ``A y = A x``, weighted alpha^L1."""
    a, total = A @ X, int(X.sum())
    weights = {}
    for head in itertools.product(range(total + 1), repeat=X.size - 1):
        y = np.array((*head, total - sum(head)))
        if y[-1] >= 0 and (A @ y == a).all():
            weights[tuple(y.tolist())] = ALPHA ** int(np.abs(y - X).sum())
    z = sum(weights.values())
    return {y: w / z for y, w in weights.items()}


def problem() -> MISProblem:
    return MISProblem(X, A, A @ X, INDEX, ALPHA)


@pytest.mark.parametrize("epsilon_tilde", [0.4, 0.8])
def test_thinned_chain_matches_the_exact_law(epsilon_tilde):
    law = exact_law()
    run = run_mis(problem(), epsilon_tilde, X, 120_000, np.random.default_rng(11), thin=30, burn_in=1000)
    assert len(run.draws) == (120_000 - 1000) // 30
    assert (run.draws @ A.T == A @ X).all() and (run.draws >= 0).all()
    tables = list(law)
    index = {y: i for i, y in enumerate(tables)}
    counts = np.bincount([index[tuple(r)] for r in run.draws.tolist()], minlength=len(tables))
    expected = np.array([law[y] for y in tables]) * len(run.draws)
    big = expected >= 5
    observed, wanted = counts[big], expected[big]
    if (~big).any():
        observed, wanted = np.append(observed, counts[~big].sum()), np.append(wanted, expected[~big].sum())
    assert stats.chisquare(observed, wanted).pvalue > 1e-3
    assert 0 < run.acceptance_rate < 1


def test_whole_chain_is_kept_without_thinning_and_starts_moving_from_the_start():
    run = run_mis(problem(), 0.6, X, 500, np.random.default_rng(2))
    assert run.draws.shape == (500, X.size) and run.steps == 500
    changes = int((np.diff(run.draws, axis=0) != 0).any(axis=1).sum()) + int((run.draws[0] != X).any())
    assert changes <= run.accepted  # a move needs an acceptance (accepting an identical proposal moves nothing)


def test_the_accept_reject_chain_does_not_depend_on_the_search_window():
    # the window only sets how many steps one vectorised compare looks at; Algorithm 1 has no such parameter
    runs = [run_mis(problem(), eps, X, 3000, np.random.default_rng(5), thin=7, burn_in=11,
                    settings=MISSettings(chunk=1000, window=window)) for eps in (0.3, 1.5) for window in (1, 5, 4096)]
    for first, other in ((runs[0], runs[1]), (runs[0], runs[2]), (runs[3], runs[4]), (runs[3], runs[5])):
        assert first.accepted == other.accepted and (first.draws == other.draws).all()
    assert runs[0].accepted != runs[3].accepted


def test_acceptance_probability_is_one_for_a_proposal_equal_to_the_target_without_constraints():
    # one equality on two cells and a centre far from 0: p(s) restricted to the line is alpha^(2|u|) and the
    # proposal on cell 0 is double geometric at epsilon~; with epsilon~ = 2 epsilon the ratio p/q is constant
    center = np.array([400, 400])
    run = run_mis(MISProblem(center, np.array([[1, 1]]), np.array([800]), (0,), ALPHA), 1.0, center, 2000,
                  np.random.default_rng(0))
    assert run.accepted == run.steps


def test_double_geometric_moments():
    a = math.exp(-0.7)
    u = double_geometric(np.random.default_rng(1), a, 400_000)
    assert abs(u.mean()) < 4 * math.sqrt(2 * a / (1 - a) ** 2 / u.size)
    assert abs(u.var() / (2 * a / (1 - a) ** 2) - 1) < 0.02
    assert abs((u == 0).mean() - (1 - a) / (1 + a)) < 0.005


def test_bad_proposal_index_sets_and_starts_are_refused():
    with pytest.raises(ValueError, match="invertible"):
        run_mis(MISProblem(X, A, A @ X, (0, 1, 2), ALPHA), 0.6, X, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="invertible"):
        run_mis(MISProblem(X, A, A @ X, (1, 3), ALPHA), 0.6, X, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="start"):
        run_mis(problem(), 0.6, X + 1, 10, np.random.default_rng(0))
