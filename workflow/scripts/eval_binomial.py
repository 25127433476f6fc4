"""Snakemake script: a Figure 11/12/13 sweep on synthetic Binomial groups, all mechanisms."""

import logging
import time

from countdp.evaluate.experiments import binomial_sweep, load_mechanisms
from countdp.mechanisms.artifact import write_csv_atomic

smk = snakemake  # noqa: F821 - injected by Snakemake

logging.basicConfig(filename=smk.log[0], level=logging.INFO, format="%(asctime)s %(message)s", force=True)
start = time.perf_counter()
alpha = float(smk.wildcards.alpha)
mechanisms_by_size = load_mechanisms(smk.params.files, alpha)
mechanisms = list(dict.fromkeys(m for m, _, _ in smk.params.files))
raw, summary = binomial_sweep(
    smk.params.points, mechanisms, lambda m, point: mechanisms_by_size[(m, int(point["n"]))], list(smk.params.measures),
    int(smk.params.repetitions), int(smk.params.seed), smk.params.study, int(smk.params.population),
)
write_csv_atomic(raw, smk.output.raw, "%.12g")
write_csv_atomic(summary, smk.output.summary, "%.12g")
logging.info("%s alpha=%s: %d points x %d mechanisms in %.2f s; max |z| = %.2f", smk.params.study, alpha,
             len(smk.params.points), len(mechanisms), time.perf_counter() - start, summary["z"].abs().max())
