"""One ledger, one budget, however it is named: symlinks reach the same budget, hard links are refused.

A ledger reached through a symlink (to the file, or to its folder) is the same ledger: the same
lock, the same file rewritten, and the symlink is still a symlink afterwards.  The races run real
processes, half of them through the symlink and half through the real path.  A hard link cannot
be unified by name (a rename over one name forks the budget), so every operation refuses it and
writes nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest

from countdp.cli import main
from countdp.release.ledger import BudgetExceeded, Ledger, LedgerError

TENTH = Fraction(1, 10)
RACERS = 24
HOLD = 0.05
"""Seconds each racer waits between reading the ledger and writing it back (the window a lock must close)."""

RACER = r"""
import json, os, sys, time
from fractions import Fraction
from countdp.release.ledger import BudgetExceeded, Ledger, LedgerError
path, folder, index, hold = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
open(os.path.join(folder, f"ready-{index}"), "w").close()
while not os.path.exists(os.path.join(folder, "go")):
    time.sleep(0.001)
try:
    print(json.dumps({"debited": Ledger(path).debit(Fraction(1, 10), {"racer": index}, hold=hold).entry_id}))
except BudgetExceeded as exc:
    print(json.dumps({"refused": str(exc)}))
except LedgerError as exc:
    print(json.dumps({"error": str(exc)}))
