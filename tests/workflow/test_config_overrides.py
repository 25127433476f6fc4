"""A researcher's own config does what config/README.md says, and is refused as it says.

- In-process: :func:`config_overrides.replace_override_ranges` against hand-worked merges (a range
  replaces the base range whole; overrides apply in order; every other mapping stays merged), and
  each Snakemake merge it corrects differs from it (so the tests could fail).
- End to end, the issue's run: ``fig13.n: {from: 2, to: 7}`` over the base ``{from: 2, to: 16,
  step: 2}`` computes Figure 13's table at n = 2..7, every n, with the real ``snakemake``.
- Every refusal config/README.md lists ("What the check refuses") has a case here, and every case's
  line is one of them: ``snakemake -n`` with the case as its only override config file exits with
  status 2 before any job, printing exactly that one ``config key`` line.
"""

from __future__ import annotations

import copy
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest
import yaml
from config_overrides import is_range, override_ranges, replace_override_ranges
from conftest import REPO, SNAKEMAKE, copy_workflow
from snakemake.utils import update_config


def _merged(base: dict, *overrides: dict) -> dict:
    """What the workflow checks: Snakemake's deep merge of the overrides into ``base``, then the ranges put back."""
    config = copy.deepcopy(base)
    for override in overrides:
        update_config(config, copy.deepcopy(override))
    replace_override_ranges(config, overrides)
    return config


BASE = {"fig13": {"alpha": [0.91], "n": {"from": 2, "to": 16, "step": 2}},
        "fig09": {"n": {"from": 2, "to": 40}, "convergence_check": {"alpha": "10/11", "n": 20}}}


# --------------------------------------------------------------------------- in-process
def test_a_range_without_step_replaces_the_base_range():
    override = {"fig13": {"n": {"from": 2, "to": 7}}}
    plain = copy.deepcopy(BASE)
    update_config(plain, copy.deepcopy(override))
    assert plain["fig13"]["n"] == {"from": 2, "to": 7, "step": 2}  # Snakemake's merge: the issue
    assert _merged(BASE, override)["fig13"] == {"alpha": [0.91], "n": {"from": 2, "to": 7}}


def test_other_mappings_stay_merged_key_by_key():
    config = _merged(BASE, {"fig09": {"convergence_check": {"n": 10}}})
    assert config["fig09"]["convergence_check"] == {"alpha": "10/11", "n": 10}
    assert config["fig09"]["n"] == {"from": 2, "to": 40}


def test_overrides_apply_in_order_ranges_and_lists_alike():
    first, second = {"fig13": {"n": {"from": 3, "to": 9, "step": 3}}}, {"fig13": {"n": {"to": 5, "from": 1}}}
    assert _merged(BASE, first, second)["fig13"]["n"] == {"to": 5, "from": 1}
    assert _merged(BASE, first, {"fig13": {"n": [4, 8]}})["fig13"]["n"] == [4, 8]  # a later list wins
    assert _merged(BASE, {"fig13": {"n": [4, 8]}}, first)["fig13"]["n"] == {"from": 3, "to": 9, "step": 3}


def test_an_incomplete_range_is_kept_as_written_for_the_check_to_refuse():
    assert _merged(BASE, {"fig13": {"n": {"to": 7}}})["fig13"]["n"] == {"to": 7}
    assert _merged(BASE, {"fig13": {"n": {"step": 1}}})["fig13"]["n"] == {"step": 1}


def test_what_counts_as_a_range():
    assert is_range({"from": 1, "to": 2}) and is_range({"step": 3}) and is_range({"from": 1, "stepp": 2})
    assert not is_range({}) and not is_range([1, 2]) and not is_range({"alpha": 0.5, "n": 3})
    assert override_ranges([{"fig09": {"n": {"from": 1, "to": 2}, "alpha": [0.5]}}, {"seed": 3}]) == {
        ("fig09", "n"): {"from": 1, "to": 2}}


def test_wm_near_one_is_refused_only_where_the_docs_say():
    """config/README.md: WM beyond n = 2048 up to alpha about 0.9905 (99/100 included), refused at 0.995."""
    from config_check import config_errors, load_schema

    schema = load_schema(REPO / "workflow/schemas/config.schema.yaml")
    base = yaml.safe_load((REPO / "config/config.yaml").read_text())
    for alpha, refused in (("99/100", False), ("995/1000", True)):
        block = {"fig09": {"n": [2, 4096], "alpha": [alpha], "mechanisms": ["GM", "WM"]}}
        assert bool(config_errors(_merged(base, block), schema)) == refused, alpha


