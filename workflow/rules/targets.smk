# Inputs and target lists of every study, and the helpers of the rule files (Snakemake's linter
# wants functions apart from rules).  Paths come from the helpers of common.smk (mechanism_path, ...),
# which is included first.  Figure 9's inputs (its group sizes per mechanism and its objectives) and
# the extension studies' other objectives are in targets_objectives.smk, included next; design.smk,
# included after it, batches needed_mechanism_paths() into sweeps.

# ---------------------------------------------------------------- intrinsic study inputs
def _cfg(study):
    return config[study]


def fig01_l2_search():
    """Unconstrained L2 optima searched for "always reports 2" (every n x alpha)."""
    search = _cfg("fig01")["l2_search"]
    return [
        mechanism_path("LP-none", "L2", n, a)
        for n in n_values(search["n"])
        for a in search["alpha"]
    ]


def fig01_panel_mechanisms():
    c = _cfg("fig01")
    return [mechanism_path("LP-none", p["objective"], p["n"], c["alpha"]) for p in c["panels"]]


def fig02_mechanisms():
    c = _cfg("fig02")
    name = lp_name(c["properties"])
    return [mechanism_path(name, p["objective"], p["n"], c["alpha"]) for p in c["panels"]]


def fig06_mechanisms():
    c = _cfg("fig06")
    return [
        mechanism_path(m, "L0", n, a)
        for m in c["mechanisms"]
        for n in n_values(c["n"])
        for a in c["alpha"]
    ]


def fig07_mechanisms():
    c = _cfg("fig07")
    return [mechanism_path(m, "L0", c["n"], c["alpha"]) for m in c["mechanisms"]]


def fig08_combination_name(combination):
    return lp_name(list(_cfg("fig08").get("base", ["WH", "S"])) + list(combination))


def fig08_mechanisms():
    c = _cfg("fig08")
    names = [fig08_combination_name(comb) for comb in c["combinations"]]
    vs_n = [
        mechanism_path(m, "L0", n, c["vs_n"]["alpha"])
        for m in names + ["GM", "EM"]
        for n in n_values(c["vs_n"]["n"])
    ]
    vs_alpha = [
        mechanism_path(m, "L0", c["vs_alpha"]["n"], a)
        for m in names + ["GM", "EM"]
        for a in c["vs_alpha"]["alpha"]
    ]
    return sorted(set(vs_n + vs_alpha))


# ---------------------------------------------------------------- large n: the record of structural evaluations
STRUCTURAL_RECORD = "results/tables/structural_evaluations.csv"


def structural_evaluations():
    """[figure, mechanism, n, exact alpha] of every evaluation of Figures 9-13 made from a structural form."""
    rows = [["fig09", m, n, a] for m, a, n in fig09_structural()]
    for study in ("fig10", "fig11", "fig12", "fig13"):
        c = config[study]
        ns = [c["n"]] if study == "fig12" else n_values(c["n"])
        for a in c["alpha"] if isinstance(c["alpha"], list) else [c["alpha"]]:
            rows += [[study, m, n, rest[0]] for m, n, path, *rest in mechanism_files(study, ns, a)
                     if path == REPRESENTATION]
    return rows


def structural_targets():
    """The record of the structural evaluations, when the config asks for any (none in the default configs)."""
    return [STRUCTURAL_RECORD] if structural_evaluations() else []


# ---------------------------------------------------------------- intrinsic targets
INTRINSIC_TABLES = [
    "results/tables/fig01_claims.csv",
    "results/tables/fig01_l2_search.csv",
    "results/tables/fig02_claims.csv",
    "results/tables/fig03_gm_exponents.csv",
    "results/tables/fig04_em_exponents.csv",
    "results/tables/fig06_properties_grid.csv",
    "results/tables/fig06_properties.csv",
    "results/tables/fig07_truthful.csv",
    "results/tables/fig08_l0.csv",
    "results/tables/fig09_l0.csv",
    "results/tables/fig09_convergence.csv",
    "results/tables/intrinsic_checks.csv",
]

INTRINSIC_FIGURES = [
    "fig01_unconstrained_heatmaps",
    "fig02_constrained_heatmaps",
    "fig03_gm_structure",
    "fig04_em_structure",
    "fig06_properties",
    "fig07_gm_em_wm_heatmaps",
    "fig08_wh_combinations",
    "fig09_named_mechanisms_l0",
]


