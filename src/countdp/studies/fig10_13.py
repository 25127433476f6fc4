"""Figures 10-13: gather the evaluation sweeps into tidy tables, and check the paper's findings.

:func:`gather_table` sorts one figure's sweep summaries into its table; :func:`findings` checks
each qualitative finding of the paper's Section V (its text on Figures 10-13) on those tables, with every threshold
given by a :class:`Thresholds` (the workflow fills it from the config's ``findings:`` block).
Every number is computed from the tables.  A finding the tables cannot decide (for example a
comparison across alphas when the sweep has one alpha) gets ``holds`` = ``None``, which the
claims table reports as *not checkable*.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

FINDING_COLUMNS = ("figure", "finding", "scope", "criterion", "value", "holds")
"""Columns of the findings table (a qualitative finding, tested by a criterion)."""


@dataclass(frozen=True)
class Thresholds:
    """Every threshold of the findings (config ``findings:``; see config/README.md)."""

    um_max_deviation: float  # Figure 10: max |UM - n/(n+1)|
    um_max_z: float  # Figure 10: max |z| of UM against n/(n+1)
    tracks_max_gap: float  # Figure 10: mean |WM - UM| for "WM tracks UM"
    extreme_p: float  # Figure 11: "p near 0 or 1" means p <= extreme_p or p >= 1 - extreme_p
    high_alpha: float  # "higher alpha" findings apply for alpha > high_alpha
    balanced_p: float  # Figure 12: p is balanced when |p - 0.5| < balanced_p
    skewed_em_max_excess: float  # Figure 12: EM "not substantially worse": max (EM - GM) <= this
    between_slack: float  # Figure 12: slack of "WM between GM and EM"
    between_min_fraction: float  # Figure 12: fraction of d where WM must lie between
    em_best_alpha: float  # Figure 13: the alpha of "EM lowest RMSE for all n"
    mc_max_z: float  # Monte Carlo vs exact: max |z|
    mc_outlier_z: float  # ... and at most mc_outlier_fraction of cells with |z| > mc_outlier_z
    mc_outlier_fraction: float
    mc_min_repetitions: float  # fewer repetitions: each s.e. is a guess from too few samples, not checkable

    @classmethod
    def from_config(cls, block: Mapping) -> Thresholds:
        """From the config's ``findings:`` block (every key required; unknown keys rejected)."""
        names = {f.name for f in fields(cls)}
        missing, unknown = sorted(names - set(block)), sorted(set(block) - names)
        if missing or unknown:
            raise ValueError(f"findings thresholds: missing {missing}, unknown {unknown}")
        return cls(**{k: float(block[k]) for k in names})


def gather_table(summaries: Sequence[pd.DataFrame], data_source: Mapping | None = None) -> pd.DataFrame:
    """One figure's table: its sweep summaries concatenated and sorted (alpha descending).

    ``data_source`` (Figure 10: the Adult sidecar) adds its ``source`` and ``sha256`` columns.
    """
    table = pd.concat(list(summaries), ignore_index=True)
    if data_source is not None:
        table.insert(1, "data_source", data_source["source"])
        table.insert(2, "data_sha256", data_source["sha256"])
    keys = [k for k in ("target", "alpha", "p", "n", "d", "mechanism") if k in table.columns]
    return table.sort_values(keys, ascending=[k != "alpha" for k in keys], kind="stable")


def _wide(frame: pd.DataFrame, index, column: str = "mean") -> pd.DataFrame:
    return frame.pivot_table(index=index, columns="mechanism", values=column, aggfunc="first")


def _has(w: pd.DataFrame, *mechs: str) -> bool:
    return all(m in w.columns for m in mechs)


class _Rows(list):
    def add(self, figure, finding, scope, criterion, value, holds) -> None:
        self.append({"figure": figure, "finding": finding, "scope": scope, "criterion": criterion, "value": value,
                     "holds": None if holds is None else bool(holds)})


