"""All-or-nothing output: files that have no name until the release commits.

A release writes a table and its sidecar.  Each is written into an *unnamed* file
(``open(dir, O_TMPFILE)``): the kernel gives it an inode in the output folder but no directory
entry, so until it is linked into place no path reaches it, and if the process dies — an
exception, SIGKILL, a full disk — the kernel frees it.  Nothing is ever cleaned up afterwards,
because nothing that holds counts was ever named.

The commit links the two files into place, sidecar first, then the table
(``linkat(/proc/self/fd/N, path, AT_SYMLINK_FOLLOW)``), after both were written and flushed to
disk.  Between the two links, a sidecar without its table exists for the span of one system
call.  A *guardian* process, started before the first link and watching a pipe, closes that
window: if the release dies before it reports the commit done, the guardian removes the lone
sidecar (only if it is still the inode this release linked).  So after any end of a release
either both files are in place and complete, or neither exists.

Filesystems without ``O_TMPFILE`` (NFS, some network filesystems) get named hidden files
(``.NAME.countdp-partial-PID``) renamed into place at commit.  A SIGKILL there can leave such a
file behind; the next release into the same folder removes the partial files of processes that
no longer exist.  :attr:`AtomicPair.method` says which way a release was committed, and the
sidecar records it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import subprocess
import sys
from pathlib import Path

_AT_FDCWD = -100
_AT_SYMLINK_FOLLOW = 0x400
UNNAMED = "unnamed files (O_TMPFILE) linked into place at commit (linkat)"
NAMED = "named partial files renamed into place at commit (this filesystem has no O_TMPFILE)"
_PARTIAL = re.compile(r"^\..+\.countdp-partial-(\d+)$")

_GUARDIAN = r"""
import os, sys
sidecar, table = sys.argv[1], sys.argv[2]
ours_table, ours_sidecar, old_sidecar = (tuple(map(int, a.split(":"))) if a != "-" else None for a in sys.argv[3:6])
def identity(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)
try:
    os.write(1, b"ready\n")
except OSError:
    sys.exit(0)
said = b""
while chunk := os.read(0, 64):
    said += chunk
if b"done" not in said and identity(table) != ours_table:
    found = identity(sidecar)
    if found is not None and (found == ours_sidecar or (found == old_sidecar and identity(table) is None)):
        os.unlink(sidecar)
"""
"""The guardian, run with ``python -I -S``: it says ``ready``, then waits for the release to say
``done`` or to die (its pipe closes).  If the release died before the table was named, it removes
the sidecar this release linked, or the old sidecar an ``--overwrite`` left without its table."""


def _linkat(fd: int, target: Path) -> None:
    """Give the unnamed file open as ``fd`` the name ``target`` (fails if ``target`` exists)."""
    libc = ctypes.CDLL(None, use_errno=True)
    source = f"/proc/self/fd/{fd}".encode()
    if libc.linkat(_AT_FDCWD, source, _AT_FDCWD, os.fsencode(target), _AT_SYMLINK_FOLLOW) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(target))


class PendingFile:
    """A file being written for a release: unnamed until :meth:`AtomicPair.commit` names it."""

    def __init__(self, target: Path, named_fallback: bool) -> None:
        self.target = target
        self.partial: Path | None = None
        if not named_fallback:
            self.fd = os.open(target.parent, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o666)
        else:
            self.partial = target.with_name(f".{target.name}.countdp-partial-{os.getpid()}")
            self.fd = os.open(self.partial, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o666)
        self.stream = os.fdopen(self.fd, "wb", buffering=1 << 20, closefd=False)

    def finish(self) -> os.stat_result:
        """Flush the file to disk (a full disk fails here, before anything is named)."""
        self.stream.flush()
        os.fsync(self.fd)
        return os.fstat(self.fd)

    def name(self) -> None:
        if self.partial is None:
            _linkat(self.fd, self.target)
        else:
            os.rename(self.partial, self.target)
            self.partial = None

    def discard(self) -> None:
        try:
            self.stream.close()
        except OSError:
            pass
        os.close(self.fd)
        if self.partial is not None:
            self.partial.unlink(missing_ok=True)


def _supports_unnamed(folder: Path) -> bool:
    try:
        fd = os.open(folder, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            return False
        raise
    os.close(fd)
    return True


def remove_stale_partials(folder: Path) -> list[Path]:
    """Remove the named partial files of releases whose process no longer exists (the fallback's leftovers)."""
    removed = []
    for path in folder.iterdir():
        match = _PARTIAL.match(path.name)
        if not match:
            continue
        try:
            os.kill(int(match.group(1)), 0)
            continue  # that release is still running
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed


class AtomicPair:
    """A table and its sidecar, written unnamed and committed together.

    ``with AtomicPair(table, sidecar) as pair:`` write to ``pair.table.stream`` and
    ``pair.sidecar.stream``, then call ``pair.commit()``; leaving the block without a commit
    (an exception) discards both.  ``replace=True`` removes an existing table and sidecar at
    commit (the table first, so a table is never left without its sidecar).
    """

    def __init__(self, table: Path, sidecar: Path, replace: bool = False) -> None:
        self.table_path, self.sidecar_path, self.replace = Path(table), Path(sidecar), replace
        folder = self.table_path.parent
        named = not _supports_unnamed(folder)
        self.method = NAMED if named else UNNAMED
        if named:
            remove_stale_partials(folder)
        self.table = PendingFile(self.table_path, named)
        self.sidecar = PendingFile(self.sidecar_path, named)
        self.committed = False

    def __enter__(self) -> AtomicPair:
        return self

    def __exit__(self, *exc) -> None:
        if not self.committed:
            self.table.discard()
            self.sidecar.discard()

    def commit(self) -> None:
        """Flush both files to disk, then name them — sidecar, then table — under the guardian.

        With ``replace``, the old table is removed before the old sidecar, so a table is never
        left without its sidecar; a release that dies during the replacement leaves neither.
        """
        table_stat, sidecar_stat = self.table.finish(), self.sidecar.finish()
        old_sidecar = _identity(self.sidecar_path) if self.replace else None
        guardian = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _GUARDIAN, str(self.sidecar_path), str(self.table_path),
             _text(table_stat), _text(sidecar_stat), _text(old_sidecar)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            if guardian.stdout.readline() != b"ready\n":
                raise OSError("the commit guardian did not start")
            if self.replace:
                self.table_path.unlink(missing_ok=True)
                self.sidecar_path.unlink(missing_ok=True)
            self.sidecar.name()
            try:
                self.table.name()
            except BaseException:
                self.sidecar_path.unlink(missing_ok=True)
                raise
            guardian.stdin.write(b"done\n")
            self.committed = True
        finally:
            guardian.stdin.close()
            guardian.wait()
            guardian.stdout.close()
        for pending in (self.table, self.sidecar):
            pending.stream.close()
            os.close(pending.fd)
        fsync_folder(self.table_path.parent)


def _identity(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def _text(stat: os.stat_result | None) -> str:
    """A file's identity (device and inode) for the guardian's command line, ``-`` for none."""
    return "-" if stat is None else f"{stat.st_dev}:{stat.st_ino}"


def fsync_folder(folder: Path) -> None:
    """Flush ``folder``'s entries to disk, so a name linked or renamed into it survives a power loss."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["NAMED", "UNNAMED", "AtomicPair", "PendingFile", "fsync_folder", "remove_stale_partials"]
