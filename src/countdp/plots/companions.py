"""Figures of the companion-paper studies: multi-level derivability (Gupte-Sundararajan Section 4.1)
and universal optimality for minimax consumers (their Theorem 1)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.colors import LinearSegmentedColormap

from countdp.plots.canvas import drawn, save_tight, subplots


@drawn
def plot_levels(table: pd.DataFrame, paths: Sequence[str]) -> None:
    """Per mechanism and n: how many pairs alpha < beta allow a chain (``M_beta = T M_alpha``, ``T >= 0``)."""
    forward = table[table.direction == "forward"]
    mechanisms = list(dict.fromkeys(forward.mechanism))
    ns = sorted(forward.n.unique())
    counts = forward.groupby(["mechanism", "n"]).derivable.agg(["sum", "count"])
    share = np.array([[counts.loc[(m, n), "sum"] / counts.loc[(m, n), "count"] for n in ns] for m in mechanisms])

    fig, ax = subplots(figsize=(1.1 * len(ns) + 2.6, 0.5 * len(mechanisms) + 1.8))
    ax.imshow(share, cmap=LinearSegmentedColormap.from_list("rg", ["#e06666", "#fce5cd", "#d9ead3"]), vmin=0,
              vmax=1, aspect="auto")
    for (r, m), (c, n) in ((rm, cn) for rm in enumerate(mechanisms) for cn in enumerate(ns)):
        ax.text(c, r, f"{int(counts.loc[(m, n), 'sum'])}/{int(counts.loc[(m, n), 'count'])}", ha="center",
                va="center", fontsize=8)
    ax.set_yticks(range(len(mechanisms)), mechanisms, fontsize=8)
    ax.set_xticks(range(len(ns)), [f"n={n}" for n in ns], fontsize=8)
    ax.set_title("Multi-level release: pairs alpha < beta\nwith M(n, beta) = T M(n, alpha), T >= 0\n"
                 "(green: every pair of the grid)", fontsize=9)
    fig.tight_layout()
    save_tight(fig, paths)


@drawn
def plot_universal(table: pd.DataFrame, paths: Sequence[str], tolerance: float = 1e-9) -> None:
    """Each consumer's gap: worst loss of GM + their optimal remap minus that of their own optimal mechanism
    (``tolerance``: the gap Theorem 1's check allows, drawn as a line)."""
    kinds = list(dict.fromkeys(table.kind))
    fig, axes = subplots(1, len(kinds), figsize=(4.2 * len(kinds), 3.2), squeeze=False)
    for ax, kind in zip(axes[0], kinds, strict=True):
        gaps = table.loc[table.kind == kind, "gap"].to_numpy(dtype=float)
        floor = 1e-16
        ax.hist(np.log10(np.maximum(np.abs(gaps), floor)), bins=np.linspace(-16, 0, 33), color="#4c72b0")
        ax.axvline(np.log10(tolerance), color="#cc0000", lw=1, ls="--")
        ax.text(np.log10(tolerance) + 0.3, ax.get_ylim()[1] * 0.9, f"tolerance {tolerance:g}", color="#cc0000",
                fontsize=7)
        ax.set_xlim(-16.5, 0)
        ax.set_xlabel("log10 |gap| (gaps below 1e-16 drawn at -16)", fontsize=8)
        ax.set_ylabel("consumers", fontsize=8)
        ax.set_title(f"{kind}: {len(gaps)} consumers, largest gap {gaps.max():.2e}", fontsize=9)
    fig.suptitle("Universal optimality (Gupte-Sundararajan Theorem 1): GM + remap vs the consumer's own "
                 "optimal mechanism", fontsize=9)
    fig.tight_layout()
    save_tight(fig, paths)


@drawn
def plot_congenial(summary: pd.DataFrame, paths: Sequence[str]) -> None:
    """Per Adult target: each group's mean absolute error, independent noise against the release conditioned
    on the total, per mechanism and n, with the conditioned release's proven alpha for invariant neighbours."""
    targets = list(dict.fromkeys(summary.target))
    fig, axes = subplots(1, len(targets), figsize=(4.0 * len(targets), 3.6), squeeze=False, sharey=True)
    for ax, target in zip(axes[0], targets, strict=True):
        part = summary[summary.target == target]
        keys = list(dict.fromkeys(zip(part.mechanism, part.n, strict=True)))
        x = np.arange(len(keys))
        for offset, kind, colour in ((-0.2, "independent", "#9e9e9e"), (0.2, "conditioned", "#4c72b0")):
            values = [float(part[(part.mechanism == m) & (part.n == n) & (part.release == kind)].mae.iloc[0])
                      for m, n in keys]
            ax.bar(x + offset, values, width=0.4, color=colour, label=f"{kind}" if ax is axes[0][0] else None)
        for k, (m, n) in enumerate(keys):
            alpha = float(part[(part.mechanism == m) & (part.n == n)].guarantee_alpha.iloc[0])
            ax.text(k, ax.get_ylim()[1] * 0.02, f"a*={alpha:.3f}", ha="center", va="bottom", fontsize=7,
                    color="white")
        ax.set_xticks(x, [f"{m}\nn={n}" for m, n in keys], fontsize=8)
        ax.set_title(f"Adult: {target}", fontsize=9)
    axes[0][0].set_ylabel("mean |noisy - true| per group", fontsize=8)
    axes[0][0].legend(fontsize=7, loc="upper left")
    fig.suptitle("Congenial release (Gong-Meng): noise conditioned on the published total, alpha = "
                 f"{summary.alpha.iloc[0]} per group; a*: the conditioned release's proven alpha", fontsize=9)
    fig.tight_layout()
    save_tight(fig, paths)


__all__ = ["plot_congenial", "plot_levels", "plot_universal"]
