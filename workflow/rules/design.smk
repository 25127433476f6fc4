# Designed mechanisms, batched: one job per sweep, i.e. per (mechanism, objective, alpha) over
# every n the config needs at that triple (design_sweeps: common.smk), instead of one job per
# mechanism (Snakemake's per-job cost dwarfed the millisecond LPs).  Each design still has its
# own cached file, results/mechanisms/{mechanism}/{objective}/n={n}/alpha={alpha}.json
# (mechanism_path) with its arrays in the .npz beside it (mechanism_arrays_path: an output too, so
# Snakemake reruns a sweep whose npz went missing and removes both when a job fails), so
# downstream rules read single artifacts (the JSON names its npz), and a config change reruns
# only the sweeps whose n set (or solver, for LPs) changed.  The jobs' calls run in the run's
# worker processes (in_worker: common.smk), which import the library once.  Resources grow with
# the sweep's largest n.


for _key, _ns in design_sweeps().items():
    _mechanism, _objective, _alpha = _key

    rule:
        name:
            design_sweep_rule(*_key)
        output:
            json=[mechanism_path(_mechanism, _objective, n, _alpha) for n in _ns],
            arrays=[mechanism_arrays_path(_mechanism, _objective, n, _alpha) for n in _ns],
        log:
            f"results/logs/design/{_mechanism}/{_objective}/alpha={_alpha}.log",
        params:
            mechanism=_mechanism,
            objective=_objective,
            alpha=_alpha,
            alpha_exact=alpha_exact(_alpha),
            ns=_ns,
            solver=design_solver(_mechanism),
            code=CODE_VERSION,
        threads: 1
        group:
            "designs"  # used only by cluster executors (profiles/slurm); local runs ignore groups
        resources:
            mem_mb=design_mem_mb(_mechanism, max(_ns)),
            runtime=design_runtime(_mechanism, _ns),
        run:
            from countdp.studies.sweeps import design_sweep

            in_worker(design_sweep, params.mechanism, params.objective, params.alpha, params.ns, params.solver,
                                    list(output.json), log[0], params.alpha_exact)

    DESIGNED.update((str(f), f) for f in getattr(rules, design_sweep_rule(*_key)).output.json)
