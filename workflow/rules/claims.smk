# The claims table (issue 5): every statement of the paper, what we measured, and a verdict.
# Theory rows are recomputed from the library; figure rows come from the studies' check tables.

CHECK_TABLES = [
    "results/tables/intrinsic_checks.csv",
    "results/tables/extrinsic_findings.csv",
    "results/tables/ext_checks.csv",
]


def claims_targets():
    return ["results/tables/claims.csv", "results/claims.md", "results/claims.html"]


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
    log:
        "logs/claims.log",
    run:
        from countdp.claims import claims_html, claims_markdown, claims_table
        from countdp.io import atomic_path, write_text_atomic

        table = claims_table(input)
        with atomic_path(output.table) as tmp:
            table.to_csv(tmp, index=False)
        write_text_atomic(output.markdown, claims_markdown(table))
        write_text_atomic(output.html, claims_html(table))
        counts = table["verdict"].value_counts().to_dict()
        write_text_atomic(log[0], f"{len(table)} claims: {counts}\n")
