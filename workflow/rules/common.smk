# Config validation, path conventions, target lists and every helper function of the rule
# files (Snakemake's linter wants functions apart from rules: the other .smk files hold only
# rules, wildcard constraints and a few constants).
#
# Path conventions (other .smk files use the helpers below, never hand-built strings).
#   results/mechanisms/{mechanism}/{objective}/n={n}/alpha={alpha}.json
#   - mechanism: GM, EM, UM (closed forms), WM (LP: WH+RM+CM+S), WH (LP: WH+S), or
#     LP-{props} with props '+'-joined in the canonical order RH,RM,CH,CM,F,WH,S
#     (LP-none = BasicDP only).
#   - objective: L0, L1, L2, or L0d{d} (the file-name-safe spelling of "L0d:d").
#   - alpha: Python's shortest repr of the float; the config may give "p/q" fractions.  The
#     artifact records the exact value the config gave ("10/11"; a decimal 0.91 is 91/100).

import hashlib
import math
import pathlib
import re
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

# workflow/lib: the workflow's own modules (config checks, and the jobs the rules' `run:` blocks call)
sys.path.insert(0, str(pathlib.Path(workflow.basedir) / "workflow" / "lib"))

# Parsing the Snakefile imports only light modules (standard library, yaml): a no-op rerun stays fast.
from config_check import ConfigError, check_config
from countdp.claims.designs import theory_designs
from countdp.privacy.alpha import alpha_text, exact_alphas_in
from countdp.studies.naming import PROPERTIES, alpha_spelling, lp_name, number_or_fraction, objective_slug


# Validation runs while the Snakefile is parsed, so a bad value stops `snakemake` (dry runs
# included) before any job: one line per bad key, naming the key and the allowed values
# (workflow/lib/config_check.py: the schema plus alpha fractions in (0, 1) and non-empty ranges).
# Snakemake's own validate() then only fills in the schema's defaults.
try:
    check_config(config, workflow.source_path("../schemas/config.schema.yaml"))
except ConfigError as error:
    raise WorkflowError(str(error)) from None
validate(config, schema="../schemas/config.schema.yaml")
try:
    EXACT_ALPHAS = exact_alphas_in(config)  # path spelling of alpha -> the exact value the config gave
except ValueError as error:
    raise WorkflowError(f"config: {error}") from None


# Resuming after a hard kill (SIGKILL, power loss): a job killed inside countdp.mechanisms.artifact.atomic_path
# leaves its temporary file (".{name}.XXXXXXXX{suffix}", next to the output) behind.  It is
# never taken for an output, and the run that starts next removes it (the lock on the working
# directory means no other run is writing there, unless it was started with --nolock).
ATOMIC_TEMP_RE = r"\.(?P<name>.+)\.[a-z0-9_]{8}(?P<suffix>\.[^./]*)?"


def remove_stray_temp_files(root="results"):
    import pathlib
    import re

    removed = []
    for path in pathlib.Path(root).rglob(".*"):
        match = re.fullmatch(ATOMIC_TEMP_RE, path.name)
        if match and path.is_file() and pathlib.Path(match["name"]).suffix == (match["suffix"] or ""):
            path.unlink()
            removed.append(str(path))
    return removed


onstart:
    stray = remove_stray_temp_files()
    if stray:
        print(f"removed {len(stray)} temporary file(s) left by an interrupted run: {stray[:5]}")


NAMED_MECHANISMS = ("GM", "EM", "UM", "WM", "WH")
_PROP_RE = "(?:" + "|".join(PROPERTIES) + ")"
_MECHANISM_RE = rf"GM|EM|UM|WM|WH|LP-none|LP-{_PROP_RE}(?:\+{_PROP_RE})*"


wildcard_constraints:
    mechanism=_MECHANISM_RE,
    objective=r"L0|L1|L2|L0d[0-9]+",
    n=r"[1-9][0-9]*",
    alpha=r"0\.[0-9]*[1-9]|[1-9](?:\.[0-9]+)?e-[0-9]+",


def alpha_value(alpha):
    """A config alpha (number or "p/q" string) as a float."""
    return number_or_fraction(alpha)


def alpha_str(alpha):
    """The spelling of alpha in artifact paths: shortest repr of the float."""
    return alpha_spelling(alpha)


