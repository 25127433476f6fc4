# Intrinsic studies: tables from certified mechanism artifacts, then figures from
# the tables (and, for heatmaps, from the artifacts).  No rule here designs a mechanism.
# Table rules run inside the Snakemake process (numpy/pandas only); figure rules run a
# script (matplotlib/seaborn in its own interpreter).


# ------------------------------------------------------------------------- tables
rule fig01_tables:
    input:
        panels=fig01_panel_mechanisms(),
        search=fig01_l2_search(),
    output:
        claims="results/tables/fig01_claims.csv",
        search="results/tables/fig01_l2_search.csv",
        checks=CHECKS.format(study="fig01"),
    params:
        alpha=alpha_value(config["fig01"]["alpha"]),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig01_tables.log",
    run:
        from countdp.studies.intrinsic import build_tables

        build_tables("fig01", input, output, params, log[0])


rule fig02_tables:
    input:
        fig02_mechanisms(),
    output:
        claims="results/tables/fig02_claims.csv",
        checks=CHECKS.format(study="fig02"),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig02_tables.log",
    run:
        from countdp.studies.intrinsic import build_tables

        build_tables("fig02", input, output, params, log[0])


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
        from countdp.studies.intrinsic import build_tables

        build_tables("fig03_04", input, output, params, log[0])


rule fig06_tables:
    input:
        fig06_mechanisms(),
    output:
        grid="results/tables/fig06_properties_grid.csv",
        summary="results/tables/fig06_properties.csv",
        checks=CHECKS.format(study="fig06"),
    params:
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
        from countdp.studies.intrinsic import build_tables

        build_tables("fig06", input, output, params, log[0])


rule fig07_tables:
    input:
        fig07_mechanisms(),
    output:
        truthful="results/tables/fig07_truthful.csv",
        checks=CHECKS.format(study="fig07"),
    params:
        paper=config["fig07"].get("paper_truthful", {}),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig07_tables.log",
    run:
        from countdp.studies.intrinsic import build_tables

        build_tables("fig07", input, output, params, log[0])


rule fig08_tables:
    input:
        fig08_mechanisms(),
    output:
        table="results/tables/fig08_l0.csv",
        checks=CHECKS.format(study="fig08"),
    params:
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
        from countdp.studies.intrinsic import build_tables

        build_tables("fig08", input, output, params, log[0])


rule fig09_tables:
    input:
        fig09_mechanisms(),
    output:
        table="results/tables/fig09_l0.csv",
        convergence="results/tables/fig09_convergence.csv",
        checks=CHECKS.format(study="fig09"),
    params:
        mechanisms=config["fig09"]["mechanisms"],
        alphas=[alpha_value(a) for a in config["fig09"]["alpha"]],
        ns=n_values(config["fig09"]["n"]),
        check_alpha=alpha_value(config["fig09"]["convergence_check"]["alpha"]),
        check_n=config["fig09"]["convergence_check"]["n"],
        tolerance=config["fig09"]["convergence_tolerance"],
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig09_tables.log",
    run:
        from countdp.studies.intrinsic import build_tables

        build_tables("fig09", input, output, params, log[0])


rule intrinsic_checks:
    input:
        expand(CHECKS, study=INTRINSIC_STUDIES),
    output:
        "results/tables/intrinsic_checks.csv",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/intrinsic_checks.log",
    run:
        from countdp.studies.intrinsic import build_tables

        build_tables("intrinsic_checks", input, output, params, log[0])


# ------------------------------------------------------------------------- figures
rule fig01_figure:
    input:
        mechanisms=fig01_panel_mechanisms(),
    output:
        figure_outputs("fig01_unconstrained_heatmaps", "fig01"),
    params:
        plot="heatmap_panels",
        title="Unconstrained LP optima (BasicDP only, HiGHS simplex)",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig01_figure.log",
    script:
        "../scripts/plot_intrinsic.py"


rule fig02_figure:
    input:
        mechanisms=fig02_mechanisms(),
    output:
        figure_outputs("fig02_constrained_heatmaps", "fig02"),
    params:
        plot="heatmap_panels",
        title="LP optima with all seven properties (RH, RM, CH, CM, F, WH, S)",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig02_figure.log",
    script:
        "../scripts/plot_intrinsic.py"


rule fig03_figure:
    input:
        table="results/tables/fig03_gm_exponents.csv",
    output:
        figure_outputs("fig03_gm_structure", "fig03"),
    params:
        plot="exponent_grid",
        title="GM as powers of α:  x = 1/(1+α),  y = (1−α)/(1+α)",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig03_figure.log",
    script:
        "../scripts/plot_intrinsic.py"


rule fig04_figure:
    input:
        table="results/tables/fig04_em_exponents.csv",
    output:
        figure_outputs("fig04_em_structure", "fig04"),
    params:
        plot="exponent_grid",
        title="EM (explicit fair mechanism) as powers of α",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig04_figure.log",
    script:
        "../scripts/plot_intrinsic.py"


rule fig06_figure:
    input:
        table="results/tables/fig06_properties.csv",
    output:
        figure_outputs("fig06_properties", "fig06"),
    params:
        plot="property_table",
        title="Properties of the named mechanisms",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig06_figure.log",
    script:
        "../scripts/plot_intrinsic.py"


rule fig07_figure:
    input:
        mechanisms=fig07_mechanisms(),
    output:
        figure_outputs("fig07_gm_em_wm_heatmaps", "fig07"),
    params:
        plot="named_heatmaps",
        title="",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig07_figure.log",
    script:
        "../scripts/plot_intrinsic.py"


rule fig08_figure:
    input:
        table="results/tables/fig08_l0.csv",
    output:
        figure_outputs("fig08_wh_combinations", "fig08"),
    params:
        plot="wh_combinations",
        title="",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig08_figure.log",
    script:
        "../scripts/plot_intrinsic.py"


rule fig09_figure:
    input:
        table="results/tables/fig09_l0.csv",
    output:
        figure_outputs("fig09_named_mechanisms_l0", "fig09"),
    params:
        plot="named_l0_vs_n",
        title="",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/intrinsic/fig09_figure.log",
    script:
        "../scripts/plot_intrinsic.py"
