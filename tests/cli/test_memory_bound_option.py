"""``countdp design --memory-bound GIB``: the general path's memory bound from the command line.

Where no fast path answers, the general LP runs only when its estimate fits the bound.  The
estimate at n = 40 is worked out by hand from :mod:`countdp.design.memory`'s constants: the
process's 256 MiB, the path's 64 MiB and 2,000 B for each of the 41^2 entries, 338,906,320 B or
0.31563 GiB; a bound just below it refuses the design and one just above runs it."""

from __future__ import annotations

import json

import pytest

from countdp.cli import main
from countdp.design.memory import general_path_bytes

ARGV = ["design", "LP", "--props", "F", "--objective", "L1", "--n", "40", "--alpha", "0.9"]
NEED = 256 * 2**20 + 64 * 2**20 + 2_000 * 41**2


def test_the_hand_count_is_the_estimate_the_bound_is_checked_against():
    assert general_path_bytes(40) == NEED == 338_906_320


def test_a_bound_below_the_estimate_refuses_in_one_line_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "d.json"
    assert main([*ARGV, "--memory-bound", f"{(NEED - 2**20) / 2**30:.6f}", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "0.32 GiB" in err and "--memory-bound" in err
    assert list(tmp_path.iterdir()) == []


def test_a_bound_above_the_estimate_runs_the_general_lp_to_a_proven_optimum(tmp_path, capsys):
    out = tmp_path / "d.json"
    assert main([*ARGV, "--memory-bound", f"{(NEED + 2**20) / 2**30:.6f}", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["status"] == "optimal" and record["extra"]["optimality"]["certified"]


@pytest.mark.parametrize("value", ["0", "-1", "abc", "inf", "nan", ""])
def test_a_bad_bound_is_refused_in_one_line(value, capsys):
    assert main([*ARGV, "--memory-bound", value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "memory-bound" in err
