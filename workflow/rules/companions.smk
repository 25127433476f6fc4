# The companion papers: Gupte-Sundararajan (multi-level release, universal optimality for minimax
# consumers, their Table 1) and Gong-Meng (congenial release under invariants).
#
# Reads only config["companions"] (and the Adult table, for the congenial release).  Tables go to results/tables/companion_*.csv, checks to
# results/tables/checks/companion_*.csv (merged into the claims table, each row naming its
# paper), figures to results/figures/companion_*.{pdf,png}, logs to results/logs/companions/.
# The work is in workflow/lib/jobs_companions.py; helpers (COMP, companion_figure, ...): targets.smk.


rule companion_levels:
    output:
        table="results/tables/companion_levels.csv",
        summary="results/tables/companion_levels_summary.csv",
        checks=companion_check_path("levels"),
        figure=companion_figure("companion_levels"),
    params:
        code=CODE_VERSION,  # the study solves LPs: rerun when the library changes
        ns=n_values(COMP["levels"]["n"]),
        alphas=[str(a) for a in COMP["levels"]["alpha"]],
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        companion_log("companion_levels"),
    run:
        from jobs_companions import levels

        in_worker(levels, params.ns, params.alphas, output.table, output.summary, output.checks, list(output.figure),
                          log[0])


rule companion_universal:
    output:
        table="results/tables/companion_universal.csv",
        largest="results/tables/companion_universal_largest.csv",
        checks=companion_check_path("universal"),
        figure=companion_figure("companion_universal"),
    params:
        code=CODE_VERSION,
        settings={
            "consumers": COMP["universal"]["consumers"],
            "n_range": [COMP["universal"]["n"]["from"], COMP["universal"]["n"]["to"]],
            "alphas": [alpha_value(a) for a in COMP["universal"]["alpha"]],
            "seed": COMP["universal"]["seed"],
        },
    threads: 1
    resources:
        mem_mb=1000,
        runtime=20,
    log:
        companion_log("companion_universal"),
    run:
        from jobs_companions import universal

        in_worker(universal, params.settings, output.table, output.largest, output.checks, list(output.figure), log[0])


rule companion_gs_table1:
    output:
        table="results/tables/companion_gs_table1.csv",
        checks=companion_check_path("gs_table1"),
    params:
        code=CODE_VERSION,
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    log:
        companion_log("companion_gs_table1"),
    run:
        from jobs_companions import gs_table1

        in_worker(gs_table1, output.table, output.checks, log[0])


rule companion_gm_section3:
    output:
        tables=[
            f"results/tables/companion_gm_{name}.csv"
            for name in ("table1", "figure1", "figure1_medians", "figure2", "figure3", "tv")
        ]
        + [companion_check_path("gm_section3")],
        distances=companion_figure("companion_gm_figure1"),
        acceptance=companion_figure("companion_gm_figure2"),
        traces=companion_figure("companion_gm_figure3"),
    params:
        code=CODE_VERSION,
        settings=COMP["gm_section3"],
    threads: 1
    resources:
        mem_mb=1500,
        runtime=30,
    log:
        companion_log("companion_gm_section3"),
    run:
        from jobs_companions import gm_section3

        in_worker(gm_section3, dict(params.settings), list(output), log[0])


rule companion_congenial:
    input:
        table=ADULT_TABLE,
        sidecar=ADULT_SIDECAR,
    output:
        errors="results/tables/companion_congenial.csv",
        summary="results/tables/companion_congenial_summary.csv",
        checks=companion_check_path("congenial"),
        figure=companion_figure("companion_congenial"),
    params:
        code=CODE_VERSION,
        settings=COMP["congenial"],
    threads: 1
    resources:
        mem_mb=1500,
        runtime=30,
    log:
        companion_log("companion_congenial"),
    run:
        from jobs_companions import congenial

        in_worker(congenial, input.table, input.sidecar, dict(params.settings), output.errors, output.summary,
                              output.checks, list(output.figure), log[0])


rule companion_checks:
    input:
        [companion_check_path(s) for s in COMPANION_STUDIES],
    output:
        "results/tables/companion_checks.csv",
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    log:
        companion_log("companion_checks"),
    run:
        from jobs_companions import checks

        in_worker(checks, list(input), output[0], log[0])
