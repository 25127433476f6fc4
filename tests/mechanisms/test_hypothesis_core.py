"""Property-based tests of the core library against the paper's definitions (Section III), written as loops.

Matrices are built from a hypothesis-drawn seed with numpy, so every failure is reproducible
from hypothesis's report.  The reference checkers below follow the paper's property definitions literally (one
inequality at a time) and share no code with countdp.design.constraints.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from countdp.evaluate.metrics import empirical_error, expected_error
from countdp.mechanisms.closed_forms import explicit_fair, geometric, uniform
from countdp.mechanisms.properties import PROPERTIES, check_all, check_dp, check_property
from countdp.privacy.certify import certify, is_alpha_dp
from countdp.privacy.rounding import round_to_release
from countdp.privacy.sampling import release
from countdp.values.objectives import objective_value

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STOCHASTIC = settings(max_examples=30, deadline=None, derandomize=True)  # Monte Carlo: fixed examples

ns = st.integers(min_value=1, max_value=30)
small_ns = st.integers(min_value=1, max_value=12)
alphas = st.floats(min_value=0.05, max_value=0.99, allow_nan=False)
seeds = st.integers(min_value=0, max_value=2**32 - 1)
CLOSED = {"GM": geometric, "EM": explicit_fair, "UM": lambda n, a: uniform(n)}


# --- reference implementations of the paper's definitions (alpha-DP, objectives, properties) -----


def ref_violation(P: np.ndarray, name: str) -> float:
    """Worst violation of property ``name`` (0.0 when every inequality holds), by explicit loops."""
    N = P.shape[0]
    n = N - 1
    worst = 0.0

    def need(lhs_ge: float, rhs: float) -> None:  # lhs >= rhs
        nonlocal worst
        worst = max(worst, rhs - lhs_ge)

    for i in range(N):
        for j in range(N):
            if name == "RH" and i != j:
                need(P[i, i], P[i, j])
            elif name == "CH" and i != j:
                need(P[j, j], P[i, j])
            elif name == "RM":
                if 1 <= j <= i:
                    need(P[i, j], P[i, j - 1])
                if i <= j < n:
                    need(P[i, j], P[i, j + 1])
            elif name == "CM":
                if 1 <= i <= j:
                    need(P[i, j], P[i - 1, j])
                if j <= i < n:
                    need(P[i, j], P[i + 1, j])
            elif name == "S":
                worst = max(worst, abs(P[i, j] - P[n - i, n - j]))
        if name == "F":
            worst = max(worst, abs(P[i, i] - P[0, 0]))
        elif name == "WH":
            need(P[i, i], 1.0 / N)
    return worst


def ref_dp_violation(P: np.ndarray, alpha: float, column_slack: float = 1e-12) -> float:
    """Worst breach of alpha-DP, of 0 <= P <= 1, and of the column sums beyond ``column_slack``.

    ``column_slack`` mirrors ``countdp.privacy.certify.COLUMN_SUM_TOL``: check_dp (tol 0) is documented
    to be exactly is_alpha_dp, which allows |column sum - 1| <= 1e-12.
    """
    N = P.shape[0]
    worst = 0.0
    for j in range(N):
        worst = max(worst, abs(sum(P[i, j] for i in range(N)) - 1.0) - column_slack)
        for i in range(N):
            worst = max(worst, -P[i, j], P[i, j] - 1.0)
            if j + 1 < N:
                worst = max(worst, alpha * P[i, j + 1] - P[i, j], alpha * P[i, j] - P[i, j + 1])
    return worst


def ref_required_lambda(P: np.ndarray, alpha: float) -> float:
    """Smallest lam with (1-lam) P + lam UM alpha-DP in exact arithmetic (P column-stochastic)."""
    N = P.shape[0]
    lam = 0.0
    for i in range(N):
        for j in range(N):
            if P[i, j] < 0:
                lam = max(lam, -P[i, j] / (1 / N - P[i, j]))
            for k in (j - 1, j + 1):
                if 0 <= k < N:
                    r = P[i, j] - alpha * P[i, k]
                    if r < 0:
                        lam = max(lam, -r / ((1 - alpha) / N - r))
    return lam


def ref_expected_error(P: np.ndarray, q: np.ndarray, measure: str) -> float:
    N = P.shape[0]
    total = 0.0
    for j in range(N):
        for i in range(N):
            d = abs(i - j)
            if measure == "L0":
                loss = float(d != 0)
            elif measure.startswith("L0d:"):
                loss = float(d > int(measure[4:]))
            elif measure == "L1":
                loss = float(d)
            else:  # L2, RMSE
                loss = float(d * d)
            total += q[j] * P[i, j] * loss
    return total**0.5 if measure == "RMSE" else total


# --- random matrices --------------------------------------------------------------------------


def random_stochastic(rng: np.random.Generator, N: int) -> np.ndarray:
    concentration = rng.choice([0.2, 1.0, 5.0])
    return rng.dirichlet(np.full(N, concentration), size=N).T


def arrange_towards_diagonal(values: np.ndarray, centre: int) -> np.ndarray:
    """Place ``values`` (any order) so that they do not increase moving away from ``centre``."""
    N = values.size
    order = np.argsort(np.abs(np.arange(N) - centre) + 0.1 * (np.arange(N) > centre), kind="stable")
    out = np.empty(N)
    out[order] = np.sort(values)[::-1]
    return out


def structured(rng: np.random.Generator, N: int, kind: str) -> np.ndarray:
    """A random matrix built to have one property (before any perturbation)."""
    P = random_stochastic(rng, N)
    if kind == "S":
        return (P + P[::-1, ::-1]) / 2
    if kind in ("CM", "CH"):
        return np.column_stack([arrange_towards_diagonal(P[:, j], j) for j in range(N)])
    if kind in ("RM", "RH"):
        return np.vstack([arrange_towards_diagonal(P[i, :], i) for i in range(N)])
    if kind == "F":
        np.fill_diagonal(P, rng.uniform(0, 1))
        return P
    if kind == "WH":
        np.fill_diagonal(P, rng.uniform(1.0 / N, 1.0, size=N))
        return P
    return P


@st.composite
def matrices(draw, max_n: int = 12):
    """Random matrices that satisfy a chosen property exactly, or nearly (one entry nudged)."""
    n = draw(st.integers(min_value=1, max_value=max_n))
    rng = np.random.default_rng(draw(seeds))
    kind = draw(st.sampled_from(["random", *PROPERTIES]))
    P = structured(rng, n + 1, kind)
    if draw(st.booleans()):
        eps = draw(st.sampled_from([1e-13, 1e-10, 1e-8, 1e-4, 0.1]))
        i, j = rng.integers(0, n + 1, size=2)
        P[i, j] += eps * rng.choice([-1.0, 1.0])
    return P


def random_dp(rng: np.random.Generator, n: int, alpha: float) -> np.ndarray:
    """A random alpha-DP mechanism: post-processing of GM, a mixture with EM/UM, or a certified matrix."""
    kind = rng.integers(0, 4)
    if kind == 0:  # post-processing preserves DP
        P = random_stochastic(rng, n + 1) @ geometric(n, alpha)
    elif kind == 1:
        w = rng.dirichlet(np.ones(3))
        P = w[0] * geometric(n, alpha) + w[1] * explicit_fair(n, alpha) + w[2] * uniform(n)
    elif kind == 2:
        P = (random_stochastic(rng, n + 1) @ explicit_fair(n, alpha) + explicit_fair(n, alpha)) / 2
    else:
        P = random_stochastic(rng, n + 1)
    return certify(P, alpha)[0]


# --- closed forms -----------------------------------------------------------------------------


@FAST
@given(n=ns, alpha=alphas, name=st.sampled_from(sorted(CLOSED)))
def test_closed_forms_stochastic_and_certified(n, alpha, name):
    P = CLOSED[name](n, alpha)
    assert P.shape == (n + 1, n + 1)
    assert np.all(P >= 0)
    assert np.max(np.abs(P.sum(axis=0) - 1)) <= 1e-12
    out, cert = certify(P, alpha)
    assert cert.certified and is_alpha_dp(out, alpha)
    assert cert.repair_lambda < 1e-12
    assert np.max(np.abs(out - P)) < 1e-12


@FAST
@given(n=ns, alpha=alphas)
def test_em_has_all_seven_properties(n, alpha):
    checks = check_all(explicit_fair(n, alpha), tol=1e-12)
    assert all(checks.values()), {k: c.worst_violation for k, c in checks.items() if not c}


@FAST
@given(n=ns, alpha=alphas)
def test_gm_properties_lemmas_2_and_3(n, alpha):
    """GM: S and RM always; WH iff n >= 2a/(1-a) (Lemma 2); CM iff a <= 1/2 (Lemma 3).

    Both lemmas need n >= 2: GM for n = 1 is [[1, a], [a, 1]] / (1+a), which is WH and CM for
    every alpha (no interior row), although 2a/(1-a) > 1 for a > 1/3 and a > 1/2 is allowed.
    """
    P = geometric(n, alpha)
    assert check_property(P, "S", tol=0.0)
    assert check_property(P, "RM", tol=1e-12)
    if n == 1:
        assert check_property(P, "WH", tol=1e-12) and check_property(P, "CM", tol=1e-12)
        return
    threshold = 2 * alpha / (1 - alpha)
    if abs(n - threshold) > 1e-2:
        assert bool(check_property(P, "WH", tol=1e-12)) == (n >= threshold)
    if abs(alpha - 0.5) > 1e-6:
        assert bool(check_property(P, "CM", tol=1e-12)) == (alpha <= 0.5)


def test_gm_n1_is_wh_and_cm_despite_lemmas():
    """Pinned counterexample to the lemmas' statement at n = 1 (see the test above)."""
    P = geometric(1, 0.9)
    assert 1 < 2 * 0.9 / (1 - 0.9)
    assert check_property(P, "WH") and check_property(P, "CM")


