"""The privacy budget ledger: exact amounts, refusals that write nothing, real concurrent debits, the CLI."""

from __future__ import annotations

import fcntl
import json
import os
import stat
import subprocess
import sys
import time
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from countdp.cli import main
from countdp.release.ledger import (
    FORMAT,
    UNITS,
    UNKNOWN,
    AccountState,
    BudgetExceeded,
    Ledger,
    LedgerError,
    amount_text,
    lock_path,
    parse_amount,
)
from tests.helpers.ledger_processes import holding_the_lock, start_debit

TENTH = Fraction(1, 10)


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    return Ledger.create(tmp_path / "adult.json", Fraction(1), "adult")


# ---------------------------------------------------------------------------- amounts


@pytest.mark.parametrize("amount,text", [
    (TENTH, "0.1"), (Fraction(1), "1"), (Fraction(5, 2), "2.5"), (Fraction(3, 40), "0.075"),
    (Fraction(1, 1024), "0.0009765625"), (Fraction(1, 3), "1/3"), (Fraction(7, 30), "7/30"), (Fraction(12), "12"),
])
def test_amount_text_is_a_decimal_when_one_exists(amount, text):
    assert amount_text(amount) == text


@given(st.fractions(min_value=Fraction(1, 10**40), max_value=10**6))
def test_amounts_read_back_exactly(amount):
    text = amount_text(amount)
    assert parse_amount(text) == amount
    # a finite decimal exactly when the denominator has no prime factor but 2 and 5
    denominator = amount.denominator
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    assert ("/" in text) == (denominator != 1)
    if "/" not in text:
        with localcontext() as ctx:
            ctx.prec = 200
            assert Decimal(text) == Decimal(amount.numerator) / Decimal(amount.denominator)


@pytest.mark.parametrize("bad,problem", [
    (0.1, "not the float"), ("0.1x", "decimal or 'p/q'"), ("-0.1", "negative"), ("0", "> 0"), ("1/0", "zero"),
    ("1e-3", "decimal or 'p/q'"), (None, "decimal or 'p/q'"), (True, "decimal or 'p/q'"),
])
def test_bad_amounts_are_refused(bad, problem):
    with pytest.raises(ValueError, match=problem):
        parse_amount(bad)


# ---------------------------------------------------------------------------- debits


def test_ten_tenths_fit_a_budget_of_one_and_the_eleventh_writes_nothing(ledger):
    for k in range(10):
        debit = ledger.debit(TENTH, {"command": "release", "columns": [f"c{k}"]})
        assert (debit.epsilon, debit.spent_before, debit.remaining_after) == (TENTH, k * TENTH, 1 - (k + 1) * TENTH)
    before = ledger.path.read_bytes()
    with pytest.raises(BudgetExceeded) as refused:
        ledger.debit(TENTH, {"command": "release"})
    assert str(refused.value) == f"{ledger.path}: the bit account: this release needs epsilon 0.1 but only 0 remains " \
                                 "of 1"
    assert ledger.path.read_bytes() == before
    with pytest.raises(BudgetExceeded):
        ledger.check(Fraction(1, 10**30))
    state = ledger.state()
    assert (state.total, state.spent, state.remaining, len(state.entries)) == (1, 1, 0, 10)
    assert sorted(p.name for p in ledger.path.parent.iterdir()) == ["adult.json", "adult.json.lock"]  # no temporaries


def test_check_reports_without_writing(ledger):
    before = ledger.path.read_bytes()
    assert ledger.check(Fraction(1, 3)) == Fraction(2, 3)
    assert ledger.check(Fraction(1)) == 0
    with pytest.raises(BudgetExceeded, match="needs epsilon 1.1 but only 1 remains of 1"):
        ledger.check(Fraction(11, 10))
    assert ledger.path.read_bytes() == before


def test_thirds_and_tenths_add_exactly(ledger):
    ledger.debit(Fraction(1, 3), {})
    ledger.debit(Fraction(1, 3), {})
    ledger.debit(Fraction(3, 10), {})
    assert ledger.state().remaining == Fraction(1, 30)
    with pytest.raises(BudgetExceeded, match="needs epsilon 0.04 but only 1/30 remains of 1"):
        ledger.debit(Fraction(1, 25), {})
    assert ledger.debit(Fraction(1, 30), {}).remaining_after == 0
    assert [entry["epsilon"] for entry in json.loads(ledger.path.read_text())["entries"]] == ["1/3", "1/3", "0.3",
                                                                                              "1/30"]


