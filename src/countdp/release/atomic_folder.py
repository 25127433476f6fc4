"""All-or-nothing output as a folder: a release published by one ``rename``.

``--out results/noisy/`` (a trailing ``/``) publishes the folder ``results/noisy`` holding exactly
the table ``table.SUFFIX`` and its sidecar ``table.SUFFIX.release.json``.  Both files are written
into a hidden *partial folder* beside it, ``results/.noisy.countdp-partial-TOKEN`` (TOKEN: 32 random
hex digits), which the release holds an exclusive ``flock`` on for its whole life
(:mod:`countdp.release.partials`).  The commit flushes both files and that folder to disk, checks
that the partial name still leads to the folder this release made, then names the whole release
with one system call:

* ``renameat2(partial, OUT, RENAME_NOREPLACE)``: the folder appears complete, or (a name already
  there) the call fails and nothing of this release is named;
* with ``--overwrite`` and a release at OUT, ``renameat2(partial, OUT, RENAME_EXCHANGE)``: the new
  release takes the old one's place in one step; the old one, now under the partial name (and
  locked by this release beforehand), is removed afterwards.

Every state a reader can see at OUT is therefore a whole release, the old one or the new one, or
nothing before the first commit: two names never have to appear one after the other, so no
guardian process is needed (:class:`~countdp.release.atomic.AtomicPair` needs one) and there is
no residual window.  Whatever dies, and when, OUT holds a complete pair or nothing.  A dead
release leaves only its partial folder (unfinished files, or an old release it swapped out), whose
lock died with it; the next release into the parent removes it
(:func:`~countdp.release.partials.remove_stale_partials`), file by file, only the names a release
writes there.

``--overwrite`` replaces only a countdp release: a folder holding exactly one table
(``table.csv``, ``table.parquet`` or ``table.pq``) and its sidecar.  A folder with anything else in
it, an empty folder, a mount point, a file or a symbolic link at OUT is refused and left as it is;
a folder that changes between that check and the exchange is swapped back.

Where ``renameat2`` or its flags are unsupported (``ENOSYS``/``EINVAL``: older kernels and C
libraries, many FUSE and NFS mounts), which a probe inside the partial folder finds before
anything is written, the commit runs under an exclusive ``flock`` of the parent folder, so that
countdp commits there never interleave: an existence check, then a plain ``rename``.  To replace,
the old release is first renamed aside (to a partial name, locked), so a death between the two
renames leaves nothing at OUT (never a mismatched pair), and the old release aside is removed like
any dead partial.  :attr:`AtomicFolder.method` says which way a release is committed, and the
sidecar records it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import stat
from pathlib import Path

from countdp.release.atomic import fsync_folder, lock_folder, repair
from countdp.release.partials import (
    PROBES,
    SIDECAR_SUFFIX,
    TABLE_STEM,
    TABLE_SUFFIXES,
    create_partial,
    is_at,
    lock_within,
    partial_name,
    release_files,
    remove_partial_folder,
)

ONE_RENAME = "a partial folder renamed into place by one system call (renameat2 RENAME_NOREPLACE, or RENAME_EXCHANGE " \
             "to replace a release)"
LOCKED_RENAME = "a partial folder renamed into place under the parent folder's lock (this filesystem has no " \
                "renameat2 flags)"
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_UNSUPPORTED = (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP)
_ATTEMPTS = 8
"""Tries at naming OUT while other releases keep creating or replacing it."""
_LOCK_SECONDS = 10.0
"""How long a replacing release waits for the release that just published OUT to let go of it."""
_LIBC = ctypes.CDLL(None, use_errno=True)


def table_name(input_path: Path) -> str:
    """The table's name in a release folder: ``table`` and the input's suffix in lower case (``.csv``,
    ``.parquet``, ``.pq``); any other input is read as CSV, so its table is ``table.csv``."""
    suffix = Path(input_path).suffix.lower()
    return TABLE_STEM + (suffix if suffix in TABLE_SUFFIXES else ".csv")


def is_mount_point(path: Path) -> bool:
    """Whether ``path`` is a mount point, which no rename or removal can move: :func:`os.path.ismount`, or
    listed in ``/proc/self/mountinfo`` (a bind mount within one filesystem, which ``ismount`` misses)."""
    if os.path.ismount(path):
        return True
    try:
        with open("/proc/self/mountinfo", "rb") as stream:
            points = [line.split()[4] for line in stream if len(line.split()) > 4]
    except OSError:
        return False
    target = os.fsencode(os.path.realpath(path))
    return any(re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), point) == target for point in points)


def existing_problem(out: Path, replace: bool, shown: str | None = None) -> str | None:
    """Why an existing ``out`` stops a folder release (one line naming it as ``shown``, by default
    ``out/``), or ``None`` if it does not.

    Without ``replace`` any entry at ``out`` does; with it, anything but a countdp release folder
    (:func:`release_files`): a file, a symbolic link, an empty folder, a folder holding anything
    else, and a mount point (which cannot be renamed).
    """
    out = Path(out)
    shown = shown or f"{out}/"
    if not os.path.lexists(out):
        return None
    if not replace:
        return f"{shown} already exists; remove it, choose another --out, or pass --overwrite"
    found = os.lstat(out)
    what = "a symbolic link" if stat.S_ISLNK(found.st_mode) else None if stat.S_ISDIR(found.st_mode) else "a file"
    if what is not None:
        return f"{shown} is {what}, not a release folder; --overwrite replaces only a countdp release folder"
    if is_mount_point(out):
        return (f"{shown} is a mount point, which cannot be renamed; --overwrite replaces a release folder by "
                "renaming it: release into a new folder inside it instead")
    if release_files(out) is None:
        if not os.listdir(out):
            return (f"{shown} is an empty folder, not a countdp release folder; remove it (rmdir) or choose "
                    "another --out")
        return (f"{shown} holds other files than one countdp release ({TABLE_STEM}.csv, .parquet or .pq and its "
                f"{SIDECAR_SUFFIX}); --overwrite replaces only a release folder, so it is left as it is")
    return None


def _renameat2(source: Path, target: Path, flags: int) -> None:
    """``renameat2(AT_FDCWD, source, AT_FDCWD, target, flags)``; ``OSError`` (``ENOSYS`` without it in libc)."""
    call = getattr(_LIBC, "renameat2", None)
    if call is None:
        raise OSError(errno.ENOSYS, "this C library has no renameat2 (glibc 2.28 or later has it)")
    if call(_AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(target), flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(source), None, str(target))


def _flush(fd: int) -> None:
    """``fsync`` a folder open as ``fd``, so that its entries survive a power loss; where the
    filesystem cannot (``EINVAL``: some FUSE mounts) there is nothing more to do."""
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise


def _touch(path: Path) -> None:
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o600))


def renames_in_one_call(folder: Path, exchange: bool) -> bool:
    """Whether ``renameat2`` with ``RENAME_NOREPLACE`` (and ``RENAME_EXCHANGE`` if ``exchange``) works
    in ``folder``: tried on two empty files made there (:data:`~countdp.release.partials.PROBES`) and
    removed again."""
    first, second = (folder / name for name in PROBES)
    try:
        _touch(first)
        _renameat2(first, second, RENAME_NOREPLACE)
        if exchange:
            _touch(first)
            _renameat2(first, second, RENAME_EXCHANGE)
        return True
    except OSError as exc:
        if exc.errno in _UNSUPPORTED:
            return False
        raise
    finally:
        first.unlink(missing_ok=True)
        second.unlink(missing_ok=True)


class _File:
    """One of the release's two files, written under its final name inside the partial folder open as ``folder``."""

    def __init__(self, folder: int, name: str) -> None:
        self.fd: int | None = os.open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o666, dir_fd=folder)
        self.stream = os.fdopen(self.fd, "wb", buffering=1 << 20, closefd=False)

    def finish(self) -> None:
        """Flush the file to disk (a full disk fails here, before anything is named)."""
        self.stream.flush()
        os.fsync(self.fd)

    def close(self) -> None:
        if self.fd is None:
            return
        try:
            self.stream.close()
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None