# --------------------------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory) -> Path:
    """A copy of the repository in which only dry runs are made (so no results/ must appear)."""
    return copy_workflow(tmp_path_factory.mktemp("overrides") / "repo")


def _snakemake(work: Path, *args: str, override: dict, name: str) -> subprocess.CompletedProcess:
    """``snakemake *args --configfile {name}`` in ``work``, ``override`` the only config file given."""
    (work / name).write_text(yaml.safe_dump(override, sort_keys=False))
    return subprocess.run([str(SNAKEMAKE), *args, "--configfile", name], cwd=work, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.workflow
def test_the_issues_range_runs_every_n(tmp_path):
    """The base config's Figure 13 steps by 2; the override's range has no step, so n = 2, 3, ..., 7."""
    work = copy_workflow(tmp_path / "repo")
    assert yaml.safe_load((REPO / "config/config.yaml").read_text())["fig13"]["n"]["step"] == 2
    override = {"data": {"source": "snapshot", "population": 500},
                "fig13": {"n": {"from": 2, "to": 7}, "alpha": [0.91], "p": [0.5], "repetitions": 2,
                          "mechanisms": ["GM", "UM"]}}
    done = _snakemake(work, "--cores", "1", "results/tables/fig13_binomial_RMSE.csv", override=override,
                      name="my_range.yaml")
    assert done.returncode == 0, done.stderr[-3000:]
    table = pd.read_csv(work / "results/tables/fig13_binomial_RMSE.csv")
    assert sorted(table["n"].unique()) == [2, 3, 4, 5, 6, 7]


# One case per refusal of config/README.md: (override config file, the one line it must print).
REFUSALS = {
    "alpha above 1": ({"fig07": {"alpha": 1.2}}, "config key 'fig07.alpha': 1.2 is not allowed (1.2 is greater than "
                      "or equal to the maximum of 1); allowed: a number strictly between 0 and 1, or a fraction "
                      'string "p/q" with 0 < p/q < 1'),
    "fraction above 1": ({"fig11": {"alpha": [0.91, "3/2"]}}, "config key 'fig11.alpha[1]': '3/2' is not allowed "
                         "(alpha = exp(-epsilon) must satisfy 0 < alpha < 1); allowed: a number strictly between 0 "
                         'and 1, or a fraction string "p/q" with 0 < p/q < 1'),
    "n = 0": ({"fig07": {"n": 0}}, "config key 'fig07.n': 0 is not allowed (0 is less than the minimum of 1); "
              "allowed: an integer between 1 and 1000000"),
    "n = 4.0": ({"fig07": {"n": 4.0}}, "config key 'fig07.n': 4.0 is not allowed (4.0 is not of type 'integer'); "
                "allowed: an integer between 1 and 1000000"),
    "wrong type": ({"fig11": {"repetitions": "30"}}, "config key 'fig11.repetitions': '30' is not allowed ('30' is "
                   "not of type 'integer'); allowed: an integer >= 1"),
    "misspelt key": ({"fig11": {"reps": 3}}, "config key 'fig11.reps' is unknown; allowed keys of 'fig11': alpha, n, "
                     "p, d, repetitions, mechanisms"),
    "range without from": ({"fig13": {"n": {"to": 7}}}, "config key 'fig13.n.from' is missing; allowed: an integer "
                           "between 1 and 10000"),
    "unknown mechanism": ({"fig06": {"mechanisms": ["GM", "XM"]}}, "config key 'fig06.mechanisms[1]': 'XM' is not "
                          "allowed ('XM' is not one of ['GM', 'EM', 'UM', 'WM', 'WH']); allowed: one of GM, EM, UM, "
                          "WM, WH"),
    "unknown property": ({"fig06": {"properties": ["S", "ZZ"]}}, "config key 'fig06.properties[1]': 'ZZ' is not "
                         "allowed ('ZZ' is not one of ['RH', 'RM', 'CH', 'CM', 'F', 'WH', 'S']); allowed: one of RH, "
                         "RM, CH, CM, F, WH, S"),
    "unknown objective": ({"fig01": {"panels": [{"objective": "L3", "n": 4}]}}, "config key "
                          "'fig01.panels[0].objective': 'L3' is not allowed ('L3' does not match "
                          "'^(L0|L1|L2|L0d:[0-9]+)$'); allowed: L0, L1, L2, or \"L0d:d\" with an integer d >= 0"),
    "empty range": ({"fig09": {"n": {"from": 9, "to": 3}}}, "config key 'fig09.n': the range from 9 to 3 is empty; "
                    "allowed: from <= to (both integers >= 1)"),
    "n above 10000": ({"fig09": {"n": [2, 10001]}}, "config key 'fig09.n[1]': 10001 is not allowed (10001 is greater "
                      "than the maximum of 10000); allowed: an integer between 1 and 10000"),
    "alpha beyond a float": ({"fig07": {"alpha": "1e400"}}, "config key 'fig07.alpha': '1e400' is not allowed ('1e400' "
                             "does not match '^\\\\s*[0-9]+\\\\s*/\\\\s*[1-9][0-9]*\\\\s*$'); allowed: a number "
                             'strictly between 0 and 1, or a fraction string "p/q" with 0 < p/q < 1'),
    # before the fit check's estimate (which built n-sized arrays) and before n_values expands a range
    "n above 10^6": ({"fig07": {"n": 10**12}}, "config key 'fig07.n': 1000000000000 is not allowed (1000000000000 "
                     "is greater than the maximum of 1000000); allowed: an integer between 1 and 1000000"),
    "n range above 10^6": ({"fig06": {"n": {"from": 2, "to": 10**12}}}, "config key 'fig06.n.to': 1000000000000 is not "
                           "allowed (1000000000000 is greater than the maximum of 1000000); allowed: an integer "
                           "between 1 and 1000000"),
    "claims grid above 2048": ({"claims": {"n_grid": {"from": 1, "to": 10**12}}}, "config key 'claims.n_grid.to': "
                               "1000000000000 is not allowed (1000000000000 is greater than the maximum of 2048); "
                               "allowed: an integer between 1 and 2048"),
    "population above 10^7": ({"data": {"population": 10**15}}, "config key 'data.population': 1000000000000000 is "
                              "not allowed (1000000000000000 is greater than the maximum of 10000000); allowed: an "
                              "integer in [1, 10000000]"),
    "WH outside L0": ({"fig13": {"n": [2, 4000], "mechanisms": ["GM", "WH"]}}, "config key 'fig13.n': n = 4000 is not "
                      "allowed for WH (WH has no structural form beyond n = 2048; it is evaluated as GM only under "
                      "L0, in Figures 9 and 10); allowed: n <= 2048 for WH, or WH left out of the study"),
    "WM too near 1": ({"fig09": {"n": [2, 4096], "alpha": ["995/1000"], "mechanisms": ["GM", "WM"]}},
                      "config key 'fig09.n': n = 4096 is not allowed for WM (WM at alpha = 0.995 has no structure: "
                      "its corners (282 wide) and their tails do not fit twice in n = 2048); allowed: n <= 2048 for "
                      "WM, or WM left out of the study"),
    "WH below GM's threshold": ({"fig09": {"n": [2, 3000], "alpha": ["9995/10000"], "mechanisms": ["GM", "WH"]}},
                                "config key 'fig09.n': n = 3000 is not allowed for WH (WH has no structural form "
                                "beyond n = 2048, and GM (an optimal WH design where weakly honest) is evaluated as "
                                "WH only from n >= 2a/(1-a) = 3998 where its weights are weakly honest); allowed: "
                                "n <= 2048 for WH, or WH left out of the study"),
    "L1 beyond the matrix path": ({"fig09": {"objectives": ["L0", "L1"], "n": [2, 3000],
                                             "mechanisms": ["GM", "EM", "UM"]}},
                                  "config key 'fig09.n': n = 3000 is not allowed for GM under L1 (beyond L0 every "
                                  "point is a designed matrix, up to n = 2048); allowed: n <= 2048, or L1 left out of "
                                  "fig09.objectives"),
    "objectives without L0": ({"fig09": {"objectives": ["L1"]}}, "config key 'fig09.objectives': ['L1'] is not "
                              "allowed (it leaves out L0); allowed: a list of distinct objectives among L0, L1, L2 "
                              "that includes L0"),
    "sizes of a mechanism not plotted": ({"fig09": {"n_by_mechanism": {"WM": [2, 3]}, "mechanisms": ["GM", "UM"]}},
                                         "config key 'fig09.n_by_mechanism.WM': WM is not plotted in Figure 9; "
                                         "allowed: a mechanism of fig09.mechanisms (GM, UM)"),
    # the general LP's estimate (countdp.design.memory: 2,000 bytes an entry, growing as sqrt(n / 512)) and the process
    "a design beyond the memory limit": ({"design_memory_mb": 1000,
                                          "fig02": {"panels": [{"objective": "L1", "n": 20000}]}},
                                         "config key 'fig02.panels[0].n': n = 20000 does not fit in memory for "
                                         "LP-RH+RM+CH+CM+F+WH+S under L1 at alpha = 0.62 (reduced LP: needs about "
                                         "4,657.39 GiB, design_memory_mb = 1,000 MB); allowed: group sizes whose "
                                         "designs fit, design_memory_mb of a larger machine, or the key's largest n "
                                         "lowered"),
    # past the engine's own bound for the general path (2 GiB): with F no fast path answers
    "a design past the engine's memory bound": ({"fig02": {"alpha": 0.99, "panels": [{"objective": "L1", "n": 1024}]}},
                                                "config key 'fig02.panels[0].n': n = 1024 is refused by the design "
                                                "engine for LP-RH+RM+CH+CM+F+WH+S under L1 at alpha = 0.99 (no fast "
                                                "path answers, and the general LP at n = 1024 needs about 3.08 GiB, "
                                                "above the memory bound of 2.00 GiB (settings.solver.memory_bound)); "
                                                "allowed: group sizes or alphas a fast path answers (docs/design.md), "
                                                "or the key's largest n lowered"),
    # a study that solves the whole LP outside the engine (countdp.design.full_model: 10,000 bytes an entry)
    "a study beyond the paper past the memory bound": ({"extensions": {"minimax": {"n": [2, 1000]}}},
                                                       "config key 'extensions.minimax.n': n = 1000 does not fit in "
                                                       "memory for the minimax study's lexicographic designs (the "
                                                       "whole design LP, solved outside the design engine, up to "
                                                       "1,002,002 columns, 7,513,004 rows, 16,023,004 non-zeros: needs "
                                                       "about 9.64 GiB, above the memory bound of 2.00 GiB the design "
                                                       "engine keeps for a whole LP (settings.solver.memory_bound)); "
                                                       "allowed: group sizes whose LPs fit, or the key's largest n "
                                                       "lowered"),
}


def _documented() -> list[str]:
    """The refusals config/README.md lists: each `config key ...` snippet of its "What the check refuses"."""
    text = (REPO / "config/README.md").read_text()
    section = text.split("## What the check refuses", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"`(config key [^`]+)`", section)


def test_every_documented_refusal_has_a_case_and_every_case_is_documented():
    documented, lines = _documented(), [line for _, line in REFUSALS.values()]
    assert len(documented) >= 15
    assert [d for d in documented if not any(line.startswith(d) for line in lines)] == []
    assert [line for line in lines if not any(line.startswith(d) for d in documented)] == []


@pytest.fixture(scope="module")
def dry_runs(workflow_copy) -> dict[str, subprocess.CompletedProcess]:
    """``snakemake -n`` with each case's override config file, two at a time (each stops while parsing)."""
    def run(item):
        name, (override, _) = item
        return name, _snakemake(workflow_copy, "-n", "--cores", "1", override=override,
                                name=f"refused_{re.sub(r'[^a-z0-9]+', '_', name.lower())}.yaml")

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(run, REFUSALS.items()))


@pytest.mark.workflow
@pytest.mark.parametrize("name", list(REFUSALS))
def test_refusal_is_one_line_and_exit_status_2(dry_runs, workflow_copy, name):
    done, expected = dry_runs[name], REFUSALS[name][1]
    lines = [line.strip() for line in done.stderr.splitlines() if "config key" in line]
    assert done.returncode == 2, done.stderr[-3000:]
    assert lines == [expected]
    assert "no job was run" in done.stderr and "Traceback" not in done.stderr
    assert not (workflow_copy / "results").exists()