# --- checkers agree with the definitions ------------------------------------------------------


@FAST
@given(P=matrices(), name=st.sampled_from(PROPERTIES), tol=st.sampled_from([0.0, 1e-12, 1e-9, 1e-6]))
def test_property_checkers_match_definitions(P, name, tol):
    expected = ref_violation(P, name)
    got = check_property(P, name, tol=tol)
    assert got.name == name
    assert got.worst_violation == pytest.approx(expected, rel=1e-9, abs=1e-15)
    if abs(expected - tol) > 1e-14:
        assert got.holds == (expected <= tol)


@FAST
@given(P=matrices(), alpha=alphas, tol=st.sampled_from([0.0, 1e-12, 1e-6]))
def test_dp_checker_matches_definition(P, alpha, tol):
    expected = ref_dp_violation(P, alpha)
    got = check_dp(P, alpha, tol=tol)
    assert got.worst_violation == pytest.approx(max(expected, 0.0), rel=1e-9, abs=1e-15)
    if abs(expected - tol) > 1e-14:
        assert got.holds == (expected <= tol)
    assert bool(check_dp(P, alpha)) == is_alpha_dp(P, alpha)  # tol 0 is the exact float test


@FAST
@given(n=small_ns, alpha=alphas, seed=seeds)
def test_dp_checkers_agree_on_random_dp_matrices(n, alpha, seed):
    P = random_dp(np.random.default_rng(seed), n, alpha)
    assert is_alpha_dp(P, alpha)
    assert ref_dp_violation(P, alpha) <= 1e-12
    assert check_dp(P, alpha, tol=1e-12)


