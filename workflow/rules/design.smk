# One job per designed mechanism (issue 3).  The job runs inside the Snakemake process
# (`run:`), so it pays no interpreter/cvxpy start-up: the library is imported once.
# Path: results/mechanisms/{mechanism}/{objective}/n={n}/alpha={alpha}.json (see common.smk).


rule design_mechanism:
    output:
        "results/mechanisms/{mechanism}/{objective}/n={n}/alpha={alpha}.json",
    log:
        "results/logs/design/{mechanism}/{objective}/n={n}/alpha={alpha}.log",
    params:
        solver=design_solver,
        alpha_exact=lambda wildcards: alpha_exact(wildcards.alpha),
    run:
        from countdp.studies import design_job

        design_job(wildcards, params.solver, output[0], log[0], params.alpha_exact)
