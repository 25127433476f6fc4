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
import shlex
import shutil
import socket
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest

from countdp.cli import main
from countdp.release.ledger import BudgetExceeded, Ledger, LedgerError
from tests.helpers.ledger_processes import DEBIT, holding_the_lock, start_debit

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
    (tmp_path / "to-device.json").symlink_to("/dev/null")
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(tmp_path / "socket.json"))
        # each named as every refusal of countdp names it (countdp.validation.file_kind): once "a FIFO" here,
        # "a named pipe (FIFO)" for a mechanism file, and "special" for a device or a socket
        for name, kind in [("folder", "a directory"), ("to-folder.json", "a directory"),
                           ("pipe.json", "a named pipe (FIFO)"), ("to-device.json", "a device"),
                           ("socket.json", "a socket")]:
            for action in (lambda ledger: ledger.state(), lambda ledger: ledger.debit(TENTH, {})):
                with pytest.raises(LedgerError) as refused:
                    action(Ledger(tmp_path / name))
                assert str(refused.value) == \
                    f"{tmp_path / name}: not a regular file ({kind}); a budget ledger is one file"
    assert main(["budget", "show", str(tmp_path / "to-folder.json")]) == 2
    assert "to-folder.json: not a regular file" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "pipe.json", "socket.json", "to-device.json",
                                                          "to-folder.json"]


def test_budget_show_names_the_link_it_was_given(tmp_path, capsys):
    real, link = _layout(tmp_path, "file symlink")
    assert main(["budget", "show", str(link)]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith(f"ledger     {link} ")




def test_a_hard_link_made_during_a_debit_is_refused_before_the_rename(tmp_path):
    """The review's fork: a link made while a debit held the lock was left on the old version, a second budget."""
    ledger = Ledger.create(tmp_path / "budget.json", Fraction(1), "b")
    writer = start_debit(ledger.path, "3/5", 1)
    holding_the_lock(ledger.path, writer)
    before = _files(tmp_path)
    os.link(ledger.path, tmp_path / "other.json")
    answer = json.loads(writer.communicate(timeout=120)[0])
    assert answer == {"refused": f"{ledger.path}: the budget ledger has 2 hard links; one budget is reached through "
                                 "one file (remove the other links, or use a symlink)"}
    assert _files(tmp_path) == {**before, "other.json": before["budget.json"]}  # nothing written, no temporary
    with pytest.raises(LedgerError, match="2 hard links"):
        Ledger(tmp_path / "other.json").debit(Fraction(3, 5), {})
    (tmp_path / "other.json").unlink()
    assert Ledger(ledger.path).state().spent == 0


def test_the_old_version_is_marked_superseded_and_a_name_left_on_it_is_never_a_budget(tmp_path):
    ledger = Ledger.create(tmp_path / "budget.json", Fraction(1), "b")
    ledger.debit(TENTH, {})
    with open(ledger.path, "rb") as old:  # a descriptor of the version a debit will replace
        ledger.debit(TENTH, {})
        stale = old.read()
    document = json.loads(stale)
    assert document["format"] == "countdp-budget-ledger/superseded" and document["ledger"] == str(ledger.path)
    (tmp_path / "other.json").write_bytes(stale)  # what a hard link made just before the rename reaches
    for operation, action in _operations("x").items():
        with pytest.raises(LedgerError) as refused:
            action(Ledger(tmp_path / "other.json"))
        assert str(refused.value) == (
            f"{tmp_path / 'other.json'}: a superseded old version of the budget ledger {ledger.path} (a name made "
            f"for it while it was rewritten): never a budget; remove this name and use {ledger.path}"), operation
    assert (tmp_path / "other.json").read_bytes() == stale and Ledger(ledger.path).state().spent == Fraction(1, 5)


LINKER = r"""
import os, sys, time
path, folder, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
end, k, kept = time.monotonic() + seconds, 0, 0
while time.monotonic() < end:
    name = os.path.join(folder, f"n{k}")
    k += 1
    try:
        os.link(path, name)
    except FileNotFoundError:
        continue  # the version found was unlinked by the rename before the link was made
    if os.stat(name).st_ino == os.stat(path).st_ino:
        os.unlink(name)  # a name for the ledger as it is now: the writer refuses it, or it is removed here
    else:
        kept += 1  # the ledger was replaced between the link and the check: a name left on an old version
print(k, kept)
"""


def test_names_linked_to_the_ledger_while_it_is_rewritten_never_fork_it(tmp_path):
    """One process links the ledger to new names as fast as it can while another debits 1/1000 at a time: a name
    left on an old version (linked after the writer's last check) reads as superseded, never as a budget."""
    ledger = Ledger.create(tmp_path / "budget.json", Fraction(1), "b")
    (tmp_path / "names").mkdir()
    writer = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\nfrom fractions import Fraction\nfrom countdp.release.ledger import Ledger, LedgerError\n"
        "end, done = time.monotonic() + float(sys.argv[2]), 0\nwhile time.monotonic() < end:\n"
        "    try:\n        Ledger(sys.argv[1]).debit(Fraction(1, 1000), {})\n        done += 1\n"
        "    except LedgerError as exc:\n        assert 'hard links' in str(exc), exc\nprint(done)\n"),
        str(ledger.path), "3"], stdout=subprocess.PIPE, text=True)
    linker = subprocess.Popen([sys.executable, "-c", LINKER, str(ledger.path), str(tmp_path / "names"), "3"],
                              stdout=subprocess.PIPE, text=True)
    debited = int(writer.communicate(timeout=120)[0])
    links, kept = map(int, linker.communicate(timeout=120)[0].split())
    assert writer.returncode == linker.returncode == 0
    stale = sorted((tmp_path / "names").iterdir())
    assert len(stale) == kept
    for name in stale:
        with pytest.raises(LedgerError, match="superseded old version|hard links"):
            Ledger(name).debit(Fraction(1, 1000), {})
        name.unlink()
    state = Ledger(ledger.path).state()
    assert state.spent == Fraction(debited, 1000) and len(state.entries) == debited
    print(f"{debited} debits, {links} links, {kept} names left on old versions, all refused")


