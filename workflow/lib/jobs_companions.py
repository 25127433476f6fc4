"""Jobs of the companion-paper rules: Gupte-Sundararajan's multi-level release and universal
optimality (with their Table 1), and Gong-Meng's congenial release under invariants.

Each function takes plain paths and values, writes its tables (no timings in them, so they are
byte-identical from run to run) and figures, and logs rows and wall-clock time.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import pandas as pd

from countdp.services.artifact import write_csv_atomic, write_text_atomic


def _finish(name: str, start: float, tables: Sequence[tuple[pd.DataFrame, str]], plot, log: str) -> None:
    """Write the tables, draw the figures, and log row counts and wall-clock steps."""
    computed = time.perf_counter() - start
    for frame, path in tables:
        write_csv_atomic(frame, path)
    if plot is not None:
        plot()
    lines = [f"{path}: {len(frame)} rows" for frame, path in tables]
    lines.append(f"companion_{name}: computed in {computed:.3f}s, done in {time.perf_counter() - start:.3f}s")
    write_text_atomic(log, "\n".join(lines) + "\n")


def levels(ns: Sequence[int], alphas: Sequence[str], table_csv: str, summary_csv: str, checks_csv: str,
           figure: Sequence[str], log: str) -> None:
    """Which mechanisms allow a multi-level release (a chain M_beta = T M_alpha), over the grid."""
    from countdp.plots.companions import plot_levels
    from countdp.studies.levels import levels_checks, levels_summary, levels_table

    start = time.perf_counter()
    table = levels_table(ns, alphas)
    _finish("levels", start, [(table, table_csv), (levels_summary(table), summary_csv),
                              (levels_checks(table), checks_csv)], lambda: plot_levels(table, figure), log)


def universal(settings: dict, table_csv: str, largest_csv: str, checks_csv: str, figure: Sequence[str],
              log: str) -> None:
    """Random minimax consumers: GM + their optimal remap against their own optimal mechanism."""
    from countdp.plots.companions import plot_universal
    from countdp.studies.universal import UniversalSettings, largest_gaps, universal_study

    start = time.perf_counter()
    chosen = UniversalSettings(consumers=int(settings["consumers"]), n_range=tuple(settings["n_range"]),
                               alphas=tuple(float(a) for a in settings["alphas"]), seed=int(settings["seed"]))
    table, checks = universal_study(chosen)
    _finish("universal", start, [(table, table_csv), (largest_gaps(table), largest_csv), (checks, checks_csv)],
            lambda: plot_universal(table, figure), log)


def gs_table1(table_csv: str, checks_csv: str, log: str) -> None:
    """Gupte-Sundararajan's Table 1: every printed number recomputed exactly, with its verdict."""
    from countdp.studies.gs_table1 import gs_table1_study

    start = time.perf_counter()
    table, checks = gs_table1_study()
    _finish("gs_table1", start, [(table, table_csv), (checks, checks_csv)], None, log)


def checks(paths: Sequence[str], out_csv: str, log: str) -> None:
    """The companion studies' check tables as one (same columns, in the order given)."""
    start = time.perf_counter()
    table = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    _finish("checks", start, [(table, out_csv)], None, log)


GM_SECTION3_TABLES = ("table1", "figure1", "figure1_medians", "figure2", "figure3", "tv", "checks")
"""The tables :func:`countdp.studies.gm_section3.gm_section3_study` returns, in the rule's output order."""


def gm_section3(settings: dict, outputs: Sequence[str], log: str) -> None:
    """Gong-Meng Section 3: their Table 1 and Figures 1-3, and MIS against the exact sampler.

    ``outputs``: the rule's outputs in order: one CSV per :data:`GM_SECTION3_TABLES`, then the PDF
    and PNG of Figures 1, 2 and 3."""
    count = len(GM_SECTION3_TABLES)
    tables = outputs[:count]
    distances, acceptance, traces = (outputs[count + 2 * k:count + 2 * k + 2] for k in range(3))
    from countdp.plots.congenial import plot_acceptance, plot_distances, plot_traces
    from countdp.studies.gm_section3 import GMSection3Settings, gm_section3_study

    start = time.perf_counter()
    chosen = GMSection3Settings(**{key: tuple(value) if isinstance(value, list) else value
                                   for key, value in settings.items()})
    results = gm_section3_study(chosen)

    def plot() -> None:
        plot_distances(results["figure1"], distances)
        plot_acceptance(results["figure2"], acceptance)
        plot_traces(results["figure3"], traces)

    _finish("gm_section3", start, [(results[name], path) for name, path in zip(GM_SECTION3_TABLES, tables,
                                                                                strict=True)], plot, log)


def congenial(table: str, sidecar: str, settings: dict, errors_csv: str, summary_csv: str, checks_csv: str,
              figure: Sequence[str], log: str) -> None:
    """The congenial release on the Adult groups of Figure 10, with each target's total as the invariant."""
    from countdp.evaluate.data import read_adult_table
    from countdp.plots.companions import plot_congenial
    from countdp.studies.congenial_adult import CongenialSettings, congenial_checks, congenial_study, summary_table

    start = time.perf_counter()
    chosen = CongenialSettings(targets=tuple(settings["targets"]), ns=tuple(int(n) for n in settings["n"]),
                               alpha=str(settings["alpha"]), mechanisms=tuple(settings["mechanisms"]),
                               groups=int(settings["groups"]), repetitions=int(settings["repetitions"]),
                               seed=int(settings["seed"]))
    errors, guarantees = congenial_study(read_adult_table(table, sidecar), chosen)
    summary = summary_table(errors, guarantees)
    _finish("congenial", start, [(errors, errors_csv), (summary, summary_csv),
                                 (congenial_checks(errors, guarantees), checks_csv)],
            lambda: plot_congenial(summary, figure), log)
