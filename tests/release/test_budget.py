"""Releases against a privacy budget ledger, and the dry run: real processes, exact amounts.

The race runs 20 real ``countdp release`` processes at once against one ledger with room for
10: the ledger's lock must let exactly 10 through, and the 10 refused must leave nothing behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from fractions import Fraction

import numpy as np
import pytest

from countdp.cli import main
from countdp.release.ledger import Ledger


@pytest.fixture()
def groups(tmp_path):
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 9, 300)
    lines = ["block,n,young,male"] + [f"b{k},{n},{rng.integers(0, n + 1)},{rng.integers(0, n + 1)}"
                                      for k, n in enumerate(sizes)]
    table = tmp_path / "groups.csv"
    table.write_text("\n".join(lines) + "\n")
    return table


def _argv(table, out, cache, *extra):
    return ["release", "--input", str(table), "--count-column", "young,male", "--size-column", "n",
            "--mechanism", "EM", "--cache", str(cache), "--keep", "block", "--out", str(out), *extra]


def test_a_release_debits_the_ledger_and_an_overspend_is_refused_with_nothing_drawn(tmp_path, groups, capsys):
    ledger = tmp_path / "budget.json"
    assert main(["budget", "init", str(ledger), "--epsilon", "1/2", "--dataset", "groups"]) == 0
    cache = tmp_path / "cache"
    assert main(_argv(groups, tmp_path / "a.csv", cache, "--epsilon", "1/10,1/5", "--budget", str(ledger))) == 0
    state = Ledger(ledger).state()
    assert state.spent == Fraction(3, 10) and state.remaining == Fraction(1, 5)
    [entry] = state.entries
    assert entry.status == "committed" and entry.epsilon == Fraction(3, 10)
    sidecar = json.loads((tmp_path / "a.csv.release.json").read_text())
    assert sidecar["budget"]["entry"] == entry.entry_id and sidecar["budget"]["remaining_after"] == "0.2"
    before = ledger.read_bytes()
    capsys.readouterr()
    assert main(_argv(groups, tmp_path / "b.csv", cache, "--total-epsilon", "1/4", "--budget", str(ledger))) == 2
    err = capsys.readouterr().err
    assert "needs epsilon 0.25 but only 0.2 remains of 0.5" in err and "Traceback" not in err
    assert "secure random source" not in err  # refused before the randomness was even announced
    assert ledger.read_bytes() == before
    assert not (tmp_path / "b.csv").exists() and not (tmp_path / "b.csv.release.json").exists()


UNREADABLE_LEDGERS = {"deep.json": ("[" * 100_000 + "]" * 100_000, "not JSON: nested too deeply"),
                      "long.json": ('{"total_epsilon": ' + "9" * 5000 + "}", "not JSON: an integer of more than 4300")}
"""Valid-looking JSON that ``json.loads`` refuses with RecursionError, or a ValueError advising
``sys.set_int_max_str_digits``: each is one line naming the ledger."""


@pytest.mark.parametrize("name", UNREADABLE_LEDGERS)
def test_a_ledger_json_cannot_read_is_one_line_naming_it_and_nothing_is_written(tmp_path, groups, capsys, name):
    text, problem = UNREADABLE_LEDGERS[name]
    ledger = tmp_path / name
    ledger.write_text(text)
    before = sorted(p.name for p in tmp_path.iterdir())
    for argv in (["budget", "show", str(ledger)],
                 _argv(groups, tmp_path / "a.csv", tmp_path / "cache", "--epsilon", "1/10", "--budget", str(ledger))):
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err == f"countdp: error: {ledger}: not a countdp budget ledger ({problem}" + err.split(problem, 1)[1]
        assert err.count("\n") == 1 and "Traceback" not in err
        assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert ledger.read_text() == text


@pytest.mark.parametrize("cache, problem", [("/dev/null", "--cache /dev/null: a device, not a folder"),
                                            ("/dev/null/GM", "--cache /dev/null/GM: its parent /dev/null is a device"),
                                            ("{d}/groups.csv", "--cache {d}/groups.csv: a file, not a folder")])
def test_a_cache_that_is_not_a_folder_is_one_line_naming_the_option(tmp_path, groups, capsys, cache, problem):
    """Once a raw "[Errno 20] Not a directory: '/dev/null/GM/...'" after the table was read."""
    before = sorted(p.name for p in tmp_path.iterdir())
    capsys.readouterr()
    assert main(_argv(groups, tmp_path / "a.csv", cache.format(d=tmp_path), "--epsilon", "1/10")) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"countdp: error: {problem.format(d=tmp_path)}") and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("inside", ["", "mechanisms"])
def test_a_cache_on_a_read_only_mount_is_used_and_not_written(tmp_path, groups, mount, capsys, inside):
    """A read-only mount refuses root too (permission bits would not).  Such a cache (shared by several
    curators) is read; what it lacks is designed for this release alone, with a note saying so: once a
    raw "[Errno 30] Read-only file system: '.../EM'" after the designs were made."""
    read_only = mount("size=1m,ro")
    cache = read_only / inside if inside else read_only
    where = f"its parent {read_only} is " if inside else ""
    capsys.readouterr()
    assert main(_argv(groups, tmp_path / "a.csv", cache, "--epsilon", "1/10", "--seed", "3")) == 0
    err = capsys.readouterr().err
    assert (f"# the mechanism cache {cache}: {where}a folder on a read-only file system; mechanisms it lacks are "
            "designed for this release and not kept\n") in err
    assert (tmp_path / "a.csv").is_file() and not any(read_only.iterdir())
    # the same release from a writable cache: the same designs, so the same noisy counts
    assert main(_argv(groups, tmp_path / "b.csv", tmp_path / "cache", "--epsilon", "1/10", "--seed", "3")) == 0
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert "mechanism cache" not in capsys.readouterr().err


def test_an_immutable_cache_is_read_and_never_written(tmp_path, groups, capsys):
    """``chattr +i`` stops root writing into a folder on a file system mounted read-write: the mechanisms
    the folder holds are used (none designed again), and nothing is added to it."""
    cache = tmp_path / "cache"
    assert main(_argv(groups, tmp_path / "a.csv", cache, "--epsilon", "1/10", "--seed", "3")) == 0
    held = sorted(p.relative_to(cache) for p in cache.rglob("*"))
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(cache)], capture_output=True).returncode:
        pytest.skip("chattr +i is needed (root, a file system with the immutable attribute)")
    try:
        capsys.readouterr()
        assert main(_argv(groups, tmp_path / "b.csv", cache, "--epsilon", "1/10,1/7", "--seed", "3")) == 0
        err = capsys.readouterr().err
        assert f"# the mechanism cache {cache}: a folder this process may not write to;" in err
        assert sorted(p.relative_to(cache) for p in cache.rglob("*")) == held
    finally:
        subprocess.run(["chattr", "-i", str(cache)], check=True)


def test_dry_run_shows_exact_errors_and_the_budget_left_and_writes_nothing(tmp_path, groups, capsys):
    ledger = tmp_path / "budget.json"
    assert main(["budget", "init", str(ledger), "--epsilon", "2"]) == 0
    before = ledger.read_bytes()
    capsys.readouterr()
    out = tmp_path / "o.csv"
    assert main(_argv(groups, out, tmp_path / "cache", "--alpha", "1/2", "--budget", str(ledger), "--dry-run")) == 0
    report = capsys.readouterr().out
    rows = [line.split() for line in report.splitlines() if line.startswith(("young", "male"))]
    assert len(rows) == 2 * 8  # every column and every size 1..8
    young = {int(r[1]): r for r in rows if r[0] == "young"}
    # GM-like EM at alpha = 1/2, n = 1: P = [[2/3, 1/3], [1/3, 2/3]]: L0 = 1/3 for every input, RMSE sqrt(1/3)
    assert float(young[1][4]) == pytest.approx(1 / 3, abs=1e-4) and float(young[1][5]) == pytest.approx(1 / 3, abs=1e-4)
    assert float(young[1][8]) == pytest.approx((1 / 3) ** 0.5, abs=1e-4)
    assert sum(int(r[2]) for r in young.values()) == 300
    assert "would remain" in report and ledger.read_bytes() == before
    assert main(_argv(groups, out, tmp_path / "cache", "--alpha", "1/3", "--budget", str(ledger), "--dry-run")) == 0
    assert "only 2 remains of 2: the release would be refused" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["budget.json", "budget.json.lock", "groups.csv"] or \
        sorted(p.name for p in tmp_path.iterdir()) == ["budget.json", "groups.csv"]


def test_twenty_concurrent_releases_for_a_budget_that_fits_ten(tmp_path, groups):
    ledger = tmp_path / "budget.json"
    assert main(["budget", "init", str(ledger), "--epsilon", "1"]) == 0
    cache = tmp_path / "cache"
    assert main(_argv(groups, tmp_path / "warm.csv", cache, "--total-epsilon", "1/10")) == 0  # designs every size
    go = tmp_path / "go"
    wait = f"import os, sys, time\nwhile not os.path.exists(r'{go}'): time.sleep(0.005)\n"
    runs = []
    for k in range(20):
        argv = _argv(groups, tmp_path / f"o{k}.csv", cache, "--total-epsilon", "1/10", "--budget", str(ledger))
        code = wait + f"from countdp.cli import main\nsys.exit(main({argv!r}))\n"
        runs.append(subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True))
    time.sleep(1.0)  # every process has imported countdp and is waiting
    go.touch()
    codes = [run.wait(timeout=300) for run in runs]
    errors = [run.stderr.read() for run in runs]
    assert sorted(codes) == [0] * 10 + [2] * 10, errors
    state = Ledger(ledger).state()
    assert state.spent == 1 and state.remaining == 0 and len(state.entries) == 10
    assert all(entry.status == "committed" for entry in state.entries)
    for k, code in enumerate(codes):
        out = tmp_path / f"o{k}.csv"
        assert out.exists() == (code == 0) and (tmp_path / f"o{k}.csv.release.json").exists() == (code == 0)
        if code:
            assert "only 0 remains of 1" in errors[k]
    leftovers = [p for p in os.listdir(tmp_path) if p.startswith(".")]
    assert leftovers == []
