"""Snakemake script: the Adult training split as a tidy target table plus a provenance sidecar."""

import logging

from countdp.evaluate.data import load_adult, write_adult

smk = snakemake  # noqa: F821 - injected by Snakemake

logging.basicConfig(filename=smk.log[0], level=logging.INFO, format="%(asctime)s %(message)s", force=True)
table, record = load_adult(source=smk.params.source, snapshot=smk.input.snapshot, timeout=float(smk.params.timeout))
for attempt in record["failed_attempts"]:
    logging.warning("source %s failed: %s", attempt["source"], attempt["error"])
record = write_adult(table, record, smk.output.table, smk.output.sidecar)
logging.info("Adult from %s (sha256 %s): %d training rows; targets %s", record["source"], record["sha256"],
             record["rows_train"], record["targets"])