# --- certify ----------------------------------------------------------------------------------


@st.composite
def noisy_mechanisms(draw):
    n = draw(st.integers(min_value=1, max_value=20))
    alpha = draw(alphas)
    rng = np.random.default_rng(draw(seeds))
    kind = draw(st.sampled_from(["GM+noise", "EM+noise", "random", "sparse"]))
    if kind == "random":
        P = random_stochastic(rng, n + 1)
    elif kind == "sparse":  # many zeros: infinite ratios
        P = random_stochastic(rng, n + 1) * (rng.random((n + 1, n + 1)) < 0.5)
        P[0, :] += 1e-3
        P = P / P.sum(axis=0)
    else:
        base = geometric(n, alpha) if kind == "GM+noise" else explicit_fair(n, alpha)
        scale = draw(st.sampled_from([1e-15, 1e-12, 1e-9, 1e-6, 1e-3]))
        P = np.clip(base + scale * rng.standard_normal(base.shape), 0, None)
        P = P / P.sum(axis=0)
    return P, alpha


@FAST
@given(case=noisy_mechanisms())
def test_certify_returns_dp_matrix_within_reported_lambda(case):
    P, alpha = case
    out, cert = certify(P, alpha)
    assert cert.certified and is_alpha_dp(out, alpha)
    assert cert.violation_after == 0.0
    assert 0.0 <= cert.repair_lambda <= 1.0
    # (1-lam) P + lam UM moves every entry by lam |P - 1/N| <= lam (plus rounding)
    assert np.max(np.abs(out - P)) <= cert.repair_lambda * np.max(np.abs(P - 1 / P.shape[0])) + 1e-14
    if is_alpha_dp(P, alpha):  # already certified: returned unchanged
        assert np.array_equal(out, P) and cert.repair_lambda == 0.0
    # Documented: the exact-arithmetic lambda, doubled until the float test passes.  (Slack:
    # lambda is computed from differences P[i, j] - a P[i, k] that cancel to ~1e-16.)
    required = ref_required_lambda(P, alpha)
    assert cert.repair_lambda >= required * (1 - 1e-6) - 1e-12
    assert cert.repair_lambda <= min(1.0, 2 * required * (1 + 1e-6) + 1e-12)


