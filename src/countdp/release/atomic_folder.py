"""All-or-nothing output as a folder: a release published by one ``rename``.

``--out results/noisy/`` (a trailing ``/``) publishes the folder ``results/noisy`` holding exactly
the table ``table.SUFFIX`` and its sidecar ``table.SUFFIX.release.json``.  Both files are written
into a hidden *partial folder* beside it, ``results/.noisy.countdp-partial-PID``.  The commit
flushes both files and that folder to disk, then names the whole release with one system call:

* ``renameat2(partial, OUT, RENAME_NOREPLACE)``: the folder appears complete, or (a name already
  there) the call fails and nothing of this release is named;
* with ``--overwrite`` and a release at OUT, ``renameat2(partial, OUT, RENAME_EXCHANGE)``: the new
  release takes the old one's place in one step; the old one, now under the partial name, is
  removed afterwards.

Every state a reader can see at OUT is therefore a whole release, the old one or the new one, or
nothing before the first commit: two names never have to appear one after the other, so no
guardian process is needed (:class:`~countdp.release.atomic.AtomicPair` needs one) and there is
no residual window.  Whatever dies, and when, OUT holds a complete pair or nothing.  A dead
release leaves only its partial folder under a dead process's id (unfinished files, or an old
release it swapped out), which the next release into the parent removes
(:func:`~countdp.release.partials.remove_stale_partials`).

``--overwrite`` replaces only a countdp release: a folder holding exactly one ``table.*`` file and
its sidecar.  A folder with anything else in it, a file or a symbolic link at OUT is refused and
left as it is; a folder that changes between that check and the exchange is swapped back.

Where ``renameat2`` or its flags are unsupported (``ENOSYS``/``EINVAL``: older kernels and C
libraries, many FUSE and NFS mounts), which a probe inside the partial folder finds before
anything is written, the commit runs under an exclusive ``flock`` of the parent folder, so that
countdp commits there never interleave: an existence check, then a plain ``rename``.  To replace,
the old release is first renamed aside, so a death between the two renames leaves nothing at OUT
(never a mismatched pair), and the old release aside is removed like any dead partial.
:attr:`AtomicFolder.method` says which way a release is committed, and the sidecar records it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from pathlib import Path

from countdp.release.atomic import SIDECAR_SUFFIX, fsync_folder, lock_folder, repair
from countdp.release.partials import FOLDER_FILES, remove_partial_folder

ONE_RENAME = "a partial folder renamed into place by one system call (renameat2 RENAME_NOREPLACE, or RENAME_EXCHANGE " \
             "to replace a release)"
LOCKED_RENAME = "a partial folder renamed into place under the parent folder's lock (this filesystem has no " \
                "renameat2 flags)"
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
TABLE_STEM = FOLDER_FILES.rstrip(".")
"""A release folder's table is ``table`` with the input's suffix; its sidecar adds ``.release.json``."""
_SUFFIXES = (".csv", ".parquet", ".pq")
_AT_FDCWD = -100
_UNSUPPORTED = (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP)
_ATTEMPTS = 8
"""Tries at naming OUT while other releases keep creating or replacing it."""
_LIBC = ctypes.CDLL(None, use_errno=True)


def table_name(input_path: Path) -> str:
    """The table's name in a release folder: ``table`` and the input's suffix in lower case (``.csv``,
    ``.parquet``, ``.pq``); any other input is read as CSV, so its table is ``table.csv``."""
    suffix = Path(input_path).suffix.lower()
    return TABLE_STEM + (suffix if suffix in _SUFFIXES else ".csv")


def release_files(folder: Path) -> tuple[str, str] | None:
    """``(table, sidecar)`` names if ``folder`` holds exactly one regular file ``table.*`` and its
    sidecar and nothing else (a countdp release folder); otherwise ``None``."""
    try:
        names = sorted(os.listdir(folder), key=len)
        if len(names) != 2 or not all(stat.S_ISREG(os.lstat(os.path.join(folder, n)).st_mode) for n in names):
            return None
    except OSError:
        return None
    table, sidecar = names
    if not table.startswith(TABLE_STEM + ".") or sidecar != table + SIDECAR_SUFFIX:
        return None
    return table, sidecar


def existing_problem(out: Path, replace: bool) -> str | None:
    """Why an existing ``out`` stops a folder release (one line naming it), or ``None`` if it does not.

    Without ``replace`` any entry at ``out`` does; with it, anything but a countdp release folder
    (:func:`release_files`): a file, a symbolic link, a folder holding anything else.
    """
    out = Path(out)
    if not os.path.lexists(out):
        return None
    if not replace:
        return f"{out}/ already exists; remove it, choose another --out, or pass --overwrite"
    found = os.lstat(out)
    what = "a symbolic link" if stat.S_ISLNK(found.st_mode) else None if stat.S_ISDIR(found.st_mode) else "a file"
    if what is not None:
        return f"{out}/ is {what}, not a release folder; --overwrite replaces only a countdp release folder"
    if release_files(out) is None:
        return (f"{out}/ holds other files than one countdp release ({TABLE_STEM}.* and its {SIDECAR_SUFFIX}); "
                "--overwrite replaces only a release folder, so it is left as it is")
    return None


def _renameat2(source: Path, target: Path, flags: int) -> None:
    """``renameat2(AT_FDCWD, source, AT_FDCWD, target, flags)``; ``OSError`` (``ENOSYS`` without it in libc)."""
    call = getattr(_LIBC, "renameat2", None)
    if call is None:
        raise OSError(errno.ENOSYS, "this C library has no renameat2 (glibc 2.28 or later has it)")
    if call(_AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(target), flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(source), None, str(target))


def _flush_folder(folder: Path) -> None:
    """``fsync`` a folder's entries, so that they survive a power loss; where the filesystem cannot
    (``EINVAL``: some FUSE mounts) there is nothing more to do."""
    try:
        fsync_folder(folder)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise


def _touch(path: Path) -> None:
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o600))


def renames_in_one_call(folder: Path, exchange: bool) -> bool:
    """Whether ``renameat2`` with ``RENAME_NOREPLACE`` (and ``RENAME_EXCHANGE`` if ``exchange``) works
    in ``folder``: tried on two empty files made there (named ``table.probe-*``) and removed again."""
    first, second = folder / f"{TABLE_STEM}.probe-1", folder / f"{TABLE_STEM}.probe-2"
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
    """One of the release's two files, written under its final name inside the partial folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o666)
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


