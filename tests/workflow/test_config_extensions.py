"""A config whose studies beyond the paper would not fit is refused before any job runs
(workflow/lib/config_extensions.py).

The minimax, prior and subsets studies solve the whole design LP outside the engine: the limit is
``design_memory_mb`` (or what is available), and at most the engine's memory bound for a whole LP;
a study just over the limit is refused in one line naming its key, one MB more and it passes.  The
objectives study designs through the engine: a size the engine refuses (checked against the engine
itself) is refused by its key.  The shipped configs pass.
"""

from __future__ import annotations

import copy

import pytest
import yaml
from config_check import config_errors, load_schema
from config_overrides import replace_override_ranges
from conftest import REPO
from snakemake.utils import update_config

from countdp.design.designer import design_lp
from countdp.design.full_model import SUBSET_MAP_BYTES_PER_ENTRY, full_model_bytes
from countdp.design.memory import MemoryBoundError
from countdp.design.settings import DEFAULT_SETTINGS

SCHEMA = load_schema(REPO / "workflow" / "schemas" / "config.schema.yaml")


def _config(override: dict, base: str = "config.yaml") -> dict:
    """``base`` with ``override`` merged in, as Snakemake merges a second config file."""
    config = yaml.safe_load((REPO / "config" / base).read_text())
    update_config(config, copy.deepcopy(override))
    replace_override_ranges(config, [override])
    return config


@pytest.mark.parametrize("name", ["config.yaml", "quick.yaml", "large_n.yaml"])
def test_shipped_configs_pass(name):
    override = yaml.safe_load((REPO / "config" / name).read_text())
    assert config_errors(_config(override), SCHEMA) == []


def test_minimax_just_over_the_limit_is_refused_in_one_line_naming_the_key():
    need = full_model_bytes(300) // 2**20
    over = {"design_memory_mb": need, "extensions": {"minimax": {"n": [2, 300]}}}
    refused = config_errors(_config(over), SCHEMA)
    assert len(refused) == 1 and refused[0].startswith("config key 'extensions.minimax.n': n = 300 does not fit")
    assert "90,602 columns" in refused[0] and f"design_memory_mb = {need:,} MB" in refused[0]  # 301^2 + t
    assert config_errors(_config({**over, "design_memory_mb": need + 1}), SCHEMA) == []


def test_a_study_past_the_engines_bound_is_refused_whatever_the_machine():
    """Minimax at n = 1000 (measured past 2.7 GB before it was stopped) needs more than the bound the
    engine keeps for a whole LP: refused with a limit of 64 GB too; n = 400 is within it."""
    big = {"design_memory_mb": 64_000, "extensions": {"minimax": {"n": [2, 1000]}}}
    refused = config_errors(_config(big), SCHEMA)
    assert len(refused) == 1 and refused[0].startswith("config key 'extensions.minimax.n': n = 1000 does not fit")
    assert "settings.solver.memory_bound" in refused[0]
    assert full_model_bytes(400) <= DEFAULT_SETTINGS.solver.memory_bound
    assert config_errors(_config({**big, "extensions": {"minimax": {"n": [2, 400]}}}), SCHEMA) == []


def test_each_study_is_named_by_its_own_key():
    """The subsets study keeps all 128 models: refused at an n the prior study's two solves fit at."""
    n = 250
    assert full_model_bytes(n) <= DEFAULT_SETTINGS.solver.memory_bound < full_model_bytes(n, SUBSET_MAP_BYTES_PER_ENTRY)
    refused = config_errors(_config({"extensions": {"subsets": {"n": [3, n]}, "prior": {"n": n}}}), SCHEMA)
    assert [line.split(":")[0] for line in refused] == ["config key 'extensions.subsets.n'"]
    refused = config_errors(_config({"extensions": {"prior": {"n": 500}}}), SCHEMA)
    assert [line.split(":")[0] for line in refused] == ["config key 'extensions.prior.n'"]


def test_an_objectives_study_the_engine_refuses_is_refused_by_its_key():
    refused = config_errors(_config({"extensions": {"objectives": {"n": 1024, "alpha": 0.99}}}), SCHEMA)
    assert len(refused) == 1 and refused[0].startswith("config key 'extensions.objectives.n': n = 1024 is refused "
                                                       "by the design engine for LP-WH+S under L1")
    with pytest.raises(MemoryBoundError, match="no fast path answers"):  # the engine's own answer
        design_lp(1024, 0.99, ("WH", "S"), "L1", solver="HIGHS", shortcuts=True)
