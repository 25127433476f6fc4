# Figure 9's inputs (its group sizes, per mechanism where fig09.n_by_mechanism gives them, and its
# objectives) and the other objectives of the extension studies that plot an objective against n
# (extensions.baselines and extensions.minimax): the inputs, outputs and target lists of their
# rules (figures_intrinsic.smk, extensions.smk).  Functions only (Snakemake's linter wants them apart
# from rules); included after targets.smk (_cfg, EXT, CHECKS, ...) and before design.smk, whose
# design sweeps read fig09_mechanisms.
#
# L0 is each study's own objective, with the outputs it always had (results/tables/fig09_l0.csv,
# ext_minimax.csv, ...); each other objective listed (L1, L2) adds its own table, check table and
# figure, spelled with the objective in lower case (fig09_l1.csv, fig09_named_mechanisms_l1.png,
# ext_minimax_l1.csv, ...).  With the default `objectives: [L0]` nothing is added and no rule,
# param or target of the default run changes.


# ---------------------------------------------------------------- Figure 9
def fig09_ns(mechanism):
    """Figure 9's group sizes of one mechanism: its own (fig09.n_by_mechanism), else fig09.n."""
    c = _cfg("fig09")
    return n_values((c.get("n_by_mechanism") or {}).get(mechanism, c["n"]))


def fig09_sizes(by_mechanism=False):
    """Figure 9's group sizes as its table jobs take them: {mechanism: sizes} when ``by_mechanism`` or when
    fig09.n_by_mechanism gives any, else the one list of fig09.n (the default config's param, unchanged)."""
    c = _cfg("fig09")
    if by_mechanism or c.get("n_by_mechanism"):
        return {m: fig09_ns(m) for m in c["mechanisms"]}
    return n_values(c["n"])


CONVERGENCE_MECHANISMS = ("GM", "WM", "WH")  # what Figure 9's convergence check compares


def fig09_mechanisms(objective="L0"):
    """The artifacts of Figure 9 under ``objective``: under L0 every (mechanism, alpha, n) of the matrix path
    (fig09_structural: the rest) and those of the convergence check; under L1 or L2 every point, each a
    design of that objective (the config check keeps them on the matrix path)."""
    c = _cfg("fig09")
    l0 = objective == "L0"
    paths = [
        mechanism_path(m, objective, n, a)
        for m in c["mechanisms"]
        for a in c["alpha"]
        for n in fig09_ns(m)
        if not (l0 and ROUTING.structural(m, n, alpha_exact(alpha_str(a))))
    ]
    check = c.get("convergence_check")
    if check and l0:
        paths += [mechanism_path(m, "L0", check["n"], check["alpha"]) for m in CONVERGENCE_MECHANISMS
                  if not ROUTING.structural(m, check["n"], alpha_exact(alpha_str(check["alpha"])))]
    return sorted(set(paths))


def fig09_structural():
    """[mechanism, exact alpha, n] of Figure 9 (and its convergence check) evaluated from structural forms
    (countdp.evaluate.routing); L0 only."""
    c = _cfg("fig09")
    points = [(m, a, n) for m in c["mechanisms"] for a in c["alpha"] for n in fig09_ns(m)]
    check = c.get("convergence_check")
    if check:
        points += [(m, check["alpha"], check["n"]) for m in CONVERGENCE_MECHANISMS]
    rows = [[m, alpha_exact(alpha_str(a)), int(n)] for m, a, n in points
            if ROUTING.structural(m, n, alpha_exact(alpha_str(a)))]
    return [list(row) for row in dict.fromkeys(tuple(row) for row in rows)]


def fig09_extra_objectives():
    """Figure 9's objectives beyond L0 (fig09.objectives): L1, L2, or none."""
    return [o for o in _cfg("fig09").get("objectives", ["L0"]) if o != "L0"]


def fig09_objective_mechanisms():
    """The artifacts of Figure 9 under its objectives beyond L0 (needed_mechanism_paths: common.smk)."""
    return sorted({path for o in fig09_extra_objectives() for path in fig09_mechanisms(o)})


def fig09_study(objective):
    """The name of Figure 9's study under ``objective`` beyond L0: its table, check table and figure stem."""
    return f"fig09_{objective.lower()}"


def fig09_figure_outputs(objective):
    """PDF + PNG of Figure 9 under ``objective`` beyond L0, attached to the report (one caption for all)."""
    paths = [f"results/figures/fig09_named_mechanisms_{objective.lower()}.{ext}" for ext in ("pdf", "png")]
    shows = f"{objective} of the named mechanisms vs n (beyond the paper)"
    return [report(p, caption="../report/fig09_objective.rst", category=REPORT_CATEGORY,
                   labels={"figure": f"Figure 9 ({objective})", "shows": shows,
                           "format": REPORT_FORMATS[p.rsplit(".", 1)[1]]}) for p in paths]


def fig09_objective_targets():
    """Tables and figures of Figure 9 under its objectives beyond L0 ([] by default)."""
    return [path for o in fig09_extra_objectives()
            for path in (f"results/tables/{fig09_study(o)}.csv",
                         *(f"results/figures/fig09_named_mechanisms_{o.lower()}.{ext}" for ext in ("pdf", "png")))]


def intrinsic_check_studies():
    """The check tables gathered into intrinsic_checks.csv: Figures 1-9's, then Figure 9's other objectives'."""
    return INTRINSIC_STUDIES + [fig09_study(o) for o in fig09_extra_objectives()]


# ---------------------------------------------------------------- extension studies against n
EXT_OBJECTIVE_STUDIES = ("baselines", "minimax")  # the extension studies that plot an objective against n


def ext_extra_objectives(study):
    """The objectives beyond L0 of an extension study of EXT_OBJECTIVE_STUDIES (extensions.{study}.objectives)."""
    return [o for o in EXT[study].get("objectives", ["L0"]) if o != "L0"]


def ext_objective_study(study, objective):
    """The name of an extension study under ``objective`` beyond L0: ext_{name}.csv, its checks and figure."""
    return f"{study}_{objective.lower()}"


def ext_check_studies():
    """The check tables gathered into ext_checks.csv: the studies', then their other objectives'."""
    return EXT_STUDIES + [ext_objective_study(s, o) for s in EXT_OBJECTIVE_STUDIES for o in ext_extra_objectives(s)]


def ext_objective_targets():
    """Tables and figures of the extension studies under their objectives beyond L0 ([] by default)."""
    names = [ext_objective_study(s, o) for s in EXT_OBJECTIVE_STUDIES for o in ext_extra_objectives(s)]
    return [f"results/tables/ext_{name}.csv" for name in names] + [
        f"results/figures/ext_{name}.{ext}" for name in names for ext in ("pdf", "png")]
