"""G-S Theorem 1 on random consumers: the geometric mechanism plus the consumer's best remap is
as good as the consumer's own optimal alpha-DP mechanism, for every monotone loss.

For each random consumer (loss, side information ``S``, ``n``, ``alpha``) two certified LPs of
:mod:`countdp.consumers.remap` give ``gm_remap_value`` (GM, then the optimal randomized remap)
and ``optimal_value`` (the best alpha-DP mechanism for this consumer).  ``gap`` is their
difference; since GM followed by a remap is itself alpha-DP, the true gap is never negative.
Each LP's certificate brackets its optimum, so the table also has rigorous bounds on the gap:
``gap_upper = remap primal - own dual`` and ``gap_lower = remap dual - own primal``.

Three kinds of consumers:

* ``monotone``: G-S's hypothesis, ``loss[i, r] = f_i(|i - r|)`` with ``f_i`` non-decreasing,
  ``f_i(0) >= 0``: the named losses L0, L1, L2, L0d:D and random profiles;
* ``one-sided``: ``loss[i, r]`` grows as ``r`` moves away from ``i``, but at different rates on
  the two sides, so it is *not* a function of ``|i - r|`` (outside G-S's hypothesis, whose
  Lemma 5 compares answers on opposite sides of ``i``);
* ``non-monotone``: profiles of ``|i - r|`` that go down somewhere, arbitrary matrices, and
  losses that reward far answers; Theorem 1 says nothing about them, and gaps appear.

Side information is all inputs, an interval, a single input, or a random set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from countdp.consumers.losses import is_monotone, loss_matrix
from countdp.consumers.remap import RemapSettings, optimal_private_mechanism, optimal_remap
from countdp.mechanisms.closed_forms import geometric
from countdp.studies.checks import CHECK_COLUMNS, check_row

KINDS = ("monotone", "one-sided", "non-monotone")
FAMILIES = {
    "monotone": ("L0", "L1", "L2", "L0d", "random profile"),
    "one-sided": ("random one-sided",),
    "non-monotone": ("shuffled profile", "arbitrary", "far is better"),
}
"""The loss families drawn for each kind of consumer (uniformly)."""
SIDE_KINDS = ("all", "interval", "single", "set")
COLUMNS = ("kind", "family", "side_kind", "n", "alpha", "side_size", "gm_remap_value", "optimal_value", "gap",
           "gap_upper", "gap_lower")


@dataclass(frozen=True)
class UniversalSettings:
    """The study's draws and thresholds.

    ``consumers``: how many of each kind; ``n_range``: inclusive range of ``n``; ``alphas``: the
    grid ``alpha`` is drawn from; ``equal_tol``: a monotone consumer's gap must be at most this;
    ``positive_gap``: a non-monotone gap counts as positive above this; ``zero_step``: chance that
    a step of a random profile is zero (flat stretches, as in L0d).
    """

    consumers: int = 1000
    n_range: tuple[int, int] = (2, 8)
    alphas: tuple[float, ...] = (0.1, 0.25, 0.5, 2 / 3, 0.8, 0.9)
    seed: int = 2010
    equal_tol: float = 1e-9
    positive_gap: float = 1e-6
    zero_step: float = 0.3
    remap: RemapSettings = field(default_factory=RemapSettings)


@dataclass(frozen=True)
class Consumer:
    """A minimax consumer: ``loss[i, r]`` and side information ``side`` for a count in ``0..n``."""

    kind: str
    family: str
    side_kind: str
    n: int
    alpha: float
    loss: np.ndarray
    side: np.ndarray


def _distance(n: int) -> np.ndarray:
    i = np.arange(n + 1)
    return np.abs(i[:, None] - i[None, :])


def _profiles(rng: np.random.Generator, N: int, zero_step: float) -> np.ndarray:
    """``N`` random non-decreasing profiles ``f_i(d)``, ``d = 0..N-1``, with ``f_i(0) >= 0``."""
    steps = rng.exponential(size=(N, N)) * (rng.random((N, N)) >= zero_step)
    steps[:, 0] = rng.uniform(0.0, 0.5, N)  # f_i(0)
    return np.cumsum(steps, axis=1)


def _monotone_loss(rng: np.random.Generator, n: int, family: str, zero_step: float) -> np.ndarray:
    if family in ("L0", "L1", "L2"):
        return loss_matrix(family, n)
    if family == "L0d":
        return loss_matrix(f"L0d:{int(rng.integers(1, n))}", n)
    return np.take_along_axis(_profiles(rng, n + 1, zero_step), _distance(n), axis=1)


def _one_sided_loss(rng: np.random.Generator, n: int, zero_step: float) -> np.ndarray:
    """Different non-decreasing profiles for answers above and below ``i`` (same ``f_i(0)``)."""
    D = _distance(n)
    above, below = _profiles(rng, n + 1, zero_step), _profiles(rng, n + 1, zero_step)
    below += (above[:, :1] - below[:, :1])
    i = np.arange(n + 1)
    return np.where(i[None, :] >= i[:, None], np.take_along_axis(above, D, axis=1),
                    np.take_along_axis(below, D, axis=1))


def _non_monotone_loss(rng: np.random.Generator, n: int, family: str) -> np.ndarray:
    N = n + 1
    if family == "shuffled profile":
        return np.take_along_axis(rng.random((N, N)), _distance(n), axis=1)
    if family == "arbitrary":
        return rng.random((N, N))
    return (n - _distance(n)) * rng.uniform(0.5, 2.0, (N, 1))  # far is better


def random_loss(rng: np.random.Generator, kind: str, family: str, n: int, zero_step: float = 0.3) -> np.ndarray:
    """A random loss of ``kind`` and ``family``; a draw that lands on the wrong side of G-S's
    hypothesis (a "non-monotone" one that happens to be monotone, or vice versa) is drawn again."""
    while True:
        if kind == "monotone":
            loss = _monotone_loss(rng, n, family, zero_step)
        elif kind == "one-sided":
            loss = _one_sided_loss(rng, n, zero_step)
        else:
            loss = _non_monotone_loss(rng, n, family)
        if is_monotone(loss) == (kind == "monotone"):
            return loss


def random_side(rng: np.random.Generator, n: int, side_kind: str) -> np.ndarray:
    """Side information: every input, a random interval, one input, or a random non-empty set."""
    if side_kind == "all":
        return np.arange(n + 1)
    if side_kind == "interval":
        a, b = np.sort(rng.integers(0, n + 1, 2))
        return np.arange(a, b + 1)
    if side_kind == "single":
        return np.array([rng.integers(0, n + 1)])
    chosen = np.flatnonzero(rng.random(n + 1) < 0.5)
    return chosen if chosen.size else np.array([rng.integers(0, n + 1)])


def draw_consumers(settings: UniversalSettings = UniversalSettings()) -> list[Consumer]:
    """``settings.consumers`` random consumers of each kind, from one seeded generator."""
    rng = np.random.default_rng(settings.seed)
    low, high = settings.n_range
    consumers = []
    for kind in KINDS:
        for _ in range(settings.consumers):
            n = int(rng.integers(low, high + 1))
            alpha = float(rng.choice(settings.alphas))
            family = str(rng.choice(FAMILIES[kind]))
            side_kind = str(rng.choice(SIDE_KINDS))
            loss = random_loss(rng, kind, family, n, settings.zero_step)
            consumers.append(Consumer(kind, family, side_kind, n, alpha, loss, random_side(rng, n, side_kind)))
    return consumers


def evaluate(consumer: Consumer, settings: RemapSettings | None = None) -> dict:
    """One table row: the consumer's value with GM + optimal remap, with its own optimal mechanism, and the gap."""
    c, settings = consumer, RemapSettings() if settings is None else settings
    remap = optimal_remap(geometric(c.n, c.alpha), c.loss, c.side, settings)
    own = optimal_private_mechanism(c.n, c.alpha, c.loss, c.side, settings)
    return {"kind": c.kind, "family": c.family, "side_kind": c.side_kind, "n": c.n, "alpha": c.alpha,
            "side_size": len(c.side), "gm_remap_value": remap.worst_loss, "optimal_value": own.value,
            "gap": remap.worst_loss - own.value,
            "gap_upper": remap.certificate.primal - own.certificate.dual,
            "gap_lower": remap.certificate.dual - own.certificate.primal}


