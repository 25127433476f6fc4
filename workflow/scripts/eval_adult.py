"""Snakemake script: Figure 10 sweep (one Adult target, error vs group size, all mechanisms)."""

import logging
import time

from countdp.evaluate.data import read_adult_table
from countdp.evaluate.experiments import adult_sweep, load_mechanisms
from countdp.mechanisms.artifact import write_csv_atomic

smk = snakemake  # noqa: F821 - injected by Snakemake

logging.basicConfig(filename=smk.log[0], level=logging.INFO, format="%(asctime)s %(message)s", force=True)
start = time.perf_counter()
alpha = float(smk.wildcards.alpha)
target = smk.wildcards.target
table = read_adult_table(smk.input.table, smk.input.sidecar)
mechanisms_by_size = load_mechanisms(smk.params.files, alpha)
mechanisms = list(dict.fromkeys(m for m, _, _ in smk.params.files))
raw, summary = adult_sweep(
    table[target].to_numpy(), target, alpha, smk.params.ns, mechanisms,
    lambda m, point: mechanisms_by_size[(m, point["n"])], int(smk.params.repetitions), int(smk.params.seed),
)
write_csv_atomic(raw, smk.output.raw, "%.12g")
write_csv_atomic(summary, smk.output.summary, "%.12g")
logging.info("%s alpha=%s: %d points x %d mechanisms in %.2f s; max |z| = %.2f", target, alpha,
             len(smk.params.ns), len(mechanisms), time.perf_counter() - start, summary["z"].abs().max())
