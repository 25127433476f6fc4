"""All-or-nothing output: files that have no name until the release commits.

A release writes a table and its sidecar, each into an *unnamed* file (``open(dir, O_TMPFILE)``):
an inode in the output folder with no directory entry, freed by the kernel if the process dies.

The commit, after both files are flushed to disk, runs under an exclusive ``flock`` of the output
folder itself, so commits into one folder never interleave (two ``--overwrite`` releases cannot
leave one's table beside the other's sidecar).  It names the sidecar, then the table, each with a
no-replace operation (``linkat(/proc/self/fd/N, path, AT_SYMLINK_FOLLOW)``): a name that appeared
meanwhile fails the release, which removes what it named.  ``--overwrite`` first removes the old
table, then the old sidecar.  A sidecar carries the sticky bit (:data:`MARK`) while it may stand
without its table: set before the first change, cleared once the table is named.

A *guardian* process, started before the lock, shares the lock and holds both unnamed files open
(``pass_fds``).  If the release dies before telling it the commit is done, the guardian takes the
lock and **rolls forward** if this release's sidecar is named (it links the table from its own
descriptor), else removes a marked sidecar whose table is gone (an ``--overwrite`` killed between
its two removals).  If the guardian dies, the release goes on alone: it will not start naming
without a live guardian, and once both names are linked the commit is done whatever became of the
guardian.  So any *single* death leaves the complete pair or nothing.

**Residual.**  Two names cannot appear in one system call.  If the release *and* the guardian are
both dead while the release is inside the window (a SIGKILL of both at one instant — a container
or cgroup stopped — or the guardian killed first and the release then inside the window), a marked
sidecar stands without its table.  The window runs from the sidecar's ``linkat`` to the table's
(two ``ctypes`` calls prepared beforehand: microseconds) and, with ``--overwrite``, from the old
table's removal to the old sidecar's.  :func:`repair`, run by the next release into the folder
under the lock, removes a marked sidecar without its table.  A power loss inside the window can
leave the same state on disk; the same repair applies.  A release published as a folder
(``--out DIR/``, :class:`~countdp.release.atomic_folder.AtomicFolder`) has no such window: its
pair is named by one ``rename``.

Without ``O_TMPFILE`` (NFS, FUSE) the files are named hidden files (``.NAME.countdp-partial-TOKEN``,
a random TOKEN), each locked by the release (and its guardian) for its whole life
(:mod:`countdp.release.partials`), and linked into place with ``link`` (never replacing; ``rename``
after an existence check under the lock where there are no hard links) once the release has checked
that each name still leads to its own file.  A SIGKILL while they are written leaves them; the
guardian removes them at the commit, and the next release removes those whose lock nobody holds.  Where
the folder cannot be locked (NFS refuses an exclusive ``flock`` of a directory), commits run
unlocked: no-replace naming still lets one release only name ``OUT``, but concurrent ``--overwrite``
releases are not serialised and :func:`repair` leaves marked sidecars alone.
:attr:`AtomicPair.method` says which way a release was committed, and the sidecar records it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

from countdp.release.partials import (
    SIDECAR_SUFFIX,
    create_partial,
    is_at,
    lock_folder,
    partial_name,
    remove_stale_partials,
)

_AT_FDCWD = -100
_AT_SYMLINK_FOLLOW = 0x400
UNNAMED = "unnamed files (O_TMPFILE) linked into place at commit (linkat)"
NAMED = "named partial files linked into place at commit (this filesystem has no O_TMPFILE)"
MARK = stat.S_ISVTX
"""The mode bit a sidecar carries while it may stand without its table (meaningless on a regular file)."""
_NO_HARD_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK)

_GUARDIAN = r"""
import ctypes, fcntl, os, stat, sys
sidecar, table = sys.argv[1], sys.argv[2]
lock, sidecar_fd, table_fd = map(int, sys.argv[3:6])
partials = [(p, fd) for p, fd in zip(sys.argv[6:8], (sidecar_fd, table_fd)) if p != "-"]
def identity(path):
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, stat.S_IMODE(st.st_mode))
def ours(path, fd):
    found, st = identity(path), os.fstat(fd)
    return found is not None and found[:2] == (st.st_dev, st.st_ino)
try:
    os.write(1, b"ready\n")
except OSError:
    sys.exit(0)
said = b""
while chunk := os.read(0, 64):
    said += chunk
if b"done" in said:
    sys.exit(0)
try:
    fcntl.flock(lock, fcntl.LOCK_EX)
except OSError:
    pass
try:
    if ours(sidecar, sidecar_fd) and identity(table) is None:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.linkat(-100, b"/proc/self/fd/%d" % table_fd, -100, os.fsencode(table), 0x400) != 0:
            for p, fd in partials:
                if fd == table_fd and ours(p, fd) and identity(table) is None:
                    os.rename(p, table)
except OSError:
    pass
found = identity(sidecar)
if ours(table, table_fd):
    os.fchmod(sidecar_fd, stat.S_IMODE(os.fstat(sidecar_fd).st_mode) & ~stat.S_ISVTX)
