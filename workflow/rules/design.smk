# Designed mechanisms, batched: one job of design_sweep per sweep, i.e. per (mechanism, objective,
# alpha) over every n the config needs at that triple (design_sweeps: common.smk), instead of one
# job per mechanism (Snakemake's per-job cost dwarfed the millisecond LPs).  Each design still has
# its own certified file, results/mechanisms/{mechanism}/{objective}/n={n}/alpha={alpha}.json
# (mechanism_path) with its arrays in the .npz beside it, read through countdp.services.artifact.
#
# A rule's outputs cannot depend on its wildcards, so the sweep's output is its manifest
# (SWEEP_MANIFEST: the sweep, its solver and each design's JSON and npz), written after every
# design.  Rules that read artifacts name the manifests as inputs (design_manifests) and the
# artifacts in their params.  The n set and the solver are params looked up from the wildcards, and
# DESIGN_CODE_VERSION hashes the packages a design depends on: a change to any of them reruns
# the sweep (Snakemake's params trigger), and only the sweeps whose n set (or solver, for LPs)
# changed.  A deleted artifact (JSON or npz) reruns its sweep too: when the workflow is parsed,
# the manifest that names a missing file is removed (remove_incomplete_manifests: common.smk), and
# rule all asks for every manifest (design_targets), so the sweep runs even if what reads it is
# up to date (Snakemake remakes a missing file that is not a target only for a job that runs).
# The wildcard constraints admit only the mechanisms and alphas of the config's sweeps; any other
# (mechanism, objective, alpha) stops with an error naming it (sweep_ns).  The job
# (workflow/lib/jobs_design.py: countdp.studies.sweeps.design_sweep, then the manifest) runs in one
# of the run's worker processes (in_worker: common.smk), which import the library once.  Resources
# grow with the sweep's largest n.
#
# A rerun sweep designs only what it lacks: each design is saved, and its line written to the log
# and to stderr, as soon as it is done, stamped with DESIGN_CODE_VERSION and the solver setting;
# a design whose file carries the same stamp (and exact alpha) and passes the loader's checks is
# reused.  So a sweep killed part-way (SIGTERM stops it at once: worker_pool.stop_on_signals, in
# onstart), given one more n, or whose manifest was removed for a deleted artifact, redoes only
# the missing designs; a changed design code or solver setting redoes them all.  A design the engine
# refuses (no fast path answered, its general LP above the engine's memory bound) fails the job in one
# line naming the config keys that ask for it (engine_refusal.refusal), not the engine's own options.

INCOMPLETE_SWEEPS = remove_incomplete_manifests()


rule design_sweep:
    output:
        SWEEP_MANIFEST,
    log:
        "results/logs/design/{mechanism}/{objective}/alpha={alpha}.log",
    wildcard_constraints:
        mechanism=sweep_constraint(0),
        objective=r"L0|L1|L2|L0d[0-9]+",
        alpha=sweep_constraint(2),
    params:
        ns=sweep_ns,
        artifacts=sweep_artifacts,
        solver=sweep_solver,
        alpha_exact=sweep_alpha_exact,
        code=DESIGN_CODE_VERSION,
        config_keys=lambda wildcards: config_fit.sweep_keys(config, wildcards.mechanism, wildcards.objective,
                                                            wildcards.alpha),
    threads: 1
    group:
        "designs"  # used only by cluster executors (profiles/slurm); local runs ignore groups
    resources:
        mem_mb=sweep_mem_mb,
        runtime=sweep_runtime,
    run:
        from jobs_design import sweep

        in_worker(sweep, wildcards.mechanism, wildcards.objective, wildcards.alpha, params.ns, params.solver,
                         params.artifacts, log[0], params.alpha_exact, output[0], params.code, params.config_keys)