def universal_table(settings: UniversalSettings = UniversalSettings()) -> pd.DataFrame:
    """One row per consumer (:data:`COLUMNS`)."""
    return pd.DataFrame([evaluate(c, settings.remap) for c in draw_consumers(settings)], columns=COLUMNS)


def largest_gaps(table: pd.DataFrame) -> pd.DataFrame:
    """Per kind: the consumer with the largest gap, and how many consumers there were."""
    rows = table.loc[table.groupby("kind", sort=False)["gap"].idxmax()].copy()
    rows["consumers"] = table.groupby("kind", sort=False).size().reindex(rows["kind"]).to_numpy()
    return rows.reset_index(drop=True)


def universal_checks(table: pd.DataFrame, settings: UniversalSettings = UniversalSettings()) -> pd.DataFrame:
    """Theorem 1 on monotone consumers; a positive gap for some non-monotone one; gaps never negative."""
    kinds = {kind: table[table.kind == kind] for kind in KINDS}
    mono, one_sided, non = kinds["monotone"], kinds["one-sided"], kinds["non-monotone"]
    tol, positive = settings.equal_tol, settings.positive_gap
    worst_mono = float(mono.gap_upper.max()) if len(mono) else float("nan")
    worst_one_sided = float(one_sided.gap_upper.max()) if len(one_sided) else float("nan")
    best_non = float(non.gap_lower.max()) if len(non) else float("nan")
    n_positive = int((non.gap_lower > positive).sum())
    lowest = float(table.gap_upper.min())
    return pd.DataFrame([
        check_row("G-S Thm 1", f"monotone: gap <= {tol:g} for every consumer", f"gap 0 (<= {tol:g})",
                  f"largest gap {worst_mono:.2e} over {len(mono)} consumers",
                  len(mono) > 0 and worst_mono <= tol, "gap_upper: remap primal minus own-mechanism dual"),
        check_row("G-S Thm 1", f"non-monotone: some gap > {positive:g}", f"> {positive:g} (outside the hypothesis)",
                  f"largest gap {best_non:.4g}; {n_positive} of {len(non)} consumers above {positive:g}",
                  len(non) > 0 and best_non > positive, "gap_lower: remap dual minus own-mechanism primal"),
        check_row("G-S Thm 1", "GM + remap is alpha-DP, so no gap is negative", f">= -{tol:g}",
                  f"smallest gap upper bound {lowest:.2e} over {len(table)} consumers", lowest >= -tol),
        check_row("G-S Thm 1", f"beyond the paper: one-sided monotone losses also have gap <= {tol:g}",
                  "not covered (the loss is not a function of |i - r|)",
                  f"largest gap {worst_one_sided:.2e} over {len(one_sided)} consumers",
                  len(one_sided) > 0 and worst_one_sided <= tol,
                  "an observation: Lemma 5's proof needs symmetry, these random consumers do not"),
    ], columns=CHECK_COLUMNS)


def universal_study(settings: UniversalSettings = UniversalSettings()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(table, checks)``: every consumer's values and gap, and the check rows."""
    table = universal_table(settings)
    return table, universal_checks(table, settings)


__all__ = ["COLUMNS", "FAMILIES", "KINDS", "SIDE_KINDS", "Consumer", "UniversalSettings", "draw_consumers",
           "evaluate", "largest_gaps", "random_loss", "random_side", "universal_checks", "universal_study",
           "universal_table"]