"""


def _layout(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    """A ledger at ``real/budget.json`` and another name for it, by ``kind``: (real path, other name)."""
    real = tmp_path / "real"
    real.mkdir()
    links = tmp_path / "links"
    links.mkdir()
    ledger = Ledger.create(real / "budget.json", Fraction(1), "race")
    if kind == "file symlink":  # a relative link in another folder
        (links / "alias.json").symlink_to(Path("..") / "real" / "budget.json")
        return ledger.path, links / "alias.json"
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    if kind == "folder symlink":
        return ledger.path, tmp_path / "alias" / "budget.json"
    (links / "chain.json").symlink_to(tmp_path / "alias" / "budget.json")  # a link through a linked folder
    return ledger.path, links / "chain.json"


def _race(tmp_path: Path, names: list[Path]) -> list[dict]:
    """One process per name debits 1/10, all let go at once; their answers."""
    signals = tmp_path / "signals"
    signals.mkdir()
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(name), str(signals), str(i), str(HOLD)],
                               stdout=subprocess.PIPE, text=True) for i, name in enumerate(names)]
    deadline = time.monotonic() + 300
    while sum(1 for p in signals.iterdir() if p.name.startswith("ready-")) < len(names):
        assert time.monotonic() < deadline and all(p.poll() is None for p in racers), "a racer did not start"
        time.sleep(0.01)
    (signals / "go").touch()
    outputs = [p.communicate(timeout=300)[0] for p in racers]
    assert all(p.returncode == 0 for p in racers)
    return [json.loads(out) for out in outputs]


def _files(folder: Path) -> dict[str, bytes | str]:
    """Every name under ``folder``: a symlink's target, a file's bytes (a folder recurses)."""
    found: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            found[str(path.relative_to(folder))] = f"-> {os.readlink(path)}"
        elif path.is_file():
            found[str(path.relative_to(folder))] = path.read_bytes()
    return found


@pytest.mark.parametrize("kind", ["file symlink", "folder symlink", "symlink chain"])
def test_half_the_racers_through_a_symlink_spend_exactly_one_budget(tmp_path, kind):
    real, other = _layout(tmp_path, kind)
    link = other if other.is_symlink() else tmp_path / "alias"
    target = os.readlink(link)
    answers = _race(tmp_path, [other if i % 2 else real for i in range(RACERS)])
    debited = sorted(a["debited"] for a in answers if "debited" in a)
    refused = [(i, a["refused"]) for i, a in enumerate(answers) if "refused" in a]
    assert [a for a in answers if "error" in a] == []
    assert (len(debited), len(refused)) == (10, RACERS - 10)
    for name in (real, other):
        state = Ledger(name).state()
        assert (state.spent, state.remaining) == (1, 0)
        assert sorted(e.entry_id for e in state.entries) == debited
    for index, message in refused:  # each refusal names the file its racer was given
        name = other if index % 2 else real
        assert message == f"{name}: the bit account: this release needs epsilon 0.1 but only 0 remains of 1"
    assert link.is_symlink() and os.readlink(link) == target
    assert sorted(p.name for p in real.parent.iterdir()) == ["budget.json", "budget.json.lock"]
    assert [p.name for p in (tmp_path / "links").iterdir() if not p.is_symlink()] == []  # no lock beside a link
    print(f"{kind}: {len(debited)} debited, {len(refused)} refused, spent 1 of 1")


def test_a_debit_through_a_symlink_rewrites_the_target_and_keeps_its_mode(tmp_path):
    real, link = _layout(tmp_path, "file symlink")
    real.chmod(0o600)
    debit = Ledger(link).debit(TENTH, {"via": "link"})
    assert link.is_symlink() and os.readlink(link) == os.path.join("..", "real", "budget.json")
    assert [e.entry_id for e in Ledger(real).state().entries] == [debit.entry_id]
    assert real.stat().st_mode & 0o777 == 0o600
    Ledger(link).commit(debit.entry_id, {"out": "x.csv"})
    Ledger(link).fail(Ledger(link).debit(TENTH, {}).entry_id, "the disk was full")
    assert link.is_symlink() and Ledger(real).state().spent == Fraction(1, 5)
    with pytest.raises(BudgetExceeded, match=f"^{link}: the bit account: "):
        Ledger(link).check(Fraction(9, 10))


def test_create_through_a_dangling_symlink_creates_its_target(tmp_path):
    (tmp_path / "real").mkdir()
    link = tmp_path / "b.json"
    link.symlink_to(tmp_path / "real" / "budget.json")
    Ledger.create(link, Fraction(1), "b")
    assert link.is_symlink() and (tmp_path / "real" / "budget.json").is_file()
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["budget.json", "budget.json.lock"]
    with pytest.raises(LedgerError, match=f"^{tmp_path / 'real' / 'budget.json'}: exists"):
        Ledger.create(tmp_path / "real" / "budget.json", Fraction(1), "b")


def _operations(entry_id: str) -> dict:
    return {
        "state": lambda ledger: ledger.state(),
        "check": lambda ledger: ledger.check(TENTH),
        "debit": lambda ledger: ledger.debit(TENTH, {}),
        "commit": lambda ledger: ledger.commit(entry_id, {}),
        "fail": lambda ledger: ledger.fail(entry_id, "crashed"),
        "add_account": lambda ledger: ledger.add_account("invariant", Fraction(1, 2)),
    }


@pytest.mark.parametrize("operation", list(_operations("x")))
def test_a_hard_linked_ledger_is_refused_by_every_operation_and_nothing_is_written(tmp_path, operation):
    ledger = Ledger.create(tmp_path / "budget.json", Fraction(1), "b")
    entry = ledger.debit(TENTH, {}).entry_id
    os.link(ledger.path, tmp_path / "other.json")
    before = _files(tmp_path)
    for name in (ledger.path, tmp_path / "other.json"):
        with pytest.raises(LedgerError) as refused:
            _operations(entry)[operation](Ledger(name))
        assert str(refused.value) == (f"{name}: the budget ledger has 2 hard links; one budget is reached through "
                                      "one file (remove the other links, or use a symlink)")
    assert _files(tmp_path) == before  # no lock file beside the second name either
    (tmp_path / "other.json").unlink()
    _operations(entry)[operation](Ledger(ledger.path))  # one name again: it works


def test_a_hard_link_race_is_refused_whole(tmp_path):
    """The old ledger forked here: half the racers wrote one file, half the other."""
    ledger = Ledger.create(tmp_path / "budget.json", Fraction(1), "b")
    os.link(ledger.path, tmp_path / "other.json")
    answers = _race(tmp_path, [tmp_path / ("other.json" if i % 2 else "budget.json") for i in range(RACERS)])
    assert all("hard links" in a.get("error", "") for a in answers)
    assert json.loads(ledger.path.read_text())["entries"] == []


def test_a_ledger_that_is_not_a_regular_file_is_refused(tmp_path, capsys):
    (tmp_path / "folder").mkdir()
    (tmp_path / "to-folder.json").symlink_to(tmp_path / "folder")
    os.mkfifo(tmp_path / "pipe.json")
    for name, kind in [("folder", "a directory"), ("to-folder.json", "a directory"), ("pipe.json", "a FIFO")]:
        for action in (lambda ledger: ledger.state(), lambda ledger: ledger.debit(TENTH, {})):
            with pytest.raises(LedgerError) as refused:
                action(Ledger(tmp_path / name))
            assert str(refused.value) == f"{tmp_path / name}: not a regular file ({kind}); a budget ledger is one file"
    assert main(["budget", "show", str(tmp_path / "to-folder.json")]) == 2
    assert "to-folder.json: not a regular file" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "pipe.json", "to-folder.json"]


def test_budget_show_names_the_link_it_was_given(tmp_path, capsys):
    real, link = _layout(tmp_path, "file symlink")
    assert main(["budget", "show", str(link)]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith(f"ledger     {link} ")
