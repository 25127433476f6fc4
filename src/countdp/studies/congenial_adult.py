"""The congenial release on the Adult groups of Figure 10: every group's count conditioned on the total.

For each Adult target (young, gender, income), group size n and mechanism (GM or EM at one
alpha), the people are put into random groups of n (as Figure 10 does; the groups are made from
the person records by a records release's grouping, :mod:`countdp.studies.adult_groups`), and the groups' counts
are released twice per repetition: each group through its own certified mechanism (integer
weights), and the same conditioned on the noisy counts summing exactly to the true total of the
target, the invariant a curator publishes (Gong and Meng's congenial release, drawn exactly by
:class:`countdp.invariants.group_total.GroupTotalSampler`).  Recorded: the per-group mean
absolute error and RMSE of both, the error of the released total, and the conditioned release's
guarantee for invariant neighbours, proven on the weights sampled
(:func:`countdp.invariants.guarantee.proven_bound`), with Gong and Meng's gamma.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd

from countdp.invariants.group_total import GroupTotalSampler
from countdp.invariants.guarantee import proven_bound
from countdp.mechanisms.closed_forms import CLOSED_FORMS
from countdp.privacy.rounding import round_to_release
from countdp.privacy.sampling import release
from countdp.studies.adult_groups import adult_group_counts
from countdp.studies.checks import CHECK_COLUMNS, check_row
from countdp.values.alpha import alpha_text, exact_alpha

CONGENIAL_MECHANISMS = ("GM", "EM")
"""Mechanisms released per group: the closed forms, rounded to exactly alpha-DP integer weights."""


@dataclass(frozen=True)
class CongenialSettings:
    """What the study releases: ``groups`` groups of each size (the first after a seeded random grouping)."""

    targets: tuple[str, ...] = ("young", "gender", "income")
    ns: tuple[int, ...] = (4, 16)
    alpha: str = "9/10"
    mechanisms: tuple[str, ...] = CONGENIAL_MECHANISMS
    groups: int = 500
    repetitions: int = 5
    seed: int = 20180416


def _released(mechanism: str, n: int, alpha: Fraction):
    if mechanism not in CLOSED_FORMS or mechanism not in CONGENIAL_MECHANISMS:
        raise ValueError(f"the congenial study releases {', '.join(CONGENIAL_MECHANISMS)}, got {mechanism!r}")
    return round_to_release(CLOSED_FORMS[mechanism](n, float(alpha)), alpha)


def _errors(noisy: np.ndarray, counts: np.ndarray) -> dict:
    diff = (noisy - counts).astype(float)
    return {"mae": float(np.abs(diff).mean()), "rmse": float(np.sqrt((diff**2).mean())),
            "total_error": int(noisy.sum() - counts.sum())}


def _point(bits: np.ndarray, target: str, n: int, mechanism: str, settings: CongenialSettings,
           rng: np.random.Generator) -> tuple[list[dict], dict]:
    """One (target, n, mechanism): the repetitions' errors and the guarantee."""
    alpha = exact_alpha(settings.alpha)
    counts = adult_group_counts(bits, n, rng, target)[: settings.groups]
    released = _released(mechanism, n, alpha)
    mechanisms = [released] * len(counts)
    sampler = GroupTotalSampler(mechanisms, counts)
    guarantee = proven_bound(mechanisms, int(counts.sum()))
    key = {"target": target, "n": n, "mechanism": mechanism, "alpha": alpha_text(alpha), "groups": len(counts),
           "total": int(counts.sum())}
    rows = []
    for repetition in range(settings.repetitions):
        for kind, noisy in (("conditioned", sampler.draw(rng)), ("independent", release(released, counts, rng))):
            rows.append({**key, "repetition": repetition, "release": kind, **_errors(noisy, counts)})
    summary = {**key, "guarantee_alpha": float(guarantee.alpha), "guarantee_kind": guarantee.kind,
               "guarantee_ratio": str(guarantee.ratio), "gamma": guarantee.gamma,
               "consistent_with_theorem_2_1": guarantee.consistent_with_gong_meng()}
    return rows, summary


def congenial_study(table: pd.DataFrame, settings: CongenialSettings = CongenialSettings()
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(errors, guarantees)``: one row per repetition and release kind, and one per (target, n, mechanism)."""
    rng = np.random.default_rng(settings.seed)
    rows, summaries = [], []
    for target in settings.targets:
        bits = table[target].to_numpy(dtype=np.int64)
        for n in settings.ns:
            for mechanism in settings.mechanisms:
                point_rows, summary = _point(bits, target, int(n), mechanism, settings, rng)
                rows += point_rows
                summaries.append(summary)
    return pd.DataFrame(rows), pd.DataFrame(summaries)


def congenial_checks(errors: pd.DataFrame, guarantees: pd.DataFrame) -> pd.DataFrame:
    """The invariant holds exactly, and the computed guarantee agrees with Gong and Meng's Theorem 2.1."""
    conditioned = errors[errors.release == "conditioned"]
    independent = errors[errors.release == "independent"]
    worst = guarantees.loc[guarantees.gamma.idxmax()]
    return pd.DataFrame([
        check_row("G-M Sec 2 (Adult)", "every conditioned release keeps the true total exactly", "total error 0",
                  f"largest |total error| {int(conditioned.total_error.abs().max())} over {len(conditioned)} releases "
                  f"(independent noise: up to {int(independent.total_error.abs().max())})",
                  bool((conditioned.total_error == 0).all())),
        check_row("G-M Thm 2.1 (Adult)", "the conditioned release is (1 + gamma) 2 epsilon-DP with gamma <= 1, "
                  "for invariant neighbours", "gamma <= 1",
                  f"largest gamma {worst.gamma:.4f} ({worst.mechanism}, n={worst.n}, {worst.target}); every guarantee "
                  f"computed on the sampled weights ({', '.join(sorted(set(guarantees.guarantee_kind)))})",
                  bool(guarantees.consistent_with_theorem_2_1.all())),
    ], columns=CHECK_COLUMNS)


def summary_table(errors: pd.DataFrame, guarantees: pd.DataFrame) -> pd.DataFrame:
    """Mean errors per (target, n, mechanism, release kind), beside the conditioned guarantee."""
    keys = ["target", "n", "mechanism"]
    means = errors.groupby([*keys, "release"], sort=False)[["mae", "rmse"]].mean().reset_index()
    return means.merge(guarantees[[*keys, "alpha", "guarantee_alpha", "gamma"]], on=keys)


__all__ = ["CONGENIAL_MECHANISMS", "CongenialSettings", "congenial_checks", "congenial_study", "summary_table"]