def test_certify_repair_is_near_minimal():
    P, alpha = np.array([[0.05, 0.8], [0.95, 0.2]]), 0.5
    required = ref_required_lambda(P, alpha)
    assert required == pytest.approx(7 / 12)
    out, cert = certify(P, alpha)
    assert cert.certified
    assert cert.repair_lambda <= required * (1 + 1e-9) + 1e-14


@FAST
@given(n=small_ns, alpha=alphas, seed=seeds, scale=st.sampled_from([1e-12, 1e-6, 1e-2]))
def test_certify_unnormalised_input(n, alpha, seed, scale):
    """Columns that do not sum to 1 are renormalised first; that change is *not* in lambda."""
    rng = np.random.default_rng(seed)
    P = geometric(n, alpha) * (1 + scale * rng.random(n + 1))[None, :]
    out, cert = certify(P, alpha)
    assert cert.certified and is_alpha_dp(out, alpha)
    sums = P.sum(axis=0)
    renormalisation = np.max(np.abs(1 - sums) / sums)
    assert np.max(np.abs(out - P)) <= cert.repair_lambda + renormalisation + 1e-14


# --- error measures ---------------------------------------------------------------------------

MEASURES = ["L0", "L0d:0", "L0d:1", "L0d:3", "L1", "L2", "RMSE"]


@FAST
@given(n=small_ns, seed=seeds, measure=st.sampled_from(MEASURES))
def test_expected_error_matches_double_loop(n, seed, measure):
    rng = np.random.default_rng(seed)
    P = random_stochastic(rng, n + 1)
    q = rng.dirichlet(np.ones(n + 1))
    assert expected_error(P, q, measure) == pytest.approx(ref_expected_error(P, q, measure), rel=1e-12, abs=1e-15)


@STOCHASTIC
@given(n=small_ns, alpha=alphas, seed=seeds, name=st.sampled_from(["GM", "EM", "UM", "random"]))
def test_empirical_error_converges_to_expected(n, alpha, seed, name):
    rng = np.random.default_rng(seed)
    raw = random_dp(rng, n, alpha) if name == "random" else CLOSED[name](n, alpha)
    mechanism = round_to_release(certify(raw, alpha)[0], alpha)
    P = mechanism.matrix  # the distribution the release sampler draws from, W / 2**62
    q = rng.dirichlet(np.ones(n + 1))
    m = 100_000
    truth = rng.choice(n + 1, size=m, p=q)
    released = release(mechanism, truth, rng)
    d = np.abs(np.arange(n + 1)[:, None] - np.arange(n + 1)[None, :]).astype(float)
    joint = P * q[None, :]  # Pr[out = i, in = j]
    for measure in MEASURES:
        expected = expected_error(P, q, measure)
        empirical = empirical_error(truth, released, measure)
        # standard error from the exact per-draw variance of the loss (not the sample's,
        # which is 0 when a rare event is never seen)
        if measure == "L0":
            loss = (d > 0).astype(float)
        elif measure.startswith("L0d:"):
            loss = (d > int(measure[4:])).astype(float)
        else:
            loss = d if measure == "L1" else d**2
        mean = (loss * joint).sum()
        se = np.sqrt(max((loss**2 * joint).sum() - mean**2, 0.0) / m)
        if measure == "RMSE":  # delta method: sqrt of the mean squared error
            se = se / (2 * max(expected, 1e-12))
        assert abs(empirical - expected) <= 5 * se + 1e-12, (measure, empirical, expected, se)


# --- Theorem 1 --------------------------------------------------------------------------------


@SLOW
@given(n=st.integers(min_value=1, max_value=15), alpha=alphas, seed=seeds)
def test_theorem1_symmetrisation(n, alpha, seed):
    rng = np.random.default_rng(seed)
    P = random_dp(rng, n, alpha)
    S = (P + P[::-1, ::-1]) / 2
    # DP survives (averaging can cost an ulp on a tight inequality; re-certifying is a no-op)
    assert check_dp(S, alpha, tol=1e-15)
    assert certify(S, alpha)[1].repair_lambda < 1e-12
    assert check_property(S, "S", tol=0.0)
    before, after = check_all(P, tol=1e-12), check_all(S, tol=1e-12)
    for name in PROPERTIES:
        if before[name]:
            assert after[name].worst_violation <= before[name].worst_violation + 1e-15, name
    for objective in ("L0", "L0d:1", "L1", "L2"):
        assert objective_value(S, objective) == pytest.approx(objective_value(P, objective), rel=1e-12, abs=1e-15)
