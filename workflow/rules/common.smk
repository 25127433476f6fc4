# Config validation, path conventions and their helpers, the design sweeps and the code versions.
# Target lists and the other helpers of the rule files are in targets.smk (Snakemake's linter wants
# functions apart from rules: the other .smk files hold only rules, wildcard constraints and a
# few constants).
#
# Path conventions (other .smk files use the helpers below, never hand-built strings).
#   results/mechanisms/{mechanism}/{objective}/n={n}/alpha={alpha}.json, with its arrays (matrix and
#   release weights) in alpha={alpha}.npz beside it; readers name only the JSON.
#   - mechanism: GM, EM, UM (closed forms), WM (LP: WH+RM+CM+S), WH (LP: WH+S), or
#     LP-{props} with props '+'-joined in the canonical order RH,RM,CH,CM,F,WH,S
#     (LP-none = BasicDP only).
#   - objective: L0, L1, L2, or L0d{d} (the file-name-safe spelling of "L0d:d").
#   - alpha: Python's shortest repr of the float; the config may give "p/q" fractions.  The
#     artifact records the exact value the config gave ("10/11"; a decimal 0.91 is 91/100).
#   results/mechanisms/{mechanism}/{objective}/alpha={alpha}.sweep.json: the manifest of the design
#   sweep that writes every n of that (mechanism, objective, alpha) (design.smk, SWEEP_MANIFEST).

import functools
import json
import math
import os
import pathlib
import re
import sys

from snakemake.exceptions import WorkflowError

# workflow/lib: the workflow's own modules (config checks, and the jobs the rules' `run:` blocks call)
sys.path.insert(0, str(pathlib.Path(workflow.basedir) / "workflow" / "lib"))

# Parsing the Snakefile imports only light modules (standard library, yaml): a no-op rerun stays fast.
from config_cache import checked as checked_config
from config_overrides import replace_override_ranges
from config_check import FIGURE_MECHANISMS, L0_ONLY, ConfigError
import config_check
import config_extensions
import config_fit
import countdp
from countdp.claims.designs import theory_designs
from countdp.evaluate.routing import ROUTING
from countdp.structural.form import REPRESENTATION
from countdp.values.alpha import alpha_text, exact_alphas_in
from countdp.studies.naming import PROPERTIES, alpha_spelling, lp_name, number_or_fraction, objective_slug
import code_version
import job_process
import worker_pool


def in_worker(function, *args):
    """``function(*args)`` for a `run:` job: in one of this run's ``--cores`` worker processes in a
    local run (workflow/lib/worker_pool.py: `run:` jobs are threads of this process, which share
    one interpreter lock and cannot be interrupted; a worker is terminated when the run is stopped),
    with ``--cores 1`` too; in place in a Snakemake started for this one job (a cluster job's, which
    runs with ``--cores all`` whatever the job was given, or a `run:` job's subprocess), which then
    exits as soon as the job is done (workflow/lib/job_process.py)."""
    if getattr(workflow, "remote_exec", False) or getattr(workflow, "subprocess_exec", False):
        job_process.drop_job_rate_limiter(getattr(workflow, "scheduler", None))
        return worker_pool.call(0, function, *args)
    try:
        workers = max(1, int(workflow.cores))
    except (WorkflowError, TypeError, KeyError):
        workers = 0
    return worker_pool.call(workers, function, *args)


# A cluster job's Snakemake runs its `run:` job in a thread instead of spawning one more Snakemake
# for it (a SLURM group job's jobs would otherwise cost two Snakemake starts each: job_process.py).
if getattr(workflow, "remote_exec", False):
    job_process.run_jobs_in_threads()


# Validation runs while the Snakefile is parsed, so a bad value stops `snakemake` (dry runs
# included) before any job: one line per bad key, naming the key and the allowed values
# (workflow/lib/config_check.py: the schema plus alpha fractions in (0, 1), non-empty ranges and
# the mechanisms of Figures 9-13 that cannot be evaluated at an n asked for),
# then the schema's defaults are filled in, as snakemake.utils.validate would.  A config that
# passed before (same schema and checkers) is taken from .snakemake/ (workflow/lib/config_cache.py).
# A bad config exits with status 2 (a usage error, as the CLI's), its lines on stderr and no traceback.
# Before the check, an n range an override config file gives replaces the base config's range whole
# (Snakemake's deep merge would keep the base's step: workflow/lib/config_overrides.py).
def override_configs():
    """The overrides Snakemake merged into config/config.yaml, in its order: each --configfile, then --config."""
    from snakemake.common.configfile import load_configfile

    settings = getattr(workflow, "config_settings", None)
    files = [load_configfile(str(path)) for path in getattr(settings, "configfiles", None) or ()]
    return files + [dict(getattr(settings, "config", None) or {})]


