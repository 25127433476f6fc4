"""GM's structural level chain, against independent facts.

* The kernel's rule (keep ``r`` with ``w_r``, else ``clamp(r + Z_beta)``) with exact masses is the
  solved ``T = GM_beta GM_alpha^-1`` (Fractions, no closed form shared with the construction).
* Each realized level, from the chain's own ``column()`` joint, is exactly ``alpha_k``-DP by brute
  force and lies within the certificate's proven deviation of the exact GM(n, alpha_k); every
  colluding set is ``alpha_min``-DP by enumeration.
* Sampling at reduced bit width: enumerating every draw (both words) reproduces the weights.
* The certificate fails on tampered tables, and at n = 10^6 it builds, certifies and samples in seconds.
"""

from __future__ import annotations

import time
from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest

from countdp.multilevel.certificate import object_dp_check
from countdp.multilevel.chain import ChainSettings, build_level_chain
from countdp.multilevel.collusion import joint_dp_check
from countdp.multilevel.exact_forms import gm_exact
from countdp.multilevel.structural_chain import StructuralLevelChain, build_structural_chain
from countdp.multilevel.structural_kernel import StructuralKernel
from countdp.multilevel.transitions import gm_transition, stay_weights

LEVELS = ("1/2", "2/3", "9/10")


def _exact_rule(n: int, alpha: Fraction, beta: Fraction) -> np.ndarray:
    """``T[:, r] = w_r e_r + (1 - w_r) Pr[clamp(r + Z) = .]`` with Z's exact two-sided geometric masses."""
    w_in, w_edge = stay_weights(alpha, beta)
    c = (1 - beta) / (1 + beta)
    T = np.full((n + 1, n + 1), Fraction(0), dtype=object)
    for r in range(n + 1):
        w = w_edge if r in (0, n) else w_in
        T[r, r] += w
        for i in range(n + 1):
            if 0 < i < n:
                noise = c * beta ** abs(i - r)
            else:  # clamped: Pr[Z <= -r] or Pr[Z >= n - r]
                noise = beta ** (r if i == 0 else n - r) / (1 + beta)
            T[i, r] += (1 - w) * noise
    return T


@pytest.mark.parametrize("n", [1, 2, 5, 9])
@pytest.mark.parametrize("alpha, beta", [("1/2", "2/3"), ("2/3", "9/10"), ("1/3", "1/2")])
def test_the_keep_or_renoise_rule_is_the_exact_transition(n, alpha, beta):
    a, b = Fraction(alpha), Fraction(beta)
    T = _exact_rule(n, a, b)
    assert (T == gm_transition(n, a, b)).all()
    assert (T.dot(gm_exact(n, a)) == gm_exact(n, b)).all()


@pytest.mark.parametrize("n", [1, 3, 6, 12])
def test_every_level_is_exactly_dp_and_near_gm(n):
    chain = build_structural_chain(n, LEVELS)
    certificate = chain.certify()
    assert certificate.holds and chain.K == 62
    joint = chain.column(np.arange(n + 1))  # axes (r_0, r_1, r_2, x)
    assert all(s == chain.denominator for s in joint.reshape(-1, n + 1).sum(axis=0))
    for k, alpha in enumerate(chain.alphas):
        A = joint.sum(axis=tuple(a for a in range(3) if a != k))
        assert (A == chain.marginal(k) * (1 << (62 * (2 - k)))).all()  # column() and marginal() agree
        den = chain.denominator
        assert object_dp_check(A, den, alpha).holds
        deviation = max(abs(Fraction(int(v), den) - g) for v, g in zip(A.ravel(), gm_exact(n, alpha).ravel(),
                                                                      strict=True))
        assert 0 < deviation <= Fraction(certificate.levels[k].max_abs_deviation) * Fraction(1001, 1000)


@pytest.mark.parametrize("n", [2, 4])
def test_every_colluding_set_is_as_private_as_its_least_private_level(n):
    chain = build_structural_chain(n, LEVELS)
    joint = chain.column(np.arange(n + 1))
    for size in (2, 3):
        for group in combinations(range(3), size):
            J = joint.sum(axis=tuple(a for a in range(3) if a not in group))
            assert joint_dp_check(lambda x, J=J: J[..., x], chain.alphas[group[0]], n).holds
    assert all(c.enumerated for c in chain.certify().collusion)


def _enumerated(form, column: int, K: int, coarse: int) -> np.ndarray:
    """Every draw of ``form`` at ``column``: the counts of each output over all ``2^K`` draws."""
    bits = K - coarse
    w1 = np.repeat(np.arange(1 << coarse, dtype=np.int64), 1 << bits)
    w2 = np.tile(np.arange(1 << bits, dtype=np.int64), 1 << coarse)
    cols = np.full(w1.shape, column, dtype=np.int64)
    out = form.outputs(cols, w1, None, w2 if form.wide else None) if form.wide else \
        form.outputs(cols, (w1 << bits) | w2)
    return np.bincount(out, minlength=form.n + 1)