def alpha_exact(path_alpha):
    """The exact alpha ("p/q") the config gave for an artifact path's alpha spelling."""
    exact = EXACT_ALPHAS.get(path_alpha)
    return alpha_text(exact) if exact is not None else path_alpha


def n_values(spec):
    """An n range ({from, to, step}) or explicit list as a sorted list of ints."""
    if isinstance(spec, dict):
        return list(range(int(spec["from"]), int(spec["to"]) + 1, int(spec.get("step", 1))))
    return sorted({int(n) for n in spec})


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


INTRINSIC_FIGURE_RULES = {  # key: (file stem, countdp.plots.intrinsic function, title, artifacts read, table read)
    "fig01": ("fig01_unconstrained_heatmaps", "heatmap_panels",
              "Unconstrained LP optima (BasicDP only, HiGHS simplex)", fig01_panel_mechanisms(), None),
    "fig02": ("fig02_constrained_heatmaps", "heatmap_panels",
              "LP optima with all seven properties (RH, RM, CH, CM, F, WH, S)", fig02_mechanisms(), None),
    "fig03": ("fig03_gm_structure", "exponent_grid", "GM as powers of α:  x = 1/(1+α),  y = (1−α)/(1+α)", [],
              "results/tables/fig03_gm_exponents.csv"),
    "fig04": ("fig04_em_structure", "exponent_grid", "EM (explicit fair mechanism) as powers of α", [],
              "results/tables/fig04_em_exponents.csv"),
    "fig06": ("fig06_properties", "property_table", "Properties of the named mechanisms", [],
              "results/tables/fig06_properties.csv"),
    "fig07": ("fig07_gm_em_wm_heatmaps", "named_heatmaps", "", fig07_mechanisms(), None),
    "fig08": ("fig08_wh_combinations", "wh_combinations", "", [], "results/tables/fig08_l0.csv"),
    "fig09": ("fig09_named_mechanisms_l0", "named_l0_vs_n", "", [], "results/tables/fig09_l0.csv"),
}


def intrinsic_targets():
    figures = [f"results/figures/{name}.{ext}" for name in INTRINSIC_FIGURES for ext in ("pdf", "png")]
    return INTRINSIC_TABLES + figures


