"""Statistical audit of the release path (countdp.privacy.audit): passes DP mechanisms, catches broken ones.

Every audit uses a fixed seed, so the outcomes below are deterministic; the false-positive
bound (at most 1 - confidence per audit of a truly DP sampler) is what makes the "passes"
assertions safe to keep when seeds or sample sizes change.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy.stats import binomtest

from countdp.design.designer import design_named
from countdp.mechanisms.closed_forms import geometric, uniform
from countdp.privacy.audit import (
    AuditResult,
    audit,
    audit_counts,
    audit_sniper,
    matrix_sampler,
    sample_counts,
)
from countdp.privacy.audit_events import clopper_pearson, event_masks
from countdp.privacy.sampling import SystemRandomSource, release

SAMPLES = 200_000


@functools.cache
def designed(name: str, n: int, alpha: float):
    """A certified design: the audit samples its integer release weights with the release sampler."""
    return design_named(name, n, alpha)


def broken_gm(n: int = 4, alpha: float = 0.5, row: int = 1, col: int = 2, factor: float = 1.5) -> np.ndarray:
    """GM with one entry raised by ``factor`` (mass taken from the diagonal): one ratio is factor/alpha."""
    P = geometric(n, alpha).copy()
    extra = (factor - 1) * P[row, col]
    P[row, col] += extra
    P[col, col] -= extra
    return P


def spread_violation(n: int = 20, excess: float = 1.25) -> np.ndarray:
    """UM whose middle column moves mass to the low outputs: every low output's ratio is 1.25.

    At alpha = 0.9 (1/alpha = 1.11) each single output exceeds the bound by only 12.5% on an
    event of probability 1/21, which 20,000 draws cannot resolve; the prefix {i < n/2} carries
    the same excess on probability ~0.6 and is caught.
    """
    P = uniform(n).copy()
    h = n // 2
    P[:h, h] *= excess
    P[h + 1:, h] *= 2 - excess
    return P


def two_sided_geometric_sampler(n: int, alpha: float):
    """GM implemented independently of the matrix: clamp(j + X - Y), X, Y ~ Geometric(1 - alpha) - 1."""

    def sample(counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        noise = rng.geometric(1 - alpha, counts.shape) - rng.geometric(1 - alpha, counts.shape)
        return np.clip(counts + noise, 0, n).astype(np.int64)

    return sample


# --- DP mechanisms pass ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["GM", "EM", "UM", "WM", "WH"])
@pytest.mark.parametrize("n", [1, 2, 4, 7])
@pytest.mark.parametrize("alpha", [0.5, 0.9])
def test_dp_mechanisms_pass(name, n, alpha):
    result = audit(designed(name, n, alpha), alpha, samples_per_input=SAMPLES, rng=20180416)
    assert isinstance(result, AuditResult)
    assert result.passed, result.summary()
    assert result.violations == ()
    assert result.worst_ratio_lower <= 1 / alpha
    assert result.samples == SAMPLES * (n + 1)
    assert result.samples_per_input == SAMPLES
    assert result.confidence == 0.99
    assert result.bounds == 2 * (n + 1) * (n + 1)  # lower + upper per (output, input)
    assert result.per_bound_delta == pytest.approx(0.01 / result.bounds)
    assert result.counts.sum() == result.samples


@pytest.mark.parametrize("events", ["prefixes", "suffixes", "thresholds", "all"])
def test_dp_mechanisms_pass_event_families(events):
    for name in ("GM", "EM", "WM"):
        result = audit(designed(name, 7, 0.9), 0.9, samples_per_input=SAMPLES, events=events, rng=7)
        assert result.passed, result.summary()


def test_tight_ratios_are_resolved():
    """GM's ratios are exactly 1/alpha, so a good audit comes close to 1/alpha without crossing it.

    The plug-in ratio alone (no confidence bound) exceeds 1/alpha: a naive test would fail GM.
    """
    alpha = 0.5
    result = audit(geometric(7, alpha), alpha, samples_per_input=SAMPLES, rng=11)
    assert result.passed
    assert 0.95 / alpha < result.worst_ratio_lower <= 1 / alpha
    assert result.max_empirical_ratio > 1 / alpha  # sampling noise on small events
    assert result.epsilon_lower_bound == pytest.approx(np.log(result.worst_ratio_lower))


def test_sniper_passes_dp_mechanisms():
    for name in ("GM", "EM", "UM", "WM"):
        result = audit_sniper(designed(name, 4, 0.9), 0.9, samples_per_input=SAMPLES, rng=5)
        assert result.passed, result.summary()
        assert result.tests == 2 * 4


def test_independent_sampler_passes():
    """A black-box sampler (not release()) implementing GM passes at its alpha."""
    result = audit(two_sided_geometric_sampler(5, 0.7), 0.7, n=5, samples_per_input=SAMPLES, rng=3)
    assert result.passed, result.summary()


# --- broken mechanisms are caught --------------------------------------------------------------


def test_catches_perturbed_column():
    P = broken_gm()
    assert np.allclose(P.sum(axis=0), 1) and P.min() > 0
    assert P[1, 2] / P[1, 3] == pytest.approx(1.5 / 0.5)
    result = audit(P, 0.5, samples_per_input=SAMPLES, rng=20180416)
    assert not result.passed
    assert result.worst_pair == (2, 3)
    assert result.worst_event == (1,)
    assert 1 / 0.5 < result.worst_ratio_lower <= 1.5 / 0.5
    assert {(v.event, v.numerator, v.denominator) for v in result.violations} == {((1,), 2, 3)}
    assert result.epsilon_lower_bound > -np.log(0.5)


def test_catches_wrong_alpha():
    result = audit(geometric(4, 0.5), 0.9, samples_per_input=SAMPLES, rng=20180416)
    assert not result.passed
    assert result.worst_ratio_lower > 1.8  # true ratio 2 = 1/0.5
    assert len(result.violations) > 10


def test_catches_wrong_alpha_in_independent_sampler():
    result = audit(two_sided_geometric_sampler(5, 0.6), 0.7, n=5, samples_per_input=SAMPLES, rng=3)
    assert not result.passed


def test_catches_misindexed_sampler():
    """A sampler that reads the wrong column for one input (here input 2 uses column 0).

    (A uniform shift j -> j+1 would not be caught, rightly: it maps neighbours to neighbours or
    to the same column, so it is still alpha-DP, just inaccurate.)
    """
    P = geometric(4, 0.5)
    column = np.array([0, 1, 0, 3, 4])

    sample = matrix_sampler(P)

    def misindexed(counts, rng):
        return sample(column[counts], rng)

    result = audit(misindexed, 0.5, n=4, samples_per_input=SAMPLES, rng=1)
    assert not result.passed
    assert set(result.worst_pair) == {2, 3}
    assert result.worst_ratio_lower > 4  # true worst ratio is alpha**-3 = 8 on output 0


def test_events_find_spread_violations_singletons_miss():
    P = spread_violation()
    kwargs = dict(samples_per_input=20_000, rng=3)
    assert audit(P, 0.9, events="outputs", **kwargs).passed
    prefixes = audit(P, 0.9, events="prefixes", **kwargs)
    assert not prefixes.passed
    assert set(prefixes.worst_pair) == {9, 10} or set(prefixes.worst_pair) == {10, 11}
    assert len(prefixes.worst_event) >= 5
    assert not audit(P, 0.9, events="thresholds", **kwargs).passed
    sniper = audit_sniper(P, 0.9, **kwargs)
    assert not sniper.passed
    assert len(sniper.worst_event) > 1


def test_sniper_catches_perturbed_column():
    result = audit_sniper(broken_gm(), 0.5, samples_per_input=SAMPLES, rng=2)
    assert not result.passed
    assert result.worst_pair == (2, 3)
    assert 1 in result.worst_event


# --- statistical machinery ---------------------------------------------------------------------


@pytest.mark.parametrize("k,m", [(0, 10), (3, 10), (10, 10), (17, 1000), (999, 1000)])
def test_clopper_pearson_matches_scipy_exact_interval(k, m):
    delta = 0.025
    lower, upper = clopper_pearson(k, m, delta)
    ci = binomtest(k, m).proportion_ci(confidence_level=1 - 2 * delta, method="exact")
    assert lower == pytest.approx(ci.low, abs=1e-12)
    assert upper == pytest.approx(ci.high, abs=1e-12)


def test_false_positive_rate_is_controlled():
    """Many small audits of GM (every ratio tight): the family-wise error stays below delta.

    Counts are drawn from the exact multinomial, so this checks the bounds, not the sampler.
    """
    rng = np.random.default_rng(0)
    n, alpha, m, trials = 3, 0.5, 500, 400
    P = geometric(n, alpha)
    failures = 0
    for _ in range(trials):
        counts = np.stack([rng.multinomial(m, P[:, j]) for j in range(n + 1)], axis=1)
        failures += not audit_counts(counts, alpha, events="all", confidence=0.9).passed
    assert failures <= 0.1 * trials  # Bonferroni: far fewer in practice
    assert failures <= 8


def test_sample_counts_matches_release():
    mechanism = designed("GM", 3, 0.6)
    counts = sample_counts(functools.partial(release, mechanism), 3, 50_000, np.random.default_rng(9))
    assert counts.shape == (4, 4)
    assert np.all(counts.sum(axis=0) == 50_000)
    assert np.allclose(counts / 50_000, geometric(3, 0.6), atol=0.01)


def test_event_families():
    assert event_masks(3, "outputs").shape == (3, 3)
    prefixes = event_masks(4, "prefixes")
    assert prefixes.shape == (3, 4)  # {0}, {0,1}, {0,1,2}; the full set is dropped
    assert event_masks(4, "thresholds").shape == (6, 4)
    assert event_masks(4, "all").shape == (8, 4)  # {0} and {3} are singletons and threshold sets
    custom = event_masks(4, [[0, 2], (1,), [0, 2]])
    assert custom.shape == (2, 4)


def test_deterministic_with_seed():
    a = audit(geometric(3, 0.7), 0.7, samples_per_input=10_000, rng=42)
    b = audit(geometric(3, 0.7), 0.7, samples_per_input=10_000, rng=42)
    assert np.array_equal(a.counts, b.counts)
    assert a.seed_entropy == 42
    fresh = audit(geometric(3, 0.7), 0.7, samples_per_input=1_000)
    assert isinstance(fresh.seed_entropy, int)  # recorded so a failure can be replayed
    replay = audit(geometric(3, 0.7), 0.7, samples_per_input=1_000,
                   rng=np.random.default_rng(fresh.seed_entropy))
    assert np.array_equal(fresh.counts, replay.counts)


@pytest.mark.parametrize(
    "kwargs,word",
    [
        (dict(alpha=1.0), "alpha"),
        (dict(alpha="0.5"), "alpha"),
        (dict(samples_per_input=0), "samples_per_input"),
        (dict(samples_per_input=1.5), "samples_per_input"),
        (dict(confidence=1.0), "confidence"),
        (dict(confidence=True), "confidence"),
        (dict(events="bogus"), "event"),
        (dict(events=[[7]]), "event"),
        (dict(events=[[]]), "event"),
        (dict(rng=-1), "rng"),
        (dict(rng="seed"), "rng"),
        (dict(n=5), "n"),
    ],
)
def test_audit_rejects_bad_arguments(kwargs, word):
    args = dict(mechanism=geometric(3, 0.5), alpha=0.5, samples_per_input=100, rng=0) | kwargs
    mechanism, alpha = args.pop("mechanism"), args.pop("alpha")
    with pytest.raises(ValueError, match=word):
        audit(mechanism, alpha, **args)


def test_audit_rejects_bad_samplers():
    with pytest.raises(ValueError, match="n is required"):
        audit(lambda c, rng: c, 0.5)
    with pytest.raises(ValueError, match="outputs"):
        audit(lambda c, rng: c + 1, 0.5, n=3, samples_per_input=10, rng=0)
    with pytest.raises(ValueError, match="shape"):
        audit(lambda c, rng: c[:-1], 0.5, n=3, samples_per_input=10, rng=0)
    with pytest.raises(ValueError, match="square"):
        audit(np.ones((2, 3)) / 2, 0.5)


# --- the generator used for real releases ------------------------------------------------------


def test_release_from_the_os_source_passes_audit():
    """The real-data path (release on the OS's secure source) is the audited sampler; not seeded,
    so the confidence is set very high: a spurious failure has probability below 1e-9."""
    result = audit(designed("GM", 4, 0.8), 0.8, samples_per_input=100_000, rng=SystemRandomSource(),
                   confidence=1 - 1e-9)
    assert result.passed, result.summary()
    assert result.seed_entropy is None


@pytest.mark.parametrize("row,col", [(1, 2), (2, 3)])
def test_catches_a_five_percent_excess_through_the_release_sampler(row, col):
    """One ratio raised to 1.05/alpha (5% beyond what alpha-DP allows), sampled through the same
    integer mapping as release: the audit flags exactly that pair."""
    P = broken_gm(n=4, alpha=0.5, row=row, col=col, factor=1.05)
    assert P[row, col] / P[row, col + 1] == pytest.approx(1.05 / 0.5)
    result = audit(P, 0.5, samples_per_input=2_000_000, events="outputs", rng=7)
    assert not result.passed
    assert result.worst_pair == (col, col + 1)
    assert 1 / 0.5 < result.worst_ratio_lower <= 1.05 / 0.5
