"""A config whose designs would not fit in memory is refused before any job runs (workflow/lib/config_fit.py).

The limit is ``design_memory_mb`` (a settings value of the config, so the tests need no monkeypatch):
a config whose largest design needs just more than it is refused with one line naming the key;
one MB more and it passes.  End to end, ``snakemake -n`` on a copy exits 2 for the first and 0
for the second; the shipped configs pass on this machine.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from config_check import config_errors, load_schema
from conftest import REPO, copy_workflow, snakemake

from countdp.design.designer import design_named
from countdp.design.estimate import estimate_named
from countdp.design.memory import MemoryBoundError
from countdp.studies.sweeps import lp_options

SCHEMA = load_schema(REPO / "workflow" / "schemas" / "config.schema.yaml")
SWEEP = {"solver": "HIGHS", "shortcuts": True}


def _load(name: str) -> dict:
    return yaml.safe_load((REPO / "config" / name).read_text())


def _with_fig07_at(n: int, limit_mb: int | None) -> dict:
    config = copy.deepcopy(_load("quick.yaml"))
    config["fig07"]["n"] = n
    if limit_mb is not None:
        config["design_memory_mb"] = limit_mb
    return config


def _need_mb(n: int) -> int:
    """The largest need (whole MB, rounded down) of Figure 7's designs at ``n`` (GM, EM, WM at 0.91)."""
    needs = [estimate_named(m, n, 0.91, **({} if m != "WM" else SWEEP)).required_bytes for m in ("GM", "EM", "WM")]
    return max(needs) // 2**20


@pytest.mark.parametrize("name", ["config.yaml", "quick.yaml"])
def test_shipped_configs_fit(name):
    assert config_errors(_load(name), SCHEMA) == []


def test_just_over_the_limit_is_refused_in_one_line_naming_the_key():
    need = _need_mb(300)
    refused = config_errors(_with_fig07_at(300, need), SCHEMA)
    assert len(refused) == 1 and refused[0].startswith("config key 'fig07.n': n = 300 does not fit in memory for WM")
    assert f"design_memory_mb = {need:,} MB" in refused[0]
    assert config_errors(_with_fig07_at(300, need + 1), SCHEMA) == []


def test_an_lp_at_twenty_thousand_is_refused_on_this_machine():
    config = copy.deepcopy(_load("quick.yaml"))
    config["fig02"]["panels"][1]["n"] = 20000
    refused = config_errors(config, SCHEMA)
    assert len(refused) == 1 and refused[0].startswith("config key 'fig02.panels[1].n': n = 20000 does not fit")
    assert "GiB available" in refused[0]


def test_wm_beyond_the_matrix_path_is_refused_by_its_key():
    """WM at 4096 in Figure 6 (the sweeps' options: an LP at that size, not a structure) needs tens of GB."""
    config = copy.deepcopy(_load("quick.yaml"))
    config["fig06"]["n"] = [2, 4096]
    config["design_memory_mb"] = 16_000
    refused = config_errors(config, SCHEMA)
    assert len(refused) == 1 and refused[0].startswith("config key 'fig06.n': n = 4096 does not fit in memory")


def _fig02_at(alpha: float, n: int) -> dict:
    config = copy.deepcopy(_load("quick.yaml"))
    config["fig02"] = {"alpha": alpha, "properties": ["RM", "CM", "WH", "S"],
                       "panels": [{"objective": o, "n": n} for o in ("L1", "L0d:1", "L2", "L0")]}
    return config


def test_a_design_the_engine_refuses_by_its_memory_bound_is_refused_by_its_key():
    """n = 1024 on RM+CM+WH+S: past the general path's memory bound (2 GiB), which the sweeps do not
    raise, a design no fast path answers is refused by the engine itself (MemoryBoundError, at once);
    the config check says so first, one line per key.  At alpha = 0.99 only L0 has a fast path (the
    square-corner template); at 0.98 the square corners answer L1 and L2 too, and L0,1 alone is
    refused.  At n = 512 the general path fits the bound, and nothing is refused."""
    refused = config_errors(_fig02_at(0.99, 1024), SCHEMA)
    assert [line.split(":")[0] for line in refused] == [f"config key 'fig02.panels[{k}].n'" for k in range(3)]
    assert all("is refused by the design engine" in line and "above the memory bound" in line for line in refused)
    assert [line.split(":")[0] for line in config_errors(_fig02_at(0.98, 1024), SCHEMA)] == \
        ["config key 'fig02.panels[1].n'"]
    assert config_errors(_fig02_at(0.99, 512), SCHEMA) == []
    for objective in ("L1", "L0d:1", "L2"):  # the engine's own answer, with the sweeps' options
        with pytest.raises(MemoryBoundError, match="no fast path answers"):
            design_named("LP", 1024, 0.99, objective=objective, properties=("RM", "CM", "WH", "S"),
                         **lp_options("HIGHS/auto"))


@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory) -> Path:
    return copy_workflow(tmp_path_factory.mktemp("fit") / "repo")


@pytest.mark.workflow
def test_snakemake_refuses_just_over_and_runs_just_under(workflow_copy):
    need = _need_mb(300)
    for limit, code in ((need, 2), (need + 1, 0)):
        path = workflow_copy / "config" / f"fit_{limit}.yaml"
        path.write_text(yaml.safe_dump(_with_fig07_at(300, limit), sort_keys=False))
        done = snakemake(workflow_copy, "-n", "--cores", "1", configfile=f"config/{path.name}", timeout=300)
        text = done.stdout + done.stderr
        assert done.returncode == code, text[-3000:]
        problems = [line.strip() for line in text.splitlines() if "config key" in line]
        if code:
            assert len(problems) == 1 and problems[0].startswith("config key 'fig07.n': n = 300 does not fit")
            assert "no job was run" in text
        else:
            assert problems == []
    assert not (workflow_copy / "results").exists()
