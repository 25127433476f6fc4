"""A ledger write interrupted or killed at its worst moment leaves one whole ledger, wherever it is found later.

A write renames a fsynced new version over the old one after marking the old one superseded.  These
tests stop real ``countdp budget`` processes at the mark, with real signals delivered by strace's
fault injection (SIGINT as a user's Ctrl-C, SIGKILL as a crash), and then read the ledger as a user
would: it must read, hold the write or not, and never need repair by hand.  A ledger moved since,
and a release whose ledger went away after it was published, are read as the same budget.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from countdp.release.ledger import Ledger
from countdp.release.ledger_format import SUPERSEDED, superseded
from tests.helpers.release_checks import traceable_strace

COMMAND = [sys.executable, "-m", "countdp.cli"]


@pytest.fixture(scope="module")
def strace() -> str:
    return traceable_strace()


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


def _add_account_under(strace: str, ledger: Path, inject: str) -> subprocess.CompletedProcess:
    """``countdp budget add-account`` on ``ledger`` (one ledger write: its new version's temporary, the mark on
    the old version, the rename) under strace injecting ``inject``."""
    return subprocess.run([strace, "-f", "-qq", "-o", "/dev/null", "-e", f"inject={inject}",
                           *COMMAND, "budget", "add-account", str(ledger), "--invariant-epsilon", "1/2"],
                          capture_output=True, text=True, env=_env(), timeout=300)


def _show(ledger: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*COMMAND, "budget", "show", str(ledger)], capture_output=True, text=True, env=_env(),
                          timeout=300)


def _accounts(ledger: Path) -> set[str]:
    return set(Ledger(ledger).state().accounts)


# The write's ftruncates: the temporary's (1), then the mark's on the old version (2).
MARK = "ftruncate:when=2"


def test_a_ctrl_c_between_the_mark_and_the_rename_leaves_the_ledger_whole(strace, tmp_path):
    """A SIGINT arriving as the old version is marked used to raise KeyboardInterrupt before the rename, and its
    handler removed the new version the mark names: every entry lost.  Now it waits for the rename, then stops
    the command."""
    ledger = tmp_path / "L"
    Ledger.create(ledger, Fraction(1), "interrupted")
    done = _add_account_under(strace, ledger, f"{MARK}:signal=INT")
    assert done.returncode != 0, done.stderr  # the interrupt still stops the command
    shown = _show(ledger)
    assert shown.returncode == 0, shown.stderr
    assert _accounts(ledger) == {"bit", "invariant"}  # the write it waited for is whole
    assert json.loads(ledger.read_text())["format"] != SUPERSEDED
    assert [p.name for p in tmp_path.iterdir()] and not list(tmp_path.glob(".L.*.tmp"))


def test_a_kill_between_the_mark_and_its_truncation_leaves_a_document(strace, tmp_path):
    """A writer killed after writing the mark over a longer old version, before truncating it, left the mark
    followed by the old version's tail: no JSON, refused until repaired by hand.  The mark is now padded to
    the old version's length, so the file is the mark whatever the truncation did, and a read follows it to
    the fsynced new version beside it."""
    ledger = tmp_path / "L"
    Ledger.create(ledger, Fraction(1), "a ledger whose versions are longer than the mark " * 10)
    mark = superseded(ledger, ledger.with_name(".L.0123456789ab.tmp"))
    assert len(ledger.read_bytes()) > len(mark) + 100  # a kill before the truncation left a tail, unpadded
    done = _add_account_under(strace, ledger, f"{MARK}:signal=KILL")
    assert done.returncode < 0 or done.returncode == 137
    shown = _show(ledger)
    assert shown.returncode == 0, shown.stderr
    assert _accounts(ledger) == {"bit", "invariant"}


def test_a_ledger_left_mid_write_then_moved_is_the_same_budget(strace, tmp_path):
    """Killed at the rename, a write leaves the old version marked and its replacement beside it.  Once the
    folder is moved, the mark's own path no longer exists: the replacement is found beside the ledger as it
    is named now, read, and renamed into place by the next write (which also removes dead temporaries)."""
    folder = tmp_path / "before"
    folder.mkdir()
    Ledger.create(folder / "L", Fraction(1), "moved")
    done = _add_account_under(strace, folder / "L", "rename:signal=KILL:when=1")
    assert done.returncode != 0
    assert json.loads((folder / "L").read_text())["format"] == SUPERSEDED
    moved = tmp_path / "after"
    folder.rename(moved)
    (moved / ".L.0123456789ab.tmp").write_text("a dead writer's temporary")
    shown = _show(moved / "L")
    assert shown.returncode == 0, shown.stderr
    assert _accounts(moved / "L") == {"bit", "invariant"}
    Ledger(moved / "L").debit(Fraction(1, 4), {"after": "the move"})
    document = json.loads((moved / "L").read_text())
    assert document["format"] != SUPERSEDED and set(document["accounts"]) == {"bit", "invariant"}
    assert not list(moved.glob(".L.*.tmp"))
    assert Ledger(moved / "L").state().accounts["bit"].spent == Fraction(1, 4)


def test_a_release_published_before_its_ledger_went_away_reports_itself_published(tmp_path):
    """The ledger renamed away after the debit (here by the note the release prints between the debit and the
    draw): committing the entry fails, but the table and sidecar are published, so the release returns as
    published, says the entry stays debited, and the entry is spent in the ledger under its new name."""
    from countdp.release.api import release_table

    ledger = tmp_path / "L"
    Ledger.create(ledger, Fraction(1), "moved mid-release")
    table = tmp_path / "groups.csv"
    table.write_text("group,c,n\na,1,3\nb,2,4\n")
    notes: list[str] = []

    def note(line: str) -> None:
        notes.append(line)
        if ledger.exists():
            ledger.rename(tmp_path / "L2")

    out = tmp_path / "noisy.csv"
    release_table(table, ["c"], size="n", mechanism="EM", alpha="1/2", out=out, budget=ledger, keep=["group"],
                  notes=note)
    assert out.exists() and Path(f"{out}.release.json").exists()
    assert any("could not be marked committed" in line and "stays 'debited'" in line for line in notes), notes
    entries = Ledger(tmp_path / "L2").state().entries
    assert [entry.status for entry in entries] == ["debited"]
