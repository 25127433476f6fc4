"""Figures of the intrinsic studies (Figures 1-4, 6-9), drawn with matplotlib + seaborn.

Each function takes plain values (certified mechanism records, or a study's table as a
DataFrame), the output ``paths`` (``.pdf`` / ``.png``) and a ``title``, and draws inside
:func:`countdp.plots.canvas.drawing` with the seaborn "paper" theme applied only there.
Colours, markers and labels of mechanisms come from :mod:`countdp.plots.style`.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from cycler import cycler
from matplotlib.colors import ListedColormap
from matplotlib.ticker import MaxNLocator

from countdp.plots.canvas import drawing, new_figure, save_figure, subplots
from countdp.plots.style import MECHANISM_COLORS, MECHANISM_LABELS, MECHANISM_MARKERS, evaluated_label, panel_label
from countdp.studies.records import wh_threshold

PAPER_RC = {
    "font.size": 8.5,
    "axes.titlesize": 9,
    "axes.labelsize": 8.5,
    "legend.fontsize": 7.5,
    "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5,
    "pdf.fonttype": 42,
    "savefig.bbox": "tight",
}
HEATMAP_CMAP = "YlOrRd"
PROPERTY_ORDER = ("S", "RM", "CM", "F", "WH", "RH", "CH")


def paper_theme() -> dict:
    """The rcParams of ``seaborn.set_theme(context="paper", style="whitegrid", rc=PAPER_RC)``, as a dict."""
    return {**sns.plotting_context("paper"), **sns.axes_style("whitegrid", rc={"font.family": "sans-serif"}),
            "axes.prop_cycle": cycler("color", sns.color_palette("deep")), **PAPER_RC}


def _paper_figure(draw):
    """``draw(data, title) -> Figure`` as ``figure(data, paths, title="")``: drawn in the paper theme, saved."""

    @functools.wraps(draw)
    def figure(data, paths: Sequence[str | Path], title: str = "") -> None:
        with drawing(paper_theme()):
            save_figure(draw(data, title), paths, dpi={"png": 200})

    return figure


def alpha_label(alpha: float) -> str:
    """``0.6666666666666666`` -> ``2/3``; ``0.62`` -> ``0.62``."""
    frac = Fraction(alpha).limit_denominator(1000)
    if abs(float(frac) - alpha) < 1e-9 and frac.denominator not in (1, 2, 4, 5, 10, 20, 25, 50, 100):
        return f"{frac.numerator}/{frac.denominator}"
    return f"{alpha:g}"


def _annotations(P: np.ndarray, digits: int) -> np.ndarray:
    text = np.vectorize(lambda v: "" if v < 0.5 * 10**-digits else f"{v:.{digits}f}".lstrip("0"))(P)
    return text


SMALLEST_ANNOTATION = 3.5
"""Cell text smaller than this (points) is left out: the cells are too small to read it."""
TICK_LABELS = 13
"""At most this many tick labels per heatmap axis (fewer where wide labels would run together)."""


def _tick_step(n: int, side: float) -> int:
    """The step between labelled indices 0..n on an axis ``side`` points long: 1 while they fit
    (up to n = 12 on a wide panel), else the smallest of 2, 5, 10, 20, 50, ... that fits."""
    label = 0.6 * PAPER_RC["xtick.labelsize"] * len(str(n)) + 6.0  # a label's digits, and a gap
    fits = max(2, min(TICK_LABELS, int(side / label)))
    step = 1
    while n // step + 1 > fits:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2
    return step


def _cell_points(ax: object, n: int) -> float:
    """The side (points) of one cell of a square (n+1) x (n+1) heatmap filling ``ax``."""
    box = ax.get_position()
    width, height = ax.figure.get_size_inches()
    return 72.0 * min(box.width * width, box.height * height) / (n + 1)


def _heatmap(ax: object, P: np.ndarray, title: str, digits: int = 2, cbar: bool = False,
             cbar_ax: object | None = None, vmax: float = 1.0, fontsize: float = 6.5) -> None:
    """``P`` as an annotated heatmap; as n grows the cell text shrinks to fit, then goes, and the tick
    labels thin out (a small n is drawn with ``fontsize`` and every index labelled)."""
    n = P.shape[0] - 1
    cell = _cell_points(ax, n)
    fontsize = min(fontsize, cell / (0.7 * (digits + 1)))  # ".23" is about 0.6 em a character, plus a margin
    annotate = fontsize >= SMALLEST_ANNOTATION
    sns.heatmap(P, ax=ax, vmin=0.0, vmax=vmax, cmap=HEATMAP_CMAP, square=True, cbar=cbar, cbar_ax=cbar_ax,
                annot=_annotations(P, digits) if annotate else False, fmt="", annot_kws={"fontsize": fontsize},
                linewidths=0.4 if cell >= 4.0 else 0.0, linecolor="white",
                cbar_kws={"label": "Pr[output i | input j]"} if cbar else None)
    ax.set_title(title)
    ax.set_xlabel("input j (true count)")
    ax.set_ylabel("output i (reported)")
    ticks = np.arange(0, n + 1, _tick_step(n, cell * (n + 1)))
    ax.set_xticks(ticks + 0.5, [str(k) for k in ticks], rotation=0)
    ax.set_yticks(ticks + 0.5, [str(k) for k in ticks], rotation=0)


def _heatmap_row(k: int, height: float, wspace: float):
    """A figure with ``k`` heatmap axes side by side and a thin colour-bar axis on the right."""
    fig = new_figure(figsize=(3.0 * k + 0.6, height))
    grid = fig.add_gridspec(1, k + 1, width_ratios=[1] * k + [0.05], wspace=wspace)
    return fig, [fig.add_subplot(grid[0, idx]) for idx in range(k)], fig.add_subplot(grid[0, k])


@_paper_figure
def heatmap_panels(records: Sequence[dict], title: str):
    """Figures 1 and 2: one heatmap per designed LP optimum, titled by objective and n."""
    fig, axes, cax = _heatmap_row(len(records), 3.6, 0.35)
    for idx, (ax, r) in enumerate(zip(axes, records, strict=True)):
        P = np.asarray(r["matrix"])
        obj = r["objective"].replace("L0d:", "L0,d=")
        _heatmap(ax, P, f"{obj}, n = {r['n']}\nobjective = {r['objective_value']:.3f}",
                 digits=2, cbar=idx == len(axes) - 1, cbar_ax=cax, fontsize=6.0 if r["n"] <= 6 else 5.0)
        if idx:
            ax.set_ylabel("")
    alpha = records[0]["alpha"] if records else float("nan")
    solved = solved_with(records)
    fig.suptitle(f"{title}, α = {alpha_label(alpha)}" + (f"; solved with {solved}" if solved else ""), y=1.0)
    return fig


SOLVER_LABELS = {"HIGHS": "HiGHS", "CLARABEL": "Clarabel"}
METHOD_LABELS = {"ipm": "interior point"}


def solved_with(records: Sequence[dict]) -> str:
    """The solvers and methods the records say designed them (``HiGHS simplex``, ...), each once, in order."""
    said = [f"{SOLVER_LABELS.get(r['solver'], r['solver'])} {METHOD_LABELS.get(r.get('method'), r.get('method') or '')}"
            for r in records if r.get("solver")]
    return ", ".join(dict.fromkeys(s.strip() for s in said))


def _power_tex(coefficient: str, exponent: int) -> str:
    if exponent == 0:
        return f"${coefficient}$"
    if exponent == 1:
        return f"${coefficient}\\alpha$"
    return f"${coefficient}\\alpha^{{{exponent}}}$"


@_paper_figure
def exponent_grid(table: pd.DataFrame, title: str):
    """Figures 3 and 4: the mechanism's entries as coefficient x alpha^exponent."""
    n = int(table["output"].max())
    E = table.pivot(index="output", columns="input", values="exponent").to_numpy()
    labels = np.empty(E.shape, dtype=object)
    for _, row in table.iterrows():
        labels[row["output"], row["input"]] = _power_tex(row["coefficient"], int(row["exponent"]))
    fig, ax = subplots(figsize=(4.6, 4.2))
    sns.heatmap(E, ax=ax, cmap="Blues_r", vmin=0, vmax=max(int(E.max()), 1) + 2, annot=labels, fmt="",
                annot_kws={"fontsize": 7.5}, cbar=False, square=True, linewidths=0.5, linecolor="white")
    ax.set_xlabel("input j (true count)")
    ax.set_ylabel("output i (reported)")
    ax.set_xticks(np.arange(n + 1) + 0.5, [str(k) for k in range(n + 1)], rotation=0)
    ax.set_yticks(np.arange(n + 1) + 0.5, [str(k) for k in range(n + 1)], rotation=0)
    ax.set_title(f"{title}   (n = {n})")
    passed = bool(table["check_passed"].all())
    fig.text(0.5, -0.01, f"checked against the library's matrix at α ∈ {{{table['alphas_checked'].iloc[0]}}}: "
             f"{'passed' if passed else 'FAILED'} (max rel. error {table['max_rel_error'].max():.1e})",
             ha="center", va="top", fontsize=7)
    return fig


