"""A privacy budget for one dataset, kept in a JSON ledger file that refuses to overspend.

Releases about the same people compose sequentially: their epsilons add up.  A release is debited
*before* its noise is drawn, then committed once its files are in place, or marked failed; its
epsilon stays spent either way, or if a crash leaves it ``debited``: the noise may have been drawn.
Amounts are exact strings (``"0.1"``, ``"1/3"``); a JSON number (a binary float) is refused.

**One account per unit of privacy, never summed**: ``bit`` (one person's bit in one group's count:
ordinary and ``--levels`` releases) and, if asked for, ``invariant`` (invariant neighbours, totals
published exactly: ``--invariant`` releases).  A debit to an account the ledger lacks is refused.

**One ledger, one budget, however it is named**: every read, write and lock goes to the resolved
file (``os.path.realpath``): a symlink to it or its folder reaches the same ledger and lock file
(``LEDGER.lock`` beside the real file), and stays a symlink.  A hard link would fork the budget (a
rename replaces one name): a ledger with several, or not a regular file, is refused.

A write holds an exclusive ``fcntl.flock`` on the lock file (no amounts; leave it) across its whole
read-check-write, a read a shared one; the new ledger is a fsynced temporary renamed over the old.
``countdp-budget-ledger/2`` is written; a ``/1`` ledger (one ``total_epsilon``) reads as a bit
account alone, and a write upgrades it.  The ledger is the curator's private record (inputs, their
SHA-256, outputs): it stays with the curator and is never published.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import stat
import time
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import astuple, dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

from countdp.privacy.alpha import rational_text
from countdp.release.atomic import fsync_folder

FORMAT = "countdp-budget-ledger/2"
"""The ``format`` tag of a ledger file as written (``countdp-budget-ledger/1`` is still read)."""

UNITS = ("bit", "invariant")
"""The units of privacy, one account each; their epsilons bound different neighbours and are never added."""

STATUSES = ("debited", "committed", "failed")
"""An entry is ``debited`` when written, then ``committed`` once its release's files are in place, or ``failed``."""

_AMOUNT = re.compile(r"[+-]?(\d+(\.\d+)?|\d+/\d+)")


class LedgerError(ValueError):
    """A missing, unreadable or malformed ledger: one line naming the ledger file."""


class BudgetExceeded(ValueError):
    """A debit that would overspend an account (nothing was written); the message names the account."""

    def __init__(self, path: Path, needed: Fraction, remaining: Fraction, total: Fraction, account: str = "bit"):
        self.path, self.needed, self.remaining, self.total, self.account = path, needed, remaining, total, account
        super().__init__(f"{path}: the {account} account: this release needs epsilon {amount_text(needed)} but "
                         f"only {amount_text(remaining)} remains of {amount_text(total)}")


@dataclass(frozen=True)
class Entry:
    """One release charged to the budget, as read from the ledger (``reason``: why a ``failed`` one failed)."""

    entry_id: str
    time: str
    epsilon: Fraction
    status: str
    what: dict
    outputs: dict = field(default_factory=dict)
    account: str = "bit"
    reason: str | None = None


@dataclass(frozen=True)
class AccountState:
    """One account at one moment: ``spent`` sums its entries, ``remaining = total - spent``, exactly."""

    total: Fraction
    spent: Fraction
    remaining: Fraction


@dataclass(frozen=True)
class LedgerState:
    """The budget at one moment: ``total``, ``spent`` and ``remaining`` are the bit account's; ``accounts``, all."""

    dataset: str
    created: str
    total: Fraction
    spent: Fraction
    remaining: Fraction
    entries: tuple[Entry, ...]
    accounts: dict[str, AccountState] = field(default_factory=dict)


@dataclass(frozen=True)
class Debit:
    """What :meth:`Ledger.debit` wrote: the entry to commit, and its account before and after it."""

    entry_id: str
    epsilon: Fraction
    spent_before: Fraction
    remaining_after: Fraction
    account: str = "bit"


amount_text = rational_text
"""``amount`` exactly as text: a finite decimal when it has one (``"0.1"``), else ``"p/q"``."""


def parse_amount(text: object, name: str = "amount") -> Fraction:
    """An epsilon > 0 from a decimal or ``"p/q"`` string, a Fraction or an int (never a float: 0.1 is not 1/10)."""
    if isinstance(text, float):
        raise ValueError(f"{name} must be exact (a decimal or 'p/q' string, or a Fraction), not the float {text!r}")
    if not (isinstance(text, Fraction | int) and not isinstance(text, bool)
            or isinstance(text, str) and _AMOUNT.fullmatch(text.strip())):
        raise ValueError(f"{name} must be a decimal or 'p/q' string such as \"0.1\" or \"1/3\", got {text!r}")
    try:
        amount = Fraction(text.strip() if isinstance(text, str) else text)
    except ZeroDivisionError:
        raise ValueError(f"{name} {text!r} has a zero denominator") from None
    if amount <= 0:
        raise ValueError(f"{name} {text!r} is negative" if amount < 0 else f"{name} must be > 0, got {text!r}")
    return amount