def fig02_properties():
    """Figure 2's configured properties, said as the title and the report do (in the paper's order)."""
    chosen = {str(p).upper() for p in _cfg("fig02")["properties"]}
    props = [p for p in PROPERTIES if p in chosen]
    if not props:
        return "BasicDP only"
    if len(props) == len(PROPERTIES):
        return f"all seven properties ({', '.join(props)})"
    return f"propert{'y' if len(props) == 1 else 'ies'} {', '.join(props)}"


# Figures 1 and 2 add the solver and method their designs record (countdp.plots.intrinsic.heatmap_panels).
INTRINSIC_FIGURE_RULES = {  # key: (file stem, countdp.plots.intrinsic function, title, artifacts read, table read)
    "fig01": ("fig01_unconstrained_heatmaps", "heatmap_panels", "Unconstrained LP optima (BasicDP only)",
              fig01_panel_mechanisms(), None),
    "fig02": ("fig02_constrained_heatmaps", "heatmap_panels", f"LP optima with {fig02_properties()}",
              fig02_mechanisms(), None),
    "fig03": ("fig03_gm_structure", "exponent_grid", "GM as powers of α:  x = 1/(1+α),  y = (1−α)/(1+α)", [],
              "results/tables/fig03_gm_exponents.csv"),
    "fig04": ("fig04_em_structure", "exponent_grid", "EM (explicit fair mechanism) as powers of α", [],
              "results/tables/fig04_em_exponents.csv"),
    "fig06": ("fig06_properties", "property_table", "Properties of the named mechanisms", [],
              "results/tables/fig06_properties.csv"),
    "fig07": ("fig07_gm_em_wm_heatmaps", "named_heatmaps", "", fig07_mechanisms(), None),
    "fig08": ("fig08_wh_combinations", "wh_combinations", "", [], "results/tables/fig08_l0.csv"),
    "fig09": ("fig09_named_mechanisms_l0", "named_objective_vs_n", "", [], "results/tables/fig09_l0.csv"),
}


def intrinsic_targets():
    """Figures 1-9's tables and figures (with Figure 9's other objectives, when asked: targets_objectives.smk),
    and (for rule all) the record of Figures 9-13's structural evaluations."""
    figures = [f"results/figures/{name}.{ext}" for name in INTRINSIC_FIGURES for ext in ("pdf", "png")]
    return INTRINSIC_TABLES + figures + fig09_objective_targets() + structural_targets()


# ---------------------------------------------------------------- helpers of the rule files
CHECKS = "results/tables/checks/{study}.csv"
INTRINSIC_STUDIES = ["fig01", "fig02", "fig03_04", "fig06", "fig07", "fig08", "fig09"]
REPORT_CATEGORY = "Intrinsic (Figures 1-9)"
EXTRINSIC_CATEGORY = "Extrinsic (Figures 10-13)"
# One row per figure in the report: "figure" and "shows" labels, and a PNG / vector PDF toggle
# ("PNG" sorts first, so the report shows the PNG by default).
REPORT_FIGURES = {
    "fig01": ("Figure 1", "unconstrained LP optima (heatmaps)"),
    "fig02": ("Figure 2", f"LP optima with {fig02_properties()} (heatmaps)"),
    "fig03": ("Figure 3", "GM as powers of alpha"),
    "fig04": ("Figure 4", "EM as powers of alpha"),
    "fig06": ("Figure 6", "properties of the named mechanisms"),
    "fig07": ("Figure 7", "GM, EM and WM heatmaps"),
    "fig08": ("Figure 8", "L0 of weak honesty + row/column properties"),
    "fig09": ("Figure 9", "L0 of the named mechanisms vs n"),
    "fig10": ("Figure 10", "Adult: error probability L0 vs n"),
    "fig11": ("Figure 11", "Binomial: L0,d vs p"),
    "fig12": ("Figure 12", "Binomial: L0,d vs d"),
    "fig13": ("Figure 13", "Binomial: RMSE vs n"),
}
REPORT_FORMATS = {"png": "PNG", "pdf": "vector PDF"}


