"""A privacy budget for one dataset, kept in a JSON ledger file that refuses to overspend.

Releases about the same people compose sequentially: their epsilons add up.  The ledger holds a
total epsilon for one dataset and one entry per release; a release is debited *before* its
noise is drawn and committed once its files are in place.  The amounts are exact rationals
(:class:`fractions.Fraction`), written as strings: a finite decimal (``"0.1"``) when the amount
has one, else ``"p/q"``.  A JSON number is refused: it would be read as a binary float.

**Spent is the sum of every entry, debited or committed.**  A crash (or a failed release)
between the debit and the commit leaves that epsilon spent: the noise may already have been
drawn and seen, so the conservative choice is never to give it back.

Concurrency: every write takes an exclusive ``fcntl.flock`` on the sibling lock file
``LEDGER.lock`` (it holds no amounts; leave it in place) across the whole read-check-write,
so two releases can never both spend the last of a budget.  Readers take a shared lock.  The
new ledger is written to a temporary file in the same folder, fsynced and renamed over the old
one (then the folder is fsynced), so a crash leaves either the old or the new ledger, whole.
New files get the user's umask; a rewritten ledger keeps the mode it had.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

from countdp.privacy.alpha import rational_text
from countdp.release.atomic import fsync_folder

FORMAT = "countdp-budget-ledger/1"
"""The ``format`` tag of a ledger file."""

STATUSES = ("debited", "committed")
"""An entry is ``debited`` when written and ``committed`` when its release's files are in place."""

_AMOUNT = re.compile(r"[+-]?(\d+(\.\d+)?|\d+/\d+)")


class LedgerError(ValueError):
    """A missing, unreadable or malformed ledger: one line naming the ledger file."""


class BudgetExceeded(ValueError):
    """A debit that would overspend the budget (nothing was written)."""

    def __init__(self, path: Path, needed: Fraction, remaining: Fraction, total: Fraction):
        self.path, self.needed, self.remaining, self.total = path, needed, remaining, total
        super().__init__(f"{path}: this release needs epsilon {amount_text(needed)} but only "
                         f"{amount_text(remaining)} remains of {amount_text(total)}")


@dataclass(frozen=True)
class Entry:
    """One release charged to the budget, as read from the ledger."""

    entry_id: str
    time: str
    epsilon: Fraction
    status: str
    what: dict
    outputs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class LedgerState:
    """The budget at one moment: ``spent`` sums every entry, ``remaining = total - spent``, exactly."""

    dataset: str
    created: str
    total: Fraction
    spent: Fraction
    remaining: Fraction
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class Debit:
    """What :meth:`Ledger.debit` wrote: the entry to commit, and the budget before and after it."""

    entry_id: str
    epsilon: Fraction
    spent_before: Fraction
    remaining_after: Fraction


amount_text = rational_text
"""``amount`` exactly as text: a finite decimal when it has one (``"0.1"``), else ``"p/q"``."""


def parse_amount(text: object, name: str = "amount") -> Fraction:
    """An epsilon amount > 0 from a decimal or ``"p/q"`` string, a Fraction or an int; ``ValueError`` otherwise.

    A float is refused: ``0.1`` as a float is not one tenth, and a budget is decided exactly.
    """
    if isinstance(text, Fraction) or (isinstance(text, int) and not isinstance(text, bool)):
        amount = Fraction(text)
    elif isinstance(text, str) and _AMOUNT.fullmatch(text.strip()):
        try:
            amount = Fraction(text.strip())
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"{name} {text!r} has a zero denominator") from None
    elif isinstance(text, float):
        raise ValueError(f"{name} must be exact (a decimal or 'p/q' string, or a Fraction), not the float {text!r}")
    else:
        raise ValueError(f"{name} must be a decimal or 'p/q' string such as \"0.1\" or \"1/3\", got {text!r}")
    if amount < 0:
        raise ValueError(f"{name} {text!r} is negative")
    if amount == 0:
        raise ValueError(f"{name} must be > 0, got {text!r}")
    return amount


def _json_object(value: object, name: str) -> dict:
    """A copy of ``value`` as it will read back from JSON, or ``ValueError`` if it is not a JSON object."""
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a dict, got {type(value).__name__}")
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be JSON-serializable: {exc}") from None