elif found is not None and identity(table) is None and (ours(sidecar, sidecar_fd) or found[2] & stat.S_ISVTX):
    os.unlink(sidecar)
for p, fd in partials:
    if ours(p, fd):
        os.unlink(p)
"""
"""The guardian (``python -I -S``): says ``ready``, waits for ``done`` or the release's death; then, under
the lock (the release's, through the shared descriptor), rolls forward or removes a marked lone sidecar."""


class _Linker:
    """``linkat(/proc/self/fd/N, path, AT_SYMLINK_FOLLOW)``, its arguments encoded beforehand so
    that the two links of a commit follow each other as closely as Python allows."""

    def __init__(self) -> None:
        self.linkat = ctypes.CDLL(None, use_errno=True).linkat

    def __call__(self, fd: int, target: Path) -> None:
        source = f"/proc/self/fd/{fd}".encode()
        if self.linkat(_AT_FDCWD, source, _AT_FDCWD, os.fsencode(target), _AT_SYMLINK_FOLLOW) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), str(target))


class PendingFile:
    """A file being written for a release: unnamed until :meth:`AtomicPair.commit` names it."""

    def __init__(self, target: Path, named_fallback: bool) -> None:
        self.target = target
        self.partial: Path | None = None
        if not named_fallback:
            self.fd = os.open(target.parent, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o666)
        else:  # a random name, locked for the release's life: see countdp.release.partials
            self.partial, self.fd, _ = create_partial(target.parent, target.name, folder=False)
        self.stream = os.fdopen(self.fd, "wb", buffering=1 << 20, closefd=False)

    def finish(self) -> os.stat_result:
        """Flush the file to disk (a full disk fails here, before anything is named)."""
        self.stream.flush()
        os.fsync(self.fd)
        return os.fstat(self.fd)

    def name(self, linker: _Linker) -> None:
        """Give the file its name, never replacing one (``FileExistsError`` if the name exists)."""
        if self.partial is None:
            linker(self.fd, self.target)
            return
        if not is_at(self.partial, self.fd):
            raise OSError(errno.ESTALE, f"{self.partial} is no longer this release's partial file; nothing of "
                          "this release was named", str(self.partial))
        try:
            os.link(self.partial, self.target)
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            if os.path.lexists(self.target):  # no hard links here: check, under the folder's lock
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(self.target)) from None
            os.rename(self.partial, self.target)
        else:
            os.unlink(self.partial)
        self.partial = None

    def is_named(self) -> bool:
        """Whether ``target`` is this very file (same device and inode)."""
        try:
            return os.path.samestat(os.lstat(self.target), os.fstat(self.fd))
        except FileNotFoundError:
            return False

    def discard(self) -> None:
        try:
            self.stream.close()
        except OSError:
            pass
        if self.partial is not None and is_at(self.partial, self.fd):
            self.partial.unlink(missing_ok=True)
        os.close(self.fd)


def _supports_unnamed(folder: Path) -> bool:
    try:
        fd = os.open(folder, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            return False
        raise
    os.close(fd)
    return True


def preflight(folder: Path, estimated_bytes: int, inodes: int = 2) -> None:
    """Refuse, before the budget is debited, a folder that cannot take the release.

    The folder must accept a new file — an unnamed one (or, without ``O_TMPFILE``, a named probe
    removed at once) is actually created, because permission bits do not stop root and only the
    attempt finds a read-only mount — and have ``estimated_bytes`` free for an unprivileged writer
    (``f_bavail * f_frsize``) and ``inodes`` free files (``f_favail``; a filesystem reporting no
    inode count, ``f_files`` 0, is not checked).  Raises :class:`OSError` whose ``strerror`` is one
    line naming the folder.
    """
    folder = Path(folder)
    try:
        if not _supports_unnamed(folder):
            probe = folder / partial_name("countdp-probe")
            os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o600))
            probe.unlink(missing_ok=True)  # unlocked: another release's cleanup may have removed it
    except OSError as exc:
        raise OSError(exc.errno, f"the folder {folder} cannot take a new file ({exc.strerror})", str(folder)) from None
    found = os.statvfs(folder)
    free = found.f_bavail * found.f_frsize
    if free < estimated_bytes:
        raise OSError(errno.ENOSPC, f"the folder {folder} has {free:,} bytes free; the release needs about "
                      f"{estimated_bytes:,}", str(folder))
    if found.f_files and found.f_favail < inodes:
        raise OSError(errno.ENOSPC, f"the folder {folder} has {found.f_favail:,} free inodes (files); the release "
                      f"needs {inodes}", str(folder))


