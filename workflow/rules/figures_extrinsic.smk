# Figures 10-13 and their tables: each rule gathers its sweep evaluations into a tidy
# table (results/tables/) and draws the figure from that table (results/figures/, PDF + PNG).
# extrinsic_findings.csv checks each qualitative finding of the paper's Section V on those tables, with
# the thresholds of the config's `findings:` block.  Jobs: workflow/lib/jobs_extrinsic.py.
# Names and paths (EXTRINSIC_FIGURES, extrinsic_table, extrinsic_targets, ...): targets.smk.


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
        threads: 1
        resources:
            mem_mb=1000,
            runtime=10,
        log:
            f"results/logs/figures/{EXTRINSIC_FIGURES[_fig]}.log",
        run:
            from jobs_extrinsic import extrinsic_figure

            in_worker(extrinsic_figure, params.figure, params.settings, list(input.evaluations),
                      input.get("sidecar"), output.table, [output.pdf, output.png], log[0])


rule extrinsic_findings:
    input:
        **{f: extrinsic_table(f) for f in EXTRINSIC_FIGURES},
    output:
        EXTRINSIC_FINDINGS,
    params:
        thresholds=config["findings"],
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/figures/extrinsic_findings.log",
    run:
        from jobs_extrinsic import extrinsic_findings

        in_worker(extrinsic_findings, {f: input[f] for f in EXTRINSIC_FIGURES}, dict(params.thresholds), output[0], log[0])
