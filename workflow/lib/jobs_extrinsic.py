"""Jobs of the data, evaluation and Figure 10-13 rules: read inputs, call the library, write atomically.

Each function takes plain paths and values; a job's log is one summary line.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence

import pandas as pd

from countdp.services.artifact import write_csv_atomic, write_text_atomic


def adult_data(source: str, snapshot: str, timeout: float, table_csv: str, sidecar: str, log: str) -> None:
    """The Adult training split as a tidy target table plus a provenance sidecar."""
    from countdp.evaluate.data import load_adult, write_adult

    table, record = load_adult(source=source, snapshot=snapshot, timeout=timeout)
    lines = [f"source {a['source']} failed: {a['error']}" for a in record["failed_attempts"]]
    record = write_adult(table, record, table_csv, sidecar)
    lines.append(f"Adult from {record['source']} (sha256 {record['sha256']}): {record['rows_train']} training rows; "
                 f"targets {record['targets']}")
    write_text_atomic(log, "\n".join(lines) + "\n")


def _write_sweep(raw: pd.DataFrame, summary: pd.DataFrame, raw_csv: str, summary_csv: str, log: str,
                 label: str, start: float, points: int, mechanisms: Sequence[str]) -> None:
    write_csv_atomic(raw, raw_csv, "%.12g")
    write_csv_atomic(summary, summary_csv, "%.12g")
    write_text_atomic(log, f"{label}: {points} points x {len(mechanisms)} mechanisms in "
                           f"{time.perf_counter() - start:.2f} s; max |z| = {summary['z'].abs().max():.2f}\n")


def eval_adult(table_csv: str, sidecar: str, target: str, alpha: float, files: Sequence[Sequence], ns: Sequence[int],
               repetitions: int, seed: int, summary_csv: str, raw_csv: str, log: str) -> None:
    """Figure 10 sweep: one Adult target, error vs group size, every mechanism of ``files`` ([m, n, path])."""
    from countdp.evaluate.data import read_adult_table
    from countdp.evaluate.experiments import adult_sweep, load_mechanisms
    from countdp.studies.adult_groups import adult_group_counts

    start = time.perf_counter()
    table = read_adult_table(table_csv, sidecar)
    by_size = load_mechanisms(files, alpha)
    mechanisms = list(dict.fromkeys(row[0] for row in files))
    raw, summary = adult_sweep(table[target].to_numpy(), target, alpha, ns, mechanisms,
                               lambda m, point: by_size[(m, point["n"])], int(repetitions), int(seed),
                               grouping=lambda bits, n, rng: adult_group_counts(bits, n, rng, target))
    _write_sweep(raw, summary, raw_csv, summary_csv, log, f"{target} alpha={alpha}", start, len(ns), mechanisms)


def eval_binomial(study: str, alpha: float, files: Sequence[Sequence], points: Sequence[Mapping],
                  measures: Sequence[str], repetitions: int, population: int, seed: int, summary_csv: str,
                  raw_csv: str, log: str) -> None:
    """A Figure 11/12/13 sweep on synthetic Binomial groups, every mechanism of ``files`` ([m, n, path])."""
    from countdp.evaluate.experiments import binomial_sweep, load_mechanisms

    start = time.perf_counter()
    by_size = load_mechanisms(files, alpha)
    mechanisms = list(dict.fromkeys(row[0] for row in files))
    raw, summary = binomial_sweep(points, mechanisms, lambda m, point: by_size[(m, int(point["n"]))], list(measures),
                                  int(repetitions), int(seed), study, int(population))
    _write_sweep(raw, summary, raw_csv, summary_csv, log, f"{study} alpha={alpha}", start, len(points), mechanisms)


def extrinsic_figure(figure: str, settings: Mapping, evaluations: Sequence[str], sidecar: str | None,
                     table_csv: str, paths: Sequence[str], log: str) -> None:
    """One of Figures 10-13: its sweep summaries gathered into a table, and the figure drawn from it."""
    from countdp.plots.extrinsic import FIGURES
    from countdp.studies.fig10_13 import gather_table

    source = json.loads(open(sidecar).read()) if sidecar else None
    table = gather_table([pd.read_csv(path) for path in evaluations], source)
    write_csv_atomic(table, table_csv, "%.12g")
    FIGURES[figure](table, settings, paths)
    write_text_atomic(log, f"{figure}: {len(table)} rows; max |z| (Monte Carlo vs exact) = "
                           f"{table['z'].abs().max():.2f}\n")


def extrinsic_findings(tables: Mapping[str, str], thresholds: Mapping, out_csv: str, log: str) -> None:
    """The findings of Figures 10-13 (``tables``: figure key -> table path; ``thresholds``: config ``findings``)."""
    from countdp.studies.fig10_13 import Thresholds, findings

    found = findings({fig: pd.read_csv(path) for fig, path in tables.items()}, Thresholds.from_config(thresholds))
    write_csv_atomic(found, out_csv, "%.12g")
    write_text_atomic(log, f"{len(found)} findings; holds: {found['holds'].value_counts(dropna=False).to_dict()}\n")


def structural_record(entries: Sequence[Sequence], out_csv: str, log: str) -> None:
    """The record of Figures 9-13's evaluations from structural forms: one row per [figure, mechanism, n, exact
    alpha] of ``entries``, saying which form evaluated it (WH: GM, and why that is a WH design), its
    ``K``, the sizes its table serves, the floor's share and the SHA-256 of its tables."""
    from countdp.evaluate.routing import evaluation_form

    rows = [{"figure": figure, **evaluation_form(mechanism, int(n), alpha)[1].to_dict()}
            for figure, mechanism, n, alpha in entries]
    write_csv_atomic(pd.DataFrame(rows), out_csv, "%.12g")
    write_text_atomic(log, f"{len(rows)} structural evaluations recorded\n")