L0_FORMS = {"GM": "2α/(1+α)", "EM": "(n+1)/n·(1−y)", "UM": "1", "WM": "LP", "WH": "LP"}


@_paper_figure
def property_table(table: pd.DataFrame, title: str):
    """Figure 6: mechanism x property, with parameter-dependent cells footnoted."""
    table = table.fillna({"condition": ""})
    mechs = list(dict.fromkeys(table["mechanism"]))
    props = [p for p in PROPERTY_ORDER if p in set(table["property"])]
    code = {"yes": 1.0, "no": 0.0, "depends": 0.5}
    symbol = {"yes": "✓", "no": "✗", "depends": "—"}
    V = np.zeros((len(mechs), len(props)))
    text = np.empty(V.shape, dtype=object)
    notes: list[str] = []
    for a, m in enumerate(mechs):
        for b, p in enumerate(props):
            row = table[(table["mechanism"] == m) & (table["property"] == p)].iloc[0]
            V[a, b] = code[row["verdict"]]
            text[a, b] = symbol[row["verdict"]]
            if row["verdict"] == "depends":
                notes.append(f"({len(notes) + 1}) {m}, {p}: {row['condition']}")
                text[a, b] += f" ({len(notes)})"
    fig, ax = subplots(figsize=(6.4, 0.45 * len(mechs) + 1.2))
    cmap = ListedColormap(["#f4a6a6", "#fde3a7", "#b7e4b0"])
    sns.heatmap(V, ax=ax, cmap=cmap, vmin=-0.25, vmax=1.25, annot=text, fmt="", cbar=False,
                annot_kws={"fontsize": 9}, linewidths=1, linecolor="white")
    ax.set_xticks(np.arange(len(props)) + 0.5, props, rotation=0)
    ax.set_yticks(np.arange(len(mechs)) + 0.5, [MECHANISM_LABELS.get(m, m) for m in mechs], rotation=0)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for a, m in enumerate(mechs):
        ax.text(len(props) + 0.15, a + 0.5, L0_FORMS.get(m, ""), va="center", fontsize=8)
    ax.text(len(props) + 0.15, -0.25, "L0", fontsize=8.5, va="bottom")
    first = table.iloc[0]
    ax.set_title(f"{title}\n(checked on the grid n = {first['n_range']}, α ∈ {{{first['alphas']}}};"
                 " ✓ always, ✗ never, — depends)", fontsize=8.5, pad=30)
    wrapped = "\n".join(textwrap.fill(note, 110, subsequent_indent="     ") for note in notes)
    if wrapped:
        fig.text(0.02, -0.02, wrapped, ha="left", va="top", fontsize=6.8)
    return fig


