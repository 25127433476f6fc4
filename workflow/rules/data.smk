# Data for the extrinsic studies: the UCI Adult training split as a tidy table of
# three binary targets, with a JSON sidecar recording the source used (ucimlrepo or the
# checksummed snapshot in resources/), its SHA-256 and the row counts.  Synthetic Binomial
# populations are drawn inside the evaluation jobs (fresh per repetition, seeded).
# ADULT_TABLE / ADULT_SIDECAR: see targets.smk.


rule adult_data:
    input:
        snapshot=config["data"].get("snapshot", "resources/adult.data.gz"),
    output:
        table=ADULT_TABLE,
        sidecar=ADULT_SIDECAR,
    params:
        source=config["data"].get("source", "auto"),
        timeout=config["data"].get("fetch_timeout", 20),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/data/adult.log",
    run:
        from jobs_extrinsic import adult_data

        in_worker(adult_data, params.source, input.snapshot, float(params.timeout), output.table, output.sidecar, log[0])