def _clear_leftover(path: Path) -> None:
    """Remove what an earlier process with this process's id left at one of its partial names.

    One process commits one release to a given OUT at a time, so an entry there is not a running
    release's (a container's releases often all run as the same process id).
    """
    if os.path.lexists(path) and not (path.is_dir() and not path.is_symlink() and remove_partial_folder(path)):
        raise FileExistsError(errno.EEXIST, f"{path} is in the way (a partial release of an earlier process with "
                              "this process id, holding other files); remove it", str(path))


def _taken(out: Path) -> FileExistsError:
    return FileExistsError(errno.EEXIST, f"{out}/ already exists (another release committed there first); nothing "
                           "of this release was named", str(out))


def _refused(out: Path, problem: str) -> FileExistsError:
    return FileExistsError(errno.EEXIST, f"{problem}; nothing of this release was named", str(out))


class AtomicFolder:
    """A release folder ``out`` holding ``table`` and its sidecar, written aside and named by one rename.

    ``with AtomicFolder(out, "table.csv") as release:`` write to ``release.table.stream`` and
    ``release.sidecar.stream``, then call ``release.commit()``; leaving the block without a commit
    (an exception) removes the partial folder.  ``replace=True`` replaces a countdp release at
    ``out`` (only a release folder: see :func:`existing_problem`).
    """

    def __init__(self, out: Path, table: str, replace: bool = False) -> None:
        self.out, self.replace = Path(out), replace
        self.parent = self.out.parent
        pid = os.getpid()
        self.partial = self.parent / f".{self.out.name}.countdp-partial-{pid}"
        self.aside = self.parent / f".{self.out.name}.replaced.countdp-partial-{pid}"
        self.replaced: Path | None = None  # where the old release is once this one took its place
        self.committed = False
        self.table: _File | None = None
        self.sidecar: _File | None = None
        repair(self.parent)  # dead releases' partial folders, and marked lone sidecars of the file form
        _clear_leftover(self.partial)
        _clear_leftover(self.aside)
        os.mkdir(self.partial, 0o777)
        try:
            one = renames_in_one_call(self.partial, exchange=replace)
            self.method = ONE_RENAME if one else LOCKED_RENAME
            self.table = _File(self.partial / table)
            self.sidecar = _File(self.partial / (table + SIDECAR_SUFFIX))
        except BaseException:
            self._discard()
            raise

    def __enter__(self) -> AtomicFolder:
        return self

    def __exit__(self, *exc) -> None:
        if not self.committed:
            self._discard()

    def _discard(self) -> None:
        for pending in (self.table, self.sidecar):
            if pending is not None:
                pending.close()
        remove_partial_folder(self.partial)

    def commit(self) -> None:
        """Flush both files and the partial folder to disk, name the release, then remove the release it replaced.

        :attr:`committed` turns true the moment OUT holds this release: what fails after that
        (flushing the parent folder, removing the old release) leaves the release published, and an
        old release left under the partial name is removed by the next release into the parent.
        """
        for pending in (self.table, self.sidecar):
            pending.finish()
        _flush_folder(self.partial)
        if self.method == ONE_RENAME:
            self._rename_in_one_call()
        else:
            self._rename_locked()
        for pending in (self.table, self.sidecar):
            pending.close()
        try:
            _flush_folder(self.parent)
        finally:
            if self.replaced is not None and remove_partial_folder(self.replaced):
                self.replaced = None

    def _rename_in_one_call(self) -> None:
        """``RENAME_NOREPLACE`` onto a free OUT; with ``replace``, ``RENAME_EXCHANGE`` with a release there.

        Other releases may create or replace OUT meanwhile; each try looks again.  An exchange that
        brings back something other than a release folder (changed since the check) is swapped back.
        """
        for _ in range(_ATTEMPTS):
            if not self.replace or not os.path.lexists(self.out):
                try:
                    _renameat2(self.partial, self.out, RENAME_NOREPLACE)
                except FileExistsError:
                    if not self.replace:
                        raise _taken(self.out) from None
                    continue
                self.committed = True
                return
            problem = existing_problem(self.out, replace=True)
            if problem is not None:
                raise _refused(self.out, problem)
            try:
                _renameat2(self.partial, self.out, RENAME_EXCHANGE)
            except FileNotFoundError:
                continue  # the old release went meanwhile
            self.committed, self.replaced = True, self.partial
            if release_files(self.partial) is None:
                _renameat2(self.partial, self.out, RENAME_EXCHANGE)
                self.committed, self.replaced = False, None
                raise _refused(self.out, existing_problem(self.out, replace=True) or f"{self.out}/ changed")
            return
        raise OSError(errno.EAGAIN, f"{self.out}/ kept changing while this release tried to name it; nothing of "
                      "this release was named")

    def _rename_locked(self) -> None:
        """Under the parent's lock: check OUT, (to replace) rename the old release aside, rename the new into place.

        If the last rename fails, the old release is renamed back.
        """
        lock = os.open(self.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            lock_folder(lock)
            problem = existing_problem(self.out, self.replace)
            if problem is not None:
                raise _taken(self.out) if not self.replace else _refused(self.out, problem)
            if os.path.lexists(self.out):
                os.rename(self.out, self.aside)
                self.replaced = self.aside
            try:
                os.rename(self.partial, self.out)
            except BaseException:
                if self.replaced is not None:
                    os.rename(self.replaced, self.out)
                    self.replaced = None
                raise
            self.committed = True
        finally:
            os.close(lock)


__all__ = ["LOCKED_RENAME", "ONE_RENAME", "RENAME_EXCHANGE", "RENAME_NOREPLACE", "TABLE_STEM", "AtomicFolder",
           "existing_problem", "release_files", "renames_in_one_call", "table_name"]
