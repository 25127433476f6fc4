# The claims table: every statement of the paper, what we measured, and a verdict.
# Theory rows are recomputed from the library: closed forms over the grids of the config's
# `claims:` block, and the LP optima and named mechanisms at the fixed (n, alpha) of
# countdp.claims.designs, which the design sweeps make (their manifests are inputs) and this job
# loads (re-certified), so no LP is solved here.  The library's code version is a param, so a
# library change reruns it.
# Figure rows come from the studies' check tables (CHECK_TABLES, claims_targets: targets.smk).


rule claims:
    input:
        checks=CHECK_TABLES,
        designs=design_manifests(claims_mechanism_paths()),
    output:
        table=report(
            "results/tables/claims.csv",
            caption="../report/claims.rst",
            category="Claims",
            labels={"claims table": "CSV (download)"},
        ),
        markdown="results/claims.md",
        html=report(
            "results/claims.html",
            caption="../report/claims.rst",
            category="Claims",
            labels={"claims table": "HTML (rendered table)"},
        ),
    params:
        theory={  # countdp.claims.table.TheorySettings: closed-form grids, and the solver of any LP not saved
            "alphas": [alpha_value(a) for a in config["claims"]["alpha_grid"]],
            "ns": n_values(config["claims"]["n_grid"]),
            "solver": config["solver"]["name"],
            "method": claims_lp_method(),
        },
        designs=[design[:4] for design in claims_designs()],
        design_paths=claims_mechanism_paths(),
        code=CODE_VERSION,
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/claims.log",
    run:
        from jobs_claims import claims

        in_worker(claims, input.checks, params.designs, params.design_paths, params.theory, *output, log[0])
