"""Figures 1-3 of Gong and Meng's Section 3, from the tables of :mod:`countdp.studies.gm_section3`.

Each function takes the study's table and the output ``paths`` (``.pdf`` / ``.png``) and draws
through :mod:`countdp.plots.canvas` (its own figure, the drawing lock, atomic files), in the
project's colours (:mod:`countdp.plots.style`): raw noise in GM's red (light for epsilon = 0.5),
the NNL2 projection in WM's blue, the conditional mechanism in the conditioned GM's orange.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from countdp.plots.canvas import drawn, save_tight, subplots
from countdp.plots.style import MECHANISM_COLORS
from countdp.studies.gm_section3 import (
    METHODS,
    PAPER_BEST_ACCEPTANCE,
    PAPER_BEST_EPSILON_TILDE,
    acceptance_summary,
)

METHOD_COLOURS = dict(zip(METHODS, (MECHANISM_COLORS["GM"], MECHANISM_COLORS["WM"], MECHANISM_COLORS["CGM"],
                                    "#f4a6a6"), strict=True))
METHOD_LABELS = dict(zip(METHODS, ("raw\n$\\epsilon=1$", "NNL2\n$\\epsilon=1$", "conditional\n$\\epsilon_0=0.5$",
                                   "raw\n$\\epsilon=0.5$"), strict=True))


@drawn
def plot_distances(figure1: pd.DataFrame, paths: Sequence[str | Path]) -> None:
    """Their Figure 1: box plots over confidential tables of the average L1 (top) and L2 (bottom) distance."""
    fig, axes = subplots(2, 1, figsize=(6.0, 6.4), sharex=True)
    tables = figure1.table.nunique()
    for ax, metric, name in zip(axes, ("avg_L1", "avg_L2"), ("$L_1$", "$L_2$"), strict=True):
        data = [figure1[figure1.method == m][metric].to_numpy() for m in METHODS]
        boxes = ax.boxplot(data, patch_artist=True, widths=0.55, medianprops={"color": "black"})
        for patch, method in zip(boxes["boxes"], METHODS, strict=True):
            patch.set_facecolor(METHOD_COLOURS[method])
            patch.set_alpha(0.85)
        ax.set_ylabel(f"average {name} distance")
        ax.grid(axis="y", alpha=0.3)
    axes[1].set_xticks(range(1, len(METHODS) + 1), [METHOD_LABELS[m] for m in METHODS])
    fig.suptitle(f"Distance of releases from the confidential table ({tables} tables, "
                 f"{int(figure1.releases.iloc[0])} releases each)", fontsize=10)
    fig.tight_layout()
    save_tight(fig, paths)


@drawn
def plot_acceptance(figure2: pd.DataFrame, paths: Sequence[str | Path]) -> None:
    """Their Figure 2: Algorithm 1's acceptance rate against the proposal's epsilon~, with their reported best.

    Lines: the mean over chains; bars: the smallest to the largest chain.
    """
    summary = acceptance_summary(figure2)
    fig, ax = subplots(figsize=(5.6, 3.8))
    for (name, group), style in zip(summary.groupby("table", sort=False), ("-", "--"), strict=False):
        group = group.sort_values("epsilon_tilde")
        mean = 100 * group["mean"].to_numpy()
        spread = [mean - 100 * group["low"].to_numpy(), 100 * group["high"].to_numpy() - mean]
        ax.errorbar(group.epsilon_tilde, mean, yerr=spread, fmt=style, marker="o", ms=4, capsize=2, label=name,
                    color=MECHANISM_COLORS["CGM"] if style == "-" else MECHANISM_COLORS["UM"])
    ax.plot([PAPER_BEST_EPSILON_TILDE], [100 * PAPER_BEST_ACCEPTANCE], "*", ms=12, color="black",
            label="Gong & Meng: 1.68% at 0.6")
    ax.axvline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_xlabel(r"proposal $\tilde\epsilon$")
    ax.set_ylabel("acceptance rate (%)")
    chains = int(figure2.chain.max()) + 1
    ax.set_title(f"Algorithm 1 acceptance ({chains} chain{'s' if chains > 1 else ''} of "
                 f"{int(figure2.steps.iloc[0]):,} steps per point)", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    save_tight(fig, paths)


@drawn
def plot_traces(figure3: pd.DataFrame, paths: Sequence[str | Path]) -> None:
    """Their Figure 3: traces of cells 2 (in the proposal set) and 1 (solved for); below, exact i.i.d. draws."""
    cells = list(dict.fromkeys(figure3.cell))
    sources = list(dict.fromkeys(figure3.source))
    fig, axes = subplots(len(sources), len(cells), figsize=(4.2 * len(cells), 2.6 * len(sources)),
                         squeeze=False, sharey="col")
    for row, source in enumerate(sources):
        for col, cell in enumerate(cells):
            sub = figure3[(figure3.source == source) & (figure3.cell == cell)]
            colour = MECHANISM_COLORS["CGM"] if source == "MIS" else MECHANISM_COLORS["WM"]
            axes[row, col].plot(sub.step, sub.value, lw=0.6, color=colour)
            what = "Algorithm 1" if source == "MIS" else "exact sampler (i.i.d.)"
            axes[row, col].set_title(f"cell {cell}: {what}", fontsize=9)
            axes[row, col].set_xlabel("draw")
        axes[row, 0].set_ylabel("cell value")
    fig.tight_layout()
    save_tight(fig, paths)
