# Figures 10-13 and their tables (issue 4): each rule gathers its sweep evaluations into a tidy
# table (results/tables/) and draws the figure from that table (results/figures/, PDF + PNG).
# extrinsic_findings.csv checks each qualitative finding of SPEC section 6 on those tables.


EXTRINSIC_FIGURES = {
    "fig10": "fig10_adult_L0",
    "fig11": "fig11_binomial_L0d1",
    "fig12": "fig12_binomial_L0d",
    "fig13": "fig13_binomial_RMSE",
}
EXTRINSIC_EVALUATIONS = {
    "fig10": fig10_evaluations,
    "fig11": fig11_evaluations,
    "fig12": fig12_evaluations,
    "fig13": fig13_evaluations,
}
EXTRINSIC_FINDINGS = "results/tables/extrinsic_findings.csv"


def extrinsic_table(fig):
    return f"results/tables/{EXTRINSIC_FIGURES[fig]}.csv"


def extrinsic_figure(fig, ext):
    return f"results/figures/{EXTRINSIC_FIGURES[fig]}.{ext}"


def extrinsic_targets():
    return (
        [extrinsic_table(f) for f in EXTRINSIC_FIGURES]
        + [extrinsic_figure(f, ext) for f in EXTRINSIC_FIGURES for ext in ("pdf", "png")]
        + [ADULT_TABLE, ADULT_SIDECAR, EXTRINSIC_FINDINGS]
    )


for _fig in EXTRINSIC_FIGURES:

    rule:
        name:
            f"{_fig}_extrinsic"
        input:
            evaluations=EXTRINSIC_EVALUATIONS[_fig](),
            sidecar=ADULT_SIDECAR if _fig == "fig10" else [],
        output:
            table=extrinsic_table(_fig),
            pdf=report_figure(extrinsic_figure(_fig, "pdf"), _fig, EXTRINSIC_CATEGORY),
            png=report_figure(extrinsic_figure(_fig, "png"), _fig, EXTRINSIC_CATEGORY),
        params:
            figure=_fig,
            settings=config[_fig],
        log:
            f"results/logs/figures/{EXTRINSIC_FIGURES[_fig]}.log",
        script:
            "../scripts/fig10_13_plots.py"


rule extrinsic_findings:
    input:
        tables=[extrinsic_table(f) for f in EXTRINSIC_FIGURES],
    output:
        EXTRINSIC_FINDINGS,
    log:
        "results/logs/figures/extrinsic_findings.log",
    script:
        "../scripts/fig10_13_findings.py"