def test_commit_marks_the_entry_and_leaves_the_budget_spent(ledger):
    first = ledger.debit(Fraction(1, 4), {"command": "release", "input_sha256": "ab" * 32})
    second = ledger.debit(Fraction(1, 4), {"command": "release"})
    ledger.commit(first.entry_id, {"table": "out.csv"})
    state = ledger.state()
    assert [(e.entry_id, e.status) for e in state.entries] == [(first.entry_id, "committed"),
                                                              (second.entry_id, "debited")]
    assert state.entries[0].outputs == {"table": "out.csv"} and state.entries[0].what["input_sha256"] == "ab" * 32
    assert state.spent == Fraction(1, 2)  # the uncommitted debit counts as spent
    with pytest.raises(LedgerError, match="already committed"):
        ledger.commit(first.entry_id, {})
    with pytest.raises(LedgerError, match="no entry 'nope'"):
        ledger.commit("nope", {})


def test_bad_debits_write_nothing(ledger):
    before = ledger.path.read_bytes()
    for epsilon, what in [(0.1, {}), (Fraction(0), {}), (Fraction(-1, 10), {}), (TENTH, {"x": object()}),
                          (TENTH, {"x": float("nan")}), (TENTH, ["not", "a", "dict"])]:
        with pytest.raises(ValueError):
            ledger.debit(epsilon, what)
    assert ledger.path.read_bytes() == before


def test_create_refuses_an_existing_file_and_a_missing_folder(tmp_path, ledger):
    before = ledger.path.read_bytes()
    with pytest.raises(LedgerError, match="exists"):
        Ledger.create(ledger.path, Fraction(5), "adult")
    assert ledger.path.read_bytes() == before
    with pytest.raises(LedgerError, match="does not exist"):
        Ledger.create(tmp_path / "no" / "ledger.json", Fraction(1), "x")
    with pytest.raises(LedgerError, match="> 0"):
        Ledger.create(tmp_path / "zero.json", Fraction(0), "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adult.json", "adult.json.lock"]


def test_files_get_the_umask_and_a_rewrite_keeps_the_mode(tmp_path):
    old = os.umask(0o027)
    try:
        ledger = Ledger.create(tmp_path / "b.json", Fraction(1), "b")
    finally:
        os.umask(old)
    assert stat.S_IMODE(ledger.path.stat().st_mode) == 0o640
    assert stat.S_IMODE(lock_path(ledger.path).stat().st_mode) == 0o640
    ledger.path.chmod(0o600)
    ledger.debit(TENTH, {})
    assert stat.S_IMODE(ledger.path.stat().st_mode) == 0o600


# ---------------------------------------------------------------------------- malformed ledgers


def _tamper(document: dict, change: str) -> object:
    entries = document["entries"]
    changes = {
        "amount that does not parse": lambda: entries[0].update(epsilon="0.1.0"),
        "negative amount": lambda: entries[0].update(epsilon="-0.1"),
        "amount as a JSON number": lambda: entries[0].update(epsilon=0.1),
        "entries above the total": lambda: entries[0].update(epsilon="0.95"),
        "negative total": lambda: document["accounts"]["bit"].update(total_epsilon="-1"),
        "unknown status": lambda: entries[0].update(status="done"),
        "repeated id": lambda: entries[1].update(id=entries[0]["id"]),
        "missing entries": lambda: document.pop("entries"),
        "time without a zone": lambda: entries[0].update(time="2024-01-01T00:00:00"),
        "wrong format": lambda: document.update(format="something-else/1"),
    }
    changes[change]()
    return document


