"""The statistics of the sampler audit (:mod:`countdp.privacy.audit`): confidence bounds and events.

An *event* is a set of outputs (rows of the mechanism), given as a boolean mask over them.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import numpy as np
from scipy.stats import beta as beta_dist

EVENT_FAMILIES = ("outputs", "prefixes", "suffixes", "thresholds", "all")
"""Named event families: single outputs, ``{i <= k}``, ``{i >= k}``, prefixes+suffixes, all three."""


# ---------------------------------------------------------------------------------------------
# Confidence bounds


def clopper_pearson(k: np.ndarray | int, m: int, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper-Pearson bounds for a binomial proportion, each at level ``delta``.

    Returns ``(lower, upper)`` with ``Pr[p < lower] <= delta`` and ``Pr[p > upper] <= delta``
    for ``k ~ Binomial(m, p)``.  ``lower = 0`` when ``k = 0`` and ``upper = 1`` when ``k = m``.
    """
    k = np.asarray(k, dtype=float)
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    if m < 1 or np.any(k < 0) or np.any(k > m):
        raise ValueError(f"need 0 <= k <= m with m >= 1, got m = {m!r}")
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(k > 0, beta_dist.ppf(delta, np.maximum(k, 1), m - k + 1), 0.0)
        upper = np.where(k < m, beta_dist.isf(delta, k + 1, np.maximum(m - k, 1)), 1.0)
    return lower, upper


# ---------------------------------------------------------------------------------------------
# Events


def event_masks(n_outputs: int, events: object = "outputs") -> np.ndarray:
    """Boolean ``(E, n_outputs)`` masks for a named family or for the caller's sets.

    ``events`` is a name in :data:`EVENT_FAMILIES`, a boolean array of shape ``(E, N)``, or an
    iterable of iterables of output indices.  Empty events and the event of all outputs are
    dropped (their ratio is 0/0 or 1); duplicates are removed.
    """
    N = n_outputs
    if isinstance(events, str):
        name = events.strip().lower()
        i = np.arange(N)
        k = np.arange(N)[:, None]
        families = {
            "outputs": np.eye(N, dtype=bool),
            "prefixes": i[None, :] <= k,
            "suffixes": i[None, :] >= k,
        }
        families["thresholds"] = np.vstack([families["prefixes"], families["suffixes"]])
        families["all"] = np.vstack([families["outputs"], families["thresholds"]])
        if name not in families:
            raise ValueError(f"unknown event family {events!r}; allowed: {', '.join(EVENT_FAMILIES)}")
        masks = families[name]
    else:
        arr = np.asarray(events) if isinstance(events, np.ndarray) else None
        if arr is not None and arr.dtype == bool:
            if arr.ndim != 2 or arr.shape[1] != N:
                raise ValueError(f"event masks must have shape (E, {N}), got {arr.shape}")
            masks = arr
        else:
            rows = []
            for ev in events:
                members = list(ev) if isinstance(ev, Iterable) else [ev]
                mask = np.zeros(N, dtype=bool)
                for o in members:
                    if isinstance(o, bool) or not isinstance(o, numbers.Integral) or not 0 <= o < N:
                        raise ValueError(f"event members must be outputs in 0..{N - 1}, got {o!r}")
                    mask[int(o)] = True
                rows.append(mask)
            if not rows:
                raise ValueError("no events given")
            masks = np.array(rows)
    sizes = masks.sum(axis=1)
    masks = masks[(sizes > 0) & (sizes < N)]
    if masks.shape[0] == 0:
        raise ValueError("every event is empty or contains every output: nothing to test")
    return np.unique(masks, axis=0)
