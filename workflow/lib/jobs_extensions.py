"""Jobs of the extension rules (beyond the paper): run a study, write its tables, draw its figures.

Each function takes plain paths and values.  Wall-clock timings go to the job's log, never
into a table, so the tables are byte-identical from run to run.  The studies that design through the
engine (objectives, derivability, and prior's WH and WM) take ``keys``, the config keys asking for
their designs (:func:`config_extensions.study_keys`): a design the engine refuses fails the job in
one line naming them (:func:`engine_refusal.in_config_words`), not the engine's own options.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from engine_refusal import in_config_words

from countdp.services.artifact import write_csv_atomic, write_text_atomic

STUDY_CHOICES = "an alpha"
"""What else of an extension study's engine designs the config sets (their objectives are the study's own)."""


def _timing_lines(timings: Sequence[dict]) -> list[str]:
    """One line per timed solve (``key=value ... solve_time=...s``), then totals per (n, alpha)."""
    lines = [" ".join(f"{k}={v}" for k, v in t.items() if k != "solve_time") + f" solve_time={t['solve_time']:.4f}s"
             for t in timings]
    totals: dict[tuple, list[float]] = {}
    for t in timings:
        totals.setdefault((t["n"], t["alpha"]), []).append(t["solve_time"])
    lines += [f"total n={n} alpha={a}: {len(v)} solves, solve_time={sum(v):.3f}s" for (n, a), v in totals.items()]
    return lines


def _named_by(keys: Sequence[tuple[str, object]], study: str):
    """The block's designs refused by the engine fail in one line naming ``keys`` (module docstring)."""
    return in_config_words(keys, lambda refused: f"of the {study} study ({refused.label})", STUDY_CHOICES)


def _finish(name: str, start: float, tables: Sequence[tuple[pd.DataFrame, str]], plot: Callable[[], None],
            log: str, timings: Sequence[dict] = ()) -> None:
    """Write the tables, draw the figures, and log row counts, wall-clock steps and solver times."""
    steps = [f"computed in {time.perf_counter() - start:.3f}s"]
    for frame, path in tables:
        write_csv_atomic(frame, path)
    plot()
    steps += [f"figures drawn at {time.perf_counter() - start:.3f}s", f"done in {time.perf_counter() - start:.3f}s"]
    lines = [f"{path}: {len(frame)} rows" for frame, path in tables] + [f"ext_{name}: " + ", ".join(steps)]
    if timings:
        lines += ["solver times (wall clock):", *_timing_lines(timings)]
    write_text_atomic(log, "\n".join(lines) + "\n")


def checks(paths: Sequence[str], out_csv: str, log: str) -> None:
    """The studies' check tables as one (same columns, in the order given)."""
    start = time.perf_counter()
    table = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    _finish("checks", start, [(table, out_csv)], lambda: None, log)


def baselines(ns: Sequence[int], alphas: Sequence[float], table_csv: str, checks_csv: str,
              figure: Sequence[str], log: str, objective: str = "L0") -> None:
    """The baselines study; under L0 its own table and figure, under L1 or L2 the objective's."""
    from countdp.plots.extensions import plot_baseline_objective, plot_baselines
    from countdp.studies.baselines import (
        baseline_checks,
        baseline_objective_checks,
        baseline_objective_table,
        baseline_table,
    )

    start = time.perf_counter()
    if objective == "L0":
        table = baseline_table(ns, alphas)
        checks, plot = baseline_checks(table), lambda: plot_baselines(table, figure)
    else:
        table = baseline_objective_table(ns, alphas, objective)
        checks, plot = baseline_objective_checks(table, objective), lambda: plot_baseline_objective(table, figure,
                                                                                                      objective)
    _finish("baselines", start, [(table, table_csv), (checks, checks_csv)], plot, log)


def subsets(ns: Sequence[int], alphas: Sequence[float], label_y: float, y_max: float, table_csv: str,
            summary_csv: str, checks_csv: str, figure: Sequence[str], log: str) -> None:
    from countdp.plots.extensions import plot_subsets
    from countdp.studies.subsets import subset_checks, subset_map, subset_summary

    start, timings = time.perf_counter(), []
    detail = subset_map(ns, alphas, timings=timings)
    summary = subset_summary(detail)
    _finish("subsets", start, [(detail, table_csv), (summary, summary_csv),
                               (subset_checks(detail, summary), checks_csv)],
            lambda: plot_subsets(detail, summary, figure, label_y, y_max), log, timings)


