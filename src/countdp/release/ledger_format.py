"""The budget ledger document: its amounts, entries and accounts, parsed from JSON and written back.

A ledger file holds one JSON object, ``countdp-budget-ledger/2``: ``dataset``, ``created``,
``accounts`` (``bit``, and ``invariant`` if asked for: one ``total_epsilon`` each, never added to
another) and ``entries`` (one per release: ``id``, ``time``, ``account``, ``epsilon``, ``status``,
``what``, and ``outputs`` once committed or ``reason`` once failed).  Amounts are exact strings
(``"0.1"``, ``"1/3"``); a JSON number (a binary float) is refused.

**Format /1** had one ``total_epsilon`` and entries without an account: invariant releases were
charged to the same total as ordinary ones, with nothing saying which was which.  A ``/1`` ledger
reads as its total turned into the bit account and its entries as of **unknown unit**
(``"account": "unknown"``, kept when a write upgrades the file to ``/2``).  An entry of unknown
unit is counted as spent in *every* account, including one added later by ``countdp budget
add-account`` (whose total must cover it): an earlier invariant release is never forgotten, at the
price of counting an ordinary one twice.  (A ``/1`` ledger upgraded by a countdp that marked its
entries ``bit`` cannot be told apart from a ``/2`` one: that residual is in the file, not here.)

**A superseded version**: before a new version of the ledger is renamed over the old, the old
file's content is overwritten by a small ``countdp-budget-ledger/superseded`` document naming the
ledger and the replacement (:func:`superseded`).  Every reader refuses it as a budget, so a name
that still reaches the old version (a hard link made while it was being rewritten) never reads as
a second budget.  :func:`replaced_by` reads such a document back.
"""

from __future__ import annotations

import json
import re
from contextlib import suppress
from dataclasses import astuple, dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

from countdp.values.alpha import rational_text

FORMAT = "countdp-budget-ledger/2"
"""The ``format`` tag of a ledger file as written (``countdp-budget-ledger/1`` is still read)."""

FORMAT_1 = "countdp-budget-ledger/1"
"""The ``format`` tag of the first ledgers: one total, entries without an account."""

SUPERSEDED = "countdp-budget-ledger/superseded"
"""The ``format`` tag of an old version of a ledger, overwritten just before its replacement was renamed over it."""

UNITS = ("bit", "invariant")
"""The units of privacy, one account each; their epsilons bound different neighbours and are never added."""

UNKNOWN = "unknown"
"""The account of an entry written by format /1 (no unit recorded): it is counted as spent in every account."""

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
    """One release charged to the budget, as read from the ledger (``reason``: why a ``failed`` one failed;
    ``account``: a unit, or :data:`UNKNOWN` for an entry from format /1)."""

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
    """One account at one moment: ``spent`` sums its entries and those of unknown unit, ``remaining = total -
    spent``, exactly."""

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

    @property
    def unknown_spent(self) -> Fraction:
        """The epsilon of the entries of unknown unit (format /1), counted as spent in every account."""
        return sum((entry.epsilon for entry in self.entries if entry.account == UNKNOWN), Fraction(0))


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


def require(condition: object, problem: str) -> None:
    """``ValueError(problem)`` unless ``condition`` holds."""
    if not condition:
        raise ValueError(problem)


def json_object(value: object, name: str) -> dict:
    """A copy of ``value`` as it will read back from JSON, or ``ValueError`` if it is not a JSON object."""
    require(isinstance(value, dict), f"{name} must be a dict, got {type(value).__name__}")
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be JSON-serializable: {exc}") from None


def now() -> str:
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
    require(isinstance(raw, dict), f"{where} is not an object")
    missing = [key for key in ("id", "time", "account", "epsilon", "status", "what") if key not in raw]
    require(not missing, f"{where} lacks {', '.join(missing)}")
    require(isinstance(raw["id"], str) and raw["id"], f"{where}: id must be a non-empty string, got {raw['id']!r}")
    require(raw["account"] in accounts or raw["account"] == UNKNOWN,
            f"{where}: account {raw['account']!r} is not one of the ledger's ({', '.join(accounts)})")
    require(raw["status"] in STATUSES, f"{where}: status must be one of {', '.join(STATUSES)}, got {raw['status']!r}")
    reason = raw.get("reason") if raw["status"] == "failed" else None
    require(raw["status"] != "failed" or isinstance(reason, str) and reason,
            f"{where}: a failed entry needs its reason (a non-empty string), got {reason!r}")
    outputs = raw.get("outputs", {})
    require(isinstance(raw["what"], dict) and isinstance(outputs, dict), f"{where}: what and outputs must be objects")
    epsilon = parse_amount(raw["epsilon"], f"{where}: epsilon")
    return Entry(raw["id"], _check_time(raw["time"], f"{where}: time"), epsilon, raw["status"], raw["what"], outputs,
                 raw["account"], reason)