def report_figure(path, key, category):
    """One figure file attached to the report: caption workflow/report/{key}.rst, labelled by REPORT_FIGURES."""
    figure, shows = REPORT_FIGURES[key]
    ext = path.rsplit(".", 1)[1]
    labels = {"figure": figure, "shows": shows, "format": REPORT_FORMATS[ext]}
    return report(path, caption=f"../report/{key}.rst", category=category, labels=labels)


def figure_outputs(name, caption):
    """PDF + PNG of one figure, attached to the report with its caption."""
    paths = [f"results/figures/{name}.{ext}" for ext in ("pdf", "png")]
    return [report_figure(p, caption, REPORT_CATEGORY) for p in paths]


# ---------------------------------------------------------------- data (data.smk)
ADULT_TABLE = "results/data/adult_targets.csv"
ADULT_SIDECAR = "results/data/adult_targets.json"


# ---------------------------------------------------------------- evaluations (evaluate.smk)
EXTRINSIC_MECHANISMS = list(FIGURE_MECHANISMS)  # config_check: the validation reads the same default


def p_str(p):
    """The spelling of p in paths: shortest repr of the float (0.5, 0.05)."""
    return repr(float(p))


def extrinsic_mechanisms(study):
    return list(config[study].get("mechanisms", EXTRINSIC_MECHANISMS))


def mechanism_files(study, ns, alpha):
    """Per mechanism and n of a sweep: [mechanism, n, path] of an L0 artifact, or beyond the matrix path
    (countdp.evaluate.routing) [mechanism, n, "structural", exact alpha, code]: the job builds the form
    (evaluate.experiments.load_mechanisms); `code` (DESIGN_CODE_VERSION) reruns it when the forms change."""
    exact = alpha_exact(alpha_str(alpha))
    return [[m, int(n), REPRESENTATION, exact, DESIGN_CODE_VERSION] if ROUTING.structural(m, n, exact, L0_ONLY[study])
            else [m, int(n), mechanism_path(m, "L0", n, alpha)] for m in extrinsic_mechanisms(study) for n in ns]


def mechanism_file_paths(study, ns, alpha):
    """The artifact paths of mechanism_files(study, ns, alpha) (the sweep's input files)."""
    return [row[2] for row in mechanism_files(study, ns, alpha) if row[2] != REPRESENTATION]


def fig10_evaluations():
    c = config["fig10"]
    return [f"results/evaluations/adult/{t}/L0/alpha={alpha_str(c['alpha'])}/summary.csv" for t in c["targets"]]


def fig11_evaluations():
    c = config["fig11"]
    return [
        f"results/evaluations/binomial/fig11/L0d{int(c['d'])}/n={int(n)}/alpha={alpha_str(a)}/summary.csv"
        for a in c["alpha"]
        for n in n_values(c["n"])
    ]


def fig12_evaluations():
    c = config["fig12"]
    return [
        f"results/evaluations/binomial/fig12/n={int(c['n'])}/alpha={alpha_str(a)}/p={p_str(p)}/summary.csv"
        for p in c["p"]
        for a in c["alpha"]
    ]


def fig13_evaluations():
    c = config["fig13"]
    return [
        f"results/evaluations/binomial/fig13/RMSE/alpha={alpha_str(a)}/p={p_str(p)}/summary.csv"
        for a in c["alpha"]
        for p in c["p"]
    ]


# ---------------------------------------------------------------- extrinsic figures (figures_extrinsic.smk)
EXTRINSIC_FIGURES = {
    "fig10": "fig10_adult_L0",
    "fig11": "fig11_binomial_L0d1",
    "fig12": "fig12_binomial_L0d",
    "fig13": "fig13_binomial_RMSE",
}
EXTRINSIC_EVALUATIONS = {
    "fig10": fig10_evaluations,
    "fig11": fig11_evaluations,
    "fig12": fig12_evaluations,
    "fig13": fig13_evaluations,
}
EXTRINSIC_FINDINGS = "results/tables/extrinsic_findings.csv"


def extrinsic_table(fig):
    return f"results/tables/{EXTRINSIC_FIGURES[fig]}.csv"


def extrinsic_figure(fig, ext):
    return f"results/figures/{EXTRINSIC_FIGURES[fig]}.{ext}"


