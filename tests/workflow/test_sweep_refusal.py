"""A design the engine refuses fails its sweep job in the config's words (workflow/lib/jobs_design.py).

The engine's own refusal (:class:`MemoryBoundError`) tells a caller of the library to give a time
limit or raise the bound (``--time-limit``, ``time_limit=``, ``--memory-bound``), none of which a
config has.  Here the engine really refuses: LP-RM+CM+WH+S under L1 at n = 1024 and alpha = 0.99 has
no fast path, and its general LP is above the 2 GiB bound.  The sweep job, run in a worker process
as the workflow runs it (:func:`worker_pool.call`), fails with one line naming the config key that
asks for the design and no option of the engine's.
"""

from __future__ import annotations

import copy
import pickle

import pytest
import worker_pool
import yaml
from config_fit import asks_for, sweep_keys
from conftest import REPO
from jobs_design import SweepRefused, sweep

from countdp.design.designer import design_named
from countdp.design.memory import MemoryBoundError
from countdp.studies.sweeps import lp_options

PROPS = ("RM", "CM", "WH", "S")
ENGINE_OPTIONS = ("--time-limit", "time_limit=", "--memory-bound")


def _config() -> dict:
    config = yaml.safe_load((REPO / "config" / "quick.yaml").read_text())
    config["fig02"] = {"alpha": 0.99, "properties": list(PROPS),
                       "panels": [{"objective": "L0", "n": 64}, {"objective": "L1", "n": [8, 1024]}]}
    return config


def test_the_engine_refusal_carries_its_parts_across_a_process_pool():
    with pytest.raises(MemoryBoundError) as refused:
        design_named("LP", 1024, 0.99, objective="L1", properties=PROPS, **lp_options("HIGHS/auto"))
    found = refused.value
    assert any(option in str(found) for option in ENGINE_OPTIONS)  # the library's own words
    assert found.n == 1024 and "above the memory bound" in found.reason and "n=1024" in found.label
    copied = pickle.loads(pickle.dumps(found))
    assert (str(copied), copied.label, copied.reason, copied.failed, copied.n) == \
        (str(found), found.label, found.reason, found.failed, found.n)


def test_the_keys_of_a_sweep_are_those_asking_for_its_designs():
    keys = sweep_keys(_config(), "LP-RM+CM+WH+S", "L1", "0.99")
    assert [key for key, _ in keys] == ["fig02.panels[1].n"]
    assert sweep_keys(_config(), "LP-RM+CM+WH+S", "L1", "0.98") == []
    assert asks_for({"from": 2, "to": 10, "step": 4}, 6) and not asks_for({"from": 2, "to": 10, "step": 4}, 8)
    assert asks_for([8, 1024], 1024) and asks_for(1024, 1024) and not asks_for([8], 1024)


def test_a_refused_design_fails_the_sweep_job_naming_the_config_key(tmp_path):
    keys = sweep_keys(_config(), "LP-RM+CM+WH+S", "L1", "0.99")
    artifacts = [str(tmp_path / "n=1024.json")]
    with pytest.raises(SweepRefused) as failed:
        worker_pool.call(1, sweep, "LP-RM+CM+WH+S", "L1", "0.99", [1024], "HIGHS/auto", artifacts,
                         str(tmp_path / "log"), "0.99", str(tmp_path / "manifest.json"), "test", copy.deepcopy(keys))
    line = str(failed.value)
    assert "\n" not in line and line.startswith("design LP-RM+CM+WH+S L1 n=1024 alpha=0.99 is refused")
    assert "config key 'fig02.panels[1].n' asks for it" in line and "above the memory bound" in line
    assert not any(option in line for option in ENGINE_OPTIONS)
    assert not (tmp_path / "manifest.json").exists()
