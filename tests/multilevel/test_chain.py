"""The sampled multi-level chain: exact marginals, certificate (and its failures), collusion, sampling."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chi2

from countdp.mechanisms.closed_forms import geometric
from countdp.multilevel.chain import ChainSettings, build_level_chain
from countdp.multilevel.collusion import joint_dp_check, path_joint
from countdp.multilevel.exact_forms import gm_table
from countdp.multilevel.exact_products import chain_products
from countdp.multilevel.rounding import round_table
from countdp.privacy.exact import RELEASE_K, exact_dp_check
from countdp.privacy.rounding import round_to_release
from tests.helpers.multilevel_checks import corrupted

LEVELS = ("1/2", "2/3", "9/10")


@pytest.fixture(scope="module")
def chain():
    return build_level_chain(5, LEVELS)


def python_chain(chain, k):
    """T_{k-1} ... T_0 W with numpy's object (Python-int) matrix product, independently of the multi-modular code."""
    out = chain.first.weights.astype(object)
    for T in chain.transitions[:k]:
        out = T.astype(object).dot(out)
    return out


def test_multimodular_products_equal_python_int_products():
    rng = np.random.default_rng(7)
    W = rng.integers(0, 2**62, (9, 9), dtype=np.int64)
    Ts = [rng.integers(0, 2**62, (9, 9), dtype=np.int64) for _ in range(3)]
    expected = W.astype(object)
    for T, got in zip(Ts, chain_products(W, Ts)[1:], strict=True):
        expected = T.astype(object).dot(expected)
        assert (got == expected).all()


def test_marginals_are_exact_distributions_close_to_gm(chain):
    assert chain.alphas == tuple(Fraction(a) for a in LEVELS)
    for k, a in enumerate(chain.alphas):
        A = chain.marginal(k)
        assert (A == python_chain(chain, k)).all()
        assert all(s == chain.level_denominator(k) == 2 ** (RELEASE_K * (k + 1)) for s in A.sum(axis=0))
        assert np.max(np.abs(A / chain.level_denominator(k) - geometric(chain.n, float(a)))) < 1e-12
    assert (chain.marginal(0) == chain.first.weights).all()


def test_certificate_holds_and_each_level_is_alpha_dp_by_fractions(chain):
    cert = chain.certify()
    assert cert.holds and all(v.holds for v in cert.levels) and all(c.holds for c in cert.collusion)
    assert {c.levels for c in cert.collusion} == {(0, 1), (0, 2), (1, 2), (0, 1, 2)}
    assert all(c.enumerated is True for c in cert.collusion)
    json.dumps(cert.to_dict())
    for k, a in enumerate(chain.alphas):  # every neighbouring ratio in [alpha, 1/alpha], as Fractions
        A = chain.marginal(k)
        ratios = {Fraction(A[i, j + 1], A[i, j]) for i in range(chain.n + 1) for j in range(chain.n)}
        assert min(ratios) >= a and max(ratios) <= 1 / a
        assert min(ratios) < Fraction(a) * (1 + Fraction(1, 10**6))  # nearly tight: the slack is tiny


def test_weights_are_valid_sampling_tables(chain):
    assert exact_dp_check(chain.first.weights, chain.alphas[0], chain.K).holds
    for T in chain.transitions:
        assert T.dtype == np.int64 and T.min() >= 0
        assert all(int(s) == 2**chain.K for s in T.astype(object).sum(axis=0))


def test_certificate_fails_on_a_corrupted_transition(chain):
    broken = corrupted(chain, 1)
    cert = broken.certify()
    assert not cert.holds
    assert cert.levels[0].holds and not cert.levels[1].holds
    for c in cert.collusion:
        assert c.holds == (c.levels[0] == 0)  # every set led by level 1 inherits its failure
        assert c.enumerated is None or c.enumerated == c.holds
    for T in broken.transitions:  # still valid sampling tables: the failure is the privacy of level 1
        assert all(int(s) == 2**chain.K for s in T.astype(object).sum(axis=0))


def test_certificate_fails_on_a_transition_whose_column_does_not_sum(chain):
    T = chain.transitions[1].copy()
    T[0, 0] -= 1
    broken = dataclasses.replace(chain, transitions=(chain.transitions[0], T))
    cert = broken.certify()
    assert not cert.holds and cert.levels[1].holds and not cert.levels[2].holds
    assert "not a valid sampling table" in cert.levels[2].reason


def test_collusion_joint_holds_for_the_chain_and_fails_for_independent_renoising(chain):
    n, a0, a1 = chain.n, chain.alphas[0], chain.alphas[1]
    J = path_joint(chain.first.weights, chain.transitions, (0, 1))
    assert joint_dp_check(lambda x: J[..., x], a0, n).holds
    assert not joint_dp_check(lambda x: J[..., x], a1, n).holds  # the set is no more private than level 0
    W0 = chain.first.weights.astype(object)
    W1 = round_to_release(geometric(n, float(a1)), a1).weights.astype(object)
    independent = W0[:, None, :] * W1[None, :, :]  # r_0 and r_1 drawn independently from x

    def indep(x):
        return independent[..., x]

    check = joint_dp_check(indep, a0, n)
    assert not check.holds and check.broken > 0
    assert joint_dp_check(indep, a0 * a1 * Fraction(999, 1000), n).holds  # composition: alpha_0 * alpha_1 (+slack)


