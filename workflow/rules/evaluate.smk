# Repeated evaluations of the mechanisms on data: one job per sweep.
#
#   results/evaluations/adult/{target}/L0/alpha={alpha}/{summary,raw}.csv          Figure 10 (vs n)
#   results/evaluations/binomial/fig11/L0d{d}/n={n}/alpha={alpha}/{summary,raw}.csv Figure 11 (vs p)
#   results/evaluations/binomial/fig12/n={n}/alpha={alpha}/p={p}/{summary,raw}.csv  Figure 12 (vs d)
#   results/evaluations/binomial/fig13/RMSE/alpha={alpha}/p={p}/{summary,raw}.csv   Figure 13 (vs n)
#
# Inputs are the manifests of the design sweeps (design_manifests: common.smk) that wrote the
# certified L0 mechanism artifacts (mechanism_path) the jobs read, listed in params.files and
# re-verified with countdp.services.artifact.load_certified.  Group sizes beyond the matrix path
# (countdp.evaluate.routing.ROUTING: GM, EM, UM above 256, and WH as GM there where GM is weakly honest,
# in Figure 10) have no artifact:
# their params.files row says "structural" and the job builds the certified structural form itself
# (milliseconds); STRUCTURAL_RECORD says which form evaluated each of them, and why.
# Seeds: countdp.evaluate.experiments.rng_for(config seed, parameters).
# The helpers (mechanism_files, fig10_evaluations, ...) live in targets.smk.


wildcard_constraints:
    target="young|gender|income",
    p=r"[0-9][0-9.e-]*",
    d=r"[0-9]+",


rule eval_fig10_adult:
    input:
        table=ADULT_TABLE,
        sidecar=ADULT_SIDECAR,
        designs=lambda wc: design_manifests(mechanism_file_paths("fig10", n_values(config["fig10"]["n"]), wc.alpha)),
    output:
        summary="results/evaluations/adult/{target}/L0/alpha={alpha}/summary.csv",
        raw="results/evaluations/adult/{target}/L0/alpha={alpha}/raw.csv",
    params:
        files=lambda wc: mechanism_files("fig10", n_values(config["fig10"]["n"]), wc.alpha),
        ns=n_values(config["fig10"]["n"]),
        repetitions=config["fig10"]["repetitions"],
        seed=config["seed"],
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    log:
        "results/logs/evaluations/adult/{target}/L0/alpha={alpha}.log",
    run:
        from jobs_extrinsic import eval_adult

        in_worker(eval_adult, input.table, input.sidecar, wildcards.target, float(wildcards.alpha), params.files, params.ns,
                              params.repetitions, params.seed, output.summary, output.raw, log[0])


rule eval_fig11_binomial:
    input:
        designs=lambda wc: design_manifests(mechanism_file_paths("fig11", [int(wc.n)], wc.alpha)),
    output:
        summary="results/evaluations/binomial/fig11/L0d{d}/n={n}/alpha={alpha}/summary.csv",
        raw="results/evaluations/binomial/fig11/L0d{d}/n={n}/alpha={alpha}/raw.csv",
    params:
        study="fig11",
        files=lambda wc: mechanism_files("fig11", [int(wc.n)], wc.alpha),
        points=lambda wc: [{"n": int(wc.n), "p": float(p), "alpha": float(wc.alpha)} for p in config["fig11"]["p"]],
        measures=lambda wc: [f"L0d:{int(wc.d)}"],
        repetitions=config["fig11"]["repetitions"],
        population=config["data"].get("population", 10000),
        seed=config["seed"],
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    log:
        "results/logs/evaluations/binomial/fig11/L0d{d}/n={n}/alpha={alpha}.log",
    run:
        from jobs_extrinsic import eval_binomial

        in_worker(eval_binomial, params.study, float(wildcards.alpha), params.files, params.points, params.measures,
                                 params.repetitions, params.population, params.seed, output.summary, output.raw, log[0])


rule eval_fig12_binomial:
    input:
        designs=lambda wc: design_manifests(mechanism_file_paths("fig12", [int(wc.n)], wc.alpha)),
    output:
        summary="results/evaluations/binomial/fig12/n={n}/alpha={alpha}/p={p}/summary.csv",
        raw="results/evaluations/binomial/fig12/n={n}/alpha={alpha}/p={p}/raw.csv",
    params:
        study="fig12",
        files=lambda wc: mechanism_files("fig12", [int(wc.n)], wc.alpha),
        points=lambda wc: [{"n": int(wc.n), "p": float(wc.p), "alpha": float(wc.alpha)}],
        measures=[f"L0d:{int(d)}" for d in config["fig12"]["d"]],
        repetitions=config["fig12"]["repetitions"],
        population=config["data"].get("population", 10000),
        seed=config["seed"],
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    log:
        "results/logs/evaluations/binomial/fig12/n={n}/alpha={alpha}/p={p}.log",
    run:
        from jobs_extrinsic import eval_binomial

        in_worker(eval_binomial, params.study, float(wildcards.alpha), params.files, params.points, params.measures,
                                 params.repetitions, params.population, params.seed, output.summary, output.raw, log[0])


rule eval_fig13_binomial:
    input:
        designs=lambda wc: design_manifests(mechanism_file_paths("fig13", n_values(config["fig13"]["n"]), wc.alpha)),
    output:
        summary="results/evaluations/binomial/fig13/RMSE/alpha={alpha}/p={p}/summary.csv",
        raw="results/evaluations/binomial/fig13/RMSE/alpha={alpha}/p={p}/raw.csv",
    params:
        study="fig13",
        files=lambda wc: mechanism_files("fig13", n_values(config["fig13"]["n"]), wc.alpha),
        points=lambda wc: [
            {"n": int(n), "p": float(wc.p), "alpha": float(wc.alpha)} for n in n_values(config["fig13"]["n"])
        ],
        measures=["RMSE"],
        repetitions=config["fig13"]["repetitions"],
        population=config["data"].get("population", 10000),
        seed=config["seed"],
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    log:
        "results/logs/evaluations/binomial/fig13/RMSE/alpha={alpha}/p={p}.log",
    run:
        from jobs_extrinsic import eval_binomial

        in_worker(eval_binomial, params.study, float(wildcards.alpha), params.files, params.points, params.measures,
                                 params.repetitions, params.population, params.seed, output.summary, output.raw, log[0])


rule structural_record:
    output:
        STRUCTURAL_RECORD,
    params:
        entries=structural_evaluations(),
        code=CODE_VERSION,
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "results/logs/evaluations/structural_record.log",
    run:
        from jobs_extrinsic import structural_record

        in_worker(structural_record, params.entries, output[0], log[0])
