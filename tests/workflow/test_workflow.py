"""The intrinsic workflow (Figures 1-4, 6-9) end to end on config/quick.yaml.

Uses the session fixture ``quick_results`` (tests/conftest.py): the whole quick workflow, run
once with ``--cores 2`` in a temporary copy of the repository, so results/ of the checkout is
never touched.  Checks that every intrinsic table and figure appears, that a second run has
nothing to do, that changing one alpha reruns only what depends on it, and that
``snakemake --lint`` is clean for the whole workflow.  Without a run: the workflow has a few dozen
rules whatever the config (the design sweeps are one rule with wildcards), so its rule graph (the
report's *Workflow* view) stays readable.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import QUICK, SNAKEMAKE, copy_workflow, snakemake

ROOT = Path(__file__).resolve().parents[2]

TARGET_RULES = ["fig01_figure", "fig02_figure", "fig03_figure", "fig04_figure", "fig06_figure",
                "fig07_figure", "fig08_figure", "fig09_figure", "intrinsic_checks"]
TABLES = ["fig01_claims", "fig01_l2_search", "fig02_claims", "fig03_gm_exponents", "fig04_em_exponents",
          "fig06_properties_grid", "fig06_properties", "fig07_truthful", "fig08_l0", "fig09_l0",
          "fig09_convergence", "intrinsic_checks"]
FIGURES = ["fig01_unconstrained_heatmaps", "fig02_constrained_heatmaps", "fig03_gm_structure",
           "fig04_em_structure", "fig06_properties", "fig07_gm_em_wm_heatmaps", "fig08_wh_combinations",
           "fig09_named_mechanisms_l0"]

pytestmark = pytest.mark.workflow


@pytest.fixture
def quick_run(quick_results: Path) -> Path:
    return quick_results


def test_every_intrinsic_file_appears(quick_run):
    missing = [f"results/tables/{t}.csv" for t in TABLES if not (quick_run / f"results/tables/{t}.csv").is_file()]
    missing += [f"results/figures/{f}.{ext}" for f in FIGURES for ext in ("pdf", "png")
                if not (quick_run / f"results/figures/{f}.{ext}").stat().st_size]
    assert not missing
    checks = pd.read_csv(quick_run / "results/tables/intrinsic_checks.csv")
    assert list(checks.columns) == ["figure", "claim", "paper_value", "our_value", "holds", "note"]
    assert set(checks["figure"].astype(str)) >= {"1", "2", "3", "4", "6", "7", "8", "9"}


def test_artifact_paths_name_their_parameters(quick_run):
    paths = sorted(p for p in (quick_run / "results/mechanisms").rglob("*.json") if not p.name.endswith(".sweep.json"))
    assert paths
    pattern = re.compile(r"results/mechanisms/(GM|EM|UM|WM|WH|LP-[A-Za-z+]+)/(L0|L1|L2|L0d\d+)/"
                         r"n=(\d+)/alpha=([0-9.e-]+)\.json$")
    for path in paths:
        match = pattern.search(path.as_posix())
        assert match, path
        assert repr(float(match.group(4))) == match.group(4)
    assert (quick_run / "results/mechanisms/WM/L0/n=4/alpha=0.91.json").is_file()
    assert (quick_run / "results/mechanisms/WH/L0/n=20/alpha=0.9090909090909091.json").is_file()


def test_second_run_has_nothing_to_do(quick_run):
    dry = snakemake(quick_run, "--cores", "1", "-n")  # the default target: every study
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "Nothing to be done" in dry.stdout + dry.stderr, (dry.stdout + dry.stderr)[-3000:]


def test_changing_one_alpha_reruns_only_its_dependents(quick_run, tmp_path):
    config = (quick_run / "config/quick.yaml").read_text()
    changed = config.replace("  n: 4\n  alpha: 0.91\n", "  n: 4\n  alpha: 0.92\n", 1)  # the fig07 block
    assert changed != config
    alt = tmp_path / "quick_alt.yaml"  # outside the shared copy
    alt.write_text(changed)
    dry = subprocess.run([str(SNAKEMAKE), *TARGET_RULES, "--cores", "1", "-n", "--configfile", str(alt)],
                         cwd=quick_run, capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0, dry.stderr[-2000:]
    out = dry.stdout + dry.stderr
    stats = dict(re.findall(r"^(\w+)\s+(\d+)$", out, flags=re.M))
    sweeps = set(re.findall(r"^\s*output: results/mechanisms/(\w+)/(\w+)/alpha=(\S+)\.sweep\.json$", out, flags=re.M))
    # one design sweep each for GM, EM, WM at the new alpha (n = 4 only)
    assert sweeps == {(m, "L0", "0.92") for m in ("GM", "EM", "WM")}, out[-3000:]
    assert stats["design_sweep"] == "3", stats
    assert set(stats) - {"design_sweep"} <= {"fig07_tables", "fig07_figure", "intrinsic_checks", "total"}


def test_lint_is_clean():
    """`snakemake --lint` finds nothing at all, on the default config and on the quick one."""
    for configfile in ("config/config.yaml", QUICK):
        lint = snakemake(ROOT, "--lint", configfile=configfile, timeout=300)
        text = lint.stdout + lint.stderr
        assert lint.returncode == 0 and "Lints for" not in text and "Traceback" not in text, text[-4000:]


RULE_NODE = re.compile(r'^\s*\d+\[label = "(\w+)"', re.M)


def test_rules_and_rule_graph_are_a_few_dozen(tmp_path):
    """`--list-rules` names a few dozen rules for the quick and the default config alike (not one
    per design sweep: ~90 and ~225 of them), and the rule graph has a node per rule it uses."""
    work = copy_workflow(tmp_path / "repo")  # no results/: nothing to parse but the workflow
    for configfile in (QUICK, "config/config.yaml"):
        listed = snakemake(work, "--list-rules", configfile=configfile, timeout=300)
        assert listed.returncode == 0, listed.stderr[-2000:]
        rules = listed.stdout.split()
        assert 30 < len(rules) < 60, rules
        assert [r for r in rules if r.startswith("design")] == ["design_sweep"]
    graph = snakemake(work, "--rulegraph", timeout=300)
    assert graph.returncode == 0, graph.stderr[-2000:]
    nodes = RULE_NODE.findall(graph.stdout)
    assert 30 < len(nodes) < 60 and len(set(nodes)) == len(nodes), nodes
    assert "design_sweep" in nodes and set(nodes) <= set(rules) | {"all"}
