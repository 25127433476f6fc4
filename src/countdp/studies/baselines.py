"""Baseline mechanisms from outside the paper, and the privacy each one really achieves.

Every function returns an ``(n+1) x (n+1)`` matrix ``P[i, j] = Pr[output i | input j]``.

* :func:`exponential_mechanism`: McSherry-Talwar with quality ``-|i - j|`` (sensitivity 1)
  over outputs ``0..n``: ``P[i, j] ∝ exp(-eps |i - j| / 2)``, ``eps = -ln(alpha)``, i.e.
  ``P[i, j] ∝ sqrt(alpha)^|i-j|``.  The factor 2 pays for the column normalisers, which the
  standard proof bounds by ``e^(eps/2)`` each; here they vary much less, so the mechanism
  is alpha-DP with room to spare (:func:`achieved_alpha` > alpha).
* :func:`conditioned_geometric`: the two-sided geometric mechanism conditioned on landing in
  ``[0, n]`` (Gong and Meng's congenial approach): ``P[i, j] ∝ base^|i-j|``, renormalised
  per column.  With ``base = alpha`` the normalisers differ between columns, so near the
  edges the privacy ratio exceeds ``1/alpha`` (achieved alpha < alpha: *not* alpha-DP).
  :func:`calibrate_conditioned` finds by bisection the base that achieves exactly alpha.

  The two families coincide: ``exponential_mechanism(n, alpha)`` is
  ``conditioned_geometric(n, sqrt(alpha))``.  So the exponential mechanism calibrated to
  achieve exactly alpha *is* the calibrated conditioned geometric mechanism (``EXP-cal`` and
  ``CGM`` below are the same matrix).
* :func:`randomized_response`: keep the true count with probability ``p``, otherwise report
  a uniform count: ``P = p I + (1-p) UM``.  With ``N = n + 1`` the tightest DP ratio is
  ``(p + (1-p)/N) / ((1-p)/N) <= 1/alpha``, i.e. ``p/(1-p) <= (1-alpha)/(alpha N)``, so the
  largest alpha-DP keep probability is ``p* = (1-alpha)/(1 + alpha n)``
  (:func:`rr_keep_probability`); its truthful probability is ``1/(1 + alpha n)`` for every
  input and its uniform-prior ``L0 = alpha (n+1) / (1 + alpha n)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from countdp.evaluate.metrics import expected_error
from countdp.mechanisms.closed_forms import CLOSED_FORMS
from countdp.privacy.certify import Certificate, certify
from countdp.studies.checks import CHECK_COLUMNS
from countdp.studies.checks import check_row as check
from countdp.validation import check_alpha, check_matrix, check_n
from countdp.values.objectives import objective_value

BASELINES = ("EXP", "EXP-cal", "CGM", "CGM-naive", "RR")
"""Named baselines: ``EXP`` at nominal alpha; ``EXP-cal`` and ``CGM`` calibrated to achieve
exactly alpha (the same matrix); ``CGM-naive`` conditioned with base alpha (not alpha-DP);
``RR`` randomized response with the largest alpha-DP keep probability."""


def achieved_alpha(P: np.ndarray) -> float:
    """The largest alpha for which ``P`` is alpha-DP: the smallest neighbouring-column ratio.

    ``min over i, j of min(P[i, j] / P[i, j+1], P[i, j+1] / P[i, j])``; a pair of zeros
    counts as ratio 1, a zero next to a positive entry as 0 (no privacy at all).
    """
    M = check_matrix(P)
    left, right = M[:, :-1], M[:, 1:]
    lo, hi = np.minimum(left, right), np.maximum(left, right)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(hi > 0, lo / np.where(hi > 0, hi, 1.0), 1.0)
    return float(ratio.min())


def _column_normalised_powers(n: int, base: float) -> np.ndarray:
    i = np.arange(n + 1)
    W = float(base) ** np.abs(i[:, None] - i[None, :]).astype(float)
    return W / W.sum(axis=0, keepdims=True)


def conditioned_geometric(n: int, base: float) -> np.ndarray:
    """Geometric noise with parameter ``base`` conditioned on the output lying in ``[0, n]``.

    ``P[i, j] = base^|i-j| / sum_k base^|k-j|``.  With ``base = alpha`` this is *not*
    alpha-DP near the edges (see :func:`achieved_alpha`); use :func:`calibrate_conditioned`.
    """
    n = check_n(n)
    if not 0.0 < float(base) < 1.0:
        raise ValueError(f"base must satisfy 0 < base < 1, got {base!r}")
    return _column_normalised_powers(n, base)


def exponential_mechanism(n: int, alpha: float) -> np.ndarray:
    """Exponential mechanism, quality ``-|i-j|``: ``P[i, j] ∝ exp(-eps |i-j| / 2)``, eps = -ln alpha."""
    n, a = check_n(n), check_alpha(alpha)
    eps = -np.log(a)
    return _column_normalised_powers(n, float(np.exp(-eps / 2.0)))


def calibrate_conditioned(n: int, alpha: float, tol: float = 1e-14, max_iter: int = 200) -> float:
    """The base ``b`` for which :func:`conditioned_geometric` achieves exactly ``alpha``.

    Bisection on ``b`` in ``[alpha, 1)``: at ``b = alpha`` the achieved alpha is below alpha
    (edge columns have smaller normalisers), and it tends to 1 as ``b -> 1``.  Returns the
    upper end of the final bracket, where the achieved alpha is >= ``alpha``.
    """
    n, a = check_n(n), check_alpha(alpha)

    def achieved(b: float) -> float:
        return achieved_alpha(_column_normalised_powers(n, b))

    lo, hi = a, 1.0 - 1e-15
    if achieved(lo) >= a:  # n = 1 edge case: no interior, normalisers equal
        return lo
    if achieved(hi) < a:  # pragma: no cover - alpha within 1e-15 of 1
        raise ValueError(f"cannot calibrate the conditioned geometric mechanism to alpha = {a}")
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        if achieved(mid) >= a:
            hi = mid
        else:
            lo = mid
        if hi - lo <= tol:
            break
    return hi


def calibrated_conditioned_geometric(n: int, alpha: float) -> np.ndarray:
    """The conditioned geometric mechanism whose achieved alpha equals ``alpha`` (``CGM``)."""
    return _column_normalised_powers(check_n(n), calibrate_conditioned(n, alpha))


def calibrated_exponential(n: int, alpha: float) -> np.ndarray:
    """The exponential mechanism re-parametrised to achieve exactly ``alpha`` (``EXP-cal``).

    The exponential family with quality ``-|i-j|`` is the conditioned geometric family, so
    this is :func:`calibrated_conditioned_geometric`.
    """
    return calibrated_conditioned_geometric(n, alpha)


def rr_keep_probability(n: int, alpha: float) -> float:
    """Largest ``p`` for which ``p I + (1-p) UM`` is alpha-DP: ``(1-alpha)/(1 + alpha n)``."""
    n, a = check_n(n), check_alpha(alpha)
    return (1.0 - a) / (1.0 + a * n)


def randomized_response(n: int, alpha: float, p: float | None = None) -> np.ndarray:
    """Generalised randomized response on ``n+1`` values: ``p I + (1-p) UM``.

    ``p`` defaults to :func:`rr_keep_probability` (the largest alpha-DP keep probability).
    """
    n, a = check_n(n), check_alpha(alpha)
    keep = rr_keep_probability(n, a) if p is None else float(p)
    if not 0.0 <= keep <= 1.0:
        raise ValueError(f"keep probability p must lie in [0, 1], got {p!r}")
    N = n + 1
    return keep * np.eye(N) + (1.0 - keep) / N


BASELINE_BUILDERS: dict[str, Callable[[int, float], np.ndarray]] = {
    "EXP": exponential_mechanism,
    "EXP-cal": calibrated_exponential,
    "CGM": calibrated_conditioned_geometric,
    "CGM-naive": lambda n, alpha: conditioned_geometric(n, check_alpha(alpha)),
    "RR": randomized_response,
}


def baseline_matrix(name: str, n: int, alpha: float) -> np.ndarray:
    """The raw (uncertified) matrix of baseline ``name`` (one of :data:`BASELINES`)."""
    if name not in BASELINE_BUILDERS:
        raise ValueError(f"unknown baseline {name!r}; allowed: {', '.join(BASELINES)}")
    return BASELINE_BUILDERS[name](n, alpha)


def certified_baseline(name: str, n: int, alpha: float) -> tuple[np.ndarray, Certificate]:
    """Baseline ``name`` certified alpha-DP on its final floats (:func:`countdp.privacy.certify.certify`).

    ``CGM-naive`` is not alpha-DP, so its certificate records a real repair (UM mixing), not
    an ulp; use it only to show the gap, and ``CGM`` for comparisons at equal privacy.
    """
    return certify(baseline_matrix(name, n, alpha), alpha)


# ------------------------------------------------------------------------ the baselines study
def _errors(P: np.ndarray, n: int) -> dict:
    q = np.full(n + 1, 1.0 / (n + 1))
    return {"L0": objective_value(P, "L0"), "L0d1": objective_value(P, "L0d:1"),
            "worst_L0": objective_value(P, "L0", aggregate="max"), "RMSE_uniform": expected_error(P, q, "RMSE")}


STUDY_MECHANISMS = ("GM", "EM", "UM", "EXP", "EXP-cal", "CGM", "CGM-naive", "RR")
"""The rows of the baselines study at each ``(n, alpha)``: the closed forms, then :data:`BASELINES`."""


def study_mechanisms(n: int, alpha: float) -> Iterator[tuple[str, np.ndarray, np.ndarray, Certificate, float]]:
    """``(name, raw matrix, certified matrix, certificate, parameter)`` of each of :data:`STUDY_MECHANISMS`
    at ``(n, alpha)``; ``parameter`` is the per-step weight ``b`` of ``P ∝ b^|i-j|`` for EXP/CGM
    (EXP: ``sqrt(alpha)``), the keep probability for RR, NaN for the closed forms."""
    cal = calibrate_conditioned(n, alpha)
    params = {"EXP": np.sqrt(alpha), "EXP-cal": cal, "CGM": cal, "CGM-naive": alpha,
              "RR": rr_keep_probability(n, alpha)}
    for name in STUDY_MECHANISMS:
        if name in params:
            raw = baseline_matrix(name, n, alpha)
            P, cert = certified_baseline(name, n, alpha)
        else:
            raw = CLOSED_FORMS[name](n, alpha)
            P, cert = certify(raw, alpha)
        yield name, raw, P, cert, params.get(name, np.nan)


def baseline_table(ns: Sequence[int], alphas: Sequence[float]) -> pd.DataFrame:
    """Baselines and closed forms over ``(n, alpha)``: achieved alpha, certificate, errors.

    ``achieved_alpha`` is measured on the raw matrix; errors on the certified one (for
    ``CGM-naive``, which is not alpha-DP, the certified matrix is a UM mixture: see
    ``repair_lambda``).  ``parameter``: see :func:`study_mechanisms`.
    """
    rows = []
    for n in ns:
        for a in alphas:
            n, a = check_n(n), check_alpha(a)
            for name, raw, P, cert, parameter in study_mechanisms(n, a):
                rows.append({"mechanism": name, "n": n, "alpha": a, "parameter": parameter,
                             "achieved_alpha": achieved_alpha(raw), "alpha_dp_raw": achieved_alpha(raw) >= a,
                             "certified": cert.certified, "repair_lambda": cert.repair_lambda,
                             "min_diag": float(np.diag(P).min()), "max_diag": float(np.diag(P).max()),
                             **_errors(P, n)})
    return pd.DataFrame(rows)


def baseline_objective_table(ns: Sequence[int], alphas: Sequence[float], objective: str) -> pd.DataFrame:
    """The study's mechanisms (certified, as in :func:`baseline_table`) under ``objective`` (L1 or L2):
    the uniform-prior value (column ``objective``) and the worst input's (``worst_{objective}``)."""
    rows = []
    for n in ns:
        for a in alphas:
            n, a = check_n(n), check_alpha(a)
            rows += [{"mechanism": name, "n": n, "alpha": a, objective: objective_value(P, objective),
                      f"worst_{objective}": objective_value(P, objective, aggregate="max")}
                     for name, _, P, _, _ in study_mechanisms(n, a)]
    return pd.DataFrame(rows)


