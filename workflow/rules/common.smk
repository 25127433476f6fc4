# Config validation and target lists for the intrinsic studies (issue 3).
#
# Path conventions (other .smk files use the helpers below, never hand-built strings).
#   results/mechanisms/{mechanism}/{objective}/n={n}/alpha={alpha}.json
#   - mechanism: GM, EM, UM (closed forms), WM (LP: WH+RM+CM+S), WH (LP: WH+S), or
#     LP-{props} with props '+'-joined in the canonical order RH,RM,CH,CM,F,WH,S
#     (LP-none = BasicDP only).
#   - objective: L0, L1, L2, or L0d{d} (the file-name-safe spelling of "L0d:d").
#   - alpha: Python's shortest repr of the float; the config may give "p/q" fractions.
import fractions

from snakemake.utils import validate


validate(config, schema="../schemas/config.schema.yaml")


PROPERTY_ORDER = ("RH", "RM", "CH", "CM", "F", "WH", "S")
NAMED_MECHANISMS = ("GM", "EM", "UM", "WM", "WH")
_PROP_RE = "(?:RH|RM|CH|CM|F|WH|S)"
_MECHANISM_RE = rf"GM|EM|UM|WM|WH|LP-none|LP-{_PROP_RE}(?:\+{_PROP_RE})*"


wildcard_constraints:
    mechanism=_MECHANISM_RE,
    objective=r"L0|L1|L2|L0d[0-9]+",
    n=r"[1-9][0-9]*",
    alpha=r"0\.[0-9]*[1-9]|[1-9](?:\.[0-9]+)?e-[0-9]+",


def alpha_value(alpha):
    """A config alpha (number or "p/q" string) as a float."""
    if isinstance(alpha, str):
        return float(fractions.Fraction(alpha.replace(" ", "")))
    return float(alpha)


def alpha_str(alpha):
    """The spelling of alpha in artifact paths: shortest repr of the float."""
    return repr(alpha_value(alpha))


def n_values(spec):
    """An n range ({from, to, step}) or explicit list as a sorted list of ints."""
    if isinstance(spec, dict):
        return list(range(int(spec["from"]), int(spec["to"]) + 1, int(spec.get("step", 1))))
    return sorted({int(n) for n in spec})


def objective_slug(objective):
    """File-name-safe objective: "L0d:1" -> "L0d1"."""
    return str(objective).replace(":", "")


def lp_name(properties):
    """LP-{props} in canonical order, or LP-none for BasicDP only."""
    props = set(properties)
    unknown = props - set(PROPERTY_ORDER)
    if unknown:
        raise ValueError(f"unknown properties {sorted(unknown)}")
    return "LP-" + ("+".join(p for p in PROPERTY_ORDER if p in props) or "none")


def mechanism_path(mechanism, objective, n, alpha):
    """Path of one designed mechanism artifact (the only place the pattern is spelled)."""
    return (
        f"results/mechanisms/{mechanism}/{objective_slug(objective)}/"
        f"n={int(n)}/alpha={alpha_str(alpha)}.json"
    )


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


def fig09_mechanisms():
    c = _cfg("fig09")
    paths = [
        mechanism_path(m, "L0", n, a)
        for m in c["mechanisms"]
        for a in c["alpha"]
        for n in n_values(c["n"])
    ]
    check = c.get("convergence_check")
    if check:
        paths += [mechanism_path(m, "L0", check["n"], check["alpha"]) for m in ("GM", "WM", "WH")]
    return sorted(set(paths))


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


def intrinsic_targets():
    figures = [f"results/figures/{name}.{ext}" for name in INTRINSIC_FIGURES for ext in ("pdf", "png")]
    return INTRINSIC_TABLES + figures


# ---------------------------------------------------------------- helpers of the rule files
CHECKS = "results/tables/checks/{study}.csv"
INTRINSIC_STUDIES = ["fig01", "fig02", "fig03_04", "fig06", "fig07", "fig08", "fig09"]
REPORT_CATEGORY = "Intrinsic figures"


def design_solver(wildcards):
    """Closed forms do not depend on the solver, so changing it reruns only LP designs."""
    if wildcards.mechanism in ("GM", "EM", "UM"):
        return "closed-form"
    return f"{config['solver']['name']}/{config['solver']['method']}"


def figure_outputs(name, caption):
    """PDF + PNG of one figure, attached to the report with its caption."""
    paths = [f"results/figures/{name}.{ext}" for ext in ("pdf", "png")]
    caption = f"../report/{caption}.rst"
    sub = name.split("_")[0]
    return [report(p, caption=caption, category=REPORT_CATEGORY, subcategory=sub) for p in paths]