def extrinsic_targets():
    return (
        [extrinsic_table(f) for f in EXTRINSIC_FIGURES]
        + [extrinsic_figure(f, ext) for f in EXTRINSIC_FIGURES for ext in ("pdf", "png")]
        + [ADULT_TABLE, ADULT_SIDECAR, EXTRINSIC_FINDINGS]
    )


# ---------------------------------------------------------------- extensions (extensions.smk)
# Read only config["extensions"] (the `extensions:` block) and, when extensions.prior.adult_targets
# is non-empty, the Adult table.
EXT = config["extensions"]
EXT_CATEGORY = "Beyond the paper"
EXT_STUDIES = ["baselines", "subsets", "minimax", "prior", "objectives", "derivability"]
EXT_FIGURES = [
    "baselines",
    "subsets",
    "minimax",
    "prior",
    "objectives_rmse",
    "objectives_heatmaps",
    "derivability",
]


def ext_alphas(spec):
    """Config alphas (numbers or "p/q") as floats."""
    return [alpha_value(a) for a in spec]


def ext_figure(name, caption=None):
    """PDF + PNG of one figure, attached to the report with its caption."""
    caption = f"../report/{caption or name}.rst"
    paths = [f"results/figures/{name}.{ext}" for ext in ("pdf", "png")]
    return [report(p, caption=caption, category=EXT_CATEGORY, subcategory=name) for p in paths]


def ext_check_path(study):
    return f"results/tables/checks/ext_{study}.csv"


def ext_log(name):
    return f"results/logs/extensions/{name}.log"


def ext_mem_mb(study):
    """Memory (MB) of an extension study's job, what a cluster job asks for: the estimate the config
    check holds the study to at its largest n (the whole LP of the minimax, prior and subsets studies,
    the dearest engine design of the objectives and derivability studies), at least 1,000 MB and at
    most design_memory_mb, else what is available (config_extensions.study_mem_mb)."""
    return config_extensions.study_mem_mb(config, study)


def extensions_targets():
    """Every artifact of the extension studies (for rule all), with their other objectives when asked
    (ext_objective_targets: targets_objectives.smk)."""
    return ["results/tables/ext_checks.csv"] + [
        f"results/figures/ext_{name}.{ext}" for name in EXT_FIGURES for ext in ("pdf", "png")
    ] + ext_objective_targets()


# ---------------------------------------------------------------- companions (companions.smk)
# Read only config["companions"] (the `companions:` block) and the Adult table (ADULT_TABLE, above).
COMP = config["companions"]
COMPANION_CATEGORY = "Companion papers"
COMPANION_STUDIES = ["levels", "universal", "gs_table1", "gm_section3", "congenial"]
COMPANION_FIGURES = ["levels", "universal", "gm_figure1", "gm_figure2", "gm_figure3", "congenial"]


def companion_figure(name, caption=None):
    """PDF + PNG of one companion figure, attached to the report with its caption."""
    caption = f"../report/{caption or name}.rst"
    paths = [f"results/figures/{name}.{ext}" for ext in ("pdf", "png")]
    return [report(p, caption=caption, category=COMPANION_CATEGORY, subcategory=name) for p in paths]


def companion_check_path(study):
    return f"results/tables/checks/companion_{study}.csv"


def companion_log(name):
    return f"results/logs/companions/{name}.log"


def companion_targets():
    """Every artifact of the companion studies (for rule all)."""
    return ["results/tables/companion_checks.csv"] + [
        f"results/figures/companion_{name}.{ext}" for name in COMPANION_FIGURES for ext in ("pdf", "png")
    ]


# ---------------------------------------------------------------- claims (claims.smk)
CHECK_TABLES = [
    "results/tables/intrinsic_checks.csv",
    "results/tables/extrinsic_findings.csv",
    "results/tables/ext_checks.csv",
    "results/tables/companion_checks.csv",
]


def claims_designs():
    """[mechanism, objective slug, n, alpha spelling, path] of every design the theory claims read
    (countdp.claims.designs): the design sweeps make them, the claims job loads them."""
    return [[m, objective_slug(obj), n, alpha_str(a), mechanism_path(m, obj, n, a)] for m, obj, n, a in theory_designs()]


def claims_mechanism_paths():
    return [path for *_, path in claims_designs()]


def claims_targets():
    return ["results/tables/claims.csv", "results/claims.md", "results/claims.html"]
