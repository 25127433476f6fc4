"""Figures 9-13 at large n: what the config check allows, and a small run through the structural path.

In-process: config/large_n.yaml is valid; a mechanism without a structural form beyond the
matrix path is one line naming the key (WM anywhere, WH outside L0 or where GM is not weakly
honest: Lemma 2's threshold 2a/(1-a)); n above 10^4 is the schema's.  The shipped configs route
every evaluation through the matrix path (their outputs do not change).  End to end (marked
workflow): the same error stops ``snakemake -n`` with exit status 2 before any job, and a small
config computes Figure 9 at n = 300 from structural forms, with no matrix artifact written.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest
import yaml
from config_check import FIGURE_MECHANISMS, config_errors, load_schema
from conftest import REPO, copy_workflow, snakemake
from snakemake.utils import update_config

from countdp.design.forms import FORMS
from countdp.evaluate.routing import ROUTING

SCHEMA = load_schema(REPO / "workflow" / "schemas" / "config.schema.yaml")


def _merged(*names: str) -> dict:
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for name in names:
        update_config(config, yaml.safe_load((REPO / "config" / name).read_text()))
    return config


def _with(config: dict, study: str, **block) -> dict:
    out = copy.deepcopy(config)
    out[study].update(block)
    return out


DEFAULT, QUICK, LARGE = _merged(), _merged("quick.yaml"), _merged("large_n.yaml")


def test_large_n_config_is_valid_and_reaches_ten_thousand():
    assert config_errors(LARGE, SCHEMA) == []
    assert max(LARGE["fig09"]["n"]) == max(LARGE["fig13"]["n"]) == 10_000


def test_wh_outside_l0_beyond_the_matrix_path_is_one_line_naming_the_key():
    """WH has no structural form at all: beyond n = 2048 it is evaluated as GM only under L0 (Figures 9, 10)."""
    errors = config_errors(_with(QUICK, "fig13", n=[2, 4000], mechanisms=["GM", "WH"]), SCHEMA)
    assert errors == ["config key 'fig13.n': n = 4000 is not allowed for WH (WH has no structural form beyond "
                      "n = 2048; it is evaluated as GM only under L0, in Figures 9 and 10); allowed: n <= 2048 for "
                      "WH, or WH left out of the study"]
    assert config_errors(_with(QUICK, "fig13", n=[2, 2048], mechanisms=["GM", "WH"]), SCHEMA) == []  # matrix path


@pytest.mark.parametrize("name", ["WM"])
def test_a_named_mechanism_beyond_the_matrix_path_needs_a_structural_form(name):
    """Whatever the catalogue holds: a name with no structural form is one line naming the key; a name with
    one (WM, once its template design is served as structure) passes."""
    errors = config_errors(_with(QUICK, "fig09", n=[2, 3000], mechanisms=["GM", name]), SCHEMA)
    if name in FORMS:
        assert errors == []
    else:
        assert errors == [f"config key 'fig09.n': n = 3000 is not allowed for {name} ({name} has no structural form "
                          f"beyond n = 2048; structural forms: {', '.join(FORMS)}); allowed: n <= 2048 for {name}, "
                          f"or {name} left out of the study"]
    assert config_errors(_with(QUICK, "fig09", n=[2, 3000], mechanisms=["GM", "EM", "UM", "WH"]), SCHEMA) == []


def test_wh_beyond_the_matrix_path_needs_a_weakly_honest_gm():
    # alpha = 0.9995: GM is weakly honest from n = 2a/(1-a) = 3998 on (Lemma 2); its rounded weights from 3999
    low = config_errors(_with(QUICK, "fig09", n=[3000], alpha=["9995/10000"], mechanisms=["GM", "WH"]), SCHEMA)
    assert len(low) == 1 and "is not allowed for WH" in low[0] and "n >= 2a/(1-a) = 3998" in low[0], low
    assert config_errors(_with(QUICK, "fig09", n=[3999, 10_000], alpha=["9995/10000"], mechanisms=["GM", "WH"]),
                         SCHEMA) == []


def test_the_convergence_check_and_figure_10_are_routed_too():
    check = _with(QUICK, "fig09", convergence_check={"alpha": "9995/10000", "n": 2500})
    errors = config_errors(check, SCHEMA)  # WH there (and WM, without a form) cannot be evaluated
    assert [e.split(":")[0] for e in errors] == ["config key 'fig09.convergence_check.n'"], errors
    assert config_errors(_with(QUICK, "fig10", n=[2, 5000], mechanisms=["GM", "WH", "EM", "UM"]), SCHEMA) == []
    with_wm = config_errors(_with(QUICK, "fig10", n=[2, 5000], mechanisms=["GM", "WM"]), SCHEMA)
    assert with_wm == [] if "WM" in FORMS else (len(with_wm) == 1 and "for WM" in with_wm[0]), with_wm


def test_n_above_ten_thousand_is_the_schemas():
    assert SCHEMA["definitions"]["n_evaluated"]["maximum"] == ROUTING.max_n
    for study, n in (("fig09", [2, 10_001]), ("fig12", 10_001), ("fig13", {"from": 2, "to": 10_001})):
        errors = config_errors(_with(QUICK, study, n=n, mechanisms=["GM"]), SCHEMA)
        assert len(errors) == 1 and f"config key '{study}.n" in errors[0] and "10000" in errors[0], errors


@pytest.mark.parametrize("config", [DEFAULT, QUICK], ids=["default", "quick"])
def test_shipped_configs_use_only_the_matrix_path(config):
    for study in ("fig09", "fig10", "fig11", "fig12", "fig13"):
        block = config[study]
        ns = [block["n"]] if isinstance(block["n"], int) else (
            range(block["n"]["from"], block["n"]["to"] + 1) if isinstance(block["n"], dict) else block["n"])
        alphas = block["alpha"] if isinstance(block["alpha"], list) else [block["alpha"]]
        assert not any(ROUTING.structural(m, n, a) for m in block.get("mechanisms", FIGURE_MECHANISMS)
                       for n in ns for a in alphas), study


# --------------------------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory) -> Path:
    return copy_workflow(tmp_path_factory.mktemp("large_n") / "repo")


def _config(work: Path, name: str, config: dict) -> str:
    (work / "config" / name).write_text(yaml.safe_dump(config, sort_keys=False))
    return f"config/{name}"


@pytest.mark.workflow
def test_snakemake_stops_with_status_2_naming_the_key(workflow_copy):
    bad = _with(QUICK, "fig13", n=[2, 4000], mechanisms=["GM", "WH"])  # WH outside L0: never evaluable there
    done = snakemake(workflow_copy, "-n", "--cores", "1", configfile=_config(workflow_copy, "bad_large.yaml", bad))
    lines = [line for line in done.stderr.splitlines() if "config key" in line]
    assert done.returncode == 2, done.stderr[-3000:]
    assert len(lines) == 1 and lines[0].strip().startswith("config key 'fig13.n': n = 4000 is not allowed for WH")
    assert "Traceback" not in done.stderr and not (workflow_copy / "results").exists()


@pytest.mark.workflow
def test_figure_9_at_n_300_comes_from_structural_forms(workflow_copy):
    config = _with(QUICK, "fig09", mechanisms=["GM", "WH", "EM", "UM"], n=[2, 300])
    table, record = "results/tables/fig09_l0.csv", "results/tables/structural_evaluations.csv"
    done = snakemake(workflow_copy, "--cores", "2", table, record,  # targets after an option that takes one value
                     configfile=_config(workflow_copy, "small_large.yaml", config), timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    rows = pd.read_csv(workflow_copy / table).set_index(["mechanism", "n"])["l0"]
    a = 10 / 11
    assert rows["GM", 300] == pytest.approx(2 * a / (1 + a), abs=1e-12)  # CKS: GM's L0 at every n
    assert rows["WH", 300] == pytest.approx(2 * a / (1 + a), abs=1e-12)
    assert rows["UM", 300] == pytest.approx(1.0, abs=1e-12)
    assert not (workflow_copy / "results/mechanisms/GM/L0/n=300").exists()  # no matrix artifact
    assert (workflow_copy / "results/mechanisms/GM/L0/n=2").exists()  # small n keep the matrix path
    evaluated = pd.read_csv(workflow_copy / record).set_index("mechanism")
    assert set(evaluated["n"]) == {300} and evaluated.loc["WH", "evaluated_as"] == "GM"
    assert "weakly honest" in evaluated.loc["WH", "reason"] and (evaluated["representation"] == "structural").all()


def test_wm_beyond_the_matrix_path_needs_its_template_structure():
    """WM beyond 2048 is a template spread, or near alpha = 1 a corner form; at alpha = 0.998 its corners do
    not fit twice in the largest source size, which the check says before any job runs."""
    for alpha in ("9/10", "99/100"):
        ok = config_errors(_with(QUICK, "fig09", n=[3000], alpha=[alpha], mechanisms=["WM"]), SCHEMA)
        assert ok == [], ok
    near_one = config_errors(_with(QUICK, "fig09", n=[3000], alpha=["499/500"], mechanisms=["WM"]), SCHEMA)
    assert len(near_one) == 1 and "no structure" in near_one[0] and "fig09.n" in near_one[0], near_one