def _now() -> str:
    """The time now in UTC, ISO 8601 with a ``Z`` (entries are stamped in UTC whatever the machine's zone)."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _check_time(value: object, where: str) -> str:
    """``value`` if it is an ISO 8601 time with a zone, else ``ValueError`` naming ``where``."""
    try:
        if isinstance(value, str) and datetime.fromisoformat(value).tzinfo is not None:
            return value
    except ValueError:
        pass
    raise ValueError(f"{where} must be an ISO 8601 time with a zone, got {value!r}")


def _parse_entry(raw: object, number: int) -> Entry:
    """Entry ``number`` (from 1) of a ledger document, or ``ValueError`` saying what is wrong with it."""
    where = f"entry {number}"
    if not isinstance(raw, dict):
        raise ValueError(f"{where} is not an object")
    missing = [key for key in ("id", "time", "epsilon", "status", "what") if key not in raw]
    if missing:
        raise ValueError(f"{where} lacks {', '.join(missing)}")
    if not isinstance(raw["id"], str) or not raw["id"]:
        raise ValueError(f"{where}: id must be a non-empty string, got {raw['id']!r}")
    if raw["status"] not in STATUSES:
        raise ValueError(f"{where}: status must be one of {', '.join(STATUSES)}, got {raw['status']!r}")
    outputs = raw.get("outputs", {})
    if not isinstance(raw["what"], dict) or not isinstance(outputs, dict):
        raise ValueError(f"{where}: what and outputs must be objects")
    epsilon = parse_amount(raw["epsilon"], f"{where}: epsilon")
    return Entry(raw["id"], _check_time(raw["time"], f"{where}: time"), epsilon, raw["status"], raw["what"], outputs)


def _parse_document(document: object) -> LedgerState:
    """The budget a ledger document records, or ``ValueError`` saying what is wrong with it."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        raise ValueError(f"not a countdp budget ledger (format {found!r}, expected {FORMAT!r})")
    missing = [key for key in ("dataset", "total_epsilon", "created", "entries") if key not in document]
    if missing:
        raise ValueError(f"the ledger lacks {', '.join(missing)}")
    if not isinstance(document["dataset"], str) or not isinstance(document["entries"], list):
        raise ValueError("dataset must be a string and entries a list")
    total = parse_amount(document["total_epsilon"], "total_epsilon")
    entries = tuple(_parse_entry(raw, number) for number, raw in enumerate(document["entries"], start=1))
    ids = [entry.entry_id for entry in entries]
    if len(set(ids)) != len(ids):
        raise ValueError(f"entry ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
    spent = sum((entry.epsilon for entry in entries), Fraction(0))
    if spent > total:
        raise ValueError(f"the entries sum to epsilon {amount_text(spent)}, above the total {amount_text(total)}")
    return LedgerState(document["dataset"], _check_time(document["created"], "created"), total, spent,
                       total - spent, entries)


def _dump(document: dict) -> str:
    """A ledger document as indented JSON, for a human to read (no NaN: every amount is a string)."""
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` by a file holding ``text``: a fsynced temporary renamed over it, then the folder fsynced.

    The temporary is created with mode 0666 less the umask (not mkstemp's 0600); when ``path``
    exists its permission bits are kept.
    """
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
    """The sibling lock file of a ledger (``LEDGER.lock``): locked, never read or written."""
    return path.with_name(path.name + ".lock")


@contextmanager
def _locked(path: Path, exclusive: bool, enabled: bool = True):
    """Hold ``flock`` on the ledger's lock file: exclusive for a writer, shared for a reader.

    Only a writer creates the lock file.  A reader that finds none (a ledger copied without it)
    or cannot open it reads unlocked, and leaves nothing behind: writers replace the ledger by
    rename, so a read sees one whole version either way.
    """
    if not enabled:
        yield
        return
    flags = (os.O_RDWR | os.O_CREAT if exclusive else os.O_RDONLY) | os.O_CLOEXEC
    try:
        fd = os.open(lock_path(path), flags, 0o666)
    except OSError as exc:
        if exclusive:
            raise LedgerError(f"{path}: cannot open its lock file {lock_path(path)} ({exc.strerror})") from None
        fd = None
    if fd is None:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


class Ledger:
    """The privacy budget ledger at ``path`` (created by :meth:`create`)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    @classmethod
    def create(cls, path: str | os.PathLike, total_epsilon: Fraction, dataset: str) -> Ledger:
        """Write a new ledger with ``total_epsilon`` for ``dataset``; refuse if ``path`` exists."""
        path = Path(path)
        try:
            total = parse_amount(total_epsilon, "total epsilon")
        except ValueError as exc:
            raise LedgerError(f"{path}: {exc}") from None
        if not isinstance(dataset, str) or not dataset.strip():
            raise LedgerError(f"{path}: the dataset needs a name, got {dataset!r}")
        if not path.parent.is_dir():
            raise LedgerError(f"{path}: the folder {path.parent} does not exist")
        document = {"format": FORMAT, "dataset": dataset, "total_epsilon": amount_text(total), "created": _now(),
                    "entries": []}
        if path.exists():
            raise LedgerError(f"{path}: exists; a budget ledger is never overwritten")
        with _locked(path, exclusive=True):
            if path.exists():
                raise LedgerError(f"{path}: exists; a budget ledger is never overwritten")
            _write_atomic(path, _dump(document))
        return cls(path)

    def _load(self) -> tuple[dict, LedgerState]:
        """The ledger's document and the budget it records (the caller holds the lock)."""
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise LedgerError(f"{self.path}: no such budget ledger") from None
        except OSError as exc:
            raise LedgerError(f"{self.path}: cannot read the budget ledger ({exc.strerror})") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise LedgerError(f"{self.path}: not a countdp budget ledger (not JSON: {exc})") from None
        try:
            return document, _parse_document(document)
        except ValueError as exc:
            raise LedgerError(f"{self.path}: {exc}") from None

    @contextmanager
    def _session(self, exclusive: bool, lock: bool = True):
        """The lock, then the ledger read under it; a missing ledger is refused before a lock file is made."""
        if not self.path.is_file():
            raise LedgerError(f"{self.path}: no such budget ledger")
        with _locked(self.path, exclusive, lock):
            yield self._load()

    def state(self) -> LedgerState:
        """The budget now (under a shared lock)."""
        with self._session(exclusive=False) as (_, state):
            return state

    def check(self, epsilon: Fraction) -> Fraction:
        """What would remain after debiting ``epsilon``, writing nothing; :class:`BudgetExceeded` if it overspends."""
        amount = parse_amount(epsilon, "epsilon")
        state = self.state()
        if amount > state.remaining:
            raise BudgetExceeded(self.path, amount, state.remaining, state.total)
        return state.remaining - amount

    def debit(self, epsilon: Fraction, what: dict, *, lock: bool = True, hold: float = 0.0) -> Debit:
        """Charge ``epsilon`` for the release described by ``what``: check and write under one exclusive lock.

        Raises :class:`BudgetExceeded` (writing nothing) if less than ``epsilon`` remains.  The
        entry is ``debited`` until :meth:`commit`.  ``lock`` and ``hold`` exist for the test that
        shows the lock is needed: ``hold`` seconds pass between reading the ledger and writing it
        back, and ``lock=False`` skips the lock.  Leave both alone otherwise.
        """
        amount = parse_amount(epsilon, "epsilon")
        what = _json_object(what, "what")
        with self._session(exclusive=True, lock=lock) as (document, state):
            if amount > state.remaining:
                raise BudgetExceeded(self.path, amount, state.remaining, state.total)
            time.sleep(hold)
            taken = {entry.entry_id for entry in state.entries}
            entry_id = f"{len(state.entries) + 1}-{secrets.token_hex(4)}"
            while entry_id in taken:
                entry_id = f"{len(state.entries) + 1}-{secrets.token_hex(4)}"
            document["entries"].append({"id": entry_id, "time": _now(), "epsilon": amount_text(amount),
                                        "status": "debited", "what": what})
            _write_atomic(self.path, _dump(document))
        return Debit(entry_id, amount, state.spent, state.remaining - amount)

    def commit(self, entry_id: str, outputs: dict) -> None:
        """Mark entry ``entry_id`` committed (its release's files, ``outputs``, are in place), under the lock."""
        outputs = _json_object(outputs, "outputs")
        with self._session(exclusive=True) as (document, _):
            raw = next((entry for entry in document["entries"] if entry["id"] == entry_id), None)
            if raw is None:
                raise LedgerError(f"{self.path}: no entry {entry_id!r}")
            if raw["status"] == "committed":
                raise LedgerError(f"{self.path}: entry {entry_id!r} is already committed")
            raw.update(status="committed", committed=_now(), outputs=outputs)
            _write_atomic(self.path, _dump(document))


__all__ = ["FORMAT", "BudgetExceeded", "Debit", "Entry", "Ledger", "LedgerError", "LedgerState", "amount_text",
           "lock_path", "parse_amount"]