@_paper_figure
def named_heatmaps(records: Sequence[dict], title: str):
    """Figure 7: annotated heatmaps of GM, EM, WM, with their uniform-prior truthful probability."""
    fig, axes, cax = _heatmap_row(len(records), 3.4, 0.3)
    vmax = max(float(np.max(r["matrix"])) for r in records)
    for idx, (ax, r) in enumerate(zip(axes, records, strict=True)):
        P = np.asarray(r["matrix"])
        truthful = np.trace(P) / P.shape[0]
        _heatmap(ax, P, f"{MECHANISM_LABELS.get(r['mechanism'], r['mechanism'])}\n"
                        f"Pr[truth], uniform prior = {truthful:.3f}", digits=3, cbar=idx == len(axes) - 1, cbar_ax=cax,
                 vmax=vmax, fontsize=7)
        ax.title.set_color(MECHANISM_COLORS.get(r["mechanism"], "black"))
        if idx:
            ax.set_ylabel("")
    fig.suptitle(f"n = {records[0]['n']}, α = {alpha_label(records[0]['alpha'])}", y=1.02)
    return fig


def _combination_styles(labels: Sequence[str]) -> dict[str, dict]:
    row_colors = sns.color_palette("Blues_d", 3)
    col_colors = sns.color_palette("Oranges_d", 6)
    markers = ["o", "s", "D", "^", "v", "P", "X", "*", "<"]
    styles, r, c = {}, 0, 0
    for k, label in enumerate(labels):
        column = "C" in label
        color = col_colors[c % 6] if column else row_colors[r % 3]
        c, r = (c + 1, r) if column else (c, r + 1)
        styles[label] = {"color": color, "linestyle": "--" if column else "-", "marker": markers[k % len(markers)],
                         "markersize": 9.5 - 0.8 * k, "linewidth": 2.6 - 0.2 * k, "markerfacecolor": "none"}
    return styles


