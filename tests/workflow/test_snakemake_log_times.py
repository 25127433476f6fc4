"""The per-rule times of benchmarks/snakemake_log_times.py on a hand-written Snakemake log.

Four jobs: a (0-10 s) and b (0-4 s) run together, c (4-6 s) needs b's output, d (10-13 s)
needs a's and c's.  By hand: job-seconds a 10, b 4, c 2, d 3; the wall clock splits 0-4 s
between a and b (2 s each), 4-6 s between a and c (1 s each), 6-10 s to a alone, 10-13 s to
d; the critical path is a -> d (13 s; b -> c -> d is 9 s).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from snakemake_log_times import critical_path, family, parse_jobs, rule_table  # noqa: E402


def _start(second: int, rule: str, jobid: int, inputs: str, outputs: str) -> str:
    inp = f"    input: {inputs}\n" if inputs else ""
    return (f"[Sun Nov 22 00:00:{second:02d} 2026]\nlocalrule {rule}:\n{inp}    output: {outputs}\n"
            f"    jobid: {jobid}\n    reason: Missing output files: {outputs}\n")


def _finish(second: int, jobid: int, rule: str) -> str:
    return f"[Sun Nov 22 00:00:{second:02d} 2026]\nFinished jobid: {jobid} (Rule: {rule})\n1 of 4 steps done\n"


LOG = (_start(0, "a", 1, "", "A.csv") + _start(0, "design_WM_L0_alpha_0_9", 2, "", "B1.json, B2.json")
       + _finish(4, 2, "design_WM_L0_alpha_0_9") + _start(4, "c", 3, "B2.json", "C.csv") + _finish(6, 3, "c")
       + _finish(10, 1, "a") + _start(10, "d", 4, "A.csv, C.csv", "D.csv") + _finish(13, 4, "d")
       + _start(13, "never_finished", 5, "D.csv", "E.csv"))


def test_jobs_times_shares_and_critical_path():
    jobs = parse_jobs(LOG)
    assert sorted(jobs) == [1, 2, 3, 4]  # the unfinished job is left out
    assert {j: jobs[j].seconds for j in jobs} == {1: 10, 2: 4, 3: 2, 4: 3}
    assert jobs[4].inputs == ["A.csv", "C.csv"] and jobs[2].outputs == ["B1.json", "B2.json"]
    assert critical_path(jobs) == [1, 4]
    table = {name: row for name, *row in rule_table(jobs)}
    assert table["a"] == [1, 10, pytest.approx(7.0), 10]
    assert table["design (WM/WH)"] == [1, 4, pytest.approx(2.0), 0]
    assert table["c"] == [1, 2, pytest.approx(1.0), 0]
    assert table["d"] == [1, 3, pytest.approx(3.0), 3]
    assert sum(row[2] for row in table.values()) == pytest.approx(13.0)


def test_design_sweeps_are_grouped_by_kind():
    assert family("design_GM_L0_alpha_0_5") == "design (GM/EM/UM)"
    assert family("design_LP_RH_CM_WH_S_L0_alpha_0_55") == "design (LP-*)"
    assert family("design_WH_L0_alpha_0_9") == "design (WM/WH)"
    assert family("claims") == "claims"
