"""Figures 10-13: Monte Carlo means with error bars, and the exact expectation next to them.

Means are markers with error bars (1 standard error for Figure 10, as the paper; 1 standard
deviation over repetitions for Figures 11-13); the exact expectation of the same measure is a
thin line (Figures 10, 11, 13) or a black tick on each bar (Figure 12).  One function per
figure, each taking the figure's table (:func:`countdp.studies.fig10_13.gather_table`), its
config block and the output paths.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from countdp.plots.canvas import drawing, save_figure, subplots
from countdp.plots.intrinsic import log_n_axis
from countdp.plots.style import MECHANISM_COLORS, MECHANISM_LABELS, MECHANISM_MARKERS, MECHANISM_ORDER, panel_label

TARGET_TITLES = {"young": "Estimating young population (age < 30)",
                 "gender": "Estimating gender balance (male)",
                 "income": "Estimating income level (> 50K)"}


def ordered(mechanisms):
    known = [m for m in MECHANISM_ORDER if m in set(mechanisms)]
    return known + sorted(set(mechanisms) - set(known))


def fmt(x):
    return f"{float(x):g}"


def legend_handles(mechanisms, exact_label="exact expectation", exact_style="line"):
    handles = [Line2D([], [], color=MECHANISM_COLORS.get(m, "k"), marker=MECHANISM_MARKERS.get(m, "o"),
                      linestyle="none", label=MECHANISM_LABELS.get(m, m)) for m in mechanisms]
    if exact_style == "line":
        handles.append(Line2D([], [], color="k", linestyle="-", linewidth=1, label=exact_label))
    else:
        handles.append(Line2D([], [], color="k", marker="_", markersize=12, markeredgewidth=2, linestyle="none",
                              label=exact_label))
    return handles


def curve(ax, frame, x, err, mechanisms, offset=0.0, log_x=False):
    """Markers +- err (Monte Carlo) and a thin line (exact) per mechanism, against column x.

    ``offset`` spreads the mechanisms' markers sideways by that fraction of the axis: of its span,
    or with ``log_x`` (a log axis) of its span in decades, as a factor.
    """
    if log_x:
        span = np.log10(frame[x].max() / frame[x].min()) or 1.0
    else:
        span = frame[x].max() - frame[x].min() or 1.0
    for k, m in enumerate(mechanisms):
        sub = frame[frame["mechanism"] == m].sort_values(x)
        if sub.empty:
            continue
        color = MECHANISM_COLORS.get(m, "k")
        shift = (k - (len(mechanisms) - 1) / 2) * offset * span
        ax.plot(sub[x], sub["exact"], color=color, linewidth=1.1, alpha=0.8, zorder=2)
        position = sub[x] * 10.0**shift if log_x else sub[x] + shift
        ax.errorbar(position, sub["mean"], yerr=sub[err], color=color, marker=MECHANISM_MARKERS.get(m, "o"),
                    markersize=4.5, linestyle="none", capsize=2.5, elinewidth=1, zorder=3,
                    markerfacecolor="none" if m == "UM" else color)


EXTRINSIC_RC = {"font.size": 9, "axes.titlesize": 10}


def _extrinsic_figure(draw):
    """``draw(table, settings) -> Figure`` as ``figure(table, settings, paths)``: drawn and saved atomically.

    ``settings`` is the figure's config block (``targets`` for Figure 10, ``p`` for 12 and 13).
    """

    @functools.wraps(draw)
    def figure(table: pd.DataFrame, settings: Mapping, paths: Sequence[str | Path]) -> None:
        with drawing(EXTRINSIC_RC):
            save_figure(draw(table, settings), paths, dpi=150, bbox_inches="tight")

    return figure


@_extrinsic_figure
def fig10(table, settings):
    mechanisms = ordered(table["mechanism"].unique())
    targets = [t for t in settings["targets"] if t in set(table["target"])]
    fig, axes = subplots(1, len(targets), figsize=(4.6 * len(targets), 4.0), squeeze=False, sharey=True)
    log_x = log_n_axis(table["n"])
    for k, (ax, target) in enumerate(zip(axes[0], targets, strict=True)):
        sub = table[table["target"] == target]
        if log_x:
            ax.set_xscale("log")
        curve(ax, sub, "n", "se", mechanisms, offset=0.006, log_x=log_x)
        ax.set_title(f"{panel_label(k)} {TARGET_TITLES.get(target, target)}\n"
                     f"Adult, $\\alpha$ = {fmt(sub['alpha'].iloc[0])}", fontsize=10)
        ax.set_xlabel("group size n (log scale)" if log_x else "group size n")
        ns = sorted(sub["n"].unique())
        if not log_x:
            ax.set_xticks(ns[:: max(1, (len(ns) + 9) // 10)])
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("fraction of groups with noisy count $\\neq$ true count")
    reps = int(table["repetitions"].max())
    fig.legend(handles=legend_handles(mechanisms, "exact expectation given the groups"), loc="lower center",
               ncol=len(mechanisms) + 1, frameon=False, bbox_to_anchor=(0.5, -0.07))
    fig.suptitle(f"Figure 10: empirical error probability ($\\mathbb{{L}}_0$) on Adult; "
                 f"mean $\\pm$ 1 s.e. over {reps} random groupings", y=1.02)
    return fig


def curve_panels(table, mechanisms, rows, cols, x, panel_size, title, xlabel, ylabel, offset=0.0, log=False):
    """A grid of ``curve`` panels (mean +- 1 s.d. vs ``x``): one row per value of ``rows = (key, values)``,
    one column per value of ``cols``; ``title(row_value, col_value)`` names each panel; ``log``: both
    axes logarithmic."""
    (row_key, row_values), (col_key, col_values) = rows, cols
    fig, axes = subplots(len(row_values), len(col_values), squeeze=False, sharex=True,
                             figsize=(panel_size[0] * len(col_values), panel_size[1] * len(row_values)))
    for r, rv in enumerate(row_values):
        for c, cv in enumerate(col_values):
            ax = axes[r, c]
            if log:
                ax.set_xscale("log")
                ax.set_yscale("log")
            curve(ax, table[(table[row_key] == rv) & (table[col_key] == cv)], x, "sd", mechanisms, offset=offset,
                  log_x=log)
            ax.set_title(title(rv, cv), fontsize=10)
            ax.grid(alpha=0.3)
            if r == len(row_values) - 1:
                ax.set_xlabel(xlabel)
            if c == 0:
                ax.set_ylabel(ylabel)
    return fig


@_extrinsic_figure
def fig11(table, settings):
    mechanisms = ordered(table["mechanism"].unique())
    alphas = sorted(table["alpha"].unique(), reverse=True)
    ns = sorted(table["n"].unique())
    d = int(table["d"].iloc[0])
    fig = curve_panels(table, mechanisms, ("alpha", alphas), ("n", ns), "p", (4.0, 3.3),
                       lambda a, n: f"n = {n}, $\\alpha$ = {fmt(a)}", "p (probability a bit is 1)",
                       f"$\\mathbb{{L}}_{{0,{d}}}$: fraction off by more than {d}")
    reps = int(table["repetitions"].max())
    fig.legend(handles=legend_handles(mechanisms, "exact expectation, Binomial(n, p)"), loc="lower center",
               ncol=len(mechanisms) + 1, frameon=False, bbox_to_anchor=(0.5, -0.05 / len(alphas)))
    fig.suptitle(f"Figure 11: $\\mathbb{{L}}_{{0,{d}}}$ for Binomial data (populations of "
                 f"{int(table['groups'].max() * ns[0]):,} bits); mean $\\pm$ 1 s.d. over {reps} repetitions",
                 y=1.0)
    fig.tight_layout(rect=(0, 0.02, 1, 0.98))
    return fig


@_extrinsic_figure
def fig12(table, settings):
    mechanisms = ordered(table["mechanism"].unique())
    ps = [p for p in settings["p"] if p in set(table["p"])]
    alphas = sorted(table["alpha"].unique(), reverse=True)
    n = int(table["n"].iloc[0])
    fig, axes = subplots(len(ps), len(alphas), figsize=(5.2 * len(alphas), 3.4 * len(ps)), squeeze=False,
                             sharey="row")
    width = 0.8 / len(mechanisms)
    for r, p in enumerate(ps):
        for c, a in enumerate(alphas):
            ax = axes[r, c]
            sub = table[(table["alpha"] == a) & (table["p"] == p)]
            ds = sorted(sub["d"].unique())
            for k, m in enumerate(mechanisms):
                s = sub[sub["mechanism"] == m].set_index("d").reindex(ds)
                x = np.arange(len(ds)) + (k - (len(mechanisms) - 1) / 2) * width
                color = MECHANISM_COLORS.get(m, "k")
                ax.bar(x, s["mean"], width=width * 0.95, color=color, alpha=0.85 if m != "UM" else 0.5,
                       yerr=s["sd"], capsize=1.5, error_kw={"elinewidth": 0.8}, zorder=2)
                ax.plot(x, s["exact"], linestyle="none", marker="_", markersize=7, markeredgewidth=1.5,
                        color="k", zorder=3)
            ax.set_xticks(np.arange(len(ds)), [str(int(d)) for d in ds])
            kind = "balanced" if abs(p - 0.5) < 0.15 else "skewed"
            ax.set_title(f"n = {n}, $\\alpha$ = {fmt(a)}, p = {fmt(p)} ({kind})", fontsize=10)
            ax.grid(axis="y", alpha=0.3)
            if r == len(ps) - 1:
                ax.set_xlabel("d")
            if c == 0:
                ax.set_ylabel("$\\mathbb{L}_{0,d}$: fraction off by more than d")
    handles = [Rectangle((0, 0), 1, 1, color=MECHANISM_COLORS.get(m, "k"), label=MECHANISM_LABELS.get(m, m))
               for m in mechanisms]
    handles.append(Line2D([], [], color="k", marker="_", markersize=10, markeredgewidth=1.5, linestyle="none",
                          label="exact expectation, Binomial(n, p)"))
    reps = int(table["repetitions"].max())
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False,
               bbox_to_anchor=(0.5, -0.06 / len(ps)))
    fig.suptitle(f"Figure 12: $\\mathbb{{L}}_{{0,d}}$ for Binomial data, n = {n}; "
                 f"mean $\\pm$ 1 s.d. over {reps} repetitions", y=1.0)
    fig.tight_layout(rect=(0, 0.02, 1, 0.98))
    return fig


@_extrinsic_figure
def fig13(table, settings):
    mechanisms = ordered(table["mechanism"].unique())
    alphas = sorted(table["alpha"].unique(), reverse=True)
    ps = [p for p in settings["p"] if p in set(table["p"])]
    log = log_n_axis(table["n"])  # large n (up to 10^4): RMSE from about 1 to thousands
    fig = curve_panels(table, mechanisms, ("alpha", alphas), ("p", ps), "n", (4.8, 3.5),
                       lambda a, p: f"$\\alpha$ = {fmt(a)}, p = {fmt(p)}",
                       "group size n (log scale)" if log else "group size n",
                       "RMSE of noisy counts (log scale)" if log else "RMSE of noisy counts", offset=0.008, log=log)
    reps = int(table["repetitions"].max())
    fig.legend(handles=legend_handles(mechanisms, "exact $\\sqrt{E(out-in)^2}$, Binomial(n, p)"),
               loc="lower center", ncol=len(mechanisms) + 1, frameon=False,
               bbox_to_anchor=(0.5, -0.05 / len(alphas)))
    fig.suptitle(f"Figure 13: RMSE for Binomial data; mean $\\pm$ 1 s.d. over {reps} repetitions", y=1.0)
    fig.tight_layout(rect=(0, 0.02, 1, 0.98))
    return fig


FIGURES = {"fig10": fig10, "fig11": fig11, "fig12": fig12, "fig13": fig13}
"""The figure function of each study key."""