def _require(condition: object, problem: str) -> None:
    """``ValueError(problem)`` unless ``condition`` holds."""
    if not condition:
        raise ValueError(problem)


def _json_object(value: object, name: str) -> dict:
    """A copy of ``value`` as it will read back from JSON, or ``ValueError`` if it is not a JSON object."""
    _require(isinstance(value, dict), f"{name} must be a dict, got {type(value).__name__}")
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be JSON-serializable: {exc}") from None


def _now() -> str:
    """The time now in UTC, ISO 8601 with a ``Z`` (entries are stamped in UTC whatever the machine's zone)."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _check_time(value: object, where: str) -> str:
    """``value`` if it is an ISO 8601 time with a zone, else ``ValueError`` naming ``where``."""
    with suppress(ValueError):
        if isinstance(value, str) and datetime.fromisoformat(value).tzinfo is not None:
            return value
    raise ValueError(f"{where} must be an ISO 8601 time with a zone, got {value!r}")


def _parse_entry(raw: object, number: int, accounts: dict) -> Entry:
    """Entry ``number`` (from 1) of a ledger document, or ``ValueError`` saying what is wrong with it."""
    where = f"entry {number}"
    _require(isinstance(raw, dict), f"{where} is not an object")
    missing = [key for key in ("id", "time", "account", "epsilon", "status", "what") if key not in raw]
    _require(not missing, f"{where} lacks {', '.join(missing)}")
    _require(isinstance(raw["id"], str) and raw["id"], f"{where}: id must be a non-empty string, got {raw['id']!r}")
    _require(raw["account"] in accounts,
             f"{where}: account {raw['account']!r} is not one of the ledger's ({', '.join(accounts)})")
    _require(raw["status"] in STATUSES, f"{where}: status must be one of {', '.join(STATUSES)}, got {raw['status']!r}")
    reason = raw.get("reason") if raw["status"] == "failed" else None
    _require(raw["status"] != "failed" or isinstance(reason, str) and reason,
             f"{where}: a failed entry needs its reason (a non-empty string), got {reason!r}")
    outputs = raw.get("outputs", {})
    _require(isinstance(raw["what"], dict) and isinstance(outputs, dict), f"{where}: what and outputs must be objects")
    epsilon = parse_amount(raw["epsilon"], f"{where}: epsilon")
    return Entry(raw["id"], _check_time(raw["time"], f"{where}: time"), epsilon, raw["status"], raw["what"], outputs,
                 raw["account"], reason)


def _parse_document(document: object) -> LedgerState:
    """The budget a ledger document (upgraded to /2) records, or ``ValueError`` saying what is wrong with it."""
    found = document.get("format") if isinstance(document, dict) else type(document).__name__
    _require(found == FORMAT, f"not a countdp budget ledger (format {found!r}, expected {FORMAT!r})")
    missing = [key for key in ("dataset", "accounts", "created", "entries") if key not in document]
    _require(not missing, f"the ledger lacks {', '.join(missing)}")
    accounts = document["accounts"]
    _require(isinstance(document["dataset"], str) and isinstance(document["entries"], list),
             "dataset must be a string and entries a list")
    _require(isinstance(accounts, dict) and "bit" in accounts and set(accounts) <= set(UNITS),
             f"accounts must hold the bit account, and no other than {', '.join(UNITS)}, got {accounts!r}")
    entries = tuple(_parse_entry(raw, number, accounts) for number, raw in enumerate(document["entries"], start=1))
    ids = [entry.entry_id for entry in entries]
    _require(len(set(ids)) == len(ids), f"entry ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
    states = {}
    for unit, account in accounts.items():
        _require(isinstance(account, dict) and "total_epsilon" in account, f"accounts.{unit} lacks total_epsilon")
        total = parse_amount(account["total_epsilon"], f"accounts.{unit}.total_epsilon")
        spent = sum((entry.epsilon for entry in entries if entry.account == unit), Fraction(0))
        _require(spent <= total, f"the {unit} account's entries sum to epsilon {amount_text(spent)}, above its "
                                 f"total {amount_text(total)}")
        states[unit] = AccountState(total, spent, total - spent)
    return LedgerState(document["dataset"], _check_time(document["created"], "created"), *astuple(states["bit"]),
                       entries, states)


def _upgraded(document: object) -> object:
    """``document`` in format /2: a /1 ledger's ``total_epsilon`` becomes its bit account, its entries the bit's."""
    if not isinstance(document, dict) or document.get("format") != "countdp-budget-ledger/1":
        return document
    upgraded = {key: value for key, value in document.items() if key != "total_epsilon"} | {"format": FORMAT}
    upgraded["accounts"] = {"bit": {key: value for key, value in document.items() if key == "total_epsilon"}}
    if isinstance(entries := document.get("entries"), list):
        upgraded["entries"] = [{"account": "bit", **raw} if isinstance(raw, dict) else raw for raw in entries]
    return upgraded


def _write_atomic(path: Path, document: dict) -> None:
    """Replace ``path`` by ``document`` (indented JSON): a fsynced temporary, with ``path``'s mode, renamed over it."""
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with open(fd, "w", encoding="utf-8") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_folder(path.parent)


