# The claims table: every statement of the paper, what we measured, and a verdict.
# Theory rows are recomputed from the library; figure rows come from the studies' check tables
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
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/claims.log",
    run:
        from countdp.claims.table import build_claims

        build_claims(input, output.table, output.markdown, output.html, log[0])
