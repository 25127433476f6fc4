"""Figure 9 and the extension studies under L1 and L2, and Figure 9's sizes per mechanism, run by Snakemake.

A small override of config/quick.yaml asks for them; the real ``snakemake`` makes their tables,
checks and figures, which hold what was asked (each mechanism's own sizes, the objective's column,
checks that hold).  Without the override, a dry run plans none of their jobs: the default run is
the one it always was.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import QUICK, SNAKEMAKE, copy_workflow

OVERRIDE = {
    "fig09": {"objectives": ["L0", "L1"], "alpha": ["10/11"], "n": [2, 4],
              "n_by_mechanism": {"WM": {"from": 2, "to": 5}}},
    "extensions": {"minimax": {"objectives": ["L0", "L2"]}, "baselines": {"objectives": ["L0", "L1"]}},
}
TARGETS = ["results/figures/fig09_named_mechanisms_l1.png", "results/tables/checks/fig09_l1.csv",
           "results/figures/ext_minimax_l2.png", "results/figures/ext_baselines_l1.png",
           "results/tables/fig09_l0.csv"]
EXTRA_RULES = ("fig09_l1_tables", "fig09_l1_figure", "ext_minimax_l2", "ext_baselines_l1")


def _run(work: Path, *args: str, configfiles: tuple[str, ...]) -> subprocess.CompletedProcess:
    return subprocess.run([str(SNAKEMAKE), *args, "--configfile", *configfiles], cwd=work, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> Path:
    work = copy_workflow(tmp_path_factory.mktemp("objectives") / "repo")
    (work / "objectives.yaml").write_text(yaml.safe_dump(OVERRIDE, sort_keys=False))
    done = _run(work, "--cores", "2", *TARGETS, configfiles=(QUICK, "objectives.yaml"))
    assert done.returncode == 0, done.stderr[-4000:]
    return work


@pytest.mark.workflow
def test_figure_9_under_l1_has_each_mechanisms_sizes_and_holds(ran):
    table = pd.read_csv(ran / "results/tables/fig09_l1.csv")
    sizes = table.groupby("mechanism")["n"].apply(sorted).to_dict()
    assert sizes == {"EM": [2, 4], "GM": [2, 4], "UM": [2, 4], "WH": [2, 4], "WM": [2, 3, 4, 5]}
    assert "l1" in table.columns and "l0" not in table.columns
    um = table[table.mechanism == "UM"].set_index("n")["l1"]
    assert um[4] == pytest.approx(4 * 6 / 15, abs=1e-9)  # n(n+2)/(3(n+1)), worked by hand
    checks = pd.read_csv(ran / "results/tables/checks/fig09_l1.csv")
    assert len(checks) >= 1 and checks["holds"].all()
    l0 = pd.read_csv(ran / "results/tables/fig09_l0.csv")  # L0 takes the per-mechanism sizes too
    assert sorted(l0[l0.mechanism == "WM"].n) == [2, 3, 4, 5] and sorted(l0[l0.mechanism == "GM"].n) == [2, 4]


@pytest.mark.workflow
def test_extension_studies_under_other_objectives(ran):
    minimax = pd.read_csv(ran / "results/tables/ext_minimax_l2.csv")
    assert {"worst_L2", "avg_L2"} <= set(minimax.columns)
    baselines = pd.read_csv(ran / "results/tables/ext_baselines_l1.csv")
    assert {"L1", "worst_L1"} <= set(baselines.columns)
    for name in ("ext_minimax_l2", "ext_baselines_l1"):
        assert pd.read_csv(ran / f"results/tables/checks/{name}.csv")["holds"].all()
        assert (ran / f"results/figures/{name}.pdf").stat().st_size > 0


@pytest.mark.workflow
def test_the_default_run_plans_none_of_them(tmp_path):
    """Dry runs of rule all in a fresh copy: with the override every extra job is planned, without it none."""
    work = copy_workflow(tmp_path / "repo")
    (work / "objectives.yaml").write_text(yaml.safe_dump(OVERRIDE, sort_keys=False))
    asked = _run(work, "-n", "--cores", "1", configfiles=(QUICK, "objectives.yaml"))
    plain = _run(work, "-n", "--cores", "1", configfiles=(QUICK,))
    assert asked.returncode == 0 and plain.returncode == 0, plain.stderr[-3000:]
    assert [rule for rule in EXTRA_RULES if rule not in asked.stdout + asked.stderr] == []
    assert [rule for rule in EXTRA_RULES if rule in plain.stdout + plain.stderr] == []