def _fig10(t: pd.DataFrame, th: Thresholds, rows: _Rows) -> None:
    for target, sub in t.groupby("target", sort=False):
        a = sub["alpha"].iloc[0]
        scope = f"Adult {target}, alpha={a:g}, n={sub['n'].min()}..{sub['n'].max()}"
        w, se = _wide(sub, "n"), _wide(sub, "n", "se")
        if _has(w, "UM"):
            n = w.index.to_numpy()
            dev = w["UM"].to_numpy() - n / (n + 1)
            zmax = float(np.max(np.abs(dev) / np.maximum(se["UM"].to_numpy(), 1e-12)))
            rows.add("fig10", "UM's error ~= n/(n+1)", scope,
                     f"max |UM - n/(n+1)| <= {th.um_max_deviation:g} and max |z| <= {th.um_max_z:g}",
                     f"max |dev| = {np.max(np.abs(dev)):.4f}; max |z| = {zmax:.2f}",
                     np.max(np.abs(dev)) <= th.um_max_deviation and zmax <= th.um_max_z)
        if _has(w, "GM", "UM"):
            diff = w["GM"] - w["UM"]
            threshold = 2 * a / (1 - a)  # Lemma 2: GM has weak honesty iff n >= 2a/(1-a)
            below = diff[diff.index < threshold]
            rows.add("fig10", "GM worse than UM", scope,
                     f"GM mean > UM mean at every n < 2a/(1-a) = {threshold:.3g} (where GM lacks weak honesty)",
                     f"GM > UM at {int((below > 0).sum())}/{len(below)} n below the threshold and "
                     f"{int((diff > 0).sum())}/{len(diff)} n overall; GM - UM from {diff.min():.4f} to "
                     f"{diff.max():.4f}", bool(len(below)) and bool((below > 0).all()))
        for wm in ("WM", "WH"):  # WM = LP(WH+RM+CM), the paper's text; WH = LP(WH alone)
            if _has(w, wm, "UM", "EM"):
                gap_wm, gap_em = (w[wm] - w["UM"]).abs(), w["UM"] - w["EM"]
                rows.add("fig10", f"WM close to UM (tracks it), WM read as {wm}", scope,
                         f"mean |{wm} - UM| < {th.tracks_max_gap:g} and smaller than mean (UM - EM)",
                         f"mean |{wm} - UM| = {gap_wm.mean():.4f} (max {gap_wm.max():.4f}); "
                         f"mean UM - EM = {gap_em.mean():.4f}",
                         gap_wm.mean() < th.tracks_max_gap and gap_wm.mean() < gap_em.mean())
        if _has(w, "EM"):
            best = w.idxmin(axis=1)
            rows.add("fig10", "EM best (lowest error)", scope, "EM has the lowest mean at every n",
                     f"EM lowest at {int((best == 'EM').sum())}/{len(best)} n; others best at n = "
                     f"{sorted(int(n) for n in best.index[best != 'EM'])}", bool((best == "EM").all()))


