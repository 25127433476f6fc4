"""The budget ledger's file on disk: its lock file, a checked open, an in-place overwrite, fsynced temporaries.

:mod:`countdp.release.ledger` runs its locked operations with these.  A ledger file is one regular
file with one name (:func:`refuse_odd`); a lock is held only while the lock file's name still
reaches the file locked (:func:`locked`); a version of the ledger is read whole through a descriptor
kept open (:class:`Version`), so a writer can check and mark that very version before it replaces it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import stat
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from countdp.release.atomic import fsync_folder
from countdp.release.ledger_format import LedgerError, require
from countdp.validation import file_kind

ATTEMPTS = 5
"""How many times an operation reads the ledger again after it, or its lock file, was replaced meanwhile."""


class Replaced(Exception):
    """The ledger or its lock file was replaced while an operation held it: it reads the ledger again."""


@dataclass(frozen=True)
class Version:
    """One version of the ledger file: its open descriptor (read-write for a writer) and its bytes."""

    fd: int
    text: bytes


def lock_path(path: Path) -> Path:
    """The lock file of the ledger file ``path`` (``LEDGER.lock`` beside the resolved file): locked, never read."""
    return path.with_name(path.name + ".lock")


def names(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (the same device and inode)."""
    try:
        found = os.stat(path)
    except OSError:
        return False
    held = os.fstat(fd)
    return (found.st_dev, found.st_ino) == (held.st_dev, held.st_ino)


@contextmanager
def locked(path: Path, exclusive: bool, given: Path):
    """Hold ``flock`` on the resolved ledger ``path``'s lock file, exclusive to write, shared to read (only a
    writer creates it: writers rename, so a read sees one whole version anyway); yields its descriptor, or None
    for a reader without a lock file.  A lock file removed or replaced meanwhile is opened again (its lock would
    exclude no one).  Messages name ``given``."""
    lock = lock_path(path)
    flags = (os.O_RDWR | os.O_CREAT if exclusive else os.O_RDONLY) | os.O_CLOEXEC
    for _ in range(ATTEMPTS):
        try:
            fd = os.open(lock, flags, 0o666)
        except OSError as exc:
            if exclusive:
                raise LedgerError(f"{given}: cannot open its lock file {lock} ({exc.strerror})") from None
            yield None  # a reader without a lock file reads unlocked
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            if names(lock, fd):
                yield fd
                return
        finally:
            os.close(fd)  # closing the last descriptor releases the lock
    raise LedgerError(f"{given}: its lock file {lock} was removed or replaced {ATTEMPTS} times while waiting for it")


def refuse_odd(status: os.stat_result) -> None:
    """``ValueError`` for a file that is not regular, or has several names (a rename over one forks the budget)."""
    mode = status.st_mode
    require(stat.S_ISREG(mode), f"not a regular file ({file_kind(mode)}); a budget ledger is one file")
    require(status.st_nlink == 1, f"the budget ledger has {status.st_nlink} hard links; one budget is reached "
                                  "through one file (remove the other links, or use a symlink)")


def content(fd: int) -> bytes:
    """The whole content of the file open as ``fd``, read from its start."""
    chunks, offset = [], 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def open_version(path: Path, write: bool) -> Version:
    """The version of the ledger in ``path``, open and read; a folder or a FIFO is refused before it is opened."""
    refuse_odd(os.stat(path))
    fd = os.open(path, (os.O_RDWR if write else os.O_RDONLY) | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if (status := os.fstat(fd)).st_nlink == 0:
            raise Replaced  # renamed over between the open and this check: the ledger is another version now
        refuse_odd(status)
        return Version(fd, content(fd))
    except BaseException:
        os.close(fd)
        raise


def overwrite(fd: int, data: bytes) -> None:
    """Make ``data`` the content of the file open as ``fd``, in place, padded with spaces to the file's size.

    A ledger's versions are JSON, to which trailing spaces are nothing: padded, ``data`` covers every
    byte the file had, so a writer killed between the write and the truncation (which then changes
    nothing) leaves a whole document, never ``data`` followed by the tail of the old one."""
    data = data.ljust(os.fstat(fd).st_size, b" ")
    written = 0
    while written < len(data):
        written += os.pwrite(fd, data[written:], written)
    os.ftruncate(fd, len(data))


def sweep_temporaries(real: Path, keep: Path | None = None) -> None:
    """Remove the temporaries of writers killed before their rename (:func:`temporary`'s names beside ``real``),
    but ``keep``; called under the exclusive lock, when no other writer can have one open."""
    pattern = re.compile(rf"^\.{re.escape(real.name)}\.[0-9a-f]{{12}}\.tmp$")
    try:
        found = [name for name in os.listdir(real.parent) if pattern.match(name)]
    except OSError:
        return
    for name in found:
        if keep is None or name != keep.name:
            with contextlib.suppress(OSError):
                os.unlink(real.parent / name)


def temporary(real: Path, data: bytes, mode: int | None) -> Path:
    """A fsynced file beside ``real`` holding ``data`` (with ``mode``, else the umask's), its name on disk too."""
    tmp = real.with_name(f".{real.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        overwrite(fd, data)
        os.fsync(fd)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)
    fsync_folder(real.parent)  # the replacement is named on disk before the old version is marked superseded
    return tmp


__all__ = ["ATTEMPTS", "Replaced", "Version", "content", "lock_path", "locked", "names", "open_version", "overwrite",
           "refuse_odd", "sweep_temporaries", "temporary"]