def _account_states(accounts: dict, entries: tuple[Entry, ...]) -> dict[str, AccountState]:
    """Each account's total, spent (its entries and those of unknown unit) and remaining, or ``ValueError``."""
    states = {}
    for unit, account in accounts.items():
        require(isinstance(account, dict) and "total_epsilon" in account, f"accounts.{unit} lacks total_epsilon")
        total = parse_amount(account["total_epsilon"], f"accounts.{unit}.total_epsilon")
        spent = sum((entry.epsilon for entry in entries if entry.account in (unit, UNKNOWN)), Fraction(0))
        require(spent <= total, f"the {unit} account's entries sum to epsilon {amount_text(spent)}, above its "
                                f"total {amount_text(total)}")
        states[unit] = AccountState(total, spent, total - spent)
    return states


def parse_document(document: object) -> LedgerState:
    """The budget a ledger document (upgraded to /2) records, or ``ValueError`` saying what is wrong with it."""
    found = document.get("format") if isinstance(document, dict) else type(document).__name__
    require(found == FORMAT, f"not a countdp budget ledger (format {found!r}, expected {FORMAT!r})")
    missing = [key for key in ("dataset", "accounts", "created", "entries") if key not in document]
    require(not missing, f"the ledger lacks {', '.join(missing)}")
    accounts = document["accounts"]
    require(isinstance(document["dataset"], str) and isinstance(document["entries"], list),
            "dataset must be a string and entries a list")
    require(isinstance(accounts, dict) and "bit" in accounts and set(accounts) <= set(UNITS),
            f"accounts must hold the bit account, and no other than {', '.join(UNITS)}, got {accounts!r}")
    entries = tuple(_parse_entry(raw, number, accounts) for number, raw in enumerate(document["entries"], start=1))
    ids = [entry.entry_id for entry in entries]
    require(len(set(ids)) == len(ids), f"entry ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
    states = _account_states(accounts, entries)
    return LedgerState(document["dataset"], _check_time(document["created"], "created"), *astuple(states["bit"]),
                       entries, states)


def upgraded(document: object) -> object:
    """``document`` in format /2: a /1 ledger's ``total_epsilon`` becomes its bit account, and its entries, which
    recorded no unit, are of :data:`UNKNOWN` unit (counted in every account)."""
    if not isinstance(document, dict) or document.get("format") != FORMAT_1:
        return document
    upgraded = {key: value for key, value in document.items() if key != "total_epsilon"} | {"format": FORMAT}
    upgraded["accounts"] = {"bit": {key: value for key, value in document.items() if key == "total_epsilon"}}
    if isinstance(entries := document.get("entries"), list):
        upgraded["entries"] = [{"account": UNKNOWN, **raw} if isinstance(raw, dict) else raw for raw in entries]
    return upgraded


def serialised(document: dict) -> bytes:
    """``document`` as the ledger file holds it: indented JSON, UTF-8, a final newline."""
    return (json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def superseded(ledger: Path, replacement: Path) -> bytes:
    """The content an old version of ``ledger`` is overwritten with just before ``replacement`` is renamed over it."""
    return serialised({"format": SUPERSEDED, "ledger": str(ledger), "replacement": replacement.name,
                       "note": "an old version of a countdp budget ledger, superseded: never a budget"})


def replaced_by(document: object) -> tuple[Path, Path] | None:
    """``(ledger, replacement)`` if ``document`` is a superseded version (see :func:`superseded`), else None."""
    if not isinstance(document, dict) or document.get("format") != SUPERSEDED:
        return None
    ledger, replacement = document.get("ledger"), document.get("replacement")
    require(isinstance(ledger, str) and isinstance(replacement, str) and replacement == Path(replacement).name,
            f"a malformed {SUPERSEDED} document")
    return Path(ledger), Path(ledger).with_name(replacement)


__all__ = ["FORMAT", "FORMAT_1", "STATUSES", "SUPERSEDED", "UNITS", "UNKNOWN", "AccountState", "BudgetExceeded",
           "Debit", "Entry", "LedgerError", "LedgerState", "amount_text", "json_object", "now", "parse_amount",
           "parse_document", "replaced_by", "require", "serialised", "superseded", "upgraded"]