def minimax(ns: Sequence[int], alphas: Sequence[float], table_csv: str, checks_csv: str, figure: Sequence[str],
            log: str, objective: str = "L0") -> None:
    """The minimax study of designs minimising ``objective`` (L0: the study's own; L1, L2)."""
    from countdp.plots.extensions import plot_minimax
    from countdp.studies.minimax import minimax_checks, minimax_study

    start, timings = time.perf_counter(), []
    table = minimax_study(ns, alphas, timings=timings, objective=objective)
    _finish("minimax", start, [(table, table_csv), (minimax_checks(table, objective=objective), checks_csv)],
            lambda: plot_minimax(table, figure, objective), log, timings)


def prior(cfg: Mapping, seed: int, solver: str, adult: Sequence[str], table_csv: str, gains_csv: str,
          checks_csv: str, figure: Sequence[str], log: str, keys: Sequence[tuple[str, object]] = ()) -> None:
    """``cfg``: the config's ``extensions.prior`` block; ``adult``: [table, sidecar] when it names targets;
    ``keys``: named if the engine refuses its WH or WM design (module docstring)."""
    from countdp.plots.extensions import plot_prior
    from countdp.studies.naming import parse_alpha
    from countdp.studies.prior import binomial_distributions, prior_checks, prior_study

    start = time.perf_counter()
    n, alpha = int(cfg["n"]), parse_alpha(cfg["alpha"])
    dists = binomial_distributions(n, cfg.get("binomial_p", []))
    targets = cfg.get("adult_targets") or []
    if targets:
        from countdp.evaluate.data import empirical_distribution, group_counts, read_adult_table

        table = read_adult_table(adult[0], adult[1])
        rng = np.random.default_rng([int(seed), n])
        for target in targets:
            bits = table[target].to_numpy()
            counts = np.concatenate([group_counts(bits, n, rng) for _ in range(int(cfg.get("adult_permutations", 20)))])
            dists[f"Adult {target}"] = empirical_distribution(counts, n)
    with _named_by(keys, "prior"):
        table, gains = prior_study(n, alpha, dists, cfg.get("objectives", ["L0", "L0d:1"]), solver=solver)
    _finish("prior", start, [(table, table_csv), (gains, gains_csv), (prior_checks(gains), checks_csv)],
            lambda: plot_prior(table, figure), log)


def objectives(cfg: Mapping, solver: Mapping, table_csv: str, matrices_csv: str, checks_csv: str,
               rmse_figure: Sequence[str], heatmaps_figure: Sequence[str], log: str,
               keys: Sequence[tuple[str, object]] = ()) -> None:
    """``cfg``: the config's ``extensions.objectives`` block; ``solver``: ``extensions.solver``; ``keys``:
    named if the engine refuses a design (module docstring)."""
    from countdp.plots.extensions import plot_objective_heatmaps, plot_objectives
    from countdp.studies.naming import parse_alpha
    from countdp.studies.objectives import matrices_frame, objective_checks, objective_study

    start = time.perf_counter()
    n, alpha = int(cfg["n"]), parse_alpha(cfg["alpha"])
    with _named_by(keys, "objectives"):
        table, mats = objective_study(n, alpha, cfg["p"], solver=solver.get("name", "HIGHS"),
                                      method=solver.get("method"), shortcuts=not solver.get("plain", False))
    frame = matrices_frame(mats, n, alpha)

    def plot() -> None:
        plot_objectives(table, rmse_figure)
        plot_objective_heatmaps(frame, heatmaps_figure, sets=cfg.get("heatmap_sets"))

    _finish("objectives", start, [(table, table_csv), (frame, matrices_csv), (objective_checks(table), checks_csv)],
            plot, log)


def derivability(ns: Sequence[int], alphas: Sequence[float], table_csv: str, summary_csv: str, checks_csv: str,
                 figure: Sequence[str], log: str, keys: Sequence[tuple[str, object]] = ()) -> None:
    """``keys``: named if the engine refuses its WH or WM design (module docstring)."""
    from countdp.plots.extensions import plot_derivability
    from countdp.studies.derivability import derivability_checks, derivability_summary, derivability_table

    start = time.perf_counter()
    with _named_by(keys, "derivability"):
        table = derivability_table(ns, alphas)
    summary = derivability_summary(table)
    _finish("derivability", start, [(table, table_csv), (summary, summary_csv),
                                    (derivability_checks(summary), checks_csv)],
            lambda: plot_derivability(table, figure), log)