UM_LOSS = {"L1": lambda n: n * (n + 2) / (3 * (n + 1)), "L2": lambda n: n * (n + 2) / 6}
"""UM's uniform-prior loss, worked by hand: ``sum_{i,j} |i-j|^p / (n+1)^2`` (``n(n+1)(n+2)/3`` and
``(n+1)^2 n(n+2)/6`` for the sums)."""


def baseline_objective_checks(table: pd.DataFrame, objective: str, tol: float = 1e-12) -> pd.DataFrame:
    """Statements about :func:`baseline_objective_table` that hold whatever the objective: UM's value is its
    closed form, and RR = p I + (1-p) UM costs (1 - p*) times UM (the identity costs nothing)."""
    um = table[table.mechanism == "UM"]
    um_error = float((um[objective] - um.n.map(UM_LOSS[objective])).abs().max())
    by = table.set_index(["mechanism", "n", "alpha"])[objective]
    rr_error = max(abs(by[("RR", n, a)] - (1 - rr_keep_probability(n, a)) * by[("UM", n, a)])
                   for n, a in zip(um.n, um.alpha, strict=True))
    return pd.DataFrame([
        check("baselines", f"{objective}(UM) = its closed form for every n", "closed form",
              f"max error {um_error:.2e}", um_error <= tol * max(1.0, float(um[objective].max()))),
        check("baselines", f"{objective}(RR) = (1 - p*) {objective}(UM), p* = (1-a)/(1+a n)", "(1 - p*) UM",
              f"max error {rr_error:.2e}", rr_error <= tol * max(1.0, float(um[objective].max()))),
    ], columns=CHECK_COLUMNS)