# ---------------------------------------------------------------- helpers of the rule files
CHECKS = "results/tables/checks/{study}.csv"
INTRINSIC_STUDIES = ["fig01", "fig02", "fig03_04", "fig06", "fig07", "fig08", "fig09"]
REPORT_CATEGORY = "Intrinsic (Figures 1-9)"
EXTRINSIC_CATEGORY = "Extrinsic (Figures 10-13)"
# One row per figure in the report: "figure" and "shows" labels, and a PNG / vector PDF toggle
# ("PNG" sorts first, so the report shows the PNG by default).
REPORT_FIGURES = {
    "fig01": ("Figure 1", "unconstrained LP optima (heatmaps)"),
    "fig02": ("Figure 2", "LP optima with all seven properties (heatmaps)"),
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
EXTRINSIC_MECHANISMS = ["GM", "WM", "EM", "UM"]


def p_str(p):
    """The spelling of p in paths: shortest repr of the float (0.5, 0.05)."""
    return repr(float(p))


def extrinsic_mechanisms(study):
    return list(config[study].get("mechanisms", EXTRINSIC_MECHANISMS))


def mechanism_files(study, ns, alpha):
    """[mechanism, n, path] for every L0 mechanism artifact a sweep reads."""
    return [[m, int(n), mechanism_path(m, "L0", n, alpha)] for m in extrinsic_mechanisms(study) for n in ns]


def mechanism_file_paths(study, ns, alpha):
    """The paths of mechanism_files(study, ns, alpha) (the sweep's input files)."""
    return [path for _, _, path in mechanism_files(study, ns, alpha)]


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


def extensions_targets():
    """Every artifact of the extension studies (for rule all)."""
    return ["results/tables/ext_checks.csv"] + [
        f"results/figures/ext_{name}.{ext}" for name in EXT_FIGURES for ext in ("pdf", "png")
    ]


# ---------------------------------------------------------------- design sweeps (design.smk)
# Every mechanism artifact the config needs, batched into sweeps: one job per (mechanism,
# objective, alpha) over every n the studies ask for at that triple.  Each artifact keeps its
# own file (mechanism_path), and each file belongs to exactly one sweep.
_ARTIFACT_RE = r"results/mechanisms/(?P<mechanism>[^/]+)/(?P<objective>[^/]+)/n=(?P<n>\d+)/alpha=(?P<alpha>[^/]+)\.json"


def needed_mechanism_paths():
    """Every mechanism artifact a table, figure or evaluation of the config reads."""
    intrinsic = (fig01_l2_search() + fig01_panel_mechanisms() + fig02_mechanisms() + fig06_mechanisms()
                 + fig07_mechanisms() + fig08_mechanisms() + fig09_mechanisms())
    extrinsic = mechanism_file_paths("fig10", n_values(config["fig10"]["n"]), config["fig10"]["alpha"])
    for a in config["fig11"]["alpha"]:
        extrinsic += mechanism_file_paths("fig11", n_values(config["fig11"]["n"]), a)
    for a in config["fig12"]["alpha"]:
        extrinsic += mechanism_file_paths("fig12", [config["fig12"]["n"]], a)
    for a in config["fig13"]["alpha"]:
        extrinsic += mechanism_file_paths("fig13", n_values(config["fig13"]["n"]), a)
    return sorted(set(intrinsic + extrinsic + claims_mechanism_paths()))


def design_sweeps():
    """{(mechanism, objective slug, alpha spelling): sorted n} over needed_mechanism_paths()."""
    sweeps = {}
    for path in needed_mechanism_paths():
        m = re.fullmatch(_ARTIFACT_RE, path)
        sweeps.setdefault((m["mechanism"], m["objective"], m["alpha"]), set()).add(int(m["n"]))
    return {key: sorted(ns) for key, ns in sorted(sweeps.items())}


def design_sweep_rule(mechanism, objective, alpha):
    """Rule name of one sweep, e.g. design_WM_L0_alpha_0_91 (rule names are identifiers)."""
    slug = re.sub(r"\W", "_", f"{mechanism}_{objective}_alpha_{alpha}")
    return f"design_{slug}"


def design_solver(mechanism):
    """Closed forms do not depend on the solver, so changing it reruns only LP designs."""
    if mechanism in ("GM", "EM", "UM"):
        return "closed-form"
    return f"{config['solver']['name']}/{config['solver']['method']}"


def design_mem_mb(mechanism, max_n):
    """Memory (MB) of a sweep: an LP over (n+1)^2 variables, measured 236 MB at n = 256 and
    598 MB at n = 512 (README, Performance); a closed form with its release weights about 250
    bytes per entry (730 MB at n = 2048)."""
    if mechanism in ("GM", "EM", "UM"):
        return 500 + (max_n + 1) ** 2 // 4000
    return 500 + (max_n + 1) ** 2 // 250


def design_runtime(mechanism, ns):
    """Wall-clock minutes of a sweep: 5 for start-up, plus ten times the expected solve times,
    0.75 s * (n/128)^3 per LP (measured 0.75 s at n = 128, 6.2 s at 256, 42.5 s at 512: README,
    Performance); closed forms take milliseconds."""
    if mechanism in ("GM", "EM", "UM"):
        return 5
    return 5 + math.ceil(10 * sum(0.75 * (n / 128) ** 3 for n in ns) / 60)


# ---------------------------------------------------------------- code version
def code_version():
    """SHA-256 of the library's sources (src/countdp/**/*.py): a param of the design and claims
    jobs, so a library change reruns them (Snakemake's rerun triggers see only params, inputs
    and the `run:` block itself).  Hashing ~50 small files takes milliseconds."""
    root = pathlib.Path(workflow.basedir) / "src" / "countdp"
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


CODE_VERSION = code_version()


# ---------------------------------------------------------------- claims (claims.smk)
CHECK_TABLES = [
    "results/tables/intrinsic_checks.csv",
    "results/tables/extrinsic_findings.csv",
    "results/tables/ext_checks.csv",
]


def claims_designs():
    """[mechanism, objective slug, n, alpha spelling, path] of every design the theory claims read
    (countdp.claims.designs): the design sweeps make them, the claims job loads them."""
    return [[m, objective_slug(obj), n, alpha_str(a), mechanism_path(m, obj, n, a)] for m, obj, n, a in theory_designs()]


def claims_mechanism_paths():
    return [path for *_, path in claims_designs()]


def claims_targets():
    return ["results/tables/claims.csv", "results/claims.md", "results/claims.html"]
