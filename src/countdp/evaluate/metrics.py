"""Error measures of a mechanism: design objectives, exact expectations and empirical values.

Three related families, all for ``P[i, j] = Pr[output i | input j]``:

* the paper's design objective (Definitions 3 and 5) for a prior ``w`` over inputs, which every
  layer shares: :func:`countdp.values.objectives.objective_value`;
* :func:`expected_error`: the exact expectation of a *release* error measure when the true
  count follows a distribution ``q`` (no rescaling): ``L0`` = Pr[out != in],
  ``L0d:D`` = Pr[|out - in| > D], ``L1`` = E|out - in|, ``L2`` = E(out - in)^2,
  ``RMSE`` = sqrt(L2).
* :func:`empirical_error`: the same measures on arrays of true and released counts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from countdp.validation import check_distribution, check_matrix, check_n, check_probability
from countdp.values.objectives import Objective, parse_objective

MEASURES = ("L0", "L0d", "L1", "L2", "RMSE")


def _is_rmse(measure: object) -> bool:
    if not isinstance(measure, str):
        raise ValueError(f"unknown measure {measure!r}; allowed: L0, L0d:D, L1, L2, RMSE")
    return measure.strip().upper() == "RMSE"


def _release_loss(measure: str, diff: np.ndarray) -> np.ndarray:
    """Per-release loss for a difference ``out - in`` (RMSE uses the squared error)."""
    try:
        obj = Objective("L2") if _is_rmse(measure) else parse_objective(measure)
    except ValueError:
        raise ValueError(f"unknown measure {measure!r}; allowed: L0, L0d:D (D >= 0), L1, L2, RMSE") from None
    if obj.name == "L0":
        return (diff != 0).astype(float)
    if obj.name == "L0d":
        return (np.abs(diff) > obj.d).astype(float)
    return np.abs(diff).astype(float) if obj.name == "L1" else diff.astype(float) ** 2


def expected_error(P: np.ndarray, input_distribution: object, measure: str = "L0") -> float:
    """Exact expected release error of ``P`` when the true count ``j ~ input_distribution``.

        >>> countdp.expected_error(np.eye(5), np.full(5, 1 / 5), "L0")  # the identity is never wrong
        0.0
        >>> round(countdp.expected_error(countdp.uniform(4), np.full(5, 1 / 5), "L0"), 12)  # UM: 4 in 5
        0.8
    """
    return float(expected_errors(P, [input_distribution], measure)[0])


def expected_errors(P: np.ndarray, input_distributions: Sequence[object], measure: str = "L0") -> np.ndarray:
    """:func:`expected_error` for each of several input distributions (the loss matrix is built once)."""
    M = check_matrix(P)
    n = M.shape[0] - 1
    i = np.arange(n + 1)
    weighted = _release_loss(measure, i[:, None] - i[None, :]) * M
    values = np.array([float((weighted @ check_distribution(q, n, "input_distribution")).sum())
                       for q in input_distributions], dtype=float)
    return np.sqrt(values) if _is_rmse(measure) else values


def empirical_error(true_counts: np.ndarray, released: np.ndarray, measure: str = "L0") -> float:
    """The measure on arrays of true and released counts (e.g. a fraction of groups).

        >>> countdp.empirical_error(np.array([1, 2, 3, 4]), np.array([1, 2, 0, 4]), "L0")  # one of four
        0.25
    """
    return float(empirical_errors([true_counts], [released], measure)[0])


def empirical_errors(true_counts: Sequence[np.ndarray], released: Sequence[np.ndarray],
                     measure: str = "L0") -> np.ndarray:
    """:func:`empirical_error` of each pair ``(true_counts[k], released[k])``, the loss computed once for all."""
    if len(true_counts) != len(released):
        raise ValueError(f"{len(true_counts)} arrays of true counts for {len(released)} of released counts")
    pairs = [(np.asarray(t), np.asarray(r)) for t, r in zip(true_counts, released, strict=False)]
    for t, r in pairs:
        for name, arr in (("true", t), ("released", r)):
            if arr.dtype.kind not in "iu" and not (arr.dtype.kind == "f" and np.all(arr == np.round(arr))):
                raise ValueError(f"{name} counts must be integers")
        if t.shape != r.shape or t.size == 0:
            raise ValueError(f"true and released counts must be non-empty, same shape: {t.shape}, {r.shape}")
    if not pairs:
        return np.zeros(0)
    diff = np.concatenate([(r.astype(np.int64) - t.astype(np.int64)).ravel() for t, r in pairs])
    loss = _release_loss(measure, diff)
    ends = np.cumsum([t.size for t, _ in pairs])[:-1]
    values = np.array([float(part.mean()) for part in np.split(loss, ends)])
    return np.sqrt(values) if _is_rmse(measure) else values


def binomial_distribution(n: int, p: float) -> np.ndarray:
    """Binomial(n, p) probabilities of the counts 0..n, the very values of ``scipy.stats.binom.pmf``.

    Computed by the ufunc that ``binom.pmf`` evaluates (clipped to [0, 1] as it does), so the
    0.3 s import of ``scipy.special`` replaces the 2 to 3 s import of ``scipy.stats`` in every
    evaluation job; if a scipy release drops that private ufunc, ``binom.pmf`` itself is used.
    """
    n, p = check_n(n), check_probability(p)
    k = np.arange(n + 1)
    try:
        # lazy: keeps scipy out of `import countdp` and the CLI (both import this module)
        from scipy.special._ufuncs import _binom_pmf
    except ImportError:  # pragma: no cover - depends on the scipy release
        from scipy.stats import binom  # lazy: as above

        return binom.pmf(k, n, p)
    return np.clip(_binom_pmf(k.astype(float), float(n), float(p)), 0.0, 1.0)
