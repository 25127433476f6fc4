"""What a release writes under a hidden partial name, how it marks that partial as its own, and the
removal of dead releases' partials by the next release.

Two commits write under a hidden *partial* name, ``.NAME.countdp-partial-TOKEN``, TOKEN being 32
random hex digits: the file form on a filesystem without ``O_TMPFILE`` (one partial file per output
file, :mod:`countdp.release.atomic`) and a release folder (one partial folder,
:mod:`countdp.release.atomic_folder`, which after an ``--overwrite`` may hold the old release it
swapped out).  The name is random, not the process id, so releases in different PID namespaces
(containers sharing a volume, ``unshare -p``), which can share a process id, never share a partial.

**Ownership is a lock.**  A release holds an exclusive ``flock`` on each of its partials (on the
folder's or the file's own descriptor) for its whole life; the kernel drops it when the release
dies, in whichever namespace it ran.  :func:`create_partial` takes that lock on the partial it has
just made and checks that the name still leads to it.  :func:`remove_stale_partials`, run by every
release into the folder, removes a partial only if it can take that lock without waiting: a partial
whose lock is held belongs to a running release, and where the filesystem refuses ``flock``
(``EOPNOTSUPP``, ``ENOLCK``: some NFS mounts) nobody can tell, so it is left alone.

**Only what a release writes is removed.**  A dead partial file goes; in a dead partial folder only
the names a release writes there (:data:`FOLDER_NAMES`: ``table.csv``, ``table.parquet``, ``table.pq``,
their sidecars and the two probes), each a regular file, and the folder only if nothing else is in
it, so a folder of the user's is never emptied.  Partials named by an earlier countdp after its
process id (``.NAME.countdp-partial-1234``) are left alone: no lock marks them, and a process id
says nothing across PID namespaces; remove them by hand once no release of that version runs.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import stat
import time
from pathlib import Path

SIDECAR_SUFFIX = ".release.json"
"""A sidecar is its table's name with this suffix."""
MARKER = ".countdp-partial-"
"""What every partial name holds; an ``--out`` name holding it is refused."""
PARTIAL = re.compile(r"^\..+\.countdp-partial-[0-9a-f]{32}$")
"""A partial name: ``.NAME.countdp-partial-`` and 32 random hex digits."""
PARTIAL_EXTRA = len(f".{MARKER}") + 32
"""Bytes a partial name adds to the name it is for."""
TABLE_STEM = "table"
TABLE_SUFFIXES = (".csv", ".parquet", ".pq")
"""A release folder's table is ``table`` and one of these; its sidecar adds :data:`SIDECAR_SUFFIX`."""
TABLE_NAMES = tuple(TABLE_STEM + suffix for suffix in TABLE_SUFFIXES)
PROBES = (f"{TABLE_STEM}.probe-1", f"{TABLE_STEM}.probe-2")
"""The empty files a partial folder briefly holds to find whether ``renameat2`` works there."""
PART = re.compile(r"^part-[0-9]{5}\.parquet$")
"""The part files of a release folder whose table is a folder of Parquet parts (drawn in Spark's executors)."""
SPILL = re.compile(r"^duckdb_temp_[A-Za-z0-9_.-]+$")
"""The names of DuckDB's own spill files, which a records release's temporary folder (a partial folder) holds."""


class _Names(frozenset):
    """A set of file names that also holds every name :data:`SPILL` matches."""

    def __contains__(self, name: object) -> bool:
        return frozenset.__contains__(self, name) or (isinstance(name, str) and bool(SPILL.match(name)))


FOLDER_NAMES = _Names(TABLE_NAMES + tuple(name + SIDECAR_SUFFIX for name in TABLE_NAMES) + PROBES)
"""Every name a release writes inside a partial folder (and DuckDB's spill files): all that cleanup ever
removes there."""
_CANNOT_LOCK = (errno.EOPNOTSUPP, errno.ENOLCK, errno.EBADF, errno.EINVAL, errno.ENOSYS)
_ATTEMPTS = 8


