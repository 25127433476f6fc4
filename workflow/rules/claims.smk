# The claims table: every statement of the paper, what we measured, and a verdict.
# Theory rows are recomputed from the library (grids: the config's `claims:` block; LPs with the
# config's solver; the library's code version is a param, so a library change reruns it); figure rows come from the studies' check tables
# (CHECK_TABLES, claims_targets: common.smk).


rule claims:
    input:
        CHECK_TABLES,
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
        alpha_grid=[alpha_value(a) for a in config["claims"]["alpha_grid"]],
        n_grid=n_values(config["claims"]["n_grid"]),
        solver=config["solver"]["name"],
        method=config["solver"]["method"],
        code=CODE_VERSION,
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/claims.log",
    run:
        from jobs_claims import claims

        claims(list(input), params.alpha_grid, params.n_grid, params.solver, params.method, output.table,
               output.markdown, output.html, log[0])
