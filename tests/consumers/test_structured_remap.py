"""The consumer's remap at large n (:mod:`countdp.consumers.structured_remap`) against independent facts.

* **The exact path** (:func:`countdp.consumers.remap.optimal_release_remap`: the dense LP, certified in
  rational arithmetic) wherever both run (``n <= 128``): the two certified brackets of the optimum
  must overlap, ``exact.dual <= structured.primal`` and ``structured.dual <= exact.primal``.
* **Closed forms** at ``n`` in the thousands: GM deep inside ``0..n`` is two-sided geometric noise,
  so the optimum is its expected loss, ``2a/(1-a^2)`` (L1), ``2a/(1+a)`` (L0), ``2a^(D+1)/(1+a)``
  (L0d:D), ``2a/(1-a)^2`` (L2); UM says nothing, so the optimum is the consumer's game against its
  side information alone (half the span for L1, ``1 - 1/|S|`` for L0 on an interval).
* **Another evaluator**: the identity's per-input losses of a structural form from its categories
  (:func:`countdp.evaluate.structural.column_losses`), and the answers' weighted losses from the
  dense loss matrix (:func:`countdp.consumers.losses.loss_matrix`) and from exact rationals.
* **Failing checks**: the certificate refuses a spoiled remap and a poor prior, and the path stops
  (``CertificateError``) rather than answer when its window LP would be too large.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from countdp.consumers.answer_table import REMAP_BITS, AnswerTable
from countdp.consumers.losses import loss_matrix
from countdp.consumers.remap import CertificateError, RemapSettings, optimal_release_remap
from countdp.consumers.risks import answer_risks, chain_length, gamma
from countdp.consumers.structured_certificate import (
    first_pass,
    float_certificate,
    input_losses,
    prior_risks,
    rounding_chain,
)
from countdp.consumers.structured_remap import decay_rate, structured_remap
from countdp.consumers.weight_blocks import WeightBlocks
from countdp.design.designer import design_named
from countdp.evaluate.structural import column_losses
from countdp.multilevel.structural_kernel import kernel
from countdp.structural.catalogue import closed_structural_form

HALF = Fraction(1, 2)
SETTINGS = RemapSettings()


@pytest.mark.parametrize("spec", ["L0", "L0d:2", "L0d:40", "L1", "L2"])
def test_answer_risks_are_the_loss_matrix_products(spec):
    rng = np.random.default_rng(3)
    n = 37
    w = rng.random((4, n + 1)) * (rng.random((4, n + 1)) < 0.7)
    assert np.allclose(answer_risks(spec, w), w @ loss_matrix(spec, n), rtol=1e-13, atol=0)


@pytest.mark.parametrize("spec", ["L0d:1", "L1", "L2"])
def test_answer_risks_are_within_their_rounding_bound(spec):
    """Every entry within ``gamma_k`` (relative) of the exact rational sum of the same floats."""
    rng = np.random.default_rng(11)
    n = 60
    w = rng.random((1, n + 1)) ** 8
    B = answer_risks(spec, w)[0]
    L = loss_matrix(spec, n)
    exact = [sum(Fraction(float(x)) * int(L[i, a]) for i, x in enumerate(w[0])) for a in range(n + 1)]
    bound = gamma(chain_length(spec, n + 1))
    assert all(abs(Fraction(float(b)) - e) <= Fraction(bound) * e for b, e in zip(B, exact, strict=True))


CASES = [("GM", 40, "L1", None), ("GM", 40, "L0d:2", None), ("GM", 64, "L2", None),
         ("GM", 100, "L0", [*range(0, 5), *range(50, 90)]),
         ("EM", 40, "L1", None), ("EM", 50, "L0", [3, 4, 5, 6, 7]), ("EM", 64, "L2", None),
         ("UM", 40, "L1", range(5, 30)), ("UM", 40, "L0", None), ("GM", 100, "L0", [1, 4, 5, 60])]


@pytest.mark.parametrize("mechanism, n, spec, side", CASES)
def test_the_brackets_of_both_paths_overlap(mechanism, n, spec, side):
    released = design_named(mechanism, n, "1/2").released
    S = None if side is None else np.array(list(side))
    exact = optimal_release_remap(released, loss_matrix(spec, n), S)
    structured = structured_remap(released, spec, S)
    e, s = exact.certificate, structured.certificate
    assert e.holds and s.holds and not s.exact
    assert float(e.dual) <= s.primal + 1e-12 and s.dual <= float(e.primal) + 1e-12
    assert structured.worst_loss == pytest.approx(exact.worst_loss, abs=2e-9 * max(1.0, exact.worst_loss))


def test_the_remap_is_what_it_claims():
    """Column-stochastic exactly, and its losses are the dense sums of the release weights."""
    n = 60
    released = design_named("EM", n, "1/2").released
    result = structured_remap(released, "L1", np.arange(10, 50))
    table = result.table
    assert all(int(v) == 1 << REMAP_BITS for v in np.add.reduceat(table.numerators, table.indptr[:-1]))
    R = result.remap.toarray()
    M = released.weights / float(released.denominator)
    direct = np.einsum("ia,ai->i", loss_matrix("L1", n), R @ M)
    assert np.allclose(result.per_input, direct, rtol=1e-13)
    assert result.worst_loss == pytest.approx(direct[10:50].max(), rel=1e-13)
    assert set(result.attained.tolist()) <= set(range(10, 50))
    assert result.prior.sum() == pytest.approx(1.0) and not result.prior[:10].any()


LARGE = 3000


@pytest.fixture(scope="module")
def gm_large():
    return design_named("GM", LARGE, "1/2").released


@pytest.mark.parametrize("spec, value, rho", [("L1", 4 / 3, 0.8), ("L0", 2 / 3, 0.5), ("L0d:2", 1 / 6, 0.5 ** 0.2),
                                              ("L2", 4.0, None)])
def test_gm_at_large_n_is_worth_its_noise(gm_large, spec, value, rho):
    """The value is the noise's expected loss, and the least favourable prior found is geometric at the
    closed-form rate (``2a/(1+a^2)`` for L1, ``a`` for L0, ``a^(1/(2D+1))`` for L0d:D) about its peak."""
    result = structured_remap(gm_large, spec)
    c = result.certificate
    assert c.holds and c.dual <= value * (1 + 1e-12) and value <= c.primal * (1 + 1e-12)
    assert result.table.N == LARGE + 1 and result.windows == 0
    if rho is not None:
        peak = int(np.argmax(result.prior))
        ratios = result.prior[peak + 1:peak + 6] / result.prior[peak:peak + 5]
        assert np.allclose(ratios, rho, rtol=1e-6) and np.allclose(result.prior[peak - 5:peak][::-1], result.prior[
            peak + 1:peak + 6], rtol=1e-9)


def test_gm_losses_are_the_structural_evaluators(gm_large):
    """Read at face value (the identity remap), every input's loss is the categories' sum of
    :func:`countdp.evaluate.structural.column_losses`; the reference remap's are what it claims."""
    blocks = WeightBlocks(gm_large, SETTINGS.block_entries)
    identity = AnswerTable.deterministic(np.arange(LARGE + 1))
    for spec, measure in (("L0", "L0"), ("L0d:1", "L0d:1"), ("L2", "RMSE")):
        assert np.allclose(input_losses(blocks, spec, identity), column_losses(gm_large, measure), rtol=1e-12,
                           atol=1e-15)
        reference, losses = first_pass(blocks, spec, np.arange(LARGE + 1))
        assert np.allclose(losses, input_losses(blocks, spec, AnswerTable.deterministic(reference)), rtol=1e-13)
        assert np.array_equal(reference[5:-5], np.arange(5, LARGE - 4))  # away from the ends, itself