def partial_name(name: str) -> str:
    """A new partial name for ``name``: ``.NAME.countdp-partial-`` and 32 random hex digits."""
    return f".{name}{MARKER}{secrets.token_hex(16)}"


def lock(fd: int, wait: bool) -> bool | None:
    """An exclusive ``flock`` of ``fd``: True once held, False if another holds it (only when not
    ``wait``ing), None where this filesystem cannot lock (nobody can tell who owns what there)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN) and not wait:
            return False
        if exc.errno in _CANNOT_LOCK:
            return None
        raise
    return True


def lock_folder(fd: int) -> bool:
    """An exclusive ``flock`` of the folder open as ``fd`` (waiting for it); False where refused (NFS)."""
    return bool(lock(fd, wait=True))


def lock_within(fd: int, seconds: float) -> bool | None:
    """:func:`lock` of ``fd``, retried for up to ``seconds`` while another holds it (never waiting
    unboundedly, so that a release can still be interrupted); False if it stayed held."""
    deadline = time.monotonic() + seconds
    while (held := lock(fd, wait=False)) is False and time.monotonic() < deadline:
        time.sleep(0.005)
    return held


def is_at(path: Path | str, fd: int) -> bool:
    """Whether ``path`` (not followed if a link) is the very file or folder open as ``fd``."""
    try:
        return os.path.samestat(os.lstat(path), os.fstat(fd))
    except FileNotFoundError:
        return False


def create_partial(parent: Path, name: str, folder: bool) -> tuple[Path, int, bool | None]:
    """Make a new partial for ``name`` in ``parent`` (a folder, or a file open for reading and writing),
    lock it (:func:`lock`), and check that its name still leads to it: ``(path, fd, locked)``.

    Another release's cleanup may take the lock between the creation and this release's lock and
    remove the partial as dead (it is empty); the name then leads nowhere and a new one is made.
    """
    for _ in range(_ATTEMPTS):
        path = Path(parent) / partial_name(name)
        try:
            if folder:
                os.mkdir(path, 0o777)
                fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            else:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        except FileNotFoundError:
            if not os.path.isdir(parent):
                raise
            continue  # removed by another release's cleanup before it could be opened
        try:
            locked = lock(fd, wait=True)
        except BaseException:
            os.close(fd)
            raise
        if is_at(path, fd):
            return path, fd, locked
        os.close(fd)
    raise OSError(errno.EAGAIN, f"a partial for {name} in {parent} kept disappearing; nothing was written",
                  str(parent))


def remove_partial_folder(folder: Path, fd: int, names=FOLDER_NAMES) -> bool:
    """Empty and remove the partial folder open (and locked) as ``fd`` at ``folder``; whether it is gone.

    Only entries named in ``names`` that are regular files are removed, and only if every entry is
    one (anything else keeps the whole folder as it is); the entries are removed through ``fd``, so
    whatever ``folder`` names by then, only that folder's files go, and the folder itself is removed
    only while ``folder`` still names it.
    """
    try:
        found = os.listdir(fd)
        parts = {}
        for entry in found:
            mode = os.lstat(entry, dir_fd=fd).st_mode
            if entry in names and stat.S_ISDIR(mode):
                parts[entry] = part_files(fd, entry)
                if parts[entry] is None:
                    return False
            elif entry not in names or not stat.S_ISREG(mode):
                return False
        for entry in found:
            try:
                if entry in parts:
                    _remove_parts(fd, entry, parts[entry])
                else:
                    os.unlink(entry, dir_fd=fd)
            except FileNotFoundError:
                pass
        if is_at(folder, fd):
            os.rmdir(folder)
    except FileNotFoundError:
        return True  # removed meanwhile (an old release another release's cleanup also found dead)
    except OSError:
        return False
    return not is_at(folder, fd)


def part_files(fd: int, entry: str) -> list[str] | None:
    """The names in the folder ``entry`` (of the folder open as ``fd``) if every one is a regular part file
    (:data:`PART`), else ``None``: a table folder of Parquet parts, and nothing else."""
    inner = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    try:
        names = os.listdir(inner)
        if all(PART.match(n) and stat.S_ISREG(os.lstat(n, dir_fd=inner).st_mode) for n in names):
            return names
        return None
    finally:
        os.close(inner)


def _remove_parts(fd: int, entry: str, names: list[str]) -> None:
    inner = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    try:
        for name in set(names) | {n for n in os.listdir(inner) if PART.match(n)}:  # a task may still have added one
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=inner)
    finally:
        os.close(inner)
    os.rmdir(entry, dir_fd=fd)


def release_files(folder: Path) -> tuple[str, str] | None:
    """``(table, sidecar)`` names if ``folder`` holds exactly one regular file ``table.csv``,
    ``table.parquet`` or ``table.pq`` (or a folder ``table.parquet`` of part files only) and its sidecar and
    nothing else (a countdp release folder); otherwise ``None``."""
    try:
        names = sorted(os.listdir(folder), key=len)
        kinds = [os.lstat(os.path.join(folder, n)).st_mode for n in names]
        if len(names) != 2 or not stat.S_ISREG(kinds[1]) or not (stat.S_ISREG(kinds[0]) or (
                stat.S_ISDIR(kinds[0]) and names[0] == TABLE_STEM + ".parquet" and _only_parts(folder, names[0]))):
            return None
    except OSError:
        return None
    table, sidecar = names
    if table not in TABLE_NAMES or sidecar != table + SIDECAR_SUFFIX:
        return None
    return table, sidecar


def _only_parts(folder: Path, entry: str) -> bool:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return part_files(fd, entry) is not None
    finally:
        os.close(fd)


def _open_partial(path: Path) -> int | None:
    """``path`` opened without following a link or blocking, if it is a regular file or a folder."""
    try:
        if path.is_dir() and not path.is_symlink():
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        else:  # read-write: where flock is emulated by byte-range locks (NFS), an exclusive lock needs it
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    if not (stat.S_ISREG(os.fstat(fd).st_mode) or stat.S_ISDIR(os.fstat(fd).st_mode)):
        os.close(fd)
        return None
    return fd


def remove_stale_partials(folder: Path) -> list[Path]:
    """Remove the partial files and folders in ``folder`` whose lock nobody holds; returns those removed.

    Each is opened, locked without waiting (held by another: a running release's, left alone;
    unsupported: cannot tell, left alone), checked to be still at its name, and removed while the
    lock is held; a partial folder as :func:`remove_partial_folder` allows.
    """
    removed = []
    for path in Path(folder).iterdir():
        if not PARTIAL.match(path.name):
            continue
        fd = _open_partial(path)
        if fd is None:
            continue
        try:
            if lock(fd, wait=False) is not True or not is_at(path, fd):
                continue
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                if remove_partial_folder(path, fd):
                    removed.append(path)
                continue
            os.unlink(path)
            removed.append(path)
        except FileNotFoundError:
            continue
        finally:
            os.close(fd)
    return removed


def longest_name(folder: Path) -> int:
    """The longest file name, in bytes, that ``folder``'s filesystem takes (``NAME_MAX``; 255 if unknown)."""
    try:
        found = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255
    return found if found and found > 0 else 255


__all__ = ["FOLDER_NAMES", "MARKER", "PART", "PARTIAL", "PARTIAL_EXTRA", "PROBES", "SIDECAR_SUFFIX", "SPILL",
           "TABLE_NAMES", "TABLE_STEM", "TABLE_SUFFIXES", "create_partial", "is_at", "lock", "lock_folder",
           "lock_within", "longest_name", "part_files", "partial_name", "release_files", "remove_partial_folder",
           "remove_stale_partials"]