@_paper_figure
def wh_combinations(table: pd.DataFrame, title: str):
    """Figure 8: L0 of WH combined with row/column properties, (a) vs n and (b) vs alpha."""
    combos = [c for c in dict.fromkeys(table["combination"]) if c.startswith("WH")]
    styles = _combination_styles(combos)
    fig, axes = subplots(1, 2, figsize=(7.4, 3.3))
    for ax, panel, x in ((axes[0], "a", "n"), (axes[1], "b", "alpha")):
        sub = table[table["panel"] == panel].sort_values(x)
        for mech in ("GM", "EM"):
            ref = sub[sub["combination"] == mech]
            ax.plot(ref[x], ref["l0"], color=MECHANISM_COLORS[mech], linewidth=5, alpha=0.25, zorder=1,
                    label=MECHANISM_LABELS[mech])
        for combo in combos:
            line = sub[sub["combination"] == combo]
            ax.plot(line[x], line["l0"], label=combo, zorder=2, **styles[combo])
        ax.set_ylabel("L0 (rescaled, uniform prior)")
        if panel == "a":
            a = float(sub["alpha"].iloc[0])
            t = wh_threshold(a)
            ax.axvline(t, color="black", linestyle=":", linewidth=1)
            ax.axhline(2 * a / (1 + a), color=MECHANISM_COLORS["GM"], linestyle=":", linewidth=0.8)
            ax.annotate(f"2α/(1−α) = {t:.2f}", (t, ax.get_ylim()[1]), xytext=(3, -10), textcoords="offset points",
                        fontsize=7)
            ax.annotate(f"2α/(1+α) = {2 * a / (1 + a):.3f}", (sub["n"].max(), 2 * a / (1 + a)), xytext=(-4, -10),
                        textcoords="offset points", fontsize=7, ha="right", color=MECHANISM_COLORS["GM"])
            ax.set_xlabel("n (group size)")
            ax.set_title(f"(a) vs n, α = {alpha_label(a)}")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        else:
            ax.set_xlabel("α (privacy; larger = more private)")
            ax.set_title(f"(b) vs α, n = {int(sub['n'].iloc[0])}")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=6, bbox_to_anchor=(0.5, -0.13), frameon=False)
    fig.suptitle("Weak honesty combined with row/column properties (S added to each: free by Theorem 1)", y=1.01)
    fig.tight_layout()
    return fig