@pytest.mark.parametrize("K, coarse", [(18, 18), (18, 11)])
def test_sampling_every_draw_gives_the_weights(K, coarse):
    """At 2^18 draws per level (one word, or two of 11 and 7 bits), each table samples exactly its weights."""
    n = 4
    chain = build_structural_chain(n, ("1/2", "2/3"), K=K, coarse_bits=coarse)
    assert chain.certify().holds and chain.first.wide == (coarse < K)
    for x in range(n + 1):
        assert (_enumerated(chain.first, x, K, coarse) == chain.first.column(x)).all()
    inner, edge = chain.kernels[0]
    for r in range(n + 1):
        form = edge if r in (0, n) else inner
        assert (_enumerated(form, r, K, coarse) == chain.transition_weights(0)[:, r]).all()


def test_sample_follows_the_tables_and_asks_second_words_only_when_wide():
    n = 5
    chain = build_structural_chain(n, LEVELS)
    rng = np.random.default_rng(0)
    counts = rng.integers(0, n + 1, 20000)
    out = chain.sample(counts, rng.integers(0, 2**64, (3, counts.size), dtype=np.uint64))
    assert out.shape == (3, counts.size) and out.min() >= 0 and out.max() <= n
    # level 1 given level 0 follows the transition: the draws at r_0 = 2 that stay are about w_in
    stay = np.mean(out[1][out[0] == 2] == 2)
    weights = chain.transition_weights(0)[:, 2]
    assert abs(stay - weights[2] / chain.first.denominator) < 0.02
    with pytest.raises(ValueError, match="uint64 words shaped"):
        chain.sample(counts, np.zeros((2, counts.size), dtype=np.uint64))


def _replaced(pair, **changes):
    inner, edge = pair
    fields = {"keep": inner.keep, "tail": inner.tail, "centre": inner.centre, "reserve": inner.reserve}
    fields.update(changes)
    return (StructuralKernel(inner.n, inner.alpha, inner.K, fields["reserve"], fields["keep"], fields["tail"],
                             fields["centre"], False), edge)


def test_the_certificate_fails_on_tampered_tables():
    n = 4
    chain = build_structural_chain(n, ("1/2", "2/3"))
    inner, edge = chain.kernels[0]
    # no re-noising at all (every non-floor draw stays): level 1 is about level 0, not 2/3-DP (brute force agrees)
    frozen = StructuralLevelChain(n, chain.alphas, chain.first, [tuple(
        StructuralKernel(k.n, k.alpha, k.K, k.reserve, k.denominator - k.reserve, np.zeros(0, np.int64), 0, k.edge)
        for k in (inner, edge))])
    certificate = frozen.certify()
    assert not certificate.holds and certificate.levels[0].holds and not certificate.levels[1].holds
    assert not object_dp_check(frozen.marginal(1), 1 << (2 * chain.K), Fraction(2, 3)).holds
    # one draw too many: not a sampling table
    broken = StructuralLevelChain(n, chain.alphas, chain.first, [_replaced(chain.kernels[0], keep=inner.keep + 1)])
    assert "not a valid sampling table" in broken.certify().levels[1].reason
    # the two column types with different floors: the floor argument no longer applies
    uneven = StructuralLevelChain(n, chain.alphas, chain.first,
                                  [_replaced(chain.kernels[0], reserve=inner.reserve + 1, keep=inner.keep - 1)])
    assert "share their floor" in uneven.certify().levels[1].reason
    # a stay mass moved into the first tail entry: still a valid table, but the proof no longer covers it
    tail = np.array(inner.tail).copy()
    tail[0] += inner.keep // 4
    moved = StructuralLevelChain(n, chain.alphas, chain.first, [_replaced(
        chain.kernels[0], keep=inner.keep - inner.keep // 4 * 2 + inner.keep // 4, tail=tail,
        centre=inner.centre - inner.keep // 4)])
    assert not moved.certify().holds


def test_build_level_chain_hands_large_gm_groups_to_the_structural_chain():
    small = build_level_chain(12, LEVELS, settings=ChainSettings(max_n=10))
    assert isinstance(small, StructuralLevelChain) and small.certify().holds
    assert not isinstance(build_level_chain(12, LEVELS), StructuralLevelChain)
    with pytest.raises(ValueError, match="supports n <="):
        build_level_chain(2000, LEVELS, mechanism="EM")


def test_a_million_builds_certifies_and_samples_in_seconds():
    start = time.perf_counter()
    chain = build_level_chain(10**6, LEVELS)
    certificate = chain.certify()
    assert isinstance(chain, StructuralLevelChain) and certificate.holds and chain.K == 124
    assert all(c.structural and c.enumerated is None for c in certificate.collusion)
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 10**6 + 1, 200_000)
    asked = []

    def second(positions):
        asked.append(len(positions))
        return rng.integers(0, 2**64, len(positions), dtype=np.uint64)

    out = chain.sample(counts, rng.integers(0, 2**64, (3, counts.size), dtype=np.uint64), second=second)
    assert time.perf_counter() - start < 20
    for k, alpha in enumerate(chain.alphas):  # GM's variance 2 alpha / (1 - alpha)^2
        a = float(alpha)
        assert abs(np.mean((out[k] - counts) ** 2.0) / (2 * a / (1 - a) ** 2) - 1) < 0.05
    assert sum(asked) < 10 and chain.nbytes < 2**22
    with pytest.raises(ValueError, match="n = 1000000 is beyond this machine|too large|beyond"):
        chain.column(3)


def test_the_certificate_states_its_argument():
    record = build_structural_chain(3, LEVELS).certify().to_dict()
    assert record["holds"] and "Markov chain" in record["argument"] and record["representation"] == "structural chain"
