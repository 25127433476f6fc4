"""A design the engine refuses fails an extension study's job in the config's words
(workflow/lib/jobs_extensions.py, through workflow/lib/engine_refusal.py as a design sweep does).

The objectives, derivability and prior studies design through the engine; its own refusal
(:class:`MemoryBoundError`) names ``--time-limit``, ``time_limit=`` and ``--memory-bound``, none of which
a config has.  Here the engine really refuses, at once: the objectives study at n = 1024 and
alpha = 0.99 reaches LP-WH+S under L1 (no fast path; its general LP above the 2 GiB bound), and WM at
n = 1024 and alpha = 0.995 has no fast path either (the derivability study's third mechanism, the
prior study's fourth named design).  Each job, run in a worker process as the workflow runs it
(:func:`worker_pool.call`), fails with one line naming its config key and no option of the engine's,
and writes no table.
"""

from __future__ import annotations

import pytest
import worker_pool
import yaml
from config_extensions import study_keys
from conftest import REPO
from engine_refusal import DesignRefused
from jobs_extensions import derivability, objectives, prior

from countdp.design.designer import design_lp, design_named
from countdp.design.memory import MemoryBoundError

ENGINE_OPTIONS = ("--time-limit", "time_limit=", "--memory-bound")


def _config(**studies) -> dict:
    config = yaml.safe_load((REPO / "config" / "quick.yaml").read_text())
    for study, block in studies.items():
        config["extensions"][study] = {**config["extensions"].get(study, {}), **block}
    return config


def _outputs(tmp_path, count: int) -> list[str]:
    return [str(tmp_path / f"out{i}.csv") for i in range(count)]


def _assert_named(line: str, key: str, study: str, design: str) -> None:
    assert "\n" not in line
    assert line.startswith(f"design of the {study} study ({design}) is refused by the design engine")
    assert f"config key '{key}' asks for it" in line and "above the memory bound" in line
    assert "allowed: that key's largest n lowered, or an alpha a fast path answers" in line
    assert not any(option in line for option in ENGINE_OPTIONS)


def test_the_engine_refuses_these_designs_in_its_own_words():
    with pytest.raises(MemoryBoundError) as lp:
        design_lp(1024, 0.99, ("WH", "S"), "L1", solver="HIGHS", shortcuts=True)
    with pytest.raises(MemoryBoundError) as wm:
        design_named("WM", 1024, 0.995, solver="HIGHS")
    for refused in (lp.value, wm.value):
        assert refused.n == 1024 and any(option in str(refused) for option in ENGINE_OPTIONS)


def test_the_keys_of_a_study_are_its_group_sizes():
    config = _config(derivability={"n": {"from": 2, "to": 1024, "step": 1022}})
    assert study_keys(config, "derivability") == [("extensions.derivability.n", {"from": 2, "to": 1024, "step": 1022})]
    assert study_keys(config, "objectives") == [("extensions.objectives.n", config["extensions"]["objectives"]["n"])]


def test_a_refused_design_fails_the_objectives_job_naming_its_key(tmp_path):
    config = _config(objectives={"n": 1024, "alpha": 0.99, "p": [0.5]})
    outputs = _outputs(tmp_path, 3)
    with pytest.raises(DesignRefused) as failed:
        worker_pool.call(1, objectives, config["extensions"]["objectives"], {"name": "HIGHS"}, *outputs,
                         [str(tmp_path / "rmse.png")], [str(tmp_path / "heat.png")], str(tmp_path / "log"),
                         study_keys(config, "objectives"))
    _assert_named(str(failed.value), "extensions.objectives.n", "objectives",
                  "n=1024, alpha=0.99, properties=WH+S, objective=L1")
    assert not any((tmp_path / name).exists() for name in ("out0.csv", "out1.csv", "out2.csv", "log"))


def test_a_refused_design_fails_the_derivability_job_naming_its_key(tmp_path):
    config = _config(derivability={"n": [2, 1024], "alpha": [0.995]})
    with pytest.raises(DesignRefused) as failed:
        worker_pool.call(1, derivability, [1024], [0.995], *_outputs(tmp_path, 3), [str(tmp_path / "d.png")],
                         str(tmp_path / "log"), study_keys(config, "derivability"))
    _assert_named(str(failed.value), "extensions.derivability.n", "derivability",
                  "n=1024, alpha=0.995, properties=RM+CM+WH+S, objective=L0")


def test_a_refused_design_fails_the_prior_job_naming_its_key(tmp_path):
    config = _config(prior={"n": 1024, "alpha": 0.995, "binomial_p": [0.5], "adult_targets": []})
    with pytest.raises(DesignRefused) as failed:
        worker_pool.call(1, prior, config["extensions"]["prior"], 0, "HIGHS", [], *_outputs(tmp_path, 3),
                         [str(tmp_path / "p.png")], str(tmp_path / "log"), study_keys(config, "prior"))
    _assert_named(str(failed.value), "extensions.prior.n", "prior",
                  "n=1024, alpha=0.995, properties=RM+CM+WH+S, objective=L0")
