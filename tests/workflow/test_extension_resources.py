"""Each extension study's job asks for the memory its study is estimated to need (workflow/rules/
extensions.smk, ``mem_mb``; workflow/lib/config_extensions.py, ``study_mem_mb``), not a fixed 2,000 MB.

The expected requests are worked out here from the costs the estimates are built on (the docstrings
of countdp.design.full_model, countdp.design.memory and countdp.design.estimate): a process of
256 MiB and a path overhead of 64 MiB, and an entry of the (n + 1)^2 matrix 10,000 B for the minimax
and prior studies' whole LP, 60,000 B for the subsets study's 128 models, 2,000 B for the general LP
up to n = 512 (times sqrt(n / 512) beyond), and at least 2,000 B for any LP request (design_lp's own
size check).  The engine's studies are also checked against the estimate function itself.  The
request is at least 1,000 MB and at most design_memory_mb.  A dry run of the workflow shows the
requests on the rules.
"""

from __future__ import annotations

import copy
import math
import re
import subprocess

import pytest
import yaml
from config_extensions import MEM_FLOOR_MB, study_mem_mb
from config_overrides import replace_override_ranges
from conftest import REPO, SNAKEMAKE, copy_workflow
from snakemake.utils import update_config

from countdp.design.estimate import estimate_named
from countdp.studies.objectives import fig8_property_sets

MIB = 2**20
BASE = (256 + 64) * MIB  # the process and the path overhead


def _mb(nbytes: float) -> int:
    return math.ceil(nbytes / MIB)


OVERRIDE = {"extensions": {"minimax": {"n": [2, 300], "objectives": ["L0", "L1"]}, "subsets": {"n": [3, 150]},
                           "prior": {"n": 200}, "objectives": {"n": 700, "alpha": 0.91},
                           "derivability": {"n": [2, 1000], "alpha": [0.91]}}}
EXPECTED = {
    "minimax": _mb(BASE + 10_000 * 301**2),  # 1,185 MB
    "subsets": _mb(BASE + 60_000 * 151**2),  # 1,625 MB
    "prior": MEM_FLOOR_MB,  # its whole LP at n = 200: 706 MB
    "baselines": MEM_FLOOR_MB,  # designs nothing
    "objectives": _mb(BASE + int(2_000 * 701**2 * math.sqrt(700 / 512))),  # LP-WH+S under L1: the general LP
    "derivability": _mb(2_000 * 1001**2),  # WM and WH: design_lp asks 2,000 B an entry before a fast path answers
}


def _config(override: dict) -> dict:
    """config/config.yaml with ``override`` merged in, as Snakemake merges a second config file."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    update_config(config, copy.deepcopy(override))
    replace_override_ranges(config, [override])
    return config


def test_the_shipped_configs_ask_the_floor():
    assert MEM_FLOOR_MB == 1000
    for name in ("config.yaml", "quick.yaml"):
        config = _config(yaml.safe_load((REPO / "config" / name).read_text()))
        assert {study: study_mem_mb(config, study) for study in EXPECTED} == dict.fromkeys(EXPECTED, MEM_FLOOR_MB)


@pytest.mark.parametrize("study", list(EXPECTED))
def test_a_study_asks_for_its_estimate(study):
    assert study_mem_mb(_config(OVERRIDE), study) == EXPECTED[study]


def test_the_engine_studies_ask_for_their_dearest_design_by_the_estimate_function():
    objectives = [estimate_named("LP", 700, 0.91, objective, props, solver="HIGHS", method="simplex", shortcuts=True)
                  for props in fig8_property_sets().values() for objective in ("L0", "L1", "L2")]
    dearest = max(objectives, key=lambda found: found.required_bytes)
    assert (dearest.path, dearest.properties, dearest.objective) == ("reduced LP", ("WH", "S"), "L1")
    assert _mb(dearest.required_bytes) == EXPECTED["objectives"]
    wm, wh = (estimate_named(m, 1000, 0.91, "L0", solver="HIGHS") for m in ("WM", "WH"))
    assert (wm.path, wh.path) == ("large-n template", "closed form")  # fast paths, below design_lp's own ask
    assert wm.peak_bytes + 256 * MIB < 2_000 * 1001**2 and wh.peak_bytes + 256 * MIB < 2_000 * 1001**2
    assert _mb(max(wm.required_bytes, wh.required_bytes)) == EXPECTED["derivability"]


def test_the_request_is_at_most_design_memory_mb():
    assert study_mem_mb(_config({**OVERRIDE, "design_memory_mb": 1500}), "subsets") == 1500
    assert study_mem_mb(_config({**OVERRIDE, "design_memory_mb": 1500}), "minimax") == EXPECTED["minimax"]
    assert study_mem_mb(_config({"design_memory_mb": 800}), "baselines") == 800


@pytest.mark.workflow
def test_a_dry_run_shows_each_jobs_request(tmp_path):
    work = copy_workflow(tmp_path / "repo")
    (work / "over.yaml").write_text(yaml.safe_dump(OVERRIDE))
    targets = [f"results/tables/ext_{name}.csv" for name in (*EXPECTED, "minimax_l1")]
    done = subprocess.run([str(SNAKEMAKE), "-n", "--cores", "1", *targets, "--configfile", "over.yaml"], cwd=work,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    asked = dict(re.findall(r"rule (ext_\w+):.*?resources: .*?\bmem_mb=(\d+)", done.stdout + done.stderr, re.S))
    assert {rule: int(mb) for rule, mb in asked.items()} == \
        {**{f"ext_{study}": mb for study, mb in EXPECTED.items()}, "ext_minimax_l1": EXPECTED["minimax"]}
