# Beyond the paper (issue 8): baselines, Figure 5 verified over all 128 property subsets,
# minimax designs, prior-aware designs, L1/L2 designs, Gupte-Sundararajan derivability.
#
# Self-contained: reads only config["extensions"] (the `extensions:` block of the config) and, when
# extensions.prior.adult_targets is non-empty, the Adult table of data.smk.  Every study
# is exact (LPs / closed forms), so each rule is one job; tables go to
# results/tables/ext_*.csv, checks to results/tables/checks/ext_*.csv, figures to
# results/figures/ext_*.{pdf,png}.  Hook: `include: "workflow/rules/extensions.smk"` in the
# Snakefile and add `extensions_targets()` to rule all.
import fractions as _ext_fractions

EXT = config["extensions"]
EXT_CATEGORY = "Beyond the paper"
EXT_ADULT_TABLE = globals().get("ADULT_TABLE", "results/data/adult_targets.csv")
EXT_ADULT_SIDECAR = globals().get("ADULT_SIDECAR", "results/data/adult_targets.json")
EXT_STUDIES = ["baselines", "subsets", "minimax", "prior", "objectives", "derivability"]


def ext_alpha(alpha):
    """A config alpha (number or "p/q") as a float."""
    if isinstance(alpha, str):
        return float(_ext_fractions.Fraction(alpha.replace(" ", "")))
    return float(alpha)


def ext_alphas(spec):
    return [ext_alpha(a) for a in spec]


def ext_ns(spec):
    if isinstance(spec, dict):
        return list(range(int(spec["from"]), int(spec["to"]) + 1, int(spec.get("step", 1))))
    return sorted({int(n) for n in spec})


def ext_figure(name, caption=None):
    """PDF + PNG of one figure, attached to the report with its caption."""
    caption = f"../report/{caption or name}.rst"
    paths = [f"results/figures/{name}.{ext}" for ext in ("pdf", "png")]
    return [report(p, caption=caption, category=EXT_CATEGORY, subcategory=name) for p in paths]


def ext_check_path(study):
    return f"results/tables/checks/ext_{study}.csv"


def extensions_targets():
    """Every artifact of the extension studies (for rule all)."""
    return ["results/tables/ext_checks.csv"] + [
        f"results/figures/ext_{name}.{ext}"
        for name in ("baselines", "subsets", "minimax", "prior", "objectives_rmse", "objectives_heatmaps",
                     "derivability")
        for ext in ("pdf", "png")
    ]


def _ext_write(frame, path):
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)


rule ext_baselines:
    output:
        table="results/tables/ext_baselines.csv",
        checks=ext_check_path("baselines"),
        figure=ext_figure("ext_baselines"),
    params:
        ns=ext_ns(EXT["baselines"]["n"]),
        alphas=ext_alphas(EXT["baselines"]["alpha"]),
    run:
        from countdp import extensions as ex

        table = ex.baseline_table(params.ns, params.alphas)
        _ext_write(table, output.table)
        _ext_write(ex.baseline_checks(table), output.checks)
        ex.plot_baselines(table, output.figure)


rule ext_subsets:
    output:
        table="results/tables/ext_subsets.csv",
        summary="results/tables/ext_subsets_summary.csv",
        checks=ext_check_path("subsets"),
        figure=ext_figure("ext_subsets"),
    params:
        ns=ext_ns(EXT["subsets"]["n"]),
        alphas=ext_alphas(EXT["subsets"]["alpha"]),
    run:
        from countdp import extensions as ex

        detail = ex.subset_map(params.ns, params.alphas)
        summary = ex.subset_summary(detail)
        _ext_write(detail, output.table)
        _ext_write(summary, output.summary)
        _ext_write(ex.subset_checks(detail, summary), output.checks)
        ex.plot_subsets(detail, summary, output.figure)


