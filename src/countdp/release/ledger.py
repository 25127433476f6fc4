"""A privacy budget for one dataset, kept in a JSON ledger file that refuses to overspend.

Releases about the same people compose sequentially: their epsilons add up.  A release is debited
*before* its noise is drawn, then committed once its files are in place, or marked failed; its
epsilon stays spent either way, or if a crash leaves it ``debited``: the noise may have been drawn.
**One account per unit of privacy, never summed**: ``bit`` (ordinary and ``--levels`` releases)
and, if asked for, ``invariant`` (``--invariant`` releases); a debit to an account the ledger lacks
is refused.  The document (exact amounts; format ``/1`` read, its entries of unknown unit spent in
every account) is :mod:`countdp.release.ledger_format`'s.  The ledger is the curator's private
record (inputs, their SHA-256, outputs): it stays with the curator and is never published.

**One ledger, one budget, however it is named**: every read, write and lock goes to the resolved
file (``os.path.realpath``): a symlink to it or its folder reaches the same ledger and lock file
(``LEDGER.lock`` beside the real file), and stays a symlink.  A hard link would fork the budget (a
rename replaces one name): a ledger with several, or not a regular file, is refused when read and
again just before it is replaced.  A hard link made after that check cannot fork it either: the old
version is overwritten, through the descriptor it was read from, by a *superseded* document naming
the ledger before the new one is renamed over it, so a name still reaching it is refused.

**A write** holds an exclusive ``flock`` on the lock file (no amounts; leave it) across its whole
read-check-write, a read a shared one, and only while the lock file's name still reaches the file
locked (one removed meanwhile is opened again).  The new version is a fsynced temporary renamed
over the old as a compare-and-swap: holding ``flock`` on the old version itself, the writer checks
that the lock file is still its own and that the ledger's name still reaches the version it read,
unchanged and with one link, then marks it superseded and renames.  A writer whose check fails
(its lock file was removed and another went ahead) reads the ledger again and decides again.  A
ledger that cannot be renamed over (a bind-mounted file) is refused in one line, left as it was.

**Interrupts and deaths.**  SIGINT, SIGTERM and SIGHUP wait from the mark to the rename, then stop
the command at a whole ledger.  The mark is padded to the old version's length, so a writer killed
before it truncates leaves a whole mark.  A writer killed between the mark and the rename leaves the
ledger superseded with its fsynced replacement beside it: a read reads the replacement (looked for
beside the ledger as it is named now, so a folder moved since is the same ledger), and the next write
renames it into place and removes dead writers' temporaries.  A power loss that keeps only part of
the mark leaves a ledger refused (not JSON) until its replacement (``.LEDGER.*.tmp``) is renamed over
it by hand.  Nothing stops a program that bypasses this module: an editor, or an older copy put back
(``cp``, a backup), gives back what was spent since (docs/threat-model.md).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import secrets
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from fractions import Fraction
from pathlib import Path

from countdp.release.atomic import fsync_folder
from countdp.release.ledger_file import (
    ATTEMPTS,
    Replaced,
    Version,
    content,
    lock_path,
    locked,
    names,
    open_version,
    overwrite,
    refuse_odd,
    sweep_temporaries,
    temporary,
)
from countdp.release.ledger_format import (
    FORMAT,
    STATUSES,
    UNITS,
    UNKNOWN,
    AccountState,
    BudgetExceeded,
    Debit,
    Entry,
    LedgerError,
    LedgerState,
    amount_text,
    json_object,
    now,
    parse_amount,
    parse_document,
    replaced_by,
    require,
    serialised,
    superseded,
    upgraded,
)
from countdp.release.signals import HeldSignals
from countdp.services.json_limits import json_problem


@contextmanager
def uninterrupted() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP held for the block (:class:`~countdp.release.signals.HeldSignals`), then the
    first that arrived raised again once the block is done, so the command still stops, at a whole ledger."""
    held = HeldSignals()
    with held:
        held.hold()
        yield
    if held.received:
        signal.raise_signal(signal.Signals[held.received[0]])


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
            require(isinstance(dataset, str) and dataset.strip(), f"the dataset needs a name, got {dataset!r}")
            require(real.parent.is_dir(), f"the folder {real.parent} does not exist")
        except ValueError as exc:
            raise LedgerError(f"{path}: {exc}") from None
        document = {"format": FORMAT, "dataset": dataset, "accounts": accounts, "created": now(), "entries": []}
        for held in (False, True):  # refused before a lock file is made, and again under the lock
            with locked(real, True, path) if held else nullcontext():
                if os.path.lexists(real):
                    raise LedgerError(f"{path}: exists; a budget ledger is never overwritten")
                if held:
                    tmp = temporary(real, serialised(document), None)
                    try:
                        os.replace(tmp, real)
                    except BaseException:
                        tmp.unlink(missing_ok=True)
                        raise
                    fsync_folder(real.parent)
        return cls(path)

    def _refusal(self, exc: BaseException) -> BaseException:
        """``exc``, from opening or parsing the ledger, as the one-line :class:`LedgerError` naming it as given."""
        if isinstance(exc, LedgerError) or not isinstance(exc, OSError | ValueError | RecursionError):
            return exc
        if isinstance(exc, RecursionError) or "integer string conversion" in str(exc):  # json.loads' other refusals
            return LedgerError(f"{self.path}: not a countdp budget ledger (not JSON: {json_problem(exc)})")
        if isinstance(exc, FileNotFoundError):
            return LedgerError(f"{self.path}: no such budget ledger")
        if isinstance(exc, OSError):
            return LedgerError(f"{self.path}: cannot read the budget ledger ({exc.strerror})")
        if isinstance(exc, UnicodeDecodeError | json.JSONDecodeError):
            return LedgerError(f"{self.path}: not a countdp budget ledger (not JSON: {exc})")
        return LedgerError(f"{self.path}: {exc}")

    def _load(self, real: Path, write: bool) -> tuple[Version, dict, LedgerState]:
        """The version of the ledger in ``real``, open, its document (as /2) and its budget, or LedgerError."""
        version = None
        try:
            version = open_version(real, write)
            document = upgraded(json.loads(version.text.decode("utf-8")))
            if (superseding := replaced_by(document)) is not None:
                document = self._replacement(real, version, *superseding, write)
            return version, document, parse_document(document)
        except BaseException as exc:
            if version is not None:
                os.close(version.fd)
            if (refusal := self._refusal(exc)) is exc:
                raise
            raise refusal from None

    def _replacement(self, real: Path, version: Version, ledger: Path, replacement: Path, write: bool) -> dict:
        """The document a superseded version of ``real`` was replaced by, if its writer died before the rename
        (a writer first renames it into place and reads again: :class:`Replaced`); refused under any other file
        name.  The replacement is looked for beside ``real``: the folder may since have been moved, or be
        reached through a bind mount, and it is the same ledger."""
        ledger, replacement = real.with_name(ledger.name), real.with_name(replacement.name)
        if ledger != real:
            raise LedgerError(f"{self.path}: a superseded old version of the budget ledger {ledger} (a name made for "
                              f"it while it was rewritten): never a budget; remove this name and use {ledger}")
        if not os.path.lexists(replacement):
            raise LedgerError(f"{self.path}: superseded by {replacement}, which is missing")
        if not write:
            replaced = open_version(replacement, False)
            os.close(replaced.fd)
            return upgraded(json.loads(replaced.text.decode("utf-8")))
        fcntl.flock(version.fd, fcntl.LOCK_EX)
        if names(real, version.fd) and content(version.fd) == version.text:
            os.replace(replacement, real)
            fsync_folder(real.parent)
        raise Replaced

    def _claim(self, real: Path, version: Version, lock: int) -> None:
        """Check, holding ``flock`` on the version read, that it may be replaced: the lock file is still ``lock``,
        ``real`` still names this version, unchanged and unmarked (else :class:`Replaced`), with one link."""
        fcntl.flock(version.fd, fcntl.LOCK_EX)  # one writer at a time checks, marks and replaces a version
        if not (names(lock_path(real), lock) and names(real, version.fd) and content(version.fd) == version.text):
            raise Replaced
        try:
            refuse_odd(os.fstat(version.fd))  # a hard link made since the read: refused, nothing written
        except ValueError as exc:
            raise LedgerError(f"{self.path}: {exc}") from None

    def _replace(self, real: Path, version: Version, document: dict, lock: int | None) -> None:
        """Rename ``document`` over ``real`` in place of ``version``: claimed and marked superseded first, unless
        ``lock`` is None (``lock=False``, for tests); if the mark or the rename fails, the version is restored.

        From the mark to the rename, SIGINT, SIGTERM and SIGHUP wait (:func:`uninterrupted`): an interrupt there
        would leave the old version naming a replacement that its handler then removed, every entry lost.  The
        temporaries of writers killed before their rename are removed first (this writer holds the lock)."""
        if lock is not None:
            sweep_temporaries(real)
        try:
            tmp = temporary(real, serialised(document), os.fstat(version.fd).st_mode & 0o7777)
        except OSError as exc:
            raise LedgerError(f"{self.path}: cannot write the budget ledger's new version beside {real} "
                              f"({exc.strerror}); nothing was written") from None
        renamed = False
        try:
            if lock is not None:
                self._claim(real, version, lock)
            with uninterrupted():
                try:
                    if lock is not None:
                        overwrite(version.fd, superseded(real, tmp))
                    os.replace(tmp, real)
                    renamed = True
                except OSError as exc:
                    if lock is not None:
                        overwrite(version.fd, version.text)
                    mount = ": a budget ledger cannot be a mount point" if exc.errno == errno.EBUSY else ""
                    raise LedgerError(f"{self.path}: cannot replace {real} ({exc.strerror}){mount}; nothing was "
                                      "written") from None
        except BaseException:
            if not renamed:
                tmp.unlink(missing_ok=True)
            raise
        fsync_folder(real.parent)

    def _transact(self, change: Callable[[dict, LedgerState], tuple[object, dict | None]], exclusive: bool = True,
                  lock: bool = True) -> object:
        """``change(document, state)`` on the ledger read under the lock: its result, after writing the document it
        returns (if not None); read again if the ledger or its lock file was replaced meanwhile.  A missing, odd
        or hard-linked ledger is refused before a lock file is made, and again under the lock."""
        real = Path(os.path.realpath(self.path))
        try:  # by name: a version opened here could be replaced, its last link gone, before it is checked
            refuse_odd(os.stat(real))
        except (OSError, ValueError) as exc:
            raise self._refusal(exc) from None
        for _ in range(ATTEMPTS):
            with locked(real, exclusive, self.path) if lock else nullcontext() as held:
                try:
                    version, document, state = self._load(real, exclusive)
                except Replaced:
                    continue
                try:
                    result, new = change(document, state)
                    if new is not None:
                        self._replace(real, version, new, held)
                    return result
                except Replaced:
                    continue
                finally:
                    os.close(version.fd)
        raise LedgerError(f"{self.path}: the ledger was replaced {ATTEMPTS} times under this operation (is its lock "
                          f"file {lock_path(real)} being removed?); nothing was written")

    def _account(self, state: LedgerState, account: str) -> AccountState:
        """The state of ``account``; refused if the ledger lacks it (its epsilon is not the bit account's to spend)."""
        require(account in UNITS, f"account must be one of {', '.join(UNITS)}, got {account!r}")
        if account not in state.accounts:
            raise LedgerError(f"{self.path}: the ledger has no account for {account} releases (their epsilon is for "
                              "invariant neighbours, a different unit from the bit-level budget); add one with "
                              f"`countdp budget add-account {self.path} --invariant-epsilon E` (or create a ledger "
                              "with `countdp budget init … --invariant-epsilon E`)")
        return state.accounts[account]

    def state(self) -> LedgerState:
        """The budget now (under a shared lock)."""
        return self._transact(lambda _, state: (state, None), exclusive=False)

    def check(self, epsilon: Fraction, account: str = "bit") -> Fraction:
        """What would remain of ``account`` after ``epsilon``, writing nothing; :class:`BudgetExceeded` if short."""
        amount = parse_amount(epsilon, "epsilon")
        balance = self._account(self.state(), account)
        if amount > balance.remaining:
            raise BudgetExceeded(self.path, amount, balance.remaining, balance.total, account)
        return balance.remaining - amount

    def debit(self, epsilon: Fraction, what: dict, *, account: str = "bit", guard=None, lock: bool = True,
              hold: float = 0.0) -> Debit:
        """Charge ``epsilon`` to ``account`` for the release described by ``what``: check and write under one lock.

        :class:`BudgetExceeded` (writing nothing) if less than ``epsilon`` remains, :class:`LedgerError` if the
        ledger lacks the account; ``guard(state)``, called under the lock before anything is written, may
        refuse the debit by raising (a rule over the earlier entries); ``hold`` (seconds between read and
        write) and ``lock=False`` (no lock and no check before the rename) are for tests."""
        amount = parse_amount(epsilon, "epsilon")
        what = json_object(what, "what")

        def change(document: dict, state: LedgerState) -> tuple[Debit, dict]:
            if guard is not None:
                guard(state)
            balance = self._account(state, account)
            if amount > balance.remaining:
                raise BudgetExceeded(self.path, amount, balance.remaining, balance.total, account)
            time.sleep(hold)
            taken = {entry.entry_id for entry in state.entries}
            while (entry_id := f"{len(state.entries) + 1}-{secrets.token_hex(4)}") in taken:
                pass
            document["entries"].append({"id": entry_id, "time": now(), "account": account,
                                        "epsilon": amount_text(amount), "status": "debited", "what": what})
            return Debit(entry_id, amount, balance.spent, balance.remaining - amount, account), document

        return self._transact(change, lock=lock)

    def _close(self, entry_id: str, status: str, **fields) -> None:
        """Mark the ``debited`` entry ``entry_id`` as ``status`` (stamped with the time) and ``fields``, locked."""
        def change(document: dict, _: LedgerState) -> tuple[None, dict]:
            raw = next((entry for entry in document["entries"] if entry["id"] == entry_id), None)
            if raw is None or raw["status"] != "debited":
                problem = "no entry" if raw is None else f"already {raw['status']}:"
                raise LedgerError(f"{self.path}: {problem} {entry_id!r}")
            raw.update(status=status, **{status: now()}, **fields)
            return None, document

        self._transact(change)

    def commit(self, entry_id: str, outputs: dict) -> None:
        """Mark entry ``entry_id`` committed (its release's files, ``outputs``, are in place), under the lock."""
        self._close(entry_id, "committed", outputs=json_object(outputs, "outputs"))

    def fail(self, entry_id: str, reason: str) -> None:
        """Mark entry ``entry_id`` failed with ``reason`` and the time; it stays spent (its noise may be drawn)."""
        require(isinstance(reason, str) and reason.strip(), f"a failure needs a reason (a string), got {reason!r}")
        self._close(entry_id, "failed", reason=reason)

    def add_account(self, account: str, total_epsilon: Fraction) -> None:
        """Give the ledger the account ``account`` of ``total_epsilon``, under the lock; refused if it has one, or if
        the total is below the epsilon of the ledger's entries of unknown unit (format /1), spent in every account."""
        total = parse_amount(total_epsilon, f"{account} total epsilon")

        def change(document: dict, state: LedgerState) -> tuple[None, dict]:
            if account not in UNITS or account in state.accounts:
                raise LedgerError(f"{self.path}: cannot add the account {account!r}: the ledger has "
                                  f"{', '.join(state.accounts)}, of {', '.join(UNITS)} (a total is set once)")
            if total < state.unknown_spent:
                raise LedgerError(f"{self.path}: cannot add the {account} account with total epsilon "
                                  f"{amount_text(total)}: the ledger's format /1 entries, of unknown unit, already "
                                  f"spent {amount_text(state.unknown_spent)} of every account")
            document["accounts"][account] = {"total_epsilon": amount_text(total)}
            return None, document

        self._transact(change)


__all__ = ["FORMAT", "STATUSES", "UNITS", "UNKNOWN", "AccountState", "BudgetExceeded", "Debit", "Entry", "Ledger",
           "LedgerError", "LedgerState", "amount_text", "lock_path", "parse_amount"]