def baseline_checks(table: pd.DataFrame) -> pd.DataFrame:
    """Statements about the baselines, checked on :func:`baseline_table`."""
    out = []
    by = table.set_index(["mechanism", "n", "alpha"])
    exp = table[table.mechanism == "EXP"]
    out.append(check("baselines", "EXP is alpha-DP with room to spare (achieved alpha > alpha)", "> alpha",
                     f"min achieved/alpha = {float((exp.achieved_alpha / exp.alpha).min()):.4f}",
                     bool((exp.achieved_alpha > exp.alpha).all())))
    naive = table[(table.mechanism == "CGM-naive") & (table.n > 1)]  # n = 1: equal normalisers, = GM
    out.append(check("baselines", "geometric conditioned with base alpha is not alpha-DP (n > 1)", "< alpha",
                     f"max achieved/alpha = {float((naive.achieved_alpha / naive.alpha).max()):.4f}",
                     bool((naive.achieved_alpha < naive.alpha).all())))
    cal = table[table.mechanism.isin(["CGM", "EXP-cal"])]
    out.append(check("baselines", "calibrated CGM (= calibrated EXP) achieves exactly alpha", "alpha",
                     f"max |achieved - alpha| = {float((cal.achieved_alpha - cal.alpha).abs().max()):.2e}",
                     bool(((cal.achieved_alpha - cal.alpha).abs() < 1e-10).all())))
    rr = table[table.mechanism == "RR"]
    truthful = 1.0 / (1.0 + rr.alpha * rr.n)
    out.append(check("baselines", "RR keep p* = (1-a)/(1+a n); truthful prob 1/(1+a n)", "1/(1+a n)",
                     f"max |diag - 1/(1+a n)| = {float((rr.min_diag - truthful).abs().max()):.2e}",
                     bool(((rr.min_diag - truthful).abs() < 1e-12).all() and rr.certified.all())))
    margins = [by.loc[(m, n, a), "L0"] - by.loc[("GM", n, a), "L0"]
               for m in ("EXP", "CGM", "RR") for n, a in zip(rr.n, rr.alpha, strict=True)]
    out.append(check("baselines", "no baseline beats GM on uniform-prior L0 (Theorem 3)", "GM <= all",
                     f"min L0(baseline) - L0(GM) = {min(margins):.2e}", min(margins) >= -1e-12))
    return pd.DataFrame(out, columns=CHECK_COLUMNS)
