"""Designs are batched into sweeps (workflow/rules/design.smk): one job per (mechanism,
objective, alpha) over every n the config needs, one file per design at its usual path.

- a sweep writes the same artifacts, byte for byte apart from the wall-clock fields, as
  designing each mechanism alone (``countdp.studies.sweeps.design_artifact``), in-process and in the
  shared quick run;
- a dry run with one alpha added to Figure 9 schedules exactly the new sweeps (and the tables
  that read them), and one extra n reruns only the sweeps that contain it.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest
import yaml
from conftest import SNAKEMAKE, TIMING_FIELDS

from countdp.privacy.alpha import alpha_text, exact_alphas_in
from countdp.studies.sweeps import design_artifact, design_sweep

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
        lines = log.read_text().splitlines()
        assert len(lines) == len(ns) and all(str(p) in line for p, line in zip(sweep, lines, strict=True))
        for n, path in zip(ns, sweep, strict=True):
            single = tmp_path / f"single-{mechanism}-{n}.json"
            design_artifact(mechanism, objective, n, alpha, solver, single)
            assert _masked(path) == _masked(single), (mechanism, n)


def test_sweep_rejects_mismatched_paths(tmp_path):
    with pytest.raises(ValueError, match="2 values of n for 1 paths"):
        design_sweep("GM", "L0", "0.5", [2, 3], "closed-form", [tmp_path / "a.json"], tmp_path / "log")
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------- in the workflow
@pytest.mark.workflow
def test_workflow_artifacts_equal_single_designs(quick_results, tmp_path):
    """Every artifact the batched jobs wrote in the quick run equals a single design of it."""
    paths = sorted((quick_results / "results/mechanisms").rglob("*.json"))
    assert len(paths) > 50
    exact = exact_alphas_in(yaml.safe_load((quick_results / "config/quick.yaml").read_text()))
    differ = []
    for k, path in enumerate(paths):
        m = ARTIFACT.search(path.as_posix())
        solver = "closed-form" if m["mechanism"] in ("GM", "EM", "UM") else "HIGHS/simplex"
        single = tmp_path / f"{k}.json"
        # the exact value the config gave, as the workflow passes (the claims' own designs: the decimal)
        design_artifact(m["mechanism"], m["objective"], int(m["n"]), m["alpha"], solver, single,
                        alpha_text(exact[m["alpha"]]) if m["alpha"] in exact else None)
        if _masked(path) != _masked(single):
            differ.append(path.relative_to(quick_results).as_posix())
    assert not differ, differ[:10]


def _dry_run_jobs(work: Path, config: dict, tmp_path: Path) -> tuple[Counter, str]:
    """Jobs per rule of ``snakemake -n`` with ``config`` (written outside the run's copy)."""
    alt = tmp_path / "alt.yaml"
    alt.write_text(yaml.safe_dump(config, sort_keys=False))
    dry = subprocess.run([str(SNAKEMAKE), "--cores", "1", "-n", "--configfile", str(alt)], cwd=work,
                         capture_output=True, text=True, timeout=300)
    out = dry.stdout + dry.stderr
    assert dry.returncode == 0, out[-3000:]
    jobs = Counter(re.findall(r"^\s*(?:local)?rule (\w+):$", out, flags=re.M))
    return jobs, out


def _design_jobs(jobs: Counter) -> dict[str, int]:
    return {rule: count for rule, count in jobs.items() if rule.startswith("design_")}


@pytest.mark.workflow
def test_one_more_alpha_runs_only_its_sweeps(quick_results, tmp_path):
    config = yaml.safe_load((quick_results / "config/quick.yaml").read_text())
    config["fig09"]["alpha"] = ["10/11", "4/5"]  # 0.8: no study of the quick config uses it at L0
    jobs, out = _dry_run_jobs(quick_results, config, tmp_path)
    designs = _design_jobs(jobs)
    assert sorted(designs) == sorted(f"design_{m}_L0_alpha_0_8" for m in ("GM", "WM", "WH", "EM", "UM")), designs
    assert set(designs.values()) == {1}
    # each sweep designs Figure 9's three n at the new alpha, nothing else
    for m in ("GM", "WM", "WH", "EM", "UM"):
        for n in (2, 10, 20):
            assert f"results/mechanisms/{m}/L0/n={n}/alpha=0.8.json" in out
    assert set(jobs) - set(designs) == {"fig09_tables", "fig09_figure", "intrinsic_checks", "claims", "all"}, jobs


@pytest.mark.workflow
def test_one_more_n_reruns_only_the_sweeps_it_extends(quick_results, tmp_path):
    config = yaml.safe_load((quick_results / "config/quick.yaml").read_text())
    config["fig09"]["n"] = [2, 10, 20, 21]
    jobs, out = _dry_run_jobs(quick_results, config, tmp_path)
    designs = _design_jobs(jobs)
    alpha = "0_9090909090909091"  # 10/11, Figure 9's only alpha in the quick config
    assert sorted(designs) == sorted(f"design_{m}_L0_alpha_{alpha}" for m in ("GM", "WM", "WH", "EM", "UM")), designs
    assert "results/mechanisms/WM/L0/n=21/alpha=0.9090909090909091.json" in out
    # sweeps of other alphas (Figures 6-8, 10-13) are untouched
    assert not [rule for rule in designs if "alpha_0_91" in rule or "alpha_0_76" in rule]
