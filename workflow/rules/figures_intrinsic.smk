# Intrinsic studies: tables from certified mechanism artifacts, then figures from
# the tables (and, for heatmaps, from the artifacts).  No rule here designs a mechanism: a rule
# that reads artifacts takes their sweeps' manifests as inputs (design_manifests: common.smk)
# and the artifacts' paths as a param.
# Every rule is a short `run:` block calling a job of workflow/lib/jobs_intrinsic.py with plain
# values (paths, numbers); the calls run in the run's worker processes (in_worker: common.smk).


# ------------------------------------------------------------------------- tables
rule fig01_tables:
    input:
        design_manifests(fig01_panel_mechanisms() + fig01_l2_search()),
    output:
        claims="results/tables/fig01_claims.csv",
        search="results/tables/fig01_l2_search.csv",
        checks=CHECKS.format(study="fig01"),
    params:
        panels=fig01_panel_mechanisms(),
        search=fig01_l2_search(),
        alpha=alpha_value(config["fig01"]["alpha"]),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig01_tables.log",
    run:
        from jobs_intrinsic import fig01_tables

        in_worker(fig01_tables, params.panels, params.search, params.alpha, output.claims, output.search,
                                output.checks, log[0])


rule fig02_tables:
    input:
        design_manifests(fig02_mechanisms()),
    output:
        claims="results/tables/fig02_claims.csv",
        checks=CHECKS.format(study="fig02"),
    params:
        mechanisms=fig02_mechanisms(),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig02_tables.log",
    run:
        from jobs_intrinsic import fig02_tables

        in_worker(fig02_tables, params.mechanisms, output.claims, output.checks, log[0])


rule fig03_04_tables:
    output:
        gm="results/tables/fig03_gm_exponents.csv",
        em="results/tables/fig04_em_exponents.csv",
        checks=CHECKS.format(study="fig03_04"),
    params:
        n=config["fig03_04"]["n"],
        alphas=[alpha_value(a) for a in config["fig03_04"]["alpha"]],
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig03_04_tables.log",
    run:
        from jobs_intrinsic import fig03_04_tables

        in_worker(fig03_04_tables, params.n, params.alphas, output.gm, output.em, output.checks, log[0])


rule fig06_tables:
    input:
        design_manifests(fig06_mechanisms()),
    output:
        grid="results/tables/fig06_properties_grid.csv",
        summary="results/tables/fig06_properties.csv",
        checks=CHECKS.format(study="fig06"),
    params:
        artifacts=fig06_mechanisms(),
        mechanisms=config["fig06"]["mechanisms"],
        properties=config["fig06"]["properties"],
        tolerance=config["fig06"]["tolerance"],
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig06_tables.log",
    run:
        from jobs_intrinsic import fig06_tables

        in_worker(fig06_tables, params.artifacts, params.mechanisms, params.properties, params.tolerance, output.grid,
                                output.summary, output.checks, log[0])


rule fig07_tables:
    input:
        design_manifests(fig07_mechanisms()),
    output:
        truthful="results/tables/fig07_truthful.csv",
        checks=CHECKS.format(study="fig07"),
    params:
        mechanisms=fig07_mechanisms(),
        paper=config["fig07"].get("paper_truthful", {}),
        text_alpha=alpha_value(config["fig07"]["text_alpha"]),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig07_tables.log",
    run:
        from jobs_intrinsic import fig07_tables

        in_worker(fig07_tables, params.mechanisms, params.paper, params.text_alpha, output.truthful, output.checks,
                                log[0])


rule fig08_tables:
    input:
        design_manifests(fig08_mechanisms()),
    output:
        table="results/tables/fig08_l0.csv",
        checks=CHECKS.format(study="fig08"),
    params:
        artifacts=fig08_mechanisms(),
        base=config["fig08"].get("base", ["WH", "S"]),
        combinations=config["fig08"]["combinations"],
        vs_n_alpha=alpha_value(config["fig08"]["vs_n"]["alpha"]),
        vs_alpha_n=config["fig08"]["vs_alpha"]["n"],
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig08_tables.log",
    run:
        from jobs_intrinsic import fig08_tables

        in_worker(fig08_tables, params.artifacts, params.base, params.combinations, params.vs_n_alpha,
                                params.vs_alpha_n, output.table, output.checks, log[0])


# Figure 9's n beyond the matrix path, as [mechanism, exact alpha, n]: a param only when there are any (the
# default configs' params are unchanged); DESIGN_CODE_VERSION (it covers countdp.structural) reruns the job
# when the structural forms change.
FIG09_STRUCTURAL = fig09_structural()