def test_path_joint_marginalises_to_the_level_marginals(chain):
    J = path_joint(chain.first.weights, chain.transitions, (0, 1, 2))
    scale = 2**chain.K
    assert (J.sum(axis=(1, 2)) == chain.marginal(0) * scale**2).all()
    assert (J.sum(axis=(0, 1)) == chain.marginal(2)).all()
    assert (path_joint(chain.first.weights, chain.transitions, (2,)) == chain.marginal(2)).all()


def test_sampling_matches_the_exact_marginals_and_joint(chain):
    rng = np.random.default_rng(20240611)
    size, x = 200_000, 2
    draws = [rng.integers(0, 2**chain.K, size, dtype=np.int64) for _ in chain.alphas]
    levels = chain.sample(np.full(size, x), _words(chain, draws))
    for k, r in enumerate(levels):
        expected = np.array([float(v) for v in chain.marginal(k)[:, x] / chain.level_denominator(k)]) * size
        observed = np.bincount(r, minlength=chain.n + 1)
        stat = float(((observed - expected) ** 2 / expected).sum())
        assert chi2.sf(stat, chain.n) > 1e-6
    J = path_joint(chain.first.weights, chain.transitions, (0, 1))[..., x]
    expected = np.array([[float(v) for v in row] for row in J / chain.level_denominator(1)]).ravel() * size
    observed = np.bincount(levels[0] * (chain.n + 1) + levels[1], minlength=(chain.n + 1) ** 2)
    assert chi2.sf(float(((observed - expected) ** 2 / expected).sum()), expected.size - 1) > 1e-6


def test_every_interval_boundary_draw_maps_to_the_inverse_cdf(chain):
    """Draws at both ends of every output's interval map as searchsorted on the cumulative weights says."""
    D, N = 2**chain.K, chain.n + 1
    first_cum = np.cumsum(chain.first.weights, axis=0)  # [i, x]
    T_cum = np.cumsum(chain.transitions[0], axis=0)  # [i, j]
    x, j, i = (a.ravel() for a in np.meshgrid(np.arange(N), np.arange(N), np.arange(N), indexing="ij"))
    u0 = np.where(j == 0, 0, first_cum[np.maximum(j - 1, 0), x])  # the first draw that gives r_0 = j
    for u1 in (T_cum[i, j] - 1, np.minimum(T_cum[i, j], D - 1)):
        r = chain.sample(x, _words(chain, [u0, u1, np.zeros_like(u0)]))
        assert (r[0] == j).all()
        expected = np.array([np.searchsorted(T_cum[:, jj], uu, side="right") for jj, uu in zip(j, u1, strict=True)])
        assert (r[1] == expected).all()


def _words(chain, draws) -> np.ndarray:
    """The uniform 64-bit words whose top ``K`` bits are ``draws`` (one array per level), levels first."""
    return np.stack([np.asarray(d, dtype=np.uint64) << np.uint64(64 - chain.K) for d in draws])


def test_sample_rejects_bad_input(chain):
    zeros = np.zeros(3, dtype=np.uint64)
    with pytest.raises(ValueError, match="0..5"):
        chain.sample(np.array([0, 1, 9]), np.stack([zeros] * 3))
    with pytest.raises(ValueError, match="3 levels need"):
        chain.sample(np.array([0, 1, 2]), np.stack([zeros] * 2))
    with pytest.raises(ValueError, match="uint64"):
        chain.sample(np.array([0, 1, 2]), np.zeros((3, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="size 5 only"):
        chain.sample(np.array([0, 1, 2]), np.stack([zeros] * 3), sizes=np.array([5, 5, 4]))


def test_digest_is_reproducible_and_tracks_every_weight(chain):
    again = build_level_chain(5, [Fraction(1, 2), "2/3", Fraction(9, 10)])
    assert chain.digest() == again.digest() and len(chain.digest()) == 64
    assert corrupted(chain, 2).digest() != chain.digest()


def test_the_retry_loop_repairs_a_mixing_weight_that_is_too_small():
    n, a = 4, Fraction(1, 2)
    assert not exact_dp_check(round_table(gm_table(n, a), Fraction(0), RELEASE_K), a, RELEASE_K).holds
    chain = build_level_chain(n, ["1/2", "3/4"], settings=ChainSettings(lambda_margin=0.0))
    assert chain.certify().holds and chain.mixing[0] > 0


def test_moderate_n_certifies_without_enumeration():
    chain = build_level_chain(60, ["1/3", "1/2", "4/5"])
    cert = chain.certify()
    assert cert.holds and all(c.enumerated is None and c.structural for c in cert.collusion)
    assert max(v.max_abs_deviation for v in cert.levels) < 1e-12


@pytest.mark.parametrize("alphas", [("2/3", "1/2"), ("1/2", "1/2"), ("1/2", "1"), ()])
def test_bad_levels_are_refused(alphas):
    with pytest.raises(ValueError):
        build_level_chain(4, alphas)


def test_limits_are_refused():
    """Beyond the matrix chain's limit only GM is served (by the structural chain: test_structural_chain)."""
    with pytest.raises(ValueError):
        build_level_chain(11, LEVELS, settings=ChainSettings(max_n=10), mechanism="EM")
    with pytest.raises(ValueError):
        build_level_chain(4, LEVELS, K=40)


def test_certificate_fails_on_a_negative_transition_weight(chain):
    T = chain.transitions[1].copy()
    T[0, 0], T[1, 0] = -1, T[1, 0] + T[0, 0] + 1  # the column still sums to 2^K
    broken = dataclasses.replace(chain, transitions=(chain.transitions[0], T))
    cert = broken.certify()
    assert cert.levels[0].holds and cert.levels[1].holds and not cert.levels[2].holds and not cert.holds
    with pytest.raises(ValueError):
        broken.marginal(2)