def _taken(shown: str) -> FileExistsError:
    return FileExistsError(errno.EEXIST, f"{shown} already exists (another release committed there first); nothing "
                           "of this release was named", shown)


def _refused(shown: str, problem: str) -> FileExistsError:
    return FileExistsError(errno.EEXIST, f"{problem}; nothing of this release was named", shown)


def _locked_release(out: Path) -> int | None:
    """``out`` opened and locked (:func:`~countdp.release.partials.lock_within`) if it is still a release
    folder once locked, so that it stays locked under whatever name it is renamed to; else ``None``."""
    try:
        fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    if lock_within(fd, _LOCK_SECONDS) is False or not is_at(out, fd) or release_files(out) is None:
        os.close(fd)
        return None
    return fd


class AtomicFolder:
    """A release folder ``out`` holding ``table`` and its sidecar, written aside and named by one rename.

    ``with AtomicFolder(out, "table.csv") as release:`` write to ``release.table.stream`` and
    ``release.sidecar.stream``, then call ``release.commit()``; leaving the block without a commit
    (an exception) removes the partial folder.  ``replace=True`` replaces a countdp release at
    ``out`` (only a release folder: see :func:`existing_problem`).  ``shown`` is OUT as the user
    typed it, for messages.
    """

    def __init__(self, out: Path, table: str, replace: bool = False, shown: str | None = None,
                 parts: bool = False) -> None:
        self.out, self.replace, self.shown = Path(out), replace, shown or f"{out}/"
        self.parent = self.out.parent
        self.names = frozenset({table, table + SIDECAR_SUFFIX, *PROBES})
        self.replaced: tuple[Path, int] | None = None  # where the old release is once this one took its place
        self.committed = False
        self.table: _File | None = None
        self.sidecar: _File | None = None
        repair(self.parent)  # dead releases' partial folders, and marked lone sidecars of the file form
        self.partial, self.fd, _ = create_partial(self.parent, self.out.name, folder=True)
        try:
            one = renames_in_one_call(self.partial, exchange=replace)
            self.method = ONE_RENAME if one else LOCKED_RENAME
            if parts:  # the table is a folder, whose part files Spark's tasks write (its path: :attr:`parts`)
                os.mkdir(table, 0o777, dir_fd=self.fd)
            self.table = None if parts else _File(self.fd, table)
            self.parts = self.partial / table if parts else None
            self.sidecar = _File(self.fd, table + SIDECAR_SUFFIX)
        except BaseException:
            self._discard()
            raise

    def __enter__(self) -> AtomicFolder:
        return self

    def __exit__(self, *exc) -> None:
        if not self.committed:
            self._discard()
        self._close()

    def _discard(self) -> None:
        """Remove what this release wrote, and its partial folder (only the names it writes), still
        holding the folder's lock; :meth:`_close` then lets go of everything."""
        if self.fd is not None:
            remove_partial_folder(self.partial, self.fd, self.names)
        self._close()

    def _close(self) -> None:
        """Let go of the partial folder (its lock goes with it) and of a replaced release not yet removed."""
        for pending in (self.table, self.sidecar):
            if pending is not None:
                pending.close()
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.replaced is not None:
            os.close(self.replaced[1])
            self.replaced = None

    def _still_ours(self) -> None:
        """Refuse to name anything unless the partial name still leads to the folder this release made."""
        if not is_at(self.partial, self.fd):
            raise OSError(errno.ESTALE, f"{self.partial} is no longer this release's partial folder; nothing of "
                          "this release was named", str(self.partial))

    def commit(self, hold=None) -> None:
        """Flush both files and the partial folder to disk, name the release, then remove the release it replaced.

        :attr:`committed` turns true the moment OUT holds this release: what fails after that
        (flushing the parent folder, removing the old release) leaves the release published, and an
        old release left under the partial name is removed by the next release into the parent.
        ``hold()``, if given, is called just before the first rename (the caller holds its signals
        from there on: :class:`~countdp.release.engine.HeldSignals`).
        """
        for pending in (self.table, self.sidecar):
            if pending is not None:
                pending.finish()
        if self.parts is not None:
            fsync_folder(self.parts)
        _flush(self.fd)
        if self.method == ONE_RENAME:
            self._rename_in_one_call(hold)
        else:
            self._rename_locked(hold)
        for pending in (self.table, self.sidecar):
            if pending is not None:
                pending.close()
        try:
            fsync_folder(self.parent)
        finally:
            if self.replaced is not None and remove_partial_folder(*self.replaced):
                os.close(self.replaced[1])
                self.replaced = None

    def _rename_in_one_call(self, hold=None) -> None:
        """``RENAME_NOREPLACE`` onto a free OUT; with ``replace``, ``RENAME_EXCHANGE`` with a release there.

        Other releases may create or replace OUT meanwhile; each try looks again.  The release at OUT
        is locked before the exchange (it keeps this release's lock under the partial name); an
        exchange that brings back something other than a release folder (changed since the check)
        is swapped back.
        """
        if hold is not None:
            hold()
        for _ in range(_ATTEMPTS):
            self._still_ours()
            if not self.replace or not os.path.lexists(self.out):
                try:
                    _renameat2(self.partial, self.out, RENAME_NOREPLACE)
                except FileExistsError:
                    if not self.replace:
                        raise _taken(self.shown) from None
                    continue
                self.committed = True
                return
            problem = existing_problem(self.out, replace=True, shown=self.shown)
            if problem is not None:
                raise _refused(self.shown, problem)
            old = _locked_release(self.out)
            if old is None:
                continue  # gone, or replaced, meanwhile
            try:
                _renameat2(self.partial, self.out, RENAME_EXCHANGE)
            except FileNotFoundError:
                os.close(old)
                continue
            self.committed, self.replaced = True, (self.partial, old)
            if release_files(self.partial) is None:
                _renameat2(self.partial, self.out, RENAME_EXCHANGE)
                self.committed = False
                raise _refused(self.shown, existing_problem(self.out, True, self.shown) or f"{self.shown} changed")
            return
        raise OSError(errno.EAGAIN, f"{self.shown} kept changing while this release tried to name it; nothing of "
                      "this release was named")

    def _rename_locked(self, hold=None) -> None:
        """Under the parent's lock: check OUT, (to replace) rename the old release aside, rename the new into place.

        If the last rename fails, the old release is renamed back.
        """
        lock = os.open(self.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            lock_folder(lock)
            if hold is not None:
                hold()
            self._still_ours()
            problem = existing_problem(self.out, self.replace, self.shown)
            if problem is not None:
                raise _taken(self.shown) if not self.replace else _refused(self.shown, problem)
            if os.path.lexists(self.out):
                old = _locked_release(self.out)
                if old is None:
                    raise OSError(errno.EAGAIN, f"{self.shown} changed while this release tried to replace it; "
                                  "nothing of this release was named")
                aside = self.parent / partial_name(self.out.name)
                self.replaced = (aside, old)
                os.rename(self.out, aside)
            try:
                os.rename(self.partial, self.out)
            except BaseException:
                if self.replaced is not None:
                    os.rename(self.replaced[0], self.out)
                raise
            self.committed = True
        finally:
            os.close(lock)


__all__ = ["LOCKED_RENAME", "ONE_RENAME", "RENAME_EXCHANGE", "RENAME_NOREPLACE", "TABLE_STEM",
           "AtomicFolder", "existing_problem", "is_mount_point", "release_files", "renames_in_one_call", "table_name"]
