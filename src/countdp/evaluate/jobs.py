"""One evaluation job each: load the certified artifacts, run the sweep, write raw and summary CSVs.

Plain values in, files out, so a workflow rule can call these in its own process (a ``run:``
block) instead of starting a Python process per job (a ``script:`` costs the start-up and the
imports of snakemake, pandas and countdp: several seconds each).  Nothing here touches global
state: the one-line summary goes to ``log_path`` (written atomically, like every output), not
through :mod:`logging`, so jobs may run in threads side by side.

``files``: ``[mechanism, n, path]`` triples of L0 mechanism artifacts
(:func:`countdp.evaluate.experiments.load_mechanisms`); the mechanisms are evaluated in the
order they first appear there.  Outputs are written with ``%.12g`` floats.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from datetime import datetime

from countdp.evaluate.data import POPULATION, read_adult_table
from countdp.evaluate.experiments import adult_sweep, binomial_sweep, load_mechanisms
from countdp.mechanisms.artifact import write_csv_atomic, write_text_atomic

Path = str | os.PathLike
FLOAT_FORMAT = "%.12g"


def _mechanism_names(files: Sequence[Sequence]) -> list[str]:
    return list(dict.fromkeys(str(m) for m, _, _ in files))


def _write(raw, summary, raw_csv: Path, summary_csv: Path, log_path: Path, what: str, start: float) -> None:
    write_csv_atomic(raw, raw_csv, FLOAT_FORMAT)
    write_csv_atomic(summary, summary_csv, FLOAT_FORMAT)
    stamp = datetime.now().isoformat(sep=" ", timespec="milliseconds")
    write_text_atomic(log_path, f"{stamp} {what} in {time.perf_counter() - start:.2f} s; "
                                f"max |z| = {summary['z'].abs().max():.2f}\n")


def adult_job(table_csv: Path, sidecar_json: Path, files: Sequence[Sequence], target: str, alpha: float,
              ns: Sequence[int], repetitions: int, seed: int, raw_csv: Path, summary_csv: Path,
              log_path: Path) -> None:
    """Figure 10 for one Adult ``target``: error vs group size ``ns``, every mechanism of ``files``."""
    start = time.perf_counter()
    table = read_adult_table(table_csv, sidecar_json)
    by_size = load_mechanisms(files, alpha)
    mechanisms = _mechanism_names(files)
    raw, summary = adult_sweep(table[target].to_numpy(), target, alpha, ns, mechanisms,
                               lambda m, point: by_size[(m, int(point["n"]))], int(repetitions), int(seed))
    _write(raw, summary, raw_csv, summary_csv, log_path,
           f"{target} alpha={alpha}: {len(ns)} points x {len(mechanisms)} mechanisms", start)


def binomial_job(files: Sequence[Sequence], alpha: float, points: Sequence[Mapping], measures: Sequence[str],
                 repetitions: int, seed: int, study: str, raw_csv: Path, summary_csv: Path, log_path: Path,
                 population: int = POPULATION) -> None:
    """A Figure 11/12/13 sweep on synthetic Binomial groups: ``points`` (``n``, ``p``, ``alpha``)."""
    start = time.perf_counter()
    by_size = load_mechanisms(files, alpha)
    mechanisms = _mechanism_names(files)
    raw, summary = binomial_sweep(points, mechanisms, lambda m, point: by_size[(m, int(point["n"]))],
                                  list(measures), int(repetitions), int(seed), study, int(population))
    _write(raw, summary, raw_csv, summary_csv, log_path,
           f"{study} alpha={alpha}: {len(points)} points x {len(mechanisms)} mechanisms", start)


__all__ = ["adult_job", "binomial_job"]