def lock_path(path: Path) -> Path:
    """The lock file of the ledger file ``path`` (``LEDGER.lock`` beside the resolved file): locked, never read."""
    return path.with_name(path.name + ".lock")


@contextmanager
def _locked(path: Path, exclusive: bool, given: Path):
    """Hold ``flock`` on the resolved ledger ``path``'s lock file, exclusive to write, shared to read (only a
    writer creates it: writers rename, so a read sees one whole version anyway).  Messages name ``given``."""
    flags = (os.O_RDWR | os.O_CREAT if exclusive else os.O_RDONLY) | os.O_CLOEXEC
    try:
        fd = os.open(lock_path(path), flags, 0o666)
    except OSError as exc:
        if exclusive:
            raise LedgerError(f"{given}: cannot open its lock file {lock_path(path)} ({exc.strerror})") from None
        yield  # a reader without a lock file reads unlocked
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


def _refuse_odd(status: os.stat_result) -> None:
    """``ValueError`` for a file that is not regular, or has several names (a rename over one forks the budget)."""
    kind = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO"}.get(stat.S_IFMT(status.st_mode), "special")
    _require(stat.S_ISREG(status.st_mode), f"not a regular file ({kind}); a budget ledger is one file")
    _require(status.st_nlink == 1, f"the budget ledger has {status.st_nlink} hard links; one budget is reached "
                                   "through one file (remove the other links, or use a symlink)")