def _fig11(t: pd.DataFrame, th: Thresholds, rows: _Rows) -> None:
    lo_p, hi_p = th.extreme_p, 1 - th.extreme_p
    for (a, n), sub in t.groupby(["alpha", "n"], sort=False):
        w = _wide(sub, "p")
        scope = f"Binomial n={n}, alpha={a:g}, L0,{int(sub['d'].iloc[0])}"
        if _has(w, "GM"):
            gm_best = [float(p) for p in w.index[w.idxmin(axis=1) == "GM"]]
            rows.add("fig11", "GM good only for p near 0 or 1", scope,
                     f"every p where GM has the lowest mean has p <= {lo_p:g} or p >= {hi_p:g}",
                     f"GM best at p = {gm_best or 'none'}", all(p <= lo_p or p >= hi_p for p in gm_best))
        if _has(w, "GM", "EM", "WM") and 0.5 in w.index:
            r = w.loc[0.5]
            rows.add("fig11", "constrained mechanisms beat GM for spread inputs (p = 0.5)", scope,
                     "EM and WM means < GM mean at p = 0.5", f"GM {r['GM']:.4f}, WM {r['WM']:.4f}, EM {r['EM']:.4f}",
                     r["EM"] < r["GM"] and r["WM"] < r["GM"])
        if _has(w, "GM", "UM") and a > th.high_alpha:
            worse = [float(p) for p in w.index[w["GM"] > w["UM"]]]
            rows.add("fig11", "higher alpha: GM often worse than UM", scope, "GM mean > UM mean at some p",
                     f"GM > UM at {len(worse)}/{len(w)} p: {worse}", len(worse) > 0)
    if {"GM", "WM"} <= set(t["mechanism"]):
        gaps = {a: (_wide(s, ["n", "p"])["WM"] - _wide(s, ["n", "p"])["GM"]).abs().mean()
                for a, s in t.groupby("alpha")}
        if len(gaps) >= 2:
            lo, hi = min(gaps), max(gaps)
            rows.add("fig11", "lower alpha: WM and GM converge", f"alpha {lo:g} vs {hi:g}",
                     "mean |WM - GM| over (n, p) smaller at the lower alpha",
                     f"{gaps[lo]:.4f} at alpha={lo:g} vs {gaps[hi]:.4f} at alpha={hi:g}", gaps[lo] < gaps[hi])
        else:
            rows.add("fig11", "lower alpha: WM and GM converge", "one alpha", "needs two alphas", "", None)


def _fig12(t: pd.DataFrame, th: Thresholds, rows: _Rows) -> None:
    for (a, p), sub in t.groupby(["alpha", "p"], sort=False):
        w = _wide(sub, "d")
        scope = (f"Binomial n={int(sub['n'].iloc[0])}, alpha={a:g}, p={p:g}, "
                 f"d={int(w.index.min())}..{int(w.index.max())}")
        if not _has(w, "GM", "EM"):
            continue
        margin = w["GM"] - w["EM"]
        if abs(p - 0.5) < th.balanced_p:
            rows.add("fig12", "balanced p: EM beats GM at every d", scope, "EM mean < GM mean at every d",
                     f"GM - EM from {margin.min():.4f} to {margin.max():.4f}", bool((margin > 0).all()))
            ratio = (w["GM"] / w["EM"].where(w["EM"] > 0)).dropna()
            rows.add("fig12", "balanced p: EM's margin over GM grows with d", scope,
                     "GM/EM ratio non-decreasing in d (d with EM > 0), and reported: absolute margin at first vs "
                     "last d",
                     f"GM/EM ratio {ratio.iloc[0]:.2f} -> {ratio.iloc[-1]:.2f}; "
                     f"GM - EM {margin.iloc[0]:.4f} (d={int(w.index[0])}) -> {margin.iloc[-1]:.4f} "
                     f"(d={int(w.index[-1])}); absolute margin grows: {bool(margin.iloc[-1] > margin.iloc[0])}",
                     bool(np.all(np.diff(ratio.to_numpy()) >= -1e-9)))
            if _has(w, "UM") and a > th.high_alpha:
                worse = [int(d) for d in w.index[w["GM"] > w["UM"]]]
                rows.add("fig12", "balanced p, higher alpha: GM can be worse than UM", scope,
                         "GM mean > UM mean at some d", f"GM > UM at d = {worse}", len(worse) > 0)
        elif min(p, 1 - p) <= th.extreme_p:
            rows.add("fig12", "skewed p: EM not substantially worse than GM", scope,
                     f"max over d of (EM - GM) <= {th.skewed_em_max_excess:g}",
                     f"max EM - GM = {(-margin).max():.4f}; EM < GM at {int((margin > 0).sum())}/{len(margin)} d",
                     (-margin).max() <= th.skewed_em_max_excess)
            if _has(w, "WM"):
                slack = th.between_slack
                lo, hi = np.minimum(w["GM"], w["EM"]) - slack, np.maximum(w["GM"], w["EM"]) + slack
                between = (w["WM"] >= lo) & (w["WM"] <= hi)
                rows.add("fig12", "skewed p: WM between GM and EM", scope,
                         f"WM mean within [min(GM, EM), max(GM, EM)] (+-{slack:g}) at most "
                         f"(>= {th.between_min_fraction:.0%}) d",
                         f"between at {int(between.sum())}/{len(between)} d",
                         between.mean() >= th.between_min_fraction)