replace_override_ranges(config, override_configs())
try:
    checked_config(config, pathlib.Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml",
                   pathlib.Path(".snakemake") / "countdp" / "checked_config.json")
except ConfigError as error:
    print(str(error), file=sys.stderr)
    sys.exit(2)
try:
    EXACT_ALPHAS = exact_alphas_in(config)  # path spelling of alpha -> the exact value the config gave
except ValueError as error:
    raise WorkflowError(f"config: {error}") from None


# Resuming after a hard kill (SIGKILL, power loss): a job killed inside countdp.services.atomic.atomic_path
# leaves its temporary file (".{name}.XXXXXXXX{suffix}", next to the output) behind; a design's
# save leaves up to two, its JSON's and its npz's (".alpha=0.91.npz.XXXXXXXX.npz").  They are
# never taken for outputs, and the run that starts next removes them (the lock on the working
# directory means no other run is writing there, unless it was started with --nolock).  A sweep
# killed part-way has no manifest (its only output, written after every artifact; Snakemake
# removes it before the job starts), so the next run reruns the sweep, which reuses every design
# it finished (stamped, and verified by the loader) and designs again the rest, including one
# whose npz was renamed into place without its JSON.
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
    # Snakemake's job rate limiter (--max-jobs-per-timespan, default 100/1s) re-arms a one-second
    # timer after every scheduling round, and each timer starts another round: with k jobs done,
    # about k rounds a second, each re-reading the sizes of every ready job's inputs (a clean run
    # of the default config: 14,876 rounds for 273 jobs, 48 s of the scheduler's CPU against 17 s
    # without).  A local run starts at most --cores jobs at a time anyway, so it is switched off
    # there; cluster runs keep it (it throttles submissions).
    scheduler = getattr(workflow, "scheduler", None)
    if getattr(workflow, "local_exec", False) and getattr(scheduler, "job_rate_limiter", None) is not None:
        scheduler.job_rate_limiter = None
    worker_pool.stop_on_signals()  # SIGTERM/SIGINT terminate the job workers at once (worker_pool.py)
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


@functools.cache
def alpha_str(alpha):
    """The spelling of alpha in artifact paths: shortest repr of the float (cached: thousands of
    paths are spelled on every run)."""
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


@functools.cache
def mechanism_path(mechanism, objective, n, alpha):
    """Path of one designed mechanism artifact (the only place the pattern is spelled; cached)."""
    return (
        f"results/mechanisms/{mechanism}/{objective_slug(objective)}/"
        f"n={int(n)}/alpha={alpha_str(alpha)}.json"
    )


def mechanism_arrays_path(mechanism, objective, n, alpha):
    """The npz beside an artifact's JSON, where countdp.services.artifact.save_design writes its arrays
    (X.json -> X.npz, countdp.services.arrays.arrays_path)."""
    return mechanism_path(mechanism, objective, n, alpha).removesuffix(".json") + ".npz"


# ---------------------------------------------------------------- design sweeps (design.smk)
# Every mechanism artifact the config needs, batched into sweeps: one job of rule design_sweep per
# (mechanism, objective, alpha) over every n the studies ask for at that triple.  Each artifact
# keeps its own file (mechanism_path), each file belongs to exactly one sweep, and the sweep's
# output is its manifest (SWEEP_MANIFEST), written after every artifact: rules that read artifacts
# name the manifests as inputs (design_manifests) and pass the artifacts' paths in their params.
_ARTIFACT_RE = re.compile(
    r"results/mechanisms/(?P<mechanism>[^/]+)/(?P<objective>[^/]+)/n=(?P<n>\d+)/alpha=(?P<alpha>[^/]+)\.json"
)
SWEEP_MANIFEST = "results/mechanisms/{mechanism}/{objective}/alpha={alpha}.sweep.json"