@pytest.mark.parametrize("change,problem", [
    ("amount that does not parse", "entry 1: epsilon must be a decimal or 'p/q' string"),
    ("negative amount", "entry 1: epsilon '-0.1' is negative"),
    ("amount as a JSON number", "entry 1: epsilon must be exact"), ("entries above the total", "above its total 1"),
    ("negative total", "total_epsilon '-1' is negative"), ("unknown status", "status must be one of"),
    ("repeated id", "ids repeat"), ("missing entries", "lacks entries"), ("time without a zone", "with a zone"),
    ("wrong format", "not a countdp budget ledger"),
])
def test_a_malformed_ledger_is_refused_in_one_line_and_left_alone(ledger, change, problem):
    ledger.debit(TENTH, {})
    ledger.debit(TENTH, {})
    document = _tamper(json.loads(ledger.path.read_text()), change)
    ledger.path.write_text(json.dumps(document))
    before = ledger.path.read_bytes()
    for action in (ledger.state, lambda: ledger.debit(TENTH, {}), lambda: ledger.check(TENTH)):
        with pytest.raises(LedgerError) as refused:
            action()
        message = str(refused.value)
        assert message.startswith(f"{ledger.path}: ") and problem in message and "\n" not in message
    assert ledger.path.read_bytes() == before


@pytest.mark.parametrize("text,problem", [("", "not JSON"), ("{\"format\": ", "not JSON"), ("[1, 2]", "format 'list'"),
                                          ("\xff", "not JSON")])
def test_a_file_that_is_not_a_ledger_is_refused(tmp_path, text, problem):
    path = tmp_path / "x.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(LedgerError, match=problem):
        Ledger(path).state()


def test_a_missing_ledger_is_refused_and_no_lock_file_is_left(tmp_path):
    for action in (lambda ledger: ledger.state(), lambda ledger: ledger.debit(TENTH, {})):
        with pytest.raises(LedgerError, match="no such budget ledger"):
            action(Ledger(tmp_path / "missing.json"))
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------- the race

RACERS = 20
HOLD = 0.3
"""Seconds each racer waits between reading the ledger and writing it back (the window a lock must close)."""

RACER = r"""
import json, os, sys, time
from fractions import Fraction
from countdp.release.ledger import BudgetExceeded, Ledger
path, folder, index, lock, hold = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "lock", float(sys.argv[5])
open(os.path.join(folder, f"ready-{index}"), "w").close()
while not os.path.exists(os.path.join(folder, "go")):
    time.sleep(0.001)
try:
    print(json.dumps({"debited": Ledger(path).debit(Fraction(1, 10), {"racer": index}, lock=lock, hold=hold).entry_id}))
except BudgetExceeded as exc:
    print(json.dumps({"refused": str(exc)}))
"""


def _race(tmp_path: Path, lock: bool) -> tuple[list[dict], Ledger, float]:
    """20 processes debit 1/10 each from a budget of 1, all let go at once; their answers, the ledger, the time."""
    ledger = Ledger.create(tmp_path / "race.json", Fraction(1), "race")
    signals = tmp_path / "signals"
    signals.mkdir()
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(ledger.path), str(signals), str(i),
                                "lock" if lock else "no-lock", str(HOLD)], stdout=subprocess.PIPE, text=True)
              for i in range(RACERS)]
    deadline = time.monotonic() + 300
    while sum(1 for p in signals.iterdir() if p.name.startswith("ready-")) < RACERS:
        assert time.monotonic() < deadline and all(p.poll() is None for p in racers), "a racer did not start"
        time.sleep(0.01)
    start = time.monotonic()
    (signals / "go").touch()
    outputs = [p.communicate(timeout=300)[0] for p in racers]
    elapsed = time.monotonic() - start
    assert all(p.returncode == 0 for p in racers)
    return [json.loads(out) for out in outputs], ledger, elapsed


def _race_violations(answers: list[dict], ledger: Ledger) -> list[str]:
    """What is wrong with a race's outcome: exactly 10 debits, 10 refusals, and a ledger that records them."""
    debited = sorted(a["debited"] for a in answers if "debited" in a)
    refused = [a["refused"] for a in answers if "refused" in a]
    state = ledger.state()
    problems = []
    if len(debited) != 10 or len(refused) != 10:
        problems.append(f"{len(debited)} debited and {len(refused)} refused, not 10 and 10")
    if len(debited) * TENTH > state.total:
        problems.append(f"the racers were granted {len(debited) * TENTH} of a budget of {state.total}")
    if sorted(e.entry_id for e in state.entries) != debited or state.spent != len(debited) * TENTH:
        problems.append(f"the ledger records {len(state.entries)} entries and spent {state.spent}, "
                        f"not the {len(debited)} debits granted")
    if any(message != f"{ledger.path}: the bit account: this release needs epsilon 0.1 but only 0 remains of 1"
           for message in refused):
        problems.append("a refusal with a remaining budget")
    return problems