rule fig09_tables:
    input:
        design_manifests(fig09_mechanisms()),
    output:
        table="results/tables/fig09_l0.csv",
        convergence="results/tables/fig09_convergence.csv",
        checks=CHECKS.format(study="fig09"),
    params:
        artifacts=fig09_mechanisms(),
        mechanisms=config["fig09"]["mechanisms"],
        alphas=[alpha_value(a) for a in config["fig09"]["alpha"]],
        ns=fig09_sizes(),
        check_alpha=alpha_value(config["fig09"]["convergence_check"]["alpha"]),
        check_n=config["fig09"]["convergence_check"]["n"],
        tolerance=config["fig09"]["convergence_tolerance"],
        **({"structural": FIG09_STRUCTURAL, "structural_code": DESIGN_CODE_VERSION} if FIG09_STRUCTURAL else {}),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig09_tables.log",
    run:
        from jobs_intrinsic import fig09_tables

        in_worker(fig09_tables, params.artifacts, params.mechanisms, params.alphas, params.ns, params.check_alpha,
                                params.check_n, params.tolerance, *output, log[0], params.get("structural", []))


# Figure 9 under each objective beyond L0 that fig09.objectives lists (none by default): its table and
# checks from the designs of that objective (targets_objectives.smk), then its figure.
for _objective in fig09_extra_objectives():

    rule:
        name:
            f"{fig09_study(_objective)}_tables"
        input:
            design_manifests(fig09_mechanisms(_objective)),
        output:
            table=f"results/tables/{fig09_study(_objective)}.csv",
            checks=CHECKS.format(study=fig09_study(_objective)),
        params:
            artifacts=fig09_mechanisms(_objective),
            mechanisms=config["fig09"]["mechanisms"],
            alphas=[alpha_value(a) for a in config["fig09"]["alpha"]],
            ns=fig09_sizes(by_mechanism=True),
            objective=_objective,
            tolerance=config["fig09"]["convergence_tolerance"],
        threads: 1
        resources:
            mem_mb=1000,
            runtime=10,
        log:
            f"results/logs/intrinsic/{fig09_study(_objective)}_tables.log",
        run:
            from jobs_intrinsic import fig09_objective_tables

            in_worker(fig09_objective_tables, params.artifacts, params.mechanisms, params.alphas, params.ns,
                                              params.objective, params.tolerance, output.table, output.checks, log[0])

    rule:
        name:
            f"{fig09_study(_objective)}_figure"
        input:
            f"results/tables/{fig09_study(_objective)}.csv",
        output:
            fig09_figure_outputs(_objective),
        params:
            objective=_objective,
        threads: 1
        resources:
            mem_mb=1000,
            runtime=10,
        log:
            f"results/logs/intrinsic/{fig09_study(_objective)}_figure.log",
        run:
            from jobs_intrinsic import intrinsic_figure

            in_worker(intrinsic_figure, "named_objective_vs_n", list(output), log[0], "", [], input[0])


rule intrinsic_checks:
    input:
        expand(CHECKS, study=intrinsic_check_studies()),
    output:
        "results/tables/intrinsic_checks.csv",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/intrinsic_checks.log",
    run:
        from jobs_intrinsic import concat_checks

        in_worker(concat_checks, list(input), output[0], log[0])


# ------------------------------------------------------------------------- figures
# One rule per figure (fig01_figure ... fig09_figure): INTRINSIC_FIGURE_RULES in targets.smk
# names its file stem, the function of countdp.plots.intrinsic that draws it, its title and
# what it reads (certified artifacts, or one table).
for _key, (_stem, _plot, _title, _mechanisms, _table) in INTRINSIC_FIGURE_RULES.items():

    rule:
        name:
            f"{_key}_figure"
        input:
            designs=design_manifests(_mechanisms),
            table=_table or [],
        output:
            figure_outputs(_stem, _key),
        params:
            mechanisms=_mechanisms,
            plot=_plot,
            title=_title,
            from_table=bool(_table),
        threads: 1
        resources:
            mem_mb=1000,
            runtime=10,
        log:
            f"results/logs/intrinsic/{_key}_figure.log",
        run:
            from jobs_intrinsic import intrinsic_figure

            in_worker(intrinsic_figure, params.plot, list(output), log[0], params.title, params.mechanisms,
                                        input.table if params.from_table else None)
