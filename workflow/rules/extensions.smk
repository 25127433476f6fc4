# Beyond the paper: baselines, Figure 5 verified over all 128 property subsets,
# minimax designs, prior-aware designs, L1/L2 designs, Gupte-Sundararajan derivability.
#
# Reads only config["extensions"] (the `extensions:` block of the config) and, when
# extensions.prior.adult_targets is non-empty, the Adult table of data.smk.  Every study
# is exact (LPs / closed forms), so each rule is one job; tables go to
# results/tables/ext_*.csv, checks to results/tables/checks/ext_*.csv, figures to
# results/figures/ext_*.{pdf,png}, and each job's log (row counts, wall-clock and solver
# times: tables carry no timings, so they are byte-identical across runs) to
# results/logs/extensions/.  The jobs run in the run's worker processes (in_worker); their
# work is in workflow/lib/jobs_extensions.py.  A design of the objectives, derivability or prior
# study that the engine refuses fails its job in one line naming the config key that asks for it
# (config_extensions.study_keys, engine_refusal.refusal), not the engine's own options.  Each job
# asks for the memory the config check estimates for its study (ext_mem_mb: the largest n's whole
# LP or dearest design, at least 1,000 MB, at most design_memory_mb), so a cluster job requests
# what it needs.
# Helpers (EXT, ext_figure, extensions_targets, ...): targets.smk.


rule ext_baselines:
    output:
        table="results/tables/ext_baselines.csv",
        checks=ext_check_path("baselines"),
        figure=ext_figure("ext_baselines"),
    params:
        code=CODE_VERSION,  # the study solves LPs: rerun when the library changes
        ns=n_values(EXT["baselines"]["n"]),
        alphas=ext_alphas(EXT["baselines"]["alpha"]),
    threads: 1
    resources:
        mem_mb=ext_mem_mb("baselines"),
        runtime=30,
    log:
        ext_log("ext_baselines"),
    run:
        from jobs_extensions import baselines

        in_worker(baselines, params.ns, params.alphas, output.table, output.checks, list(output.figure), log[0])


rule ext_subsets:
    output:
        table="results/tables/ext_subsets.csv",
        summary="results/tables/ext_subsets_summary.csv",
        checks=ext_check_path("subsets"),
        figure=ext_figure("ext_subsets"),
    params:
        code=CODE_VERSION,  # the study solves LPs: rerun when the library changes
        ns=n_values(EXT["subsets"]["n"]),
        alphas=ext_alphas(EXT["subsets"]["alpha"]),
        label_y=EXT["subsets"]["label_y"],
        y_max=EXT["subsets"]["y_max"],
    threads: 1
    priority: 10  # the longest single job: start it first (see profiles/default/config.yaml)
    resources:
        mem_mb=ext_mem_mb("subsets"),
        runtime=60,
    log:
        ext_log("ext_subsets"),
    run:
        from jobs_extensions import subsets

        in_worker(subsets, params.ns, params.alphas, params.label_y, params.y_max, output.table, output.summary, output.checks,
                           list(output.figure), log[0])


rule ext_minimax:
    output:
        table="results/tables/ext_minimax.csv",
        checks=ext_check_path("minimax"),
        figure=ext_figure("ext_minimax"),
    params:
        code=CODE_VERSION,  # the study solves LPs: rerun when the library changes
        ns=n_values(EXT["minimax"]["n"]),
        alphas=ext_alphas(EXT["minimax"]["alpha"]),
    threads: 1
    resources:
        mem_mb=ext_mem_mb("minimax"),
        runtime=30,
    log:
        ext_log("ext_minimax"),
    run:
        from jobs_extensions import minimax

        in_worker(minimax, params.ns, params.alphas, output.table, output.checks, list(output.figure), log[0])


