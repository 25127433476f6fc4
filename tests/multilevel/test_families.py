"""Multi-level release beyond GM: EM (exact transitions) and WM/WH (LP transitions), certified or refused."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from countdp.design.designer import design_named
from countdp.mechanisms.closed_forms import explicit_fair
from countdp.multilevel.chain import ChainSettings, build_level_chain
from countdp.multilevel.derivable import exact_transition, verify_exact
from countdp.multilevel.exact_forms import em_exact, em_table, stochastic_table
from tests.helpers.multilevel_checks import corrupted

LEVELS = ("1/2", "2/3", "9/10")
WM_LEVELS = ("1/2", "7/10", "9/10")  # derivable pairs for WM at n = 5 (studies.levels)


@pytest.fixture(scope="module", params=[3, 5, 7])
def em_chain(request):
    return build_level_chain(request.param, LEVELS, mechanism="EM")


@pytest.fixture(scope="module")
def wm_chain():
    return build_level_chain(5, WM_LEVELS, mechanism="WM")


def is_alpha_dp(A, alpha) -> bool:
    """The definition, entry by entry in Fractions: alpha A[i, j'] <= A[i, j] for every neighbour pair."""
    a = Fraction(alpha)
    rows, cols = A.shape
    return all(a * A[i, j2] <= A[i, j1] for i in range(rows) for j in range(cols - 1)
               for j1, j2 in ((j, j + 1), (j + 1, j)))


def max_deviation(A, denominator, exact) -> Fraction:
    """max |A / denominator - exact| in Fractions."""
    return max(abs(Fraction(int(v), denominator) - e) for v, e in zip(A.ravel(), exact.ravel(), strict=True))


def test_em_table_is_the_float_closed_form_with_columns_summing_to_one():
    for n in (1, 4, 7, 10):
        E = em_table(n, "3/5").dense()
        assert all(s == 1 for s in E.sum(axis=0))
        assert np.max(np.abs(E.astype(float) - explicit_fair(n, 0.6))) < 1e-15


def test_em_chain_is_certified_and_starts_from_em_own_release_weights(em_chain):
    n = em_chain.n
    cert = em_chain.certify()
    assert cert.holds and cert.mechanism == "EM" and em_chain.mechanism == "EM"
    assert all(c.holds for c in cert.collusion) and all(c.enumerated is True for c in cert.collusion)
    assert (em_chain.first.weights == design_named("EM", n, "1/2").released.weights).all()
    for k, a in enumerate(em_chain.alphas):
        assert is_alpha_dp(em_chain.marginal(k), a)


def test_em_levels_stay_within_the_stated_bound_of_exact_em(em_chain):
    """delta_k = max |A_k / D_k - EM(n, alpha_k)| obeys delta_k <= lam_k + (1 - lam_k) rho_{k-1} delta_{k-1} + 2^-K.

    Why: the rounded transition is D ((1 - lam) T + lam U) + R with |R| < 1 unit, T EM_{k-1} = EM_k
    exactly, so A_k / D_k - EM_k = lam (U a - EM_k) + (1 - lam) T Delta_{k-1} + R a / D for the
    stochastic a = A_{k-1} / D_{k-1}; rho is T's largest row sum.  T is checked exactly first.
    """
    n, K = em_chain.n, em_chain.K
    exact = [em_exact(n, a) for a in em_chain.alphas]
    delta = max_deviation(em_chain.marginal(0), em_chain.level_denominator(0), exact[0])
    assert delta < Fraction(1, 10**15)
    for k in range(1, em_chain.levels):
        T = exact_transition(exact[k - 1], exact[k])
        assert verify_exact(T, exact[k - 1], exact[k])  # T >= 0, stochastic, T EM_{k-1} = EM_k exactly
        rho = max(T.sum(axis=1))
        lam = em_chain.mixing[k]
        bound = lam + (1 - lam) * rho * delta + Fraction(1, 2**K)
        delta = max_deviation(em_chain.marginal(k), em_chain.level_denominator(k), exact[k])
        assert delta <= bound
        assert delta < Fraction(1, 10**12)


def _one_line_refusal(n: int, levels: list[str], mechanism: str) -> str:
    """The one-line message with which a chain of ``mechanism`` at ``levels`` is refused."""
    with pytest.raises(ValueError) as info:
        build_level_chain(n, levels, mechanism=mechanism)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_em_at_n8_close_levels_are_refused_with_one_line():
    message = _one_line_refusal(8, ["1/2", "51/100"], "EM")
    assert message.startswith("EM at n = 8 cannot be released at levels 1/2 then 51/100: EM(8, 51/100) is not a "
                              "post-processing of EM(8, 1/2)")
    assert "docs/multilevel.md" in message
    # independently: the float solve of T EM_alpha = EM_beta has a clearly negative entry (EM is well conditioned)
    T = np.linalg.solve(explicit_fair(8, 0.5).T, explicit_fair(8, 0.51).T).T
    assert T.min() < -1e-5


def test_em_at_n8_a_wider_pair_is_released():
    chain = build_level_chain(8, ["1/2", "3/5"], mechanism="EM")
    assert chain.certify().holds
    assert is_alpha_dp(chain.marginal(1), Fraction(3, 5))


def test_the_certificate_fails_on_a_corrupted_em_transition(em_chain):
    """Level 1's row n becomes proportional to EM(n, 1/2)'s row 0, whose first ratio is 1/2 < 2/3."""
    broken = corrupted(em_chain, 1)
    cert = broken.certify()
    assert not cert.holds and cert.levels[0].holds and not cert.levels[1].holds
    assert not is_alpha_dp(broken.marginal(1), Fraction(2, 3))


def test_the_digest_covers_the_mechanism(em_chain):
    relabelled = dataclasses.replace(em_chain, mechanism="GM", reference=())
    assert all((a == b).all() for a, b in zip(relabelled.transitions, em_chain.transitions, strict=True))
    assert relabelled.digest() != em_chain.digest()
    assert build_level_chain(em_chain.n, LEVELS, mechanism="em").digest() == em_chain.digest()


def _feasible(source, target) -> bool:
    """Another formulation: is {T >= 0, T source = target, columns of T sum to 1} feasible (HiGHS)?"""
    N = source.shape[0]
    eye = sp.identity(N, format="csr")
    A_eq = sp.vstack([sp.kron(sp.csr_matrix(source.T), eye), sp.kron(eye, sp.csr_matrix(np.ones((1, N))))])
    b_eq = np.concatenate([target.ravel(order="F"), np.ones(N)])
    res = linprog(np.zeros(N * N), A_eq=A_eq.tocsc(), b_eq=b_eq, bounds=(0, None), method="highs")
    return res.status == 0


def test_wm_chain_at_a_derivable_point_is_certified(wm_chain):
    designs = [design_named("WM", 5, a) for a in WM_LEVELS]
    assert all(_feasible(d.matrix, e.matrix) for d, e in zip(designs, designs[1:], strict=False))
    cert = wm_chain.certify()
    assert cert.holds and cert.mechanism == "WM"
    assert (wm_chain.first.weights == designs[0].released.weights).all()
    for k, (a, d) in enumerate(zip(wm_chain.alphas, designs, strict=True)):
        A = wm_chain.marginal(k)
        assert is_alpha_dp(A, a)
        assert np.max(np.abs(A / wm_chain.level_denominator(k) - d.matrix)) < 1e-9
        assert cert.levels[k].max_abs_deviation < 1e-9


def test_wm_at_a_non_derivable_point_is_refused_with_one_line():
    """studies.levels: WM(5, 3/5) is not derivable from WM(5, 1/2) (certified L1 gap 0.035)."""
    assert not _feasible(design_named("WM", 5, "1/2").matrix, design_named("WM", 5, "3/5").matrix)
    message = _one_line_refusal(5, ["1/2", "3/5"], "WM")
    assert message.startswith("WM at n = 5 cannot be released at levels 1/2 then 3/5: WM(5, 3/5) is not a "
                              "post-processing of WM(5, 1/2)")


def test_wh_is_refused_where_its_design_is_not_derivable():
    with pytest.raises(ValueError, match=r"^WH at n = 5 cannot be released at levels 7/10 then 9/10"):
        build_level_chain(5, WM_LEVELS, mechanism="WH")


def test_the_retry_loop_certifies_an_lp_chain_and_refuses_when_out_of_doublings():
    chain = build_level_chain(5, WM_LEVELS, settings=ChainSettings(lambda_margin=0.0), mechanism="WM")
    assert chain.certify().holds and all(lam > 0 for lam in chain.mixing[1:])
    with pytest.raises(ValueError, match=r"^no certified WM multi-level release found for n = 5 .* 1 doublings"):
        build_level_chain(5, WM_LEVELS, settings=ChainSettings(lambda_margin=0.0, max_doublings=1), mechanism="WM")


@pytest.mark.parametrize("mechanism,n,settings", [("UM", 4, None), ("LP", 4, None),
                                                  ("EM", 5, ChainSettings(max_em_n=4)),
                                                  ("WM", 5, ChainSettings(max_design_n=4))])
def test_unsupported_mechanisms_and_sizes_are_refused(mechanism, n, settings):
    with pytest.raises(ValueError):
        build_level_chain(n, LEVELS, settings=settings, mechanism=mechanism)


def test_stochastic_table_is_exactly_column_stochastic_and_refuses_bad_input():
    rng = np.random.default_rng(3)
    S = rng.random((6, 6))
    S /= S.sum(axis=0)
    E = stochastic_table(S).dense()
    assert all(s == 1 for s in E.sum(axis=0)) and (E >= 0).all()
    moved = E != np.vectorize(Fraction)(S)
    assert moved.sum(axis=0).max() <= 1  # at most one entry per column absorbs the shortfall
    assert np.max(np.abs(E.astype(float) - S)) < 1e-15
    with pytest.raises(ValueError):
        stochastic_table(S * 1.01)
    with pytest.raises(ValueError):
        stochastic_table(-S)