rule ext_minimax:
    output:
        table="results/tables/ext_minimax.csv",
        checks=ext_check_path("minimax"),
        figure=ext_figure("ext_minimax"),
    params:
        ns=ext_ns(EXT["minimax"]["n"]),
        alphas=ext_alphas(EXT["minimax"]["alpha"]),
    run:
        from countdp import extensions as ex

        table = ex.minimax_study(params.ns, params.alphas)
        _ext_write(table, output.table)
        _ext_write(ex.minimax_checks(table), output.checks)
        ex.plot_minimax(table, output.figure)


rule ext_prior:
    input:
        adult=[EXT_ADULT_TABLE, EXT_ADULT_SIDECAR] if EXT["prior"].get("adult_targets") else [],
    output:
        table="results/tables/ext_prior.csv",
        gains="results/tables/ext_prior_gains.csv",
        checks=ext_check_path("prior"),
        figure=ext_figure("ext_prior"),
    params:
        cfg=EXT["prior"],
        seed=EXT.get("seed", 0),
        solver=EXT.get("solver", {}).get("name", "HIGHS"),
    run:
        import numpy as np

        from countdp import extensions as ex

        cfg = params.cfg
        n, alpha = int(cfg["n"]), ext_alpha(cfg["alpha"])
        dists = ex.binomial_distributions(n, cfg.get("binomial_p", []))
        targets = cfg.get("adult_targets") or []
        if targets:
            from countdp.data import empirical_distribution, group_counts, read_adult_table

            adult = read_adult_table(input.adult[0], input.adult[1])
            rng = np.random.default_rng([int(params.seed), n])
            for target in targets:
                bits = adult[target].to_numpy()
                counts = np.concatenate(
                    [group_counts(bits, n, rng) for _ in range(int(cfg.get("adult_permutations", 20)))]
                )
                dists[f"Adult {target}"] = empirical_distribution(counts, n)
        table, gains = ex.prior_study(n, alpha, dists, cfg.get("objectives", ["L0", "L0d:1"]),
                                      solver=params.solver)
        _ext_write(table, output.table)
        _ext_write(gains, output.gains)
        _ext_write(ex.prior_checks(gains), output.checks)
        ex.plot_prior(table, output.figure)


rule ext_objectives:
    output:
        table="results/tables/ext_objectives.csv",
        matrices="results/tables/ext_objectives_matrices.csv",
        checks=ext_check_path("objectives"),
        rmse=ext_figure("ext_objectives_rmse"),
        heatmaps=ext_figure("ext_objectives_heatmaps"),
    params:
        cfg=EXT["objectives"],
        solver=EXT.get("solver", {}),
    run:
        from countdp import extensions as ex

        cfg = params.cfg
        n, alpha = int(cfg["n"]), ext_alpha(cfg["alpha"])
        table, mats = ex.objective_study(n, alpha, cfg["p"], solver=params.solver.get("name", "HIGHS"),
                                         method=params.solver.get("method"))
        frame = ex.matrices_frame(mats, n, alpha)
        _ext_write(table, output.table)
        _ext_write(frame, output.matrices)
        _ext_write(ex.objective_checks(table), output.checks)
        ex.plot_objectives(table, output.rmse)
        ex.plot_objective_heatmaps(frame, output.heatmaps, sets=cfg.get("heatmap_sets"))


rule ext_derivability:
    output:
        table="results/tables/ext_derivability.csv",
        summary="results/tables/ext_derivability_summary.csv",
        checks=ext_check_path("derivability"),
        figure=ext_figure("ext_derivability"),
    params:
        ns=ext_ns(EXT["derivability"]["n"]),
        alphas=ext_alphas(EXT["derivability"]["alpha"]),
    run:
        from countdp import extensions as ex

        table = ex.derivability_table(params.ns, params.alphas)
        summary = ex.derivability_summary(table)
        _ext_write(table, output.table)
        _ext_write(summary, output.summary)
        _ext_write(ex.derivability_checks(summary), output.checks)
        ex.plot_derivability(table, output.figure)


rule ext_checks:
    input:
        [ext_check_path(s) for s in EXT_STUDIES],
    output:
        "results/tables/ext_checks.csv",
    run:
        import pandas as pd

        _ext_write(pd.concat([pd.read_csv(p) for p in input], ignore_index=True), output[0])


rule ext_all:
    input:
        extensions_targets(),