def test_twenty_concurrent_processes_spend_exactly_the_budget(tmp_path):
    answers, ledger, elapsed = _race(tmp_path, lock=True)
    assert _race_violations(answers, ledger) == []
    state = ledger.state()
    assert (state.spent, state.remaining, len(state.entries)) == (1, 0, 10)
    assert {e.what["racer"] for e in state.entries} == {a_index for a_index, a in enumerate(answers) if "debited" in a}
    assert elapsed >= 10 * HOLD  # the ten granted debits held the lock one after another
    print(f"locked race: 10 debited, 10 refused in {elapsed:.2f} s")


def test_without_the_lock_the_same_race_overspends(tmp_path):
    """The race above can fail: with ``lock=False`` the racers all read the same ledger and all get their debit."""
    answers, ledger, elapsed = _race(tmp_path, lock=False)
    problems = _race_violations(answers, ledger)
    granted = sum(1 for a in answers if "debited" in a)
    assert granted > 10 and any("granted" in problem for problem in problems)
    assert len(ledger.state().entries) < granted  # lost updates: the last writer wins
    print(f"unlocked race: {granted} debited in {elapsed:.2f} s; {problems}")


def test_a_writer_killed_holding_the_lock_leaves_the_ledger_whole_and_blocks_no_one(ledger, tmp_path):
    signals = tmp_path / "signals"
    signals.mkdir()
    (signals / "go").touch()
    before = ledger.path.read_bytes()
    writer = subprocess.Popen([sys.executable, "-c", RACER, str(ledger.path), str(signals), "0", "lock", "600"],
                              stdout=subprocess.DEVNULL)
    holding_the_lock(ledger.path, writer)  # it then waits 600 s before writing
    writer.kill()
    writer.wait(timeout=60)
    assert ledger.path.read_bytes() == before
    assert ledger.debit(TENTH, {}).spent_before == 0  # the lock died with its holder