# The baselines and minimax studies under each objective beyond L0 their `objectives` list (none by
# default): a table, a check table and a figure each (ext_{study}_{objective}, targets_objectives.smk).
for _study in EXT_OBJECTIVE_STUDIES:
    for _objective in ext_extra_objectives(_study):

        rule:
            name:
                f"ext_{ext_objective_study(_study, _objective)}"
            output:
                table=f"results/tables/ext_{ext_objective_study(_study, _objective)}.csv",
                checks=ext_check_path(ext_objective_study(_study, _objective)),
                figure=ext_figure(f"ext_{ext_objective_study(_study, _objective)}", f"ext_{_study}_objective"),
            params:
                code=CODE_VERSION,  # the study solves LPs: rerun when the library changes
                study=_study,
                ns=n_values(EXT[_study]["n"]),
                alphas=ext_alphas(EXT[_study]["alpha"]),
                objective=_objective,
            threads: 1
            resources:
                mem_mb=ext_mem_mb(_study),
                runtime=30,
            log:
                ext_log(f"ext_{ext_objective_study(_study, _objective)}"),
            run:
                import jobs_extensions

                in_worker(getattr(jobs_extensions, params.study), params.ns, params.alphas, output.table,
                          output.checks, list(output.figure), log[0], params.objective)


rule ext_prior:
    input:
        adult=[ADULT_TABLE, ADULT_SIDECAR] if EXT["prior"].get("adult_targets") else [],
    output:
        table="results/tables/ext_prior.csv",
        gains="results/tables/ext_prior_gains.csv",
        checks=ext_check_path("prior"),
        figure=ext_figure("ext_prior"),
    params:
        code=CODE_VERSION,  # the study solves LPs: rerun when the library changes
        cfg=EXT["prior"],
        seed=EXT.get("seed", 0),
        solver=EXT.get("solver", {}).get("name", "HIGHS"),
        config_keys=config_extensions.study_keys(config, "prior"),  # named if the engine refuses a design
    threads: 1
    resources:
        mem_mb=ext_mem_mb("prior"),
        runtime=30,
    log:
        ext_log("ext_prior"),
    run:
        from jobs_extensions import prior

        in_worker(prior, params.cfg, params.seed, params.solver, input.adult, *output[:3], output.figure, log[0],
                  params.config_keys)


rule ext_objectives:
    output:
        table="results/tables/ext_objectives.csv",
        matrices="results/tables/ext_objectives_matrices.csv",
        checks=ext_check_path("objectives"),
        rmse=ext_figure("ext_objectives_rmse"),
        heatmaps=ext_figure("ext_objectives_heatmaps"),
    params:
        code=CODE_VERSION,  # the study solves LPs: rerun when the library changes
        cfg=EXT["objectives"],
        solver=EXT.get("solver", {}),
        config_keys=config_extensions.study_keys(config, "objectives"),  # named if the engine refuses a design
    threads: 1
    resources:
        mem_mb=ext_mem_mb("objectives"),
        runtime=30,
    log:
        ext_log("ext_objectives"),
    run:
        from jobs_extensions import objectives

        in_worker(objectives, params.cfg, params.solver, *output[:3], output.rmse, output.heatmaps, log[0],
                  params.config_keys)


rule ext_derivability:
    output:
        table="results/tables/ext_derivability.csv",
        summary="results/tables/ext_derivability_summary.csv",
        checks=ext_check_path("derivability"),
        figure=ext_figure("ext_derivability"),
    params:
        code=CODE_VERSION,  # the study solves LPs: rerun when the library changes
        ns=n_values(EXT["derivability"]["n"]),
        alphas=ext_alphas(EXT["derivability"]["alpha"]),
        config_keys=config_extensions.study_keys(config, "derivability"),  # named if the engine refuses a design
    threads: 1
    resources:
        mem_mb=ext_mem_mb("derivability"),
        runtime=30,
    log:
        ext_log("ext_derivability"),
    run:
        from jobs_extensions import derivability

        in_worker(derivability, params.ns, params.alphas, output.table, output.summary, output.checks, list(output.figure),
                                log[0], params.config_keys)


rule ext_checks:
    input:
        [ext_check_path(s) for s in ext_check_studies()],
    output:
        "results/tables/ext_checks.csv",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        ext_log("ext_checks"),
    run:
        from jobs_extensions import checks

        in_worker(checks, list(input), output[0], log[0])


rule ext_all:
    input:
        extensions_targets(),