LOG_N_SPAN = 50
"""A group-size axis spanning more than this factor (largest n / smallest n) is drawn on a log scale."""


def log_n_axis(ns: Sequence[int]) -> bool:
    """Whether an axis of group sizes ``ns`` is drawn logarithmically (large n, Figures 9-13 up to ``10**4``)."""
    lo, hi = float(np.min(ns)), float(np.max(ns))
    return hi > LOG_N_SPAN * max(lo, 1.0)


OBJECTIVE_AXES = {"l0": "L0 (rescaled, uniform prior)", "l1": "L1 (uniform prior)", "l2": "L2 (uniform prior)"}
"""The value columns of Figure 9's tables (one per objective) and their axis labels."""


@_paper_figure
def named_objective_vs_n(table: pd.DataFrame, title: str):
    """Figure 9: an objective of the named mechanisms vs n (the table's ``l0``, ``l1`` or ``l2`` column),
    one panel per alpha, labelled as the paper's, GM's WH threshold marked (n on a log axis when the
    sizes span more than :data:`LOG_N_SPAN`).  A large-n table's ``evaluated_as`` column names each
    point's stand-in (WH as GM beyond the matrix path); the legend says so
    (:func:`countdp.plots.style.evaluated_label`)."""
    value = next(column for column in OBJECTIVE_AXES if column in table.columns)
    alphas = sorted(table["alpha"].unique())
    fig, axes = subplots(1, len(alphas), figsize=(2.6 * len(alphas) + 0.6, 3.2), squeeze=False)
    order = [m for m in ("UM", "EM", "WM", "WH", "GM") if m in set(table["mechanism"])]
    labels = {m: MECHANISM_LABELS[m] for m in order}
    if "evaluated_as" in table.columns:
        labels = {m: evaluated_label(m, table.loc[table["mechanism"] == m, ["n", "evaluated_as"]].itertuples(
            index=False, name=None)) for m in order}
    log_x = log_n_axis(table["n"])
    for k, (ax, a) in enumerate(zip(axes[0], alphas, strict=True)):
        sub = table[np.isclose(table["alpha"], a)]
        for m in order:
            line = sub[sub["mechanism"] == m].sort_values("n")
            ax.plot(line["n"], line[value], color=MECHANISM_COLORS[m], marker=MECHANISM_MARKERS[m],
                    markersize=3.5 if m != "WH" else 5, markerfacecolor="none" if m == "WH" else MECHANISM_COLORS[m],
                    linewidth=1.3, label=labels[m], linestyle="--" if m == "WH" else "-")
        t = wh_threshold(a)
        lo, hi = sub["n"].min(), sub["n"].max()
        if log_x:
            ax.set_xscale("log")
        if t <= hi:
            ax.axvline(t, color="black", linestyle=":", linewidth=1)
            ax.annotate(f"GM weakly honest\nfor n ≥ {t:.3g}", (t, 0.5), xycoords=("data", "axes fraction"),
                        xytext=(4, 0), textcoords="offset points", fontsize=6.8)
        else:
            ax.annotate(f"GM weak-honesty threshold\nn = {t:.3g} (off the axis)", (0.97, 0.5),
                        xycoords="axes fraction", ha="right", fontsize=6.8)
        ax.set_xlim((lo / 1.2, hi * 1.2) if log_x else (lo - 0.5, hi + 0.5))
        ax.set_title(f"{panel_label(k)} α = {alpha_label(a)}")
        ax.set_xlabel("n (group size, log scale)" if log_x else "n (group size)")
        if k == 0:
            ax.set_ylabel(OBJECTIVE_AXES[value])
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(order), bbox_to_anchor=(0.5, -0.1), frameon=False)
    fig.tight_layout()
    return fig