def repair(folder: Path, suffix: str = SIDECAR_SUFFIX) -> list[Path]:
    """Undo what dead commits left in ``folder``; returns the paths removed.

    Under the folder's lock (so no commit is under way): removes the partial files of dead
    releases, and every sidecar (a name ending in ``suffix``) that carries :data:`MARK` without its
    table beside it — the residual of a release and its guardian killed together inside the commit
    window; beside its table, the mark is merely cleared.  Sidecars without the mark are never
    touched.  Without a lock (see the module docstring) only partial files are removed.
    """
    folder = Path(folder)
    lock = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        removed = remove_stale_partials(folder)
        if not lock_folder(lock):
            return removed
        for path in folder.iterdir():
            if not path.name.endswith(suffix) or len(path.name) == len(suffix):
                continue
            try:
                found = path.lstat()
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(found.st_mode) or not found.st_mode & MARK:
                continue
            if os.path.lexists(path.with_name(path.name[:-len(suffix)])):
                os.chmod(path, stat.S_IMODE(found.st_mode) & ~MARK)
            else:
                path.unlink()
                removed.append(path)
        return removed
    finally:
        os.close(lock)


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
        name, table_name = self.sidecar_path.name, self.table_path.name
        repair(folder, name[len(table_name):] if name.startswith(table_name) else SIDECAR_SUFFIX)
        self.table = PendingFile(self.table_path, named)
        try:
            self.sidecar = PendingFile(self.sidecar_path, named)
        except BaseException:
            self.table.discard()
            raise
        self.committed = False

    def __enter__(self) -> AtomicPair:
        return self

    def __exit__(self, *exc) -> None:
        if not self.committed:
            self.table.discard()
            self.sidecar.discard()

    def commit(self, hold=None) -> None:
        """Flush both files to disk, then, under the folder's lock and the guardian, name them.

        Once both names are linked the release is committed: a guardian that died meanwhile
        changes nothing (writing ``done`` to it may fail, and is ignored).  ``hold()``, if given, is
        called just before the first name changes (the caller holds its signals from there on:
        :class:`~countdp.release.engine.HeldSignals`).
        """
        self.table.finish()
        self.sidecar.finish()
        lock = os.open(self.table_path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            guardian = self._guardian(lock)
            try:
                if guardian.stdout.readline() != b"ready\n":
                    raise OSError(errno.ECHILD, "the commit guardian did not start")
                lock_folder(lock)
                self._name_both(guardian, hold)
                self.committed = True
                _tell(guardian, b"done\n")
            finally:
                _tell(guardian, None)
                guardian.wait()
                guardian.stdout.close()
        finally:
            os.close(lock)  # the guardian has exited: this was the last holder of the lock
        for pending in (self.table, self.sidecar):
            pending.stream.close()
            os.close(pending.fd)
        fsync_folder(self.table_path.parent)

    def _guardian(self, lock: int) -> subprocess.Popen:
        partials = [str(p.partial) if p.partial else "-" for p in (self.sidecar, self.table)]
        return subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _GUARDIAN, str(self.sidecar_path), str(self.table_path),
             str(lock), str(self.sidecar.fd), str(self.table.fd), *partials],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
            pass_fds=(lock, self.sidecar.fd, self.table.fd))

    def _name_both(self, guardian: subprocess.Popen, hold=None) -> None:
        """Under the lock: (with ``replace``) remove the old pair, then name the sidecar, then the table.

        The sidecar is marked before it is named and unmarked after the table is; the old sidecar is
        marked before the old table is removed.  Whatever fails, what this release named is removed.
        """
        if guardian.poll() is not None:
            raise OSError(errno.ECHILD, "the commit guardian ended before the commit; nothing was named")
        if hold is not None:
            hold()
        mode = stat.S_IMODE(os.fstat(self.sidecar.fd).st_mode)
        os.fchmod(self.sidecar.fd, mode | MARK)
        if self.replace:
            _remove_old_pair(self.table_path, self.sidecar_path)
        linker = _Linker()
        try:
            self.sidecar.name(linker)
            self.table.name(linker)
        except BaseException as exc:
            if self.sidecar.is_named():
                self.sidecar_path.unlink(missing_ok=True)
            if isinstance(exc, FileExistsError):
                raise FileExistsError(errno.EEXIST, f"{exc.filename2 or exc.filename} already exists (another "
                                      "release committed there first); nothing of this release was named",
                                      exc.filename) from None
            raise
        os.fchmod(self.sidecar.fd, mode)


def _remove_old_pair(table: Path, sidecar: Path) -> None:
    """Remove an old table, then its sidecar, marking the sidecar first (a lone old sidecar is repairable)."""
    try:
        found = os.lstat(sidecar)
        if stat.S_ISREG(found.st_mode) and os.path.lexists(table):
            os.chmod(sidecar, stat.S_IMODE(found.st_mode) | MARK)
    except FileNotFoundError:
        pass
    table.unlink(missing_ok=True)
    sidecar.unlink(missing_ok=True)


def _tell(guardian: subprocess.Popen, message: bytes | None) -> None:
    """Write ``message`` to the guardian (or, for ``None``, close its pipe); a dead guardian is ignored."""
    try:
        guardian.stdin.close() if message is None else (guardian.stdin.write(message), guardian.stdin.flush())
    except OSError:
        pass


def fsync_folder(folder: Path) -> None:
    """Flush ``folder``'s entries to disk, so a name linked or renamed into it survives a power loss."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["MARK", "NAMED", "SIDECAR_SUFFIX", "UNNAMED", "AtomicPair", "PendingFile", "fsync_folder", "lock_folder",
           "preflight", "remove_stale_partials", "repair"]
