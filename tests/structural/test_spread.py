"""Template designs as structure: WM under L0 for any size from its canonical integer matrix.

Independent facts checked:

* the dense exact DP test (``countdp.privacy.exact.exact_dp_check``, every entry of the whole
  matrix) accepts what the structural certificate accepts, at several sizes of a range;
* three constructions of the weights agree exactly: placed blocks (``dense_weights``), column by
  column (``column``), and what the sampler sends each draw at every edge of every column's
  cumulative weights (so it samples exactly the column's weights);
* every corruption the tests build is refused by the certificate, and those that break a DP
  inequality are refused by the dense test too;
* the exact errors without the matrix equal the dense matrix's (``release_errors``);
* the canonical design is the design engine's proven optimum at its size, and at a larger size
  the spread's L0 is within the floor's share of the design engine's proven optimum there.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from countdp.design.designer import design_lp
from countdp.design.forms import template_form
from countdp.mechanisms.properties import check_property
from countdp.privacy.exact import IntegerMechanism, exact_dp_check
from countdp.privacy.expected_error import release_errors
from countdp.structural.errors import structural_errors
from countdp.structural.spread import StructuralSpread
from countdp.structural.spread_build import floors_needed
from countdp.structural.spread_errors import spread_errors
from countdp.values.catalogue import NAMED_DESIGNS
from countdp.values.objectives import objective_value

HALF = Fraction(1, 2)


@pytest.fixture(scope="module")
def form():
    """WM at alpha = 1/2: canonical size 319 (a second or two to design and prove), sizes 319..510."""
    return template_form(400, HALF, 62)


def _dense_dp(W: np.ndarray, alpha: Fraction) -> bool:
    """The dense exact test of the whole matrix (every DP inequality and every column total)."""
    return exact_dp_check(W, alpha, 62).holds


def test_the_certificate_holds_and_the_dense_test_agrees(form):
    assert form.certify().holds
    for n in sorted({form.sizes[0], form.sizes[0] + 1, 400, form.sizes[1]}):
        W = form.for_size(n).dense_weights()
        assert W.shape == (n + 1, n + 1)
        assert (W.sum(axis=0, dtype=object) == 1 << 62).all()
        assert _dense_dp(W, HALF), n


def _documented_segments(sized: StructuralSpread, j: int) -> list[tuple[int, int, int]]:
    """``(first draw, last draw, output)`` of every run of draws the documentation gives input ``j``:
    the floor's ``R_j`` draws first (output ``i`` takes ``f + [i < r]`` of them, in order), then the
    canonical column's rows in order, at the input's shift."""
    n = sized.n
    k, shift = (int(x) for x in sized.placement(np.array(j), n))
    R = int(sized.reserve) + int(sized.delta[k])
    f, r = divmod(R, n + 1)
    segments, start = [], 0
    for i in range(n + 1):
        size = f + (i < r)
        if size:
            segments.append((start, start + size - 1, i))
        start += size
    for t, weight in enumerate(sized.S[:, k].tolist()):
        if weight:
            segments.append((start, start + weight - 1, t + shift))
        start += weight
    assert start == 1 << 62
    return segments


def test_three_constructions_agree(form):
    """Placed blocks = column by column; the sampler sends each documented run of draws to its
    output (probed at both ends of every run), and those runs give each output its column weight."""
    for n in (form.sizes[0], form.sizes[0] + 37):
        sized = form.for_size(n)
        W = sized.dense_weights()
        assert np.array_equal(W, np.stack([sized.column(j) for j in range(n + 1)], axis=1))
        for j in range(0, n + 1, 11):
            segments = _documented_segments(sized, j)
            first, last, output = (np.array(x, dtype=np.int64) for x in zip(*segments, strict=True))
            columns = np.full(first.size, j)
            assert np.array_equal(sized.outputs(columns, first), output)
            assert np.array_equal(sized.outputs(columns, last), output)
            exact = {}
            for a, b, i in segments:
                exact[i] = exact.get(i, 0) + (b - a + 1)
            assert all(exact.get(i, 0) == int(W[i, j]) for i in range(n + 1))


def test_sampled_frequencies_follow_the_weights(form):
    n = 2000
    sized = form.for_size(n) if form.sizes[0] <= n <= form.sizes[1] else template_form(n, HALF, 62)
    rng = np.random.default_rng(0)
    j = 1000
    words = rng.integers(0, 2**63, 200_000, dtype=np.int64).astype(np.uint64) << np.uint64(1)
    out = sized.sample(np.full(words.size, j), words)
    p = sized.column(j)[j] / 2**62
    assert abs(np.mean(out == j) - p) < 5 * np.sqrt(p * (1 - p) / words.size)


def _corrupt(form: StructuralSpread, **changes) -> StructuralSpread:
    S = np.array(form.S)
    delta = np.array(form.delta)
    sigma = form.sigma
    if "entry" in changes:
        i, k, by = changes["entry"]
        S[i, k] += by
        delta[k] -= by
    if "move" in changes:
        S[changes["move"], form.c + 1] += 1
        delta[form.c + 1] -= 1
    if "delta" in changes:
        delta[changes["delta"]] += 1
    if "sigma" in changes:
        sigma = changes["sigma"]
    return StructuralSpread(form.mechanism, form.n, form.alpha, form.K, form.reserve, S, delta, sigma, form.sizes)


def test_corruptions_are_refused(form):
    c = form.c
    big = int(form.S[c, c])
    cases = {
        "an entry raised past its neighbours": _corrupt(form, entry=(c, c - 5, big)),
        "a middle column not moved exactly": _corrupt(form, move=c + 3),
        "a column that does not total 2^K": _corrupt(form, delta=4),
        "a floor too small to cover sigma": _corrupt(form, sigma=form.reserve),
        "no slack for the closure's rounding": _corrupt(form, sigma=0),
    }
    refused = {name: not broken.certify().holds for name, broken in cases.items()}
    assert all(refused.values()), refused
    # the DP corruption is refused by the dense exact test too
    W = cases["an entry raised past its neighbours"].for_size(form.sizes[0]).dense_weights()
    assert not _dense_dp(W, HALF)


def test_the_spread_keeps_wm_properties():
    """WM is WH + RM + CM + S: the closure and the floors keep each within 1e-9 (the property checks'
    tolerance), at a size beyond the canonical one, at alpha = 3/4 where WM is not GM."""
    sized = template_form(700, Fraction(3, 4), 62).for_size(700)
    P = sized.dense_weights() / 2**62
    for name in ("WH", "RM", "CM", "S"):
        assert check_property(P, name).holds, name


def test_errors_without_the_matrix_are_the_dense_ones(form):
    for n in (form.sizes[0], 400, form.sizes[1]):
        sized = form.for_size(n)
        assert spread_errors(sized) == release_errors(IntegerMechanism(HALF, 62, sized.dense_weights()))
        assert structural_errors(sized, dense_max_n=0) == spread_errors(sized)


@pytest.mark.parametrize("alpha, n", [(HALF, 400), (Fraction(3, 4), 600)])
def test_the_spread_is_the_proven_design(alpha, n):
    """At a size of the matrix path the design engine's LP proves WM's optimum there by its own
    route (GM at 1/2, a template design at 3/4, where GM is not column monotone); the spread's L0
    is within the floor's share (and the optimality gap) of that proven optimum, and the dense test
    accepts its weights.  (The named design at these sizes is the spread itself.)"""
    spread = template_form(n, alpha, 62).for_size(n)
    assert _dense_dp(spread.dense_weights(), alpha)
    design = design_lp(n, alpha, NAMED_DESIGNS["WM"], "L0")
    assert design.status == "optimal"
    l0 = structural_errors(spread).l0_uniform
    assert float(l0) == pytest.approx(float(release_errors(design).l0_uniform), abs=1e-9)
    assert float(l0) * (n + 1) / n == pytest.approx(objective_value(design.matrix, "L0"), abs=1e-9)  # L0 rescaled
    assert spread.source["optimal_proven_at_n"] == spread.m


def test_a_reserve_difference_is_refused_by_the_floors_condition_alone(form):
    """Mass moved from a diagonal entry into its column's reserve keeps every entry's ratio and every
    total, but that column's floor is then far above its neighbours': the floors' condition (and only
    it) refuses, and the dense test refuses the matrix too."""
    S, delta = np.array(form.S), np.array(form.delta)
    moved = 8 * form.reserve
    S[5, 5] -= moved
    delta[5] += moved
    broken = StructuralSpread(form.mechanism, form.n, form.alpha, form.K, form.reserve, S, delta, form.sigma,
                              form.sizes)
    check = broken.certify()
    assert not check.holds and check.reason.startswith("each floor covers sigma"), check.reason
    assert not _dense_dp(broken.for_size(form.sizes[1]).dense_weights(), HALF)
    assert floors_needed(delta, HALF, form.sizes[1] + 1, form.sigma) > form.reserve


def test_an_altered_total_past_2_63_is_refused():
    """Column totals are summed exactly: five entries of 2^62 sum to 2^62 in wrapping int64 arithmetic,
    and the certificate must still see 5 * 2^62."""
    S = np.zeros((8, 8), dtype=np.int64)
    S[0, :] = 1 << 62  # every column totals 2^62 ...
    S[1:5, 2] = 1 << 62  # ... except column 2: 5 * 2^62, which int64 wraps to 2^62
    assert int(S[:, 2].sum()) == 1 << 62
    check = StructuralSpread("WM", 7, HALF, 62, 0, S, np.zeros(8, dtype=np.int64), 1, (7, 7)).certify()
    assert not check.holds and "every column totals 2^K" in check.reason, check.reason