def needed_mechanism_paths():
    """Every mechanism artifact a table, figure or evaluation of the config reads."""
    intrinsic = (fig01_l2_search() + fig01_panel_mechanisms() + fig02_mechanisms() + fig06_mechanisms()
                 + fig07_mechanisms() + fig08_mechanisms() + fig09_mechanisms() + fig09_objective_mechanisms())
    extrinsic = mechanism_file_paths("fig10", n_values(config["fig10"]["n"]), config["fig10"]["alpha"])
    for a in config["fig11"]["alpha"]:
        extrinsic += mechanism_file_paths("fig11", n_values(config["fig11"]["n"]), a)
    for a in config["fig12"]["alpha"]:
        extrinsic += mechanism_file_paths("fig12", [config["fig12"]["n"]], a)
    for a in config["fig13"]["alpha"]:
        extrinsic += mechanism_file_paths("fig13", n_values(config["fig13"]["n"]), a)
    return sorted(set(intrinsic + extrinsic + claims_mechanism_paths()))


def artifact_sweep(path):
    """(mechanism, objective slug, alpha spelling) and n of an artifact path (mechanism_path)."""
    m = _ARTIFACT_RE.fullmatch(path)
    if m is None:
        raise WorkflowError(f"{path}: not a mechanism artifact path (mechanism_path)")
    return (m["mechanism"], m["objective"], m["alpha"]), int(m["n"])


@functools.cache
def design_sweeps():
    """{(mechanism, objective slug, alpha spelling): sorted n} over needed_mechanism_paths() (cached:
    the config does not change during a run; targets.smk must be included first)."""
    sweeps = {}
    for path in needed_mechanism_paths():
        key, n = artifact_sweep(path)
        sweeps.setdefault(key, set()).add(n)
    return {key: sorted(ns) for key, ns in sorted(sweeps.items())}


def sweep_manifest(mechanism, objective, alpha):
    """Path of a sweep's manifest; ``objective`` and ``alpha`` as the artifact paths spell them."""
    return SWEEP_MANIFEST.format(mechanism=mechanism, objective=objective, alpha=alpha)


def design_manifests(paths):
    """The manifests of the sweeps that write the artifacts ``paths`` (each once, sorted): the input
    of a rule that reads artifacts, which takes ``paths`` themselves as a param."""
    return sorted({sweep_manifest(*artifact_sweep(path)[0]) for path in paths})


def design_targets():
    """Every sweep's manifest, for rule all.  Snakemake makes a missing file that is not a target
    only for a job that has to run anyway: as targets, a sweep whose manifest is missing (never
    run, or removed by remove_incomplete_manifests) runs even when what reads it is up to date,
    and then what reads it runs again."""
    return [sweep_manifest(*key) for key in design_sweeps()]


def _alternatives(values):
    """A regex matching exactly the strings ``values`` (longest first; never matches when empty)."""
    return "|".join(re.escape(v) for v in sorted(set(values), key=lambda v: (-len(v), v))) or "(?!)"


def sweep_constraint(part):
    """Wildcard constraint of design_sweep: the mechanisms (part 0) or alphas (part 2) of the sweeps."""
    return _alternatives(key[part] for key in design_sweeps())


def sweep_ns(wildcards):
    """The n of one sweep (a param of design_sweep: a changed set reruns it); a clear error for a
    (mechanism, objective, alpha) that no study of the config reads."""
    key = (wildcards.mechanism, wildcards.objective, wildcards.alpha)
    ns = design_sweeps().get(key)
    if ns is None:
        examples = ", ".join("/".join(k) for k in list(design_sweeps())[:3])
        raise WorkflowError(
            f"no design sweep {key[0]}/{key[1]}/alpha={key[2]} in this config: the sweeps are the "
            f"(mechanism, objective, alpha) triples its studies read, e.g. {examples} "
            f"(design_sweeps: workflow/rules/common.smk)")
    return ns


def sweep_artifacts(wildcards):
    """The JSON path of every design of one sweep, in the order of sweep_ns."""
    return [mechanism_path(wildcards.mechanism, wildcards.objective, n, wildcards.alpha) for n in sweep_ns(wildcards)]


def sweep_solver(wildcards):
    return design_solver(wildcards.mechanism)