class Ledger:
    """The privacy budget ledger at ``path`` (kept as given, for messages; each operation resolves it anew)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    @classmethod
    def create(cls, path: str | os.PathLike, total_epsilon: Fraction, dataset: str,
               invariant_epsilon: Fraction | None = None) -> Ledger:
        """A new ledger for ``dataset`` with a bit account of ``total_epsilon`` (and an invariant account of
        ``invariant_epsilon``, if given); refused if the file exists (a dangling symlink's target is created)."""
        path, real = Path(path), Path(os.path.realpath(path))
        try:
            accounts = {unit: {"total_epsilon": amount_text(parse_amount(amount, f"{unit} total epsilon"))} for unit,
                        amount in (("bit", total_epsilon), ("invariant", invariant_epsilon)) if amount is not None}
            _require(isinstance(dataset, str) and dataset.strip(), f"the dataset needs a name, got {dataset!r}")
            _require(real.parent.is_dir(), f"the folder {real.parent} does not exist")
        except ValueError as exc:
            raise LedgerError(f"{path}: {exc}") from None
        document = {"format": FORMAT, "dataset": dataset, "accounts": accounts, "created": _now(), "entries": []}
        for held in (False, True):  # refused before a lock file is made, and again under the lock
            with _locked(real, True, path) if held else nullcontext():
                if os.path.lexists(real):
                    raise LedgerError(f"{path}: exists; a budget ledger is never overwritten")
                if held:
                    _write_atomic(real, document)
        return cls(path)

    def _read(self, real: Path, whole: bool = True) -> tuple[dict, LedgerState] | None:
        """The ledger in ``real`` (as /2) and its budget (``whole=False``: only the file checked), or LedgerError."""
        try:
            _refuse_odd(os.stat(real))  # a folder or a FIFO is never opened
            with open(os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as handle:
                _refuse_odd(os.fstat(handle.fileno()))
                document = _upgraded(json.loads(handle.read().decode("utf-8"))) if whole else None
            return (document, _parse_document(document)) if whole else None
        except FileNotFoundError:
            raise LedgerError(f"{self.path}: no such budget ledger") from None
        except OSError as exc:
            raise LedgerError(f"{self.path}: cannot read the budget ledger ({exc.strerror})") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise LedgerError(f"{self.path}: not a countdp budget ledger (not JSON: {exc})") from None
        except ValueError as exc:
            raise LedgerError(f"{self.path}: {exc}") from None

    @contextmanager
    def _session(self, exclusive: bool, lock: bool = True):
        """``(real, document, state)``: the resolved file, locked, and the ledger read under the lock; a missing,
        odd or hard-linked ledger is refused before a lock file is made, and again under the lock."""
        real = Path(os.path.realpath(self.path))
        self._read(real, whole=False)
        with _locked(real, exclusive, self.path) if lock else nullcontext():
            yield real, *self._read(real)

    def _account(self, state: LedgerState, account: str) -> AccountState:
        """The state of ``account``; refused if the ledger lacks it (its epsilon is not the bit account's to spend)."""
        _require(account in UNITS, f"account must be one of {', '.join(UNITS)}, got {account!r}")
        if account not in state.accounts:
            raise LedgerError(f"{self.path}: the ledger has no account for {account} releases (their epsilon is for "
                              "invariant neighbours, a different unit from the bit-level budget); add one with "
                              f"`countdp budget add-account {self.path} --invariant-epsilon E` (or create a ledger "
                              "with `countdp budget init … --invariant-epsilon E`)")
        return state.accounts[account]

    def state(self) -> LedgerState:
        """The budget now (under a shared lock)."""
        with self._session(exclusive=False) as (_, _, state):
            return state

    def check(self, epsilon: Fraction, account: str = "bit") -> Fraction:
        """What would remain of ``account`` after ``epsilon``, writing nothing; :class:`BudgetExceeded` if short."""
        amount = parse_amount(epsilon, "epsilon")
        balance = self._account(self.state(), account)
        if amount > balance.remaining:
            raise BudgetExceeded(self.path, amount, balance.remaining, balance.total, account)
        return balance.remaining - amount

    def debit(self, epsilon: Fraction, what: dict, *, account: str = "bit", lock: bool = True,
              hold: float = 0.0) -> Debit:
        """Charge ``epsilon`` to ``account`` for the release described by ``what``: check and write under one lock.

        :class:`BudgetExceeded` (writing nothing) if less than ``epsilon`` remains, :class:`LedgerError` if the
        ledger lacks the account; ``hold`` (seconds between read and write) and ``lock=False`` are for tests."""
        amount = parse_amount(epsilon, "epsilon")
        what = _json_object(what, "what")
        with self._session(exclusive=True, lock=lock) as (real, document, state):
            balance = self._account(state, account)
            if amount > balance.remaining:
                raise BudgetExceeded(self.path, amount, balance.remaining, balance.total, account)
            time.sleep(hold)
            taken = {entry.entry_id for entry in state.entries}
            while (entry_id := f"{len(state.entries) + 1}-{secrets.token_hex(4)}") in taken:
                pass
            document["entries"].append({"id": entry_id, "time": _now(), "account": account,
                                        "epsilon": amount_text(amount), "status": "debited", "what": what})
            _write_atomic(real, document)
        return Debit(entry_id, amount, balance.spent, balance.remaining - amount, account)

    def _close(self, entry_id: str, status: str, **fields) -> None:
        """Mark the ``debited`` entry ``entry_id`` as ``status`` (stamped with the time) and ``fields``, locked."""
        with self._session(exclusive=True) as (real, document, _):
            raw = next((entry for entry in document["entries"] if entry["id"] == entry_id), None)
            if raw is None or raw["status"] != "debited":
                problem = "no entry" if raw is None else f"already {raw['status']}:"
                raise LedgerError(f"{self.path}: {problem} {entry_id!r}")
            raw.update(status=status, **{status: _now()}, **fields)
            _write_atomic(real, document)

    def commit(self, entry_id: str, outputs: dict) -> None:
        """Mark entry ``entry_id`` committed (its release's files, ``outputs``, are in place), under the lock."""
        self._close(entry_id, "committed", outputs=_json_object(outputs, "outputs"))

    def fail(self, entry_id: str, reason: str) -> None:
        """Mark entry ``entry_id`` failed with ``reason`` and the time; it stays spent (its noise may be drawn)."""
        _require(isinstance(reason, str) and reason.strip(), f"a failure needs a reason (a string), got {reason!r}")
        self._close(entry_id, "failed", reason=reason)

    def add_account(self, account: str, total_epsilon: Fraction) -> None:
        """Give the ledger the account ``account`` of ``total_epsilon``, under the lock; refused if it has one."""
        total = parse_amount(total_epsilon, f"{account} total epsilon")
        with self._session(exclusive=True) as (real, document, state):
            if account not in UNITS or account in state.accounts:
                raise LedgerError(f"{self.path}: cannot add the account {account!r}: the ledger has "
                                  f"{', '.join(state.accounts)}, of {', '.join(UNITS)} (a total is set once)")
            document["accounts"][account] = {"total_epsilon": amount_text(total)}
            _write_atomic(real, document)


__all__ = ["FORMAT", "STATUSES", "UNITS", "AccountState", "BudgetExceeded", "Debit", "Entry", "Ledger", "LedgerError",
           "LedgerState", "amount_text", "lock_path", "parse_amount"]
