"""The DuckDB databases that group records: one of a release's own, or one shared by the groupings of a process.

Opening a DuckDB database costs about 12 ms, against about 3 ms for grouping tens of thousands of records: a
study that groups records many times in one process (Figure 10's Adult evaluations, 950 groupings a target)
spent most of its time opening databases.  So a grouping whose result is kept in memory (no ``out``:
:func:`countdp.release.records_run.group_records`, a release returned in memory) borrows a connection
(:func:`borrow`, a DuckDB cursor, about 0.1 ms) to a database this process opens once for each memory limit
and thread count, whose spill folder is a private temporary folder.  What a grouping creates there is its
connection's own: the records are registered on it, its views are temporary and its group table too, so
another grouping, even one running at the same time in another thread, sees none of it, and all of it is
dropped when the connection is given back.  A release into a file keeps a database of its own
(:func:`open_database`), whose spill files go to the locked partial folder beside its output
(:mod:`countdp.release.partials`), so that a release killed with SIGKILL leaves them where the next release
removes them.

No spill file outlives the grouping that wrote it: a shared database whose spill folder holds a file when a
grouping gives its connection back is retired (closed, and its folder removed, once no grouping uses it),
and the next grouping opens a new one.  A child process (a fork) opens its own.  Every database is
configured as a release's is (:func:`configure`).  A process killed with SIGKILL leaves its spill folder,
which is named by its process id: the next shared database opened on the machine removes the folders of
processes that are gone (:func:`sweep_dead_spills`).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb

from countdp.release.records import RecordsSettings

_TYPE_PUSHDOWN: dict[str, bool] = {}


def open_database(folder: Path, settings: RecordsSettings):
    """A new in-memory DuckDB database spilling into ``folder``, with ``settings``' memory limit and threads."""
    config = {"temp_directory": str(folder), "memory_limit": f"{settings.memory_limit_mb}MB"}
    if settings.threads is not None:
        config["threads"] = settings.threads
    con = duckdb.connect(":memory:", config=config)
    configure(con)
    return con


def configure(con) -> None:
    """Every grouping connection's settings: no progress bar (the release draws its own, on stderr), and
    DuckDB's ``type_pushdown`` optimizer off: it turns a TRY_CAST over ``read_csv`` into the reader's column
    type, which fails on a value that does not convert (quoting it) where TRY_CAST gives NULL, and one
    person's value would stop the release."""
    con.execute("SET enable_progress_bar = false")
    if _has_type_pushdown(con):
        con.execute("SET disabled_optimizers = 'type_pushdown'")


def _has_type_pushdown(con) -> bool:
    """Whether this DuckDB has the ``type_pushdown`` optimizer (a function of its version, asked once)."""
    found = _TYPE_PUSHDOWN.get(duckdb.__version__)
    if found is None:
        query = "SELECT count(*) FROM duckdb_optimizers() WHERE name = 'type_pushdown'"
        found = _TYPE_PUSHDOWN[duckdb.__version__] = bool(con.execute(query).fetchone()[0])
    return found


SPILL_PREFIX = "countdp-spill-"
"""A shared database's spill folder, in the system's temporary folder: this prefix, the owner's process id, ``-``."""


def sweep_dead_spills(root: Path | None = None) -> list[Path]:
    """Remove the spill folders (under ``root``, the system's temporary folder by default) of processes that
    are gone: a study killed with SIGKILL skips its ``atexit``, and its folder may hold records DuckDB spilled.
    A folder whose process id is alive (or reused) is left alone; the removed folders are returned.  (A temporary
    folder shared with another PID namespace, such as a container's, would need a folder of its own.)"""
    root = Path(tempfile.gettempdir()) if root is None else root
    removed = []
    for folder in root.glob(f"{SPILL_PREFIX}*-*"):
        pid = folder.name[len(SPILL_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and folder.is_dir() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


@dataclass
class _Shared:
    con: object
    folder: Path
    users: int = 0
    retired: bool = False


_SHARED: dict[tuple, _Shared] = {}
_LOCK = threading.Lock()


def borrow(settings: RecordsSettings) -> tuple[object, Callable[[], None]]:
    """A connection to this process's shared database for ``settings`` (opened on first use), configured, and
    the function that gives it back (closing it, which drops what the grouping created on it)."""
    key = (os.getpid(), settings.memory_limit_mb, settings.threads)
    with _LOCK:
        if any(other[0] != key[0] for other in _SHARED):
            _SHARED.clear()  # a forked child: its parent's databases are not its own
        shared = _SHARED.get(key)
        if shared is None:
            sweep_dead_spills()
            folder = Path(tempfile.mkdtemp(prefix=f"{SPILL_PREFIX}{os.getpid()}-"))
            shared = _SHARED[key] = _Shared(open_database(folder, settings), folder)
        shared.users += 1
        con = shared.con.cursor()
    try:
        configure(con)
    except BaseException:
        _give_back(key, shared, con)
        raise
    given = []

    def give_back() -> None:
        if not given:  # once, however often the grouping is closed
            given.append(True)
            _give_back(key, shared, con)

    return con, give_back


def _give_back(key: tuple, shared: _Shared, con) -> None:
    con.close()
    with _LOCK:
        shared.users -= 1
        if os.listdir(shared.folder):  # it spilled: retired, so that no spill file outlives its grouping
            shared.retired = True
            if _SHARED.get(key) is shared:
                del _SHARED[key]
        if shared.retired and shared.users == 0:
            _retire(shared)


def _retire(shared: _Shared) -> None:
    shared.con.close()
    shutil.rmtree(shared.folder, ignore_errors=True)


@atexit.register
def _close_all() -> None:
    """At exit, this process's shared databases closed and their spill folders removed."""
    with _LOCK:
        for key, shared in list(_SHARED.items()):
            if key[0] == os.getpid():
                _retire(shared)
        _SHARED.clear()


def shared_folders() -> list[Path]:
    """The spill folders of the shared databases this process holds open (for tests)."""
    with _LOCK:
        return [shared.folder for key, shared in _SHARED.items() if key[0] == os.getpid()]


__all__ = ["SPILL_PREFIX", "borrow", "configure", "open_database", "shared_folders", "sweep_dead_spills"]