def test_a_writer_killed_between_the_mark_and_the_rename_loses_nothing(tmp_path):
    """The state it leaves (built here): the ledger marked superseded, its complete replacement beside it."""
    ledger = Ledger.create(tmp_path / "budget.json", Fraction(1), "b")
    ledger.debit(TENTH, {})
    with open(ledger.path, "rb") as old:
        ledger.debit(TENTH, {})
        marked = old.read()
    replacement = tmp_path / json.loads(marked)["replacement"]
    replacement.write_bytes(ledger.path.read_bytes())
    ledger.path.write_bytes(marked)
    assert Ledger(ledger.path).state().spent == Fraction(1, 5)  # a read reads the replacement, writing nothing
    assert ledger.path.read_bytes() == marked and replacement.exists()
    assert ledger.debit(TENTH, {}).spent_before == Fraction(1, 5)  # a write first finishes the rename
    assert sorted(p.name for p in tmp_path.iterdir()) == ["budget.json", "budget.json.lock"]
    assert len(ledger.state().entries) == 3
    replacement.write_bytes(b"")
    ledger.path.write_bytes(marked)
    replacement.unlink()
    with pytest.raises(LedgerError, match=f"superseded by {replacement}, which is missing"):
        ledger.state()


@pytest.mark.skipif(shutil.which("unshare") is None or subprocess.run(
    ["unshare", "-m", "true"], capture_output=True).returncode != 0, reason="needs a mount namespace")
def test_a_bind_mounted_ledger_is_refused_in_one_line_with_nothing_spent(tmp_path):
    ledger = Ledger.create(tmp_path / "budget.json", Fraction(1), "b")
    ledger.debit(TENTH, {})
    before = _files(tmp_path)
    script = (f"mount --bind {shlex.quote(str(ledger.path))} {shlex.quote(str(ledger.path))} && "
              f"{shlex.quote(sys.executable)} -c {shlex.quote(DEBIT)} {shlex.quote(str(ledger.path))} 1/10 0")
    result = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stderr) == (0, "")
    assert json.loads(result.stdout) == {"refused": f"{ledger.path}: cannot replace {ledger.path} (Device or resource "
                                                    "busy): a budget ledger cannot be a mount point; nothing was "
                                                    "written"}
    assert _files(tmp_path) == before and Ledger(ledger.path).state().spent == TENTH
