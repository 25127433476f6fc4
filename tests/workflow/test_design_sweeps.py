"""Designs are batched into sweeps (workflow/rules/design.smk): one job of the rule design_sweep per
(mechanism, objective, alpha) over every n the config needs, one file per design at its usual path,
and the sweep's manifest (results/mechanisms/{mechanism}/{objective}/alpha={alpha}.sweep.json) as the
rule's output.

- a sweep writes the same artifacts, byte for byte apart from the wall-clock fields, as
  designing each mechanism alone (``countdp.studies.sweeps.design_artifact``), in-process and in the
  shared quick run; each manifest names exactly the artifacts of its sweep;
- a dry run with one alpha added to Figure 9 schedules exactly the new sweeps (and the tables
  that read them), each designing Figure 9's n; one extra n reruns only the sweeps that contain
  it (their n set is a param); deleting one artifact's npz reruns its sweep, once;
- a (mechanism, objective, alpha) that no study reads is refused with a message naming it;
- the design sweeps' code version (workflow/lib/code_version.py) covers every module a design
  imports, and only changes when one of them does.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
import yaml
from code_version import DESIGN_SOURCES, source_files, source_version
from conftest import SNAKEMAKE, TIMING_FIELDS, copy_workflow, snakemake
from jobs_design import write_sweep_manifest

from countdp.studies.sweeps import design_artifact, design_sweep
from countdp.values.alpha import alpha_text, exact_alphas_in

ARTIFACT = re.compile(r"results/mechanisms/(?P<mechanism>[^/]+)/(?P<objective>[^/]+)/n=(?P<n>\d+)/"
                      r"alpha=(?P<alpha>[^/]+)\.json$")
TIMING = re.compile(r'"(' + "|".join(TIMING_FIELDS) + r')": [-+0-9.eE]+')


ARRAYS_FILE = re.compile(r'"file": "[^"]*\.npz"')


def _masked(path: Path) -> bytes:
    """The file's bytes with the values of the wall-clock fields blanked (they differ run to run), and the
    name of its npz (named after the JSON; its content is pinned by the SHA-256 the JSON records)."""
    text = path.read_text()
    assert TIMING.search(text), f"{path}: no timing field found (the mask would hide nothing)"
    assert ARRAYS_FILE.search(text), f"{path}: no arrays file named"
    return ARRAYS_FILE.sub('"file": null', TIMING.sub(lambda m: f'"{m.group(1)}": null', text)).encode()


def test_sweep_equals_single_designs(tmp_path):
    ns = [2, 3, 5]
    for mechanism, objective, alpha, solver in [("WM", "L0", "0.91", "HIGHS/simplex"),
                                                ("GM", "L0", "0.5", "closed-form"),
                                                ("LP-RH+CM+WH+S", "L0d1", "0.6666666666666666", "HIGHS/simplex")]:
        sweep = [tmp_path / f"sweep-{mechanism}-{n}.json" for n in ns]
        log = tmp_path / f"{mechanism}.log"
        design_sweep(mechanism, objective, alpha, ns, solver, sweep, log)
        *lines, total = log.read_text().splitlines()
        assert len(lines) == len(ns) and all(str(p) in line for p, line in zip(sweep, lines, strict=True))
        assert total.startswith(f"sweep {mechanism} {objective} alpha={alpha}: 3 designs, 3 designed, 0 reused")
        for n, path in zip(ns, sweep, strict=True):
            single = tmp_path / f"single-{mechanism}-{n}.json"
            design_artifact(mechanism, objective, n, alpha, solver, single)
            assert _masked(path) == _masked(single), (mechanism, n)


def test_sweep_rejects_mismatched_paths(tmp_path):
    with pytest.raises(ValueError, match="2 values of n for 1 paths"):
        design_sweep("GM", "L0", "0.5", [2, 3], "closed-form", [tmp_path / "a.json"], tmp_path / "log")
    assert not list(tmp_path.iterdir())


def test_manifest_names_only_files_the_sweep_wrote(tmp_path):
    paths = [str(tmp_path / f"n={n}" / "alpha=0.5.json") for n in (2, 3)]
    design_sweep("GM", "L0", "0.5", [2, 3], "closed-form", paths, tmp_path / "log", "1/2")
    manifest = tmp_path / "alpha=0.5.sweep.json"
    write_sweep_manifest(str(manifest), "GM", "L0", "0.5", "1/2", "closed-form", [2, 3], paths)
    record = json.loads(manifest.read_text())
    assert record["designs"] == [{"n": n, "json": p, "npz": p.removesuffix(".json") + ".npz"}
                                 for n, p in zip((2, 3), paths, strict=True)]
    assert (record["mechanism"], record["alpha_exact"], record["solver"]) == ("GM", "1/2", "closed-form")
    Path(paths[1]).with_suffix(".npz").unlink()  # a design whose arrays are gone
    other = tmp_path / "other.sweep.json"
    with pytest.raises(FileNotFoundError, match=r"n=3/alpha=0\.5\.npz"):
        write_sweep_manifest(str(other), "GM", "L0", "0.5", "1/2", "closed-form", [2, 3], paths)
    assert not other.exists()


# ---------------------------------------------------------------- in the workflow
SWEEP_OUTPUT = re.compile(r"^\s*output: results/mechanisms/([^/]+)/([^/]+)/alpha=(\S+)\.sweep\.json$", re.M)


def _artifacts(root: Path) -> list[Path]:
    return sorted((root / "results/mechanisms").glob("*/*/n=*/alpha=*.json"))


def _manifests(root: Path) -> list[Path]:
    return sorted((root / "results/mechanisms").glob("*/*/alpha=*.sweep.json"))


@pytest.mark.workflow
def test_workflow_artifacts_equal_single_designs(quick_results, tmp_path):
    """Every artifact the batched jobs wrote in the quick run equals a single design of it."""
    paths = _artifacts(quick_results)
    assert len(paths) > 50
    exact = exact_alphas_in(yaml.safe_load((quick_results / "config/quick.yaml").read_text()))
    version = source_version(LIBRARY, DESIGN_SOURCES)  # what the workflow stamps on its designs
    differ = []
    for k, path in enumerate(paths):
        m = ARTIFACT.search(path.as_posix())
        solver = "closed-form" if m["mechanism"] in ("GM", "EM", "UM") else "HIGHS/auto"  # quick.yaml: no method
        single = tmp_path / f"{k}.json"
        # the exact value the config gave, as the workflow passes (the claims' own designs: the decimal)
        design_artifact(m["mechanism"], m["objective"], int(m["n"]), m["alpha"], solver, single,
                        alpha_text(exact[m["alpha"]]) if m["alpha"] in exact else None, version)
        if _masked(path) != _masked(single):
            differ.append(path.relative_to(quick_results).as_posix())
    assert not differ, differ[:10]


@pytest.mark.workflow
def test_workflow_manifests_name_every_artifact_once(quick_results):
    """Each sweep's manifest names the artifacts of its (mechanism, objective, alpha), every n once,
    and together the manifests name every artifact of the run."""
    named = []
    for manifest in _manifests(quick_results):
        record = json.loads(manifest.read_text())
        mechanism, objective, alpha = record["mechanism"], record["objective"], record["alpha"]
        folder = f"results/mechanisms/{mechanism}/{objective}"
        assert manifest.relative_to(quick_results).as_posix() == f"{folder}/alpha={alpha}.sweep.json"
        ns = [d["n"] for d in record["designs"]]
        assert ns == sorted(set(ns)), manifest
        for d in record["designs"]:
            assert d["json"] == f"{folder}/n={d['n']}/alpha={alpha}.json"
            assert (quick_results / d["npz"]).is_file()
            named.append(quick_results / d["json"])
    assert sorted(named) == _artifacts(quick_results)


def _dry_run(work: Path, tmp_path: Path, config: dict | None = None, *targets: str) -> tuple[Counter, set, str]:
    """Jobs per rule (Snakemake's job stats), the sweeps scheduled and the text of ``snakemake -n``,
    with ``config`` written outside the run's copy (None: the quick config)."""
    configfile = "config/quick.yaml"
    if config is not None:
        configfile = str(tmp_path / "alt.yaml")
        Path(configfile).write_text(yaml.safe_dump(config, sort_keys=False))
    dry = subprocess.run([str(SNAKEMAKE), *targets, "--cores", "1", "-n", "--configfile", configfile], cwd=work,
                         capture_output=True, text=True, timeout=300)
    out = dry.stdout + dry.stderr
    assert dry.returncode == 0, out[-3000:]
    stats = out.split("Job stats:", 1)[1].split("\n\n", 1)[0] if "Job stats:" in out else ""
    jobs = Counter({rule: int(count) for rule, count in re.findall(r"^(\w+)\s+(\d+)$", stats, flags=re.M)})
    jobs.pop("total", None)
    return jobs, set(SWEEP_OUTPUT.findall(out)), out


@pytest.mark.workflow
def test_one_more_alpha_runs_only_its_sweeps(quick_results, tmp_path):
    config = yaml.safe_load((quick_results / "config/quick.yaml").read_text())
    config["fig09"]["alpha"] = ["10/11", "4/5"]  # 0.8: no study of the quick config uses it at L0
    jobs, sweeps, out = _dry_run(quick_results, tmp_path, config)
    mechanisms = ("GM", "WM", "WH", "EM", "UM")
    assert sweeps == {(m, "L0", "0.8") for m in mechanisms}, sweeps
    assert jobs["design_sweep"] == 5
    assert set(jobs) - {"design_sweep"} == {"fig09_tables", "fig09_figure", "intrinsic_checks", "claims", "all"}, jobs
    # one of the new sweeps, run alone in a fresh copy: it designs Figure 9's three n, nothing else
    fresh = copy_workflow(tmp_path / "fresh")
    done = snakemake(fresh, "--cores", "1", "results/mechanisms/GM/L0/alpha=0.8.sweep.json",
                     configfile=str(tmp_path / "alt.yaml"), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [d["n"] for d in json.loads((fresh / "results/mechanisms/GM/L0/alpha=0.8.sweep.json").read_text())[
        "designs"]] == [2, 10, 20]
    assert [p.relative_to(fresh).as_posix() for p in _artifacts(fresh)] == [
        f"results/mechanisms/GM/L0/n={n}/alpha=0.8.json" for n in (10, 2, 20)]  # sorted as paths


@pytest.mark.workflow
def test_one_more_n_reruns_only_the_sweeps_it_extends(quick_results, tmp_path):
    config = yaml.safe_load((quick_results / "config/quick.yaml").read_text())
    config["fig09"]["n"] = [2, 10, 20, 21]
    jobs, sweeps, out = _dry_run(quick_results, tmp_path, config)
    alpha = "0.9090909090909091"  # 10/11, Figure 9's only alpha in the quick config
    assert sweeps == {(m, "L0", alpha) for m in ("GM", "WM", "WH", "EM", "UM")}, sweeps
    # rerun because their n set (a param) changed; sweeps of other alphas (Figures 6-8, 10-13) are untouched
    assert out.count("Params have changed since last execution") >= 5, out[-3000:]
    assert "[2, 10, 20, 21]" in out and f"results/mechanisms/WM/L0/n=21/alpha={alpha}.json" in out


@pytest.mark.workflow
def test_deleting_one_npz_reruns_its_sweep_once(quick_results, tmp_path):
    """The sweep's output is its manifest, so Snakemake alone would not see a deleted artifact (nor,
    with the fig01 tables up to date, a deleted manifest: only rule all asks for it): the workflow
    removes the manifest that names a missing file when it is parsed.  The dry run schedules that
    sweep and what reads it; the real run restores the file; then nothing is left to do."""
    work = tmp_path / "repo"
    shutil.copytree(quick_results, work, symlinks=True)
    npz = work / "results/mechanisms/LP-none/L2/n=5/alpha=0.8.npz"  # Figure 1's L2 search at alpha = 0.8
    npz.unlink()
    jobs, sweeps, out = _dry_run(work, tmp_path)
    assert sweeps == {("LP-none", "L2", "0.8")}, sweeps
    assert jobs["design_sweep"] == 1 and jobs["fig01_tables"] == 1, jobs
    assert "Missing output files: results/mechanisms/LP-none/L2/alpha=0.8.sweep.json" in out
    assert "design sweeps with a missing artifact, rerun" in out
    done = snakemake(work, "--cores", "1", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert npz.is_file() and (work / "results/mechanisms/LP-none/L2/alpha=0.8.sweep.json").is_file()
    again = snakemake(work, "--cores", "1", "-n", timeout=300)
    assert "Nothing to be done" in again.stdout + again.stderr, (again.stdout + again.stderr)[-3000:]


@pytest.mark.workflow
def test_only_a_change_to_the_design_sources_reruns_the_sweeps(quick_results, tmp_path):
    """The quick run, against a copy of the library (PYTHONPATH): a changed plot module reruns the
    studies that hash the whole library but no sweep; a changed privacy module reruns every sweep."""
    root = tmp_path / "src" / "countdp"
    shutil.copytree(LIBRARY, root, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(root.parent)}

    def jobs() -> Counter:
        dry = subprocess.run([str(SNAKEMAKE), "--cores", "1", "-n", "--configfile", "config/quick.yaml"],
                             cwd=quick_results, capture_output=True, text=True, timeout=300, env=env)
        assert dry.returncode == 0, (dry.stdout + dry.stderr)[-3000:]
        table = dry.stdout.split("Job stats:", 1)[1] if "Job stats:" in dry.stdout else ""
        return Counter({rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", table, flags=re.M)})

    with (root / "plots" / "style.py").open("a") as f:
        f.write("\n# changed\n")
    plot_change = jobs()
    assert plot_change["claims"] == 1 and plot_change["design_sweep"] == 0, plot_change
    with (root / "privacy" / "alpha.py").open("a") as f:
        f.write("\n# changed\n")
    assert jobs()["design_sweep"] == len(_manifests(quick_results))


def test_a_sweep_no_study_reads_is_refused(tmp_path):
    """design_sweep matches only the config's mechanisms and alphas (an alpha it does not name has no
    rule); a triple of those that is not a sweep (GM at L2: no study asks for it) stops the run with
    a message naming it."""
    work = copy_workflow(tmp_path / "repo")
    wrong = snakemake(work, "-n", "results/mechanisms/GM/L2/alpha=0.62.sweep.json", timeout=300)
    assert wrong.returncode != 0
    assert "no design sweep GM/L2/alpha=0.62 in this config" in wrong.stdout + wrong.stderr, wrong.stderr[-3000:]
    target = "results/mechanisms/GM/L0/alpha=0.63.sweep.json"  # an alpha the config does not name: no match
    unmatched = snakemake(work, "-n", target, timeout=300)
    text = unmatched.stdout + unmatched.stderr
    assert unmatched.returncode != 0 and f"No rule to produce {target}" in text, text[-3000:]


# ---------------------------------------------------------------- the design code version
LIBRARY = Path(__file__).resolve().parents[2] / "src" / "countdp"


def _module_file(root: Path, module: str) -> Path | None:
    base = root.parent.joinpath(*module.split("."))
    return next((p for p in (base / "__init__.py", base.with_suffix(".py")) if p.is_file()), None)


def _nodes_run_on_import(tree: ast.Module):
    """Every node of ``tree`` but those inside a module-level ``__getattr__`` (lazy attributes)."""
    for top in tree.body:
        if not (isinstance(top, ast.FunctionDef) and top.name == "__getattr__"):
            yield from ast.walk(top)


def _import_closure(root: Path, module: str) -> set[Path]:
    """Every countdp source file importing ``module`` can run: its own file, the files of the modules
    it imports anywhere (function-local imports too, read from the syntax tree), and the package
    __init__ files on the way, recursively.  Not the imports of a package's module ``__getattr__``
    (PEP 562): they run only when that attribute is asked for (``countdp.release_table``), which no
    design does."""
    seen: set[Path] = set()
    todo = [module]
    while todo:
        parts = todo.pop().split(".")
        for k in range(1, len(parts) + 1):
            path = _module_file(root, ".".join(parts[:k]))
            if path is None or path in seen:
                continue
            seen.add(path)
            for node in _nodes_run_on_import(ast.parse(path.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                todo += [name for name in names if name.split(".")[0] == "countdp"]
    return seen


def test_design_sources_cover_everything_a_design_imports():
    covered = set(source_files(LIBRARY, DESIGN_SOURCES))
    closure = _import_closure(LIBRARY, "countdp.studies.sweeps")
    assert {LIBRARY / "studies/sweeps.py", LIBRARY / "design/designer.py", LIBRARY / "privacy/exact.py"} <= closure
    assert not sorted(closure - covered)
    # the check can fail: the claims table imports modules no design needs
    assert sorted(_import_closure(LIBRARY, "countdp.claims.table") - covered)


def test_design_version_changes_only_with_the_design_sources(tmp_path):
    root = tmp_path / "countdp"
    shutil.copytree(LIBRARY, root, ignore=shutil.ignore_patterns("__pycache__"))
    design, library = source_version(root, DESIGN_SOURCES), source_version(root)
    with (root / "plots" / "style.py").open("a") as f:  # a plot: not a design
        f.write("\n# changed\n")
    assert source_version(root, DESIGN_SOURCES) == design and source_version(root) != library
    (root / "privacy" / "new_module.py").write_text("X = 1\n")  # a new module of a design package
    assert source_version(root, DESIGN_SOURCES) != design
    design = source_version(root, DESIGN_SOURCES)
    with (root / "studies" / "sweeps.py").open("a") as f:
        f.write("\n# changed\n")
    assert source_version(root, DESIGN_SOURCES) != design
    (root / "studies" / "records.py").unlink()
    with pytest.raises(FileNotFoundError, match="records.py"):
        source_version(root, DESIGN_SOURCES)