def _fig13(t: pd.DataFrame, th: Thresholds, rows: _Rows) -> None:
    for (a, p), sub in t.groupby(["alpha", "p"], sort=False):
        w = _wide(sub, "n")
        scope = f"Binomial alpha={a:g}, p={p:g}, n={int(w.index.min())}..{int(w.index.max())}"
        best = w.idxmin(axis=1)
        if abs(a - th.em_best_alpha) < 1e-9 and _has(w, "EM"):
            rows.add("fig13", f"alpha = {th.em_best_alpha:g}: EM lowest RMSE for all n", scope,
                     "EM has the lowest mean RMSE at every n",
                     f"EM lowest at {int((best == 'EM').sum())}/{len(best)} n; others at n = "
                     f"{sorted(int(n) for n in best.index[best != 'EM'])}", bool((best == "EM").all()))
        inc = {m: bool(np.all(np.diff(w[m].to_numpy()) > 0)) for m in w.columns}
        rows.add("fig13", "RMSE increases with group size", scope,
                 "mean RMSE strictly increasing in n for every mechanism",
                 "; ".join(f"{m}: {v}" for m, v in inc.items()), all(inc.values()))
        if _has(w, "GM", "UM") and a > th.high_alpha:  # the paper ties this to large alpha
            worse = [int(n) for n in w.index[w["GM"] > w["UM"]]]
            rows.add("fig13", "higher alpha: GM can be worse than random guessing (UM)", scope,
                     "GM mean > UM mean at some n", f"GM > UM at n = {worse}", len(worse) > 0)


def _monte_carlo(fig: str, t: pd.DataFrame, th: Thresholds, rows: _Rows) -> None:
    z = t["z"].abs().to_numpy()
    repetitions = int(t["repetitions"].min())
    criterion = (f"max |z| <= {th.mc_max_z:g} and at most {th.mc_outlier_fraction:.0%} of cells with "
                 f"|z| > {th.mc_outlier_z:g} (z = (mean - exact) / s.e.), from {th.mc_min_repetitions:g} "
                 f"repetitions")
    value = f"max |z| = {z.max():.2f}; {int((z > th.mc_outlier_z).sum())} cells with |z| > {th.mc_outlier_z:g}"
    if repetitions < th.mc_min_repetitions:  # the s.e. is estimated from too few samples to judge z
        rows.add(fig, "Monte Carlo mean agrees with the exact expectation", f"{len(z)} (point, mechanism) cells",
                 criterion, f"{value}; only {repetitions} repetitions", None)
        return
    rows.add(fig, "Monte Carlo mean agrees with the exact expectation", f"{len(z)} (point, mechanism) cells",
             criterion, value, z.max() <= th.mc_max_z and (z > th.mc_outlier_z).mean() <= th.mc_outlier_fraction)


FIGURE_FINDINGS = {"fig10": _fig10, "fig11": _fig11, "fig12": _fig12, "fig13": _fig13}


def findings(tables: Mapping[str, pd.DataFrame], thresholds: Thresholds) -> pd.DataFrame:
    """Every finding of Figures 10-13 on ``tables`` (``{"fig10": table, ...}``, any subset).

    Columns :data:`FINDING_COLUMNS`; ``holds`` is True, False, or None (not checkable).
    """
    rows = _Rows()
    for fig, check in FIGURE_FINDINGS.items():
        if fig in tables:
            check(tables[fig], thresholds, rows)
    for fig, table in tables.items():
        _monte_carlo(fig, table, thresholds, rows)
    return pd.DataFrame(rows, columns=list(FINDING_COLUMNS))