def test_five_possible_counts_are_worth_what_n_4_is(gm_large):
    """A consumer who knows the count is one of five consecutive values gets from GM at n = 3000 what it
    gets at n = 4 knowing nothing (releases beyond the five say no more than clamping does): the exact
    path's value at n = 4."""
    small = optimal_release_remap(design_named("GM", 4, "1/2").released, loss_matrix("L1", 4))
    large = structured_remap(gm_large, "L1", np.arange(1000, 1005))
    assert float(small.certificate.dual) <= large.certificate.primal
    assert large.certificate.dual <= float(small.certificate.primal)


@pytest.mark.parametrize("spec, side, value", [("L1", (100, 2100), 1000.0), ("L2", (0, 3000), 1500.0 ** 2),
                                               ("L0", (10, 409), 1 - 1 / 400)])
def test_um_is_the_game_against_the_side_information(spec, side, value):
    released = closed_structural_form("UM", LARGE, HALF)
    result = structured_remap(released, spec, np.arange(side[0], side[1] + 1))
    assert result.certificate.holds
    assert result.certificate.dual <= value * (1 + 1e-12) <= result.certificate.primal * (1 + 2e-12)


def test_the_decay_rates_are_the_closed_forms():
    """GM's interior row ``a^|k|``: the geometric prior that leaves the identity a Bayes response decays at
    ``2a/(1+a^2)`` for L1 (median), ``a`` for L0 (mode), ``a^(1/(2D+1))`` for L0d:D (window)."""
    k = np.arange(-200, 201)
    for a in (0.5, 0.8):
        profile = a ** np.abs(k).astype(float)
        assert decay_rate("L1", k, profile, 0) == pytest.approx(2 * a / (1 + a * a), rel=1e-9)
        assert decay_rate("L0", k, profile, 0) == pytest.approx(a, rel=1e-9)
        assert decay_rate("L0d:2", k, profile, 0) == pytest.approx(a ** (1 / 5), rel=1e-9)