def test_removing_the_lock_file_under_a_writer_loses_no_update(tmp_path):
    """A holds the lock; its lock file is removed; B makes a new one and debits 0.6; A must not write over it."""
    ledger = Ledger.create(tmp_path / "budget.json", Fraction(1), "b")
    a = start_debit(ledger.path, "3/5", 1.5)
    holding_the_lock(ledger.path, a)
    lock_path(ledger.path).unlink()
    b = ledger.debit(Fraction(3, 5), {"by": "B"})  # B, this process: a new lock file, not A's
    answer = json.loads(a.communicate(timeout=120)[0])
    assert a.returncode == 0
    assert answer == {"refused": f"{ledger.path}: the bit account: this release needs epsilon 0.6 but only 0.4 "
                                 "remains of 1"}  # A read the ledger again, with B's debit in it
    state = ledger.state()
    assert [(e.entry_id, e.what) for e in state.entries] == [(b.entry_id, {"by": "B"})]
    assert state.spent == Fraction(3, 5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["budget.json", "budget.json.lock"]


def test_no_one_writes_under_a_lock_file_that_was_replaced(tmp_path):
    """A holds the lock and B waits for it; the lock file is replaced by a new one, held here: while it is held,
    neither A (whose lock file is gone) nor B (who then gets the old one) writes; afterwards they take turns."""
    ledger = Ledger.create(tmp_path / "budget.json", Fraction(1), "b")
    a = start_debit(ledger.path, "3/5", 1)
    holding_the_lock(ledger.path, a)
    b = start_debit(ledger.path, "3/5", 0)
    time.sleep(0.3)  # B opens the lock file and waits for A
    before = ledger.path.read_bytes()
    lock_path(ledger.path).unlink()
    fd = os.open(lock_path(ledger.path), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the lock file now in place, held by this process
        time.sleep(2)  # A's hold ends; A and B both find their lock file replaced
        assert a.poll() is None and b.poll() is None and ledger.path.read_bytes() == before
    finally:
        os.close(fd)
    answers = [json.loads(p.communicate(timeout=120)[0]) for p in (a, b)]
    assert sorted(answers[0]) != sorted(answers[1]) and {key for answer in answers for key in answer} == \
        {"debited", "refused"}
    state = ledger.state()
    assert [e.entry_id for e in state.entries] == [a["debited"] for a in answers if "debited" in a]
    assert state.spent == Fraction(3, 5)


# ---------------------------------------------------------------------------- the command line


def test_budget_init_and_show_round_trip(tmp_path, capsys):
    path = tmp_path / "adult.json"
    assert main(["budget", "init", str(path), "--epsilon", "1/3", "--dataset", "adult census"]) == 0
    assert "total epsilon 1/3" in capsys.readouterr().out
    ledger = Ledger(path)
    assert (ledger.state().dataset, ledger.state().total) == ("adult census", Fraction(1, 3))
    first = ledger.debit(TENTH, {"command": "release", "columns": ["age"]})
    ledger.debit(Fraction(1, 7), {"command": "release", "columns": ["income"]})
    ledger.commit(first.entry_id, {"table": "out.csv"})
    assert main(["budget", "show", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("account    bit (one person's bit in one group's count")
    assert lines[2].split() == ["total", "epsilon", "1/3", "(~0.333333333333)"]
    assert lines[3].split() == ["spent", "epsilon", "17/70", "(~0.242857142857)"]  # 1/10 + 1/7
    assert lines[4].split() == ["remaining", "epsilon", "19/210", "(~0.0904761904762)"]  # 1/3 - 17/70
    assert "2 (1 committed, 1 debited, 0 failed" in lines[5]
    assert f"{first.entry_id}" in lines[6] and "epsilon 0.1" in lines[6] and "committed" in lines[6]
    assert lines[6].split()[2] == "bit"
    assert "epsilon 1/7" in lines[7] and "debited" in lines[7] and '"income"' in lines[7] and len(lines) == 8


def test_budget_init_names_the_dataset_after_the_file(tmp_path, capsys):
    assert main(["budget", "init", str(tmp_path / "hospital.json"), "--epsilon", "2"]) == 0
    assert Ledger(tmp_path / "hospital.json").state().dataset == "hospital"


@pytest.mark.parametrize("argv,problem", [
    (["budget", "init", "{d}/adult.json", "--epsilon", "1"], "exists; a budget ledger is never overwritten"),
    (["budget", "init", "{d}/new.json", "--epsilon", "0.1.2"], "argument --epsilon"),
    (["budget", "init", "{d}/new.json", "--epsilon", "-1"], "negative"),
    (["budget", "init", "{d}/new.json", "--epsilon", "0"], "> 0"),
    (["budget", "init", "{d}/no/new.json", "--epsilon", "1"], "{d}/no/new.json: the folder"),
    (["budget", "init", "{d}/new.json"], "--epsilon"),
    (["budget", "show", "{d}/missing.json"], "{d}/missing.json: no such budget ledger"),
    (["budget", "show", "{d}/bad.json"], "{d}/bad.json: entry 1: epsilon"),
    (["budget"], "init,add-account,show"),
])
def test_budget_errors_are_one_line_and_leave_nothing(tmp_path, capsys, argv, problem):
    Ledger.create(tmp_path / "adult.json", Fraction(1), "adult")
    (tmp_path / "bad.json").write_text(json.dumps({"format": "countdp-budget-ledger/1", "dataset": "x",
                                                   "total_epsilon": "1", "created": "2024-01-01T00:00:00Z",
                                                   "entries": [{"id": "1", "time": "2024-01-01T00:00:00Z",
                                                                "epsilon": "1/", "status": "debited", "what": {}}]}))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    capsys.readouterr()
    assert main([arg.format(d=tmp_path) for arg in argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("countdp: error: ") and problem.format(d=tmp_path) in captured.err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


# ---------------------------------------------------------------------------- accounts: one per unit of privacy


@pytest.fixture
def two_accounts(tmp_path) -> Ledger:
    return Ledger.create(tmp_path / "both.json", Fraction(1), "both", invariant_epsilon=Fraction(1, 2))


def test_each_unit_has_its_own_account_and_they_are_never_summed(two_accounts):
    ledger = two_accounts
    assert ledger.debit(Fraction(1), {"kind": "bit"}).remaining_after == 0  # the whole bit budget
    debit = ledger.debit(Fraction(1, 3), {"kind": "invariant"}, account="invariant")
    assert (debit.account, debit.spent_before, debit.remaining_after) == ("invariant", 0, Fraction(1, 6))
    state = ledger.state()
    assert (state.total, state.spent, state.remaining) == (1, 1, 0)  # the bit account, as before
    assert state.accounts["bit"] == AccountState(Fraction(1), Fraction(1), Fraction(0))
    assert state.accounts["invariant"] == AccountState(Fraction(1, 2), Fraction(1, 3), Fraction(1, 6))
    assert [e.account for e in state.entries] == ["bit", "invariant"]
    document = json.loads(ledger.path.read_text())
    assert document["format"] == FORMAT == "countdp-budget-ledger/2" and "total_epsilon" not in document
    assert document["accounts"] == {"bit": {"total_epsilon": "1"}, "invariant": {"total_epsilon": "0.5"}}
    assert [e["account"] for e in document["entries"]] == ["bit", "invariant"]
    before = ledger.path.read_bytes()
    with pytest.raises(BudgetExceeded) as refused:
        ledger.debit(Fraction(1, 5), {}, account="invariant")
    assert str(refused.value) == (f"{ledger.path}: the invariant account: this release needs epsilon 0.2 but only "
                                  "1/6 remains of 0.5")
    assert refused.value.account == "invariant"
    with pytest.raises(BudgetExceeded, match="the bit account: .* only 0 remains of 1"):
        ledger.check(Fraction(1, 10**9))
    assert ledger.check(Fraction(1, 6), account="invariant") == 0
    assert ledger.path.read_bytes() == before
    assert UNITS == ("bit", "invariant")


def test_a_ledger_without_an_invariant_account_refuses_invariant_debits(ledger, capsys):
    before = ledger.path.read_bytes()
    for action in (lambda: ledger.debit(TENTH, {}, account="invariant"), lambda: ledger.check(TENTH, "invariant")):
        with pytest.raises(LedgerError) as refused:
            action()
        assert str(refused.value) == (
            f"{ledger.path}: the ledger has no account for invariant releases (their epsilon is for invariant "
            "neighbours, a different unit from the bit-level budget); add one with `countdp budget add-account "
            f"{ledger.path} --invariant-epsilon E` (or create a ledger with `countdp budget init … "
            "--invariant-epsilon E`)")
    with pytest.raises(ValueError, match="account must be one of bit, invariant, got 'bits'"):
        ledger.debit(TENTH, {}, account="bits")
    assert ledger.path.read_bytes() == before
    assert main(["budget", "add-account", str(ledger.path), "--invariant-epsilon", "1/4"]) == 0
    assert "the invariant account, total epsilon 0.25" in capsys.readouterr().out
    assert ledger.debit(TENTH, {}, account="invariant").remaining_after == Fraction(3, 20)
    before = ledger.path.read_bytes()
    with pytest.raises(LedgerError, match="cannot add the account 'invariant': the ledger has bit, invariant"):
        ledger.add_account("invariant", Fraction(5))
    with pytest.raises(LedgerError, match="cannot add the account 'bit'"):
        ledger.add_account("bit", Fraction(5))
    assert main(["budget", "add-account", str(ledger.path), "--invariant-epsilon", "5"]) == 2
    assert "cannot add the account 'invariant'" in capsys.readouterr().err
    assert ledger.path.read_bytes() == before and ledger.state().accounts["invariant"].total == Fraction(1, 4)


V1 = {"format": "countdp-budget-ledger/1", "dataset": "old", "total_epsilon": "1", "created": "2024-01-01T00:00:00Z",
      "entries": [{"id": "1-aa", "time": "2024-01-01T00:00:00Z", "epsilon": "0.25", "status": "committed",
                   "what": {"command": "release"}, "committed": "2024-01-01T00:00:01Z", "outputs": {"out": "a.csv"}},
                  {"id": "2-bb", "time": "2024-01-02T00:00:00Z", "epsilon": "1/3", "status": "debited",
                   "what": {}}]}


def test_a_version_1_ledger_reads_as_the_bit_account_with_entries_of_unknown_unit_and_a_write_upgrades_it(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps(V1))
    ledger = Ledger(path)
    state = ledger.state()
    assert (state.total, state.spent, state.remaining) == (1, Fraction(7, 12), Fraction(5, 12))
    assert list(state.accounts) == ["bit"] and {e.account for e in state.entries} == {UNKNOWN}
    assert ledger.check(Fraction(5, 12)) == 0
    assert json.loads(path.read_text()) == V1  # reading never rewrites
    with pytest.raises(LedgerError, match="no account for invariant releases"):
        ledger.debit(TENTH, {}, account="invariant")
    assert json.loads(path.read_text()) == V1
    ledger.fail("2-bb", "the process was killed")
    document = json.loads(path.read_text())
    assert document["format"] == "countdp-budget-ledger/2" and "total_epsilon" not in document
    assert document["accounts"] == {"bit": {"total_epsilon": "1"}}
    assert [e["account"] for e in document["entries"]] == ["unknown", "unknown"]  # the upgrade keeps them unknown
    assert document["entries"][0] == {**V1["entries"][0], "account": "unknown"}  # nothing else changed
    assert ledger.state().spent == Fraction(7, 12)


def test_version_1_spending_counts_in_an_invariant_account_added_later(tmp_path, capsys):
    """/1 charged invariant releases to its one total without a unit: they may have spent the invariant budget."""
    path = tmp_path / "old.json"
    path.write_text(json.dumps(V1))
    ledger = Ledger(path)
    assert main(["budget", "add-account", str(path), "--invariant-epsilon", "1/2"]) == 2  # below the 7/12 spent
    assert "the ledger's format /1 entries, of unknown unit, already spent 7/12 of every account" in \
        capsys.readouterr().err
    assert json.loads(path.read_text()) == V1
    assert main(["budget", "add-account", str(path), "--invariant-epsilon", "3"]) == 0
    state = ledger.state()
    assert state.accounts["invariant"] == AccountState(Fraction(3), Fraction(7, 12), Fraction(29, 12))
    assert state.accounts["bit"] == AccountState(Fraction(1), Fraction(7, 12), Fraction(5, 12))
    debit = ledger.debit(Fraction(1, 12), {}, account="invariant")
    assert (debit.spent_before, debit.remaining_after) == (Fraction(7, 12), Fraction(7, 3))
    assert ledger.state().accounts["bit"].spent == Fraction(7, 12)  # an invariant debit is not the bit account's
    with pytest.raises(BudgetExceeded, match="the bit account: this release needs epsilon 0.5 but only 5/12 remains"):
        ledger.debit(Fraction(1, 2), {})
    capsys.readouterr()
    assert main(["budget", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "note       2 unknown entries (format /1 recorded no unit: bit or invariant): their epsilon 7/12 " \
           "(~0.583333333333) counts as spent in every account" in out
    assert [line.split()[2:4] for line in out.splitlines() if "1-aa" in line or "2-bb" in line] == \
        [["unknown", "(format"]] * 2


def test_a_failed_release_stays_spent_and_is_counted(ledger, capsys):
    first = ledger.debit(Fraction(1, 4), {"command": "release"})
    second = ledger.debit(Fraction(1, 4), {"command": "release"})
    ledger.fail(first.entry_id, "OSError: No space left on device")
    ledger.commit(second.entry_id, {"out": "b.csv"})
    state = ledger.state()
    failed = state.entries[0]
    assert (failed.status, failed.reason, state.spent) == ("failed", "OSError: No space left on device", Fraction(1, 2))
    raw = json.loads(ledger.path.read_text())["entries"][0]
    assert raw["status"] == "failed" and raw["failed"].endswith("Z") and raw["reason"] == failed.reason
    before = ledger.path.read_bytes()
    for action, problem in [(lambda: ledger.commit(first.entry_id, {}), "already failed"),
                            (lambda: ledger.fail(first.entry_id, "again"), "already failed"),
                            (lambda: ledger.fail(second.entry_id, "late"), "already committed"),
                            (lambda: ledger.fail("nope", "x"), "no entry 'nope'")]:
        with pytest.raises(LedgerError, match=problem):
            action()
    with pytest.raises(ValueError, match="needs a reason"):
        ledger.fail(ledger.debit(TENTH, {}).entry_id, " ")
    assert main(["budget", "show", str(ledger.path)]) == 0
    out = capsys.readouterr().out
    assert "3 (1 committed, 1 debited, 1 failed; debited and failed entries count as spent)" in out
    assert "(failed: OSError: No space left on device)" in out
    assert ledger.state().spent == Fraction(3, 5)
    assert ledger.path.read_bytes() != before  # only the last debit was written


@pytest.mark.parametrize("change,problem", [
    (lambda d: d["entries"][0].pop("account"), "entry 1 lacks account"),
    (lambda d: d["entries"][0].update(account="invariant"), "account 'invariant' is not one of the ledger's (bit)"),
    (lambda d: d["accounts"].update(group={"total_epsilon": "1"}), "accounts must hold the bit account"),
    (lambda d: d["accounts"].pop("bit"), "accounts must hold the bit account"),
    (lambda d: d["accounts"]["bit"].pop("total_epsilon"), "accounts.bit lacks total_epsilon"),
    (lambda d: d["entries"][0].update(status="failed"), "a failed entry needs its reason"),
    (lambda d: d.update(format="countdp-budget-ledger/3"), "expected 'countdp-budget-ledger/2'"),
])
def test_a_malformed_account_is_refused_in_one_line(ledger, change, problem):
    ledger.debit(TENTH, {})
    document = json.loads(ledger.path.read_text())
    change(document)
    ledger.path.write_text(json.dumps(document))
    before = ledger.path.read_bytes()
    for action in (ledger.state, lambda: ledger.debit(TENTH, {}), lambda: ledger.add_account("invariant", TENTH)):
        with pytest.raises(LedgerError) as refused:
            action()
        assert str(refused.value).startswith(f"{ledger.path}: ") and problem in str(refused.value)
    assert ledger.path.read_bytes() == before


def test_budget_init_with_an_invariant_account_and_show(tmp_path, capsys):
    path = tmp_path / "adult.json"
    assert main(["budget", "init", str(path), "--epsilon", "1", "--invariant-epsilon", "1/3"]) == 0
    assert "total epsilon 1, invariant account epsilon 1/3 (~0.333333333333)" in capsys.readouterr().out
    Ledger(path).debit(TENTH, {"command": "release", "invariant": True}, account="invariant")
    assert main(["budget", "show", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("account    bit ") and lines[5].startswith("account    invariant (invariant neighbours")
    assert [line.split()[:3] for line in lines[2:5]] == [["total", "epsilon", "1"], ["spent", "epsilon", "0"],
                                                         ["remaining", "epsilon", "1"]]
    assert [line.split()[:3] for line in lines[6:9]] == [["total", "epsilon", "1/3"], ["spent", "epsilon", "0.1"],
                                                         ["remaining", "epsilon", "7/30"]]
    assert lines[10].split()[2:5] == ["invariant", "epsilon", "0.1"]
    assert main(["budget", "init", str(tmp_path / "x.json"), "--epsilon", "1", "--invariant-epsilon", "0"]) == 2
    assert "--invariant-epsilon" in capsys.readouterr().err and not (tmp_path / "x.json").exists()


def test_concurrent_debits_to_two_accounts_spend_each_exactly(tmp_path):
    """24 processes: 12 debit 1/10 from a bit account of 1, 12 debit 1/10 from an invariant account of 1/2."""
    ledger = Ledger.create(tmp_path / "race.json", Fraction(1), "race", invariant_epsilon=Fraction(1, 2))
    signals = tmp_path / "signals"
    signals.mkdir()
    racer = RACER.replace("{\"racer\": index}, lock=lock", "{\"racer\": index}, account=sys.argv[6], lock=lock")
    assert racer != RACER
    racers = [subprocess.Popen([sys.executable, "-c", racer, str(ledger.path), str(signals), str(i), "lock", "0.02",
                                UNITS[i % 2]], stdout=subprocess.PIPE, text=True) for i in range(24)]
    while sum(1 for p in signals.iterdir() if p.name.startswith("ready-")) < 24:
        assert all(p.poll() is None for p in racers), "a racer did not start"
        time.sleep(0.01)
    (signals / "go").touch()
    answers = [json.loads(p.communicate(timeout=300)[0]) for p in racers]
    granted = {unit: sum(1 for i, a in enumerate(answers) if "debited" in a and UNITS[i % 2] == unit) for unit in UNITS}
    assert granted == {"bit": 10, "invariant": 5}
    state = ledger.state()
    assert state.accounts["bit"].remaining == 0 and state.accounts["invariant"].remaining == 0
    assert sorted(e.what["racer"] % 2 for e in state.entries) == [0] * 10 + [1] * 5
