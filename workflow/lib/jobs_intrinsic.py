"""Jobs of the intrinsic rules (Figures 1-4, 6-9): read artifacts and tables, call the library, write.

Each function takes plain paths and values (never Snakemake objects) and writes every file
atomically; the studies themselves (:mod:`countdp.studies`) and the figures
(:mod:`countdp.plots.intrinsic`) know nothing of files under results/.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from countdp.services.artifact import write_csv_atomic, write_text_atomic
from countdp.studies.records import load_matrix_records


def write_tables(written: Sequence[tuple[pd.DataFrame, str]], log: str, float_format: str | None = "%.12g") -> None:
    """Write each (frame, path) as CSV, then one ``path: rows`` line per table to ``log``."""
    for frame, path in written:
        write_csv_atomic(frame, path, float_format)
    write_text_atomic(log, "".join(f"{path}: {len(frame)} rows\n" for frame, path in written))


def fig01_tables(panels: Sequence[str], search: Sequence[str], alpha: float, claims_csv: str, search_csv: str,
                 checks_csv: str, log: str) -> None:
    from countdp.studies.fig01_02 import fig01_tables as tables

    claims, found, checks = tables(load_matrix_records(panels), load_matrix_records(search), alpha)
    write_tables([(claims, claims_csv), (found, search_csv), (checks, checks_csv)], log)


def fig02_tables(mechanisms: Sequence[str], claims_csv: str, checks_csv: str, log: str) -> None:
    from countdp.studies.fig01_02 import fig02_tables as tables

    claims, checks = tables(load_matrix_records(mechanisms))
    write_tables([(claims, claims_csv), (checks, checks_csv)], log)


def fig03_04_tables(n: int, alphas: Sequence[float], gm_csv: str, em_csv: str, checks_csv: str, log: str) -> None:
    from countdp.studies.fig03_04 import em_exponent_table, fig03_04_checks, gm_exponent_table

    gm, em = gm_exponent_table(n, alphas), em_exponent_table(n, alphas)
    write_tables([(gm, gm_csv), (em, em_csv), (fig03_04_checks(gm, em, n), checks_csv)], log)


def fig06_tables(mechanisms_files: Sequence[str], mechanisms: Sequence[str], properties: Sequence[str],
                 tolerance: float, grid_csv: str, summary_csv: str, checks_csv: str, log: str) -> None:
    from countdp.studies.fig06 import fig06_checks, fig06_grid, fig06_summary

    grid = fig06_grid(load_matrix_records(mechanisms_files), properties, tolerance)
    summary = fig06_summary(grid, mechanisms, properties)
    write_tables([(grid, grid_csv), (summary, summary_csv), (fig06_checks(summary), checks_csv)], log)


def fig07_tables(mechanisms: Sequence[str], paper: dict, text_alpha: float, truthful_csv: str, checks_csv: str,
                 log: str) -> None:
    from countdp.studies.fig07 import fig07_tables as tables

    table, checks = tables(load_matrix_records(mechanisms), dict(paper), text_alpha)
    write_tables([(table, truthful_csv), (checks, checks_csv)], log)


def fig08_tables(mechanisms: Sequence[str], base: Sequence[str], combinations: Sequence[Sequence[str]],
                 vs_n_alpha: float, vs_alpha_n: int, table_csv: str, checks_csv: str, log: str) -> None:
    from countdp.studies.fig08 import fig08_checks, fig08_table

    table = fig08_table(load_matrix_records(mechanisms), base, combinations, vs_n_alpha, vs_alpha_n)
    write_tables([(table, table_csv), (fig08_checks(table, vs_n_alpha), checks_csv)], log)


def fig09_tables(mechanisms_files: Sequence[str], mechanisms: Sequence[str], alphas: Sequence[float],
                 ns: Sequence[int] | Mapping[str, Sequence[int]], check_alpha: float, check_n: int, tolerance: float,
                 table_csv: str, convergence_csv: str, checks_csv: str, log: str,
                 structural: Sequence[Sequence] = ()) -> None:
    """Figure 9's tables from the matrix artifacts and, for ``structural`` ([mechanism, exact alpha, n]:
    the group sizes beyond the matrix path), from structural forms built here.  ``ns``: the group sizes,
    one list for every mechanism or a list per mechanism."""
    from countdp.studies.fig09 import fig09_checks, fig09_convergence, fig09_table, structural_records

    records = load_matrix_records(mechanisms_files) + structural_records(structural)
    table = fig09_table(records, mechanisms, alphas, ns)
    convergence = fig09_convergence(records, check_alpha, check_n, tolerance)
    write_tables([(table, table_csv), (convergence, convergence_csv),
                  (fig09_checks(table, convergence, tolerance), checks_csv)], log)


def fig09_objective_tables(mechanisms_files: Sequence[str], mechanisms: Sequence[str], alphas: Sequence[float],
                           ns: Mapping[str, Sequence[int]], objective: str, tolerance: float, table_csv: str,
                           checks_csv: str, log: str) -> None:
    """Figure 9 under ``objective`` (L1 or L2): its table from the designs of that objective, and its checks
    (``ns``: the group sizes of each mechanism)."""
    from countdp.studies.fig09 import fig09_objective_checks, fig09_table

    table = fig09_table(load_matrix_records(mechanisms_files), mechanisms, alphas, ns, objective)
    write_tables([(table, table_csv), (fig09_objective_checks(table, objective, tolerance), checks_csv)], log)


def concat_checks(paths: Sequence[str], out_csv: str, log: str, float_format: str | None = "%.12g") -> None:
    """One check table from several (same columns), in the order given."""
    write_tables([(pd.concat([pd.read_csv(p) for p in paths], ignore_index=True), out_csv)], log, float_format)


def intrinsic_figure(plot: str, paths: Sequence[str], log: str, title: str, mechanisms: Sequence[str],
                     table: str | None) -> None:
    """Draw one figure of :mod:`countdp.plots.intrinsic` (``plot`` names it) from artifacts or a table."""
    from countdp.plots import intrinsic

    data = pd.read_csv(table) if table else load_matrix_records(mechanisms)
    getattr(intrinsic, plot)(data, paths, title)
    write_text_atomic(log, "".join(f"{path}\n" for path in paths))