def sweep_alpha_exact(wildcards):
    return alpha_exact(wildcards.alpha)


def sweep_mem_mb(wildcards):
    return design_mem_mb(wildcards.mechanism, max(sweep_ns(wildcards)))


def sweep_runtime(wildcards):
    return design_runtime(wildcards.mechanism, sweep_ns(wildcards))


def remove_incomplete_manifests():
    """Remove the manifest of every sweep of the config that names a design (JSON or npz) that is
    missing, or cannot be read, and return their paths.

    A sweep's only output is its manifest, so Snakemake alone would not notice a deleted artifact;
    without its manifest the sweep is rerun (design_targets: rule all asks for every manifest),
    designs again what is missing (it reuses the rest: design.smk), and the rules that read them
    run again.  Only the files the manifest
    names are checked (the designs of the sweep's last run): a sweep whose n set changed in the
    config is rerun by its params, and a dry run with another config removes nothing that is
    still complete.  Called
    while the Snakefile is parsed (before the DAG is built), dry runs included: such a manifest no
    longer describes files that exist.  Only in the Snakemake the user started: not in a cluster
    job or a job's subprocess, which parse the workflow again while other jobs run.
    """
    if getattr(workflow, "remote_exec", False) or getattr(workflow, "subprocess_exec", False):
        return []
    removed = []
    for key in design_sweeps():
        manifest = pathlib.Path(sweep_manifest(*key))
        try:
            designs = json.loads(manifest.read_text())["designs"]
            complete = all(os.path.exists(d[f]) for d in designs for f in ("json", "npz"))
        except FileNotFoundError:
            continue
        except (ValueError, KeyError, TypeError):
            complete = False
        if not complete:
            manifest.unlink()
            removed.append(str(manifest))
    if removed:
        print(f"design sweeps with a missing artifact, rerun: removed their manifests {removed[:5]}"
              + (f" and {len(removed) - 5} more" if len(removed) > 5 else ""), file=sys.stderr)
    return removed


def design_solver(mechanism):
    """The solver setting of a sweep (countdp.studies.sweeps): ``NAME/method`` (the planner chooses
    the path; ``method``, auto by default, is the general LP path's) or ``NAME/method/plain``
    (solver.plain: every LP by that solver and method alone).  Closed forms do not depend on it,
    so changing it reruns only LP designs."""
    if mechanism in ("GM", "EM", "UM"):
        return "closed-form"
    setting = f"{config['solver']['name']}/{configured_method()}"
    return f"{setting}/plain" if config["solver"].get("plain") else setting


def configured_method():
    """solver.method; left out, "auto" (the planner chooses), or with solver.plain the solver's first
    method (its default: config_check.SOLVER_METHODS, as countdp.design.designer.SOLVERS)."""
    solver = config["solver"]
    if "method" in solver:
        return solver["method"]
    return config_check.SOLVER_METHODS[solver["name"]][0] if solver.get("plain") else "auto"


def claims_lp_method():
    """The method the claims job passes to design_lp for an LP it designs itself (none in a full run:
    it loads the sweeps' designs): the plain LP's with solver.plain, else None (the planner chooses)."""
    return configured_method() if config["solver"].get("plain") else None


def design_mem_mb(mechanism, max_n):
    """Memory (MB) of a sweep: an LP over (n+1)^2 variables, measured 236 MB at n = 256 and
    598 MB at n = 512 (benchmarks/bench_design.py); a closed form with its release weights about 250
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


# ---------------------------------------------------------------- code versions
# Params of the jobs whose results come from the library (workflow/lib/code_version.py): a library
# change reruns them (Snakemake's rerun triggers see only params, inputs and the `run:` block
# itself).  CODE_VERSION hashes the whole library (studies, claims); DESIGN_CODE_VERSION only the
# packages a design depends on (code_version.DESIGN_SOURCES), so that a change to a study, a
# plot or the CLI does not rerun the design sweeps.  Hashing takes a few milliseconds.  The
# library hashed is the one the jobs import (src/countdp of the checkout when installed editable).
LIBRARY_ROOT = pathlib.Path(countdp.__file__).parent
CODE_VERSION = code_version.source_version(LIBRARY_ROOT)
DESIGN_CODE_VERSION = code_version.source_version(LIBRARY_ROOT, code_version.DESIGN_SOURCES)