def test_the_certificate_refuses_a_spoiled_remap_and_a_poor_prior(gm_large):
    blocks = WeightBlocks(gm_large, SETTINGS.block_entries)
    good = structured_remap(gm_large, "L1")
    chain = rounding_chain("L1", LARGE + 1, 1)
    risks, _ = prior_risks(blocks, "L1", good.prior)
    assert float_certificate(good.per_input.max(), risks, good.prior.sum(), chain, 1e-9).holds
    answers = np.arange(LARGE + 1)
    answers[1500:1510] += 3  # ten releases read three too high
    spoiled = input_losses(blocks, "L1", AnswerTable.deterministic(answers))
    assert not float_certificate(spoiled.max(), risks, good.prior.sum(), chain, 1e-9).holds
    uniform = np.ones(LARGE + 1)
    weak, _ = prior_risks(blocks, "L1", uniform)
    assert not float_certificate(good.per_input.max(), weak, uniform.sum(), chain, 1e-9).holds
    widened = float_certificate(good.per_input.max(), risks, good.prior.sum(), chain, 1e-9)
    assert widened.primal > good.per_input.max() and widened.dual < risks.sum() / good.prior.sum()


def test_the_path_stops_rather_than_answer_uncertified():
    """EM's edges are its hard inputs (5/3 against 4/3 inside): without a window LP the bounds do not meet,
    and with too small a window allowed the LP is refused; either way ``CertificateError``, no answer."""
    released = design_named("EM", 300, "1/2").released
    assert structured_remap(released, "L1").windows >= 1
    with pytest.raises(CertificateError, match="duality gap"):
        structured_remap(released, "L1", settings=RemapSettings(window_rounds=0))
    with pytest.raises(CertificateError, match="window LP"):
        structured_remap(released, "L1", settings=RemapSettings(window_entries=1000))


def test_a_float_matrix_or_a_form_without_float_blocks_is_refused():
    with pytest.raises(ValueError, match="certified mechanism"):
        structured_remap(np.eye(4), "L1")
    transition = kernel(200, Fraction(1, 4), HALF, 62, 201 * 16, False)  # certified, but no structured_float
    with pytest.raises(ValueError, match="float blocks of the weights, which a StructuralKernel"):
        structured_remap(transition, "L1")
