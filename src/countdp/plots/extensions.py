"""Figures of the studies beyond the paper (results/figures/ext_*): one function per figure.

Each takes the study's tables (DataFrames) and the output ``paths`` (``.pdf`` / ``.png``), and
draws through :mod:`countdp.plots.canvas` (its own figure, the drawing lock, atomic files).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.ticker import MaxNLocator

from countdp.plots.canvas import drawn, save_tight, subplots
from countdp.plots.style import MECHANISM_COLORS, MECHANISM_LABELS, MECHANISM_MARKERS
from countdp.studies.prior import PRIOR_COUNTERPART
from countdp.studies.subsets import FIG5_REFERENCES

BEHAVIOUR_COLOURS = {"GM": "GM", "WH": "WH", "WH+CM": "WM", "EM": "EM"}
"""Figure 5 behaviours drawn in the colour of the mechanism they equal (LP(WH+CM) as WM)."""

SET_COLOURS = {"BasicDP": "GM", "none": "GM", "WH": "WH", "WM": "WM", "ALL": "EM", "F": "EM"}


def _colour(key: str) -> str:
    return MECHANISM_COLORS.get(SET_COLOURS.get(key, BEHAVIOUR_COLOURS.get(key, key)), "#000000")


@drawn
def plot_baselines(table: pd.DataFrame, paths: Sequence[str]) -> None:
    """Top: uniform-prior L0 vs n per alpha; bottom: achieved alpha / alpha of EXP and naive CGM."""
    alphas = sorted(table.alpha.unique())
    fig, axes = subplots(2, len(alphas), figsize=(3.6 * len(alphas), 6.2), squeeze=False,
                             sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    for k, a in enumerate(alphas):
        ax, bx = axes[0, k], axes[1, k]
        sub = table[table.alpha == a]
        _baseline_lines(ax, sub, "L0")
        ax.set_title(f"alpha = {a:g}")
        for m, ls in (("EXP", "-"), ("CGM-naive", "--")):
            g = sub[sub.mechanism == m].sort_values("n")
            colour = MECHANISM_COLORS["EXP" if m == "EXP" else "CGM"]
            bx.plot(g.n, g.achieved_alpha / a, ls=ls, marker="o", ms=3, color=colour,
                    label="EXP (nominal alpha)" if m == "EXP" else "Cond. GM with base alpha")
        bx.axhline(1.0, color="k", lw=0.8)
        bx.set_xlabel("n (group size)")
        if k == 0:
            ax.set_ylabel("L0 (uniform prior)")
            bx.set_ylabel("achieved alpha / alpha")

    for ax in axes.ravel():
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0, -1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    axes[1, -1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle("Baselines: error at equal privacy, and the privacy they really achieve (>1: more private)",
                 fontsize=10)
    fig.tight_layout()
    save_tight(fig, paths)


BASELINE_LABELS = {**MECHANISM_LABELS, "CGM": "Cond. GM = calibrated EXP", "EXP": "Exponential mech. (eps/2)"}
"""Legend labels of the baselines study (EXP-cal is CGM's matrix, so it is drawn once, as CGM)."""


def _baseline_lines(ax, sub: pd.DataFrame, column: str) -> None:
    """One line per mechanism of the baselines study (one alpha's rows ``sub``): ``column`` against n."""
    for m in ("GM", "EM", "UM", "EXP", "CGM", "RR"):
        g = sub[sub.mechanism == m].sort_values("n")
        ax.plot(g.n, g[column], marker=MECHANISM_MARKERS[m], color=MECHANISM_COLORS[m], label=BASELINE_LABELS[m],
                ms=4)


@drawn
def plot_baseline_objective(table: pd.DataFrame, paths: Sequence[str], objective: str) -> None:
    """The baselines study under ``objective`` (L1 or L2): its uniform-prior value vs n, one panel per alpha."""
    alphas = sorted(table.alpha.unique())
    fig, axes = subplots(1, len(alphas), figsize=(3.6 * len(alphas), 3.8), squeeze=False)
    for k, a in enumerate(alphas):
        ax = axes[0, k]
        _baseline_lines(ax, table[table.alpha == a], objective)
        ax.set_title(f"alpha = {a:g}")
        ax.set_xlabel("n (group size)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if k == 0:
            ax.set_ylabel(f"{objective} (uniform prior)")
    axes[0, -1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle(f"Baselines under {objective}, at equal privacy", fontsize=10)
    fig.tight_layout()
    save_tight(fig, paths)


@drawn
def plot_subsets(detail: pd.DataFrame, summary: pd.DataFrame, paths: Sequence[str], label_y: float,
                 y_max: float) -> None:
    """Stacked bars: how many of the 128 subsets show each behaviour, per (n, alpha).

    Each bar is labelled (distinct values / distinct matrices) at height ``label_y``; the axis ends at ``y_max``.
    """
    keys = list(summary.sort_values(["alpha", "n"])[["n", "alpha"]].itertuples(index=False, name=None))
    behaviours = [b for b in (*FIG5_REFERENCES, "other") if b in set(detail.behaviour)]
    fig, ax = subplots(figsize=(max(6.0, 0.45 * len(keys) + 2), 4.2))
    x = np.arange(len(keys))
    bottom = np.zeros(len(keys))
    for b in behaviours:
        counts = np.array([((detail.n == n) & (detail.alpha == a) & (detail.behaviour == b)).sum() for n, a in keys])
        label = {"WH": "LP(WH)", "WH+CM": "LP(WH+CM)"}.get(b, b)
        ax.bar(x, counts, bottom=bottom, color=_colour(b) if b != "other" else "k", label=label, width=0.8)
        bottom += counts
    s = summary.set_index(["n", "alpha"])
    for k, key in enumerate(keys):
        ax.text(k, label_y, f"{s.loc[key, 'distinct_values']}/{s.loc[key, 'distinct_matrices']}", ha="center",
                va="bottom", fontsize=7)
    ax.set_xticks(x, [f"n={n}\na={a:g}" for n, a in keys], fontsize=7)
    ax.set_ylim(0, y_max)
    ax.set_ylabel("property subsets (of 128)")
    ax.set_title("L0 optimum of all 128 property subsets (labels: distinct values / distinct min-norm optima)",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    save_tight(fig, paths)


@drawn
def plot_minimax(table: pd.DataFrame, paths: Sequence[str], objective: str = "L0") -> None:
    """Worst-column and average ``objective`` of minimax (solid) and Bayesian (dashed) designs vs n."""
    worst, avg = f"worst_{objective}", f"avg_{objective}"
    alphas = sorted(table.alpha.unique())
    fig, axes = subplots(2, len(alphas), figsize=(3.6 * len(alphas), 6.0), squeeze=False, sharex=True)
    sets = [s for s in table.properties.unique() if s not in ("GM", "EM")]
    for k, a in enumerate(alphas):
        sub = table[table.alpha == a]
        for r, col in enumerate((worst, avg)):
            ax = axes[r, k]
            for s in sets:
                for design, ls in (("minimax", "-"), ("bayes", "--")):
                    g = sub[(sub.properties == s) & (sub.design == design)].sort_values("n")
                    ax.plot(g.n, g[col], ls=ls, color=_colour(s), marker="o", ms=3, label=f"{s} {design}")
            g = sub[sub.properties == "GM"].sort_values("n")
            ax.plot(g.n, g[col], ls=":", color="k", lw=1, label="GM (closed form)")
            if r == 0:
                ax.set_title(f"alpha = {a:g}")
            else:
                ax.set_xlabel("n (group size)")
            if k == 0:
                ax.set_ylabel(f"worst-input {objective}" if col == worst else f"average {objective} (uniform prior)")
    axes[0, -1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    mm = table[table.design == "minimax"].merge(table[table.properties == "EM"][["n", "alpha", worst]],
                                                on=["n", "alpha"], suffixes=("", "_em"))
    note = (f"\nevery minimax design has EM's {objective} (solid lines coincide)"
            if bool(((mm[worst] - mm[f"{worst}_em"]).abs() <= 1e-7).all()) else "")
    fig.suptitle(f"Minimax (solid) vs Bayesian (dashed) {objective} designs; ALL = all seven properties" + note,
                 fontsize=10)
    fig.tight_layout()
    save_tight(fig, paths)


@drawn
def plot_prior(table: pd.DataFrame, paths: Sequence[str], objective: str = "L0") -> None:
    """Per distribution: expected error of uniform-prior vs prior-aware designs, and diag spread."""
    dists = list(dict.fromkeys(table.distribution))
    col = "expected_L0" if objective == "L0" else "expected_L0d1"
    fig, axes = subplots(2, len(dists), figsize=(3.0 * len(dists) + 1, 5.6), squeeze=False, sharey="row")
    fams = list(PRIOR_COUNTERPART)
    x = np.arange(len(fams))
    for k, dist in enumerate(dists):
        sub = table[table.distribution == dist]
        uni = [sub[(sub.design == "uniform") & (sub.mechanism == PRIOR_COUNTERPART[f])] for f in fams]
        pri = [sub[(sub.design == "prior") & (sub.family == f) & (sub.objective == objective)] for f in fams]
        colours = [_colour(f) for f in fams]
        for r, measure in enumerate((col, "diag_spread")):
            ax = axes[r, k]
            ax.bar(x - 0.2, [u[measure].iloc[0] for u in uni], 0.38, color=colours, alpha=0.45, edgecolor="k",
                   label="uniform prior")
            ax.bar(x + 0.2, [p[measure].iloc[0] for p in pri], 0.38, color=colours, edgecolor="k", hatch="//",
                   label="prior-aware")
            ax.set_xticks(x, [f"{f}\n({PRIOR_COUNTERPART[f]})" for f in fams], fontsize=7)
            if r == 0:
                ax.set_title(dist, fontsize=9)
            if k == 0:
                ax.set_ylabel(f"expected {objective} under the prior" if r == 0
                              else "fairness price: max - min diag(P)")
    axes[0, 0].legend(fontsize=7, loc="lower left")
    fig.suptitle(f"Prior-aware {objective} designs vs uniform-prior GM/WH/WM/EM (same input distribution)",
                 fontsize=10)
    fig.tight_layout()
    save_tight(fig, paths)


OBJECTIVE_MARKERS = {"L0": ("o", "#444444"), "L1": ("s", "#e377c2"), "L2": ("^", "#bcbd22")}


@drawn
def plot_objectives(table: pd.DataFrame, paths: Sequence[str]) -> None:
    """Expected RMSE under Binomial(n, p) of L0/L1/L2 designs across property sets."""
    ps = sorted(table.p.unique())
    sets = list(dict.fromkeys(table.properties))
    fig, axes = subplots(1, len(ps), figsize=(4.2 * len(ps), 4.2), squeeze=False, sharey=True)
    x = np.arange(len(sets))
    for k, p in enumerate(ps):
        ax = axes[0, k]
        sub = table[table.p == p]
        for j, (obj, (marker, colour)) in enumerate(OBJECTIVE_MARKERS.items()):
            g = sub[sub.objective == obj].set_index("properties").reindex(sets)
            ax.plot(x + (j - 1) * 0.15, g.expected_RMSE, marker, color=colour, label=f"{obj} design", ms=6)
        ax.set_xticks(x, sets, rotation=60, ha="right", fontsize=7)
        ax.set_title(f"Binomial(n={int(table.n.iloc[0])}, p={p:g}), alpha={table.alpha.iloc[0]:g}", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        if k == 0:
            ax.set_ylabel("expected RMSE of the released count")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    save_tight(fig, paths)


@drawn
def plot_objective_heatmaps(frame: pd.DataFrame, paths: Sequence[str], sets: Sequence[str] | None = None) -> None:
    """Heatmaps of the designed matrices: rows = property sets, columns = objectives."""
    sets = list(dict.fromkeys(frame.properties)) if sets is None else list(sets)
    objs = list(dict.fromkeys(frame.objective))
    fig, axes = subplots(len(sets), len(objs), figsize=(3.1 * len(objs) + 0.8, 3.0 * len(sets)),
                             squeeze=False)
    image = None
    vmax = float(frame[frame.properties.isin(sets)].probability.max())
    for r, s in enumerate(sets):
        for c, o in enumerate(objs):
            g = frame[(frame.properties == s) & (frame.objective == o)]
            N = int(g.output.max()) + 1
            M = np.zeros((N, N))
            M[g.output.to_numpy(), g.input.to_numpy()] = g.probability.to_numpy()
            ax = axes[r, c]
            image = ax.imshow(M, origin="lower", cmap="viridis", vmin=0, vmax=vmax)
            if N <= 9:
                for i, j in np.ndindex(M.shape):
                    ax.text(j, i, f"{M[i, j]:.2f}", ha="center", va="center", fontsize=5.5,
                            color="w" if M[i, j] < 0.6 * vmax else "k")
            ax.set_title(f"{o} design, {s}", fontsize=8)
            ax.set_xlabel("input j", fontsize=7)
            ax.set_ylabel("output i", fontsize=7)
            ax.tick_params(labelsize=6)
    fig.colorbar(image, ax=axes, shrink=0.6, label="Pr[output i | input j]")
    save_tight(fig, paths)


@drawn
def plot_derivability(table: pd.DataFrame, paths: Sequence[str]) -> None:
    """Gupte-Sundararajan violation per mechanism and (n, alpha); derivable cells marked."""
    mechs = list(dict.fromkeys(table.mechanism))
    keys = list(table.sort_values(["alpha", "n"])[["n", "alpha"]].drop_duplicates().itertuples(index=False,
                                                                                                 name=None))
    V = np.full((len(mechs), len(keys)), np.nan)
    D = np.zeros_like(V, dtype=bool)
    idx = table.set_index(["mechanism", "n", "alpha"])
    for r, m in enumerate(mechs):
        for c, key in enumerate(keys):
            V[r, c] = idx.loc[(m, *key), "gs_violation"]
            D[r, c] = idx.loc[(m, *key), "derivable"]

    fig, ax = subplots(figsize=(max(6.0, 0.55 * len(keys) + 2.0), 0.42 * len(mechs) + 1.6))
    ax.imshow(D.astype(float), cmap=ListedColormap(["#f4cccc", "#d9ead3"]), vmin=0, vmax=1, aspect="auto")
    for r, c in np.ndindex(V.shape):
        ax.text(c, r, "yes" if D[r, c] else f"{V[r, c]:.1e}", ha="center", va="center", fontsize=6)
    ax.set_yticks(range(len(mechs)), mechs, fontsize=8)
    ax.set_xticks(range(len(keys)), [f"n={n}\na={a:g}" for n, a in keys], fontsize=6)
    ax.set_title("Derivable from GM by post-processing? (Gupte-Sundararajan test)\n"
                 "green: yes; red: no, with the worst violation", fontsize=9)
    fig.tight_layout()
    save_tight(fig, paths)
