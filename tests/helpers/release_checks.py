"""Independent checks of what a table release left behind, shared by the release tests.

``countdp release ... --out O`` promises that after any end of a release (success, an error,
SIGKILL at any moment, a full disk) either ``O`` and its sidecar ``O.release.json`` are both in
place and complete, or neither exists, and that no other file holding counts remains, in the
output folder or in ``$TMPDIR``.  It also promises that no released column is a copy of a true
count column, nor an affine function of the counts and group sizes (docs/threat-model.md), and
that the input's digest is published nowhere.  The functions here judge those promises from the
files alone (and from ``/proc`` for a running release), reading nothing of countdp's own code, so
a defect in the release cannot hide itself from its checks.  Each judge returns the problems it found as sentences; the
tests show every judge reporting a planted broken state, so none of them can pass vacuously.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import hashlib
import io
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SIDECAR_SUFFIX = ".release.json"
INTEGER_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*")
"""A count written as text, as the release documentation accepts it (blanks around allowed)."""
DECIMAL_TEXT = re.compile(r"\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*")
"""A number written as decimal text (``3``, `` 03``, ``+2.50``, ``1e1``)."""


def sidecar_of(out: Path) -> Path:
    """The documented sidecar name: ``noisy.csv`` -> ``noisy.csv.release.json``."""
    return out.with_name(out.name + SIDECAR_SUFFIX)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def entries(folder: Path) -> set[str]:
    """Every entry under ``folder`` (files, folders, links; hidden ones too), as relative paths."""
    found = set()
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            found.add(os.path.relpath(os.path.join(root, name), folder))
    return found


def table_rows(path: Path) -> int:
    """Rows of a released table, read back (CSV parsed by the standard library, not pyarrow)."""
    if path.suffix == ".parquet":
        return pq.ParquetFile(path).metadata.num_rows
    with open(path, newline="", encoding="utf-8") as stream:
        return sum(1 for _ in csv.reader(stream)) - 1


def contains(path: Path, needle: bytes) -> bool:
    """Whether the bytes of ``path`` hold ``needle`` anywhere (read in chunks that overlap by its length)."""
    tail = b""
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 22):
            if needle in tail + chunk:
                return True
            tail = (tail + chunk)[-(len(needle) - 1):] if len(needle) > 1 else b""
    return False


def outcome(folder: Path, out: Path, input_path: Path, before: set[str], tmpdir: Path | None) -> tuple[str, list[str]]:
    """Judge what a finished (or killed) release left: ``("pair" | "nothing" | "broken", problems)``.

    ``before`` is the listing of ``folder`` before the release started (``entries``); a release
    may add exactly ``out`` and its sidecar, both or neither.  A pair must be complete: the
    sidecar parses, names ``out``, its ``output.sha256`` is the SHA-256 of the table's bytes, the
    table has the rows the sidecar reports, and nothing published (table or sidecar) holds the
    input's SHA-256 (the sidecar's input names only its path and rows: docs/threat-model.md).
    ``tmpdir`` (the release's ``$TMPDIR``) must be empty.
    """
    problems: list[str] = []
    sidecar = sidecar_of(out)
    added = entries(folder) - before
    for name in sorted(added - {out.name, sidecar.name}):
        problems.append(f"{folder / name}: left in the output folder by the release")
    if tmpdir is not None:
        for name in sorted(entries(tmpdir)):
            problems.append(f"{tmpdir / name}: left in TMPDIR by the release")
    has_table, has_sidecar = out.name in added, sidecar.name in added
    if has_table and not has_sidecar:
        problems.append(f"{out}: a table without its sidecar")
    if has_sidecar and not has_table:
        problems.append(f"{sidecar}: a sidecar without its table")
    if has_table and has_sidecar:
        problems += pair_problems(out, input_path)
    if problems:
        return "broken", problems
    return ("pair" if has_table else "nothing"), []


def pair_problems(out: Path, input_path: Path) -> list[str]:
    """Why ``out`` and its sidecar are not a complete pair for ``input_path`` (empty if they are)."""
    sidecar = sidecar_of(out)
    try:
        record = json.loads(sidecar.read_text(encoding="utf-8"))
        output, given = record["output"], record["input"]
        written, rows = output["sha256"], given["rows"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"{sidecar}: not a complete sidecar ({type(exc).__name__}: {exc})"]
    problems = []
    if Path(output.get("path", "")).resolve() != out.resolve():
        problems.append(f"{sidecar}: names the output {output.get('path')!r}, not {out}")
    if written != sha256_file(out):
        problems.append(f"{sidecar}: output.sha256 {written} is not the SHA-256 of {out}")
    for key in sorted(set(given) - {"path", "rows"}):
        problems.append(f"{sidecar}: input.{key} is published; the sidecar's input names only its path and rows")
    digest = sha256_file(input_path).encode()
    for published in (sidecar, out):
        if contains(published, digest):
            problems.append(f"{published}: holds the SHA-256 of the input {input_path}, a digest of confidential "
                            "counts that must stay with the curator")
    try:
        found = table_rows(out)
    except (OSError, ValueError, pa.ArrowException) as exc:
        problems.append(f"{out}: not readable ({exc})")
    else:
        if found != rows:
            problems.append(f"{out}: {found} rows, the sidecar says {rows}")
    return problems


def folder_outcome(out: Path, input_path: Path) -> tuple[str, list[str]]:
    """Judge a release folder (``--out DIR/``) from its files: ``("pair" | "nothing" | "broken", problems)``.

    Absent is nothing.  Otherwise ``out`` must be a folder holding exactly one table ``table.*`` and its
    sidecar, a complete pair for ``input_path`` (:func:`pair_problems`), and nothing else.
    """
    if not os.path.lexists(out):
        return "nothing", []
    if out.is_symlink() or not out.is_dir():
        return "broken", [f"{out}: not a folder"]
    names = sorted(os.listdir(out))
    tables = [n for n in names if n.startswith("table.") and not n.endswith(SIDECAR_SUFFIX)]
    problems = []
    if not tables:
        problems.append(f"{out}: no table" + (" (a sidecar without its table)" if names else " (an empty folder)"))
    elif len(tables) > 1:
        problems.append(f"{out}: {len(tables)} tables, not one")
    else:
        table = out / tables[0]
        if sidecar_of(table).name not in names:
            problems.append(f"{table}: a table without its sidecar")
        else:
            problems += pair_problems(table, input_path)
        pair = (table.name, sidecar_of(table).name)
        problems += [f"{out / n}: not part of the release" for n in names if n not in pair]
    return ("broken", problems) if problems else ("pair", [])


PARTIAL = re.compile(r"^\..+\.countdp-partial-[0-9a-f]{32}$")
"""The documented name of a release's partial file or folder: ``.NAME.countdp-partial-`` and 32 random hex digits."""


def partials(folder: Path, name: str | None = None) -> list[Path]:
    """The partial files and folders in ``folder`` (of the output ``name`` only, if given)."""
    return sorted(path for path in folder.iterdir() if PARTIAL.match(path.name) and
                  (name is None or path.name.rsplit(".countdp-partial-", 1)[0] == f".{name}"))


def locked(path: Path) -> bool:
    """Whether some process holds a ``flock`` on ``path`` (a release holds one on each of its partials for
    its whole life, as documented): tried here without waiting, and let go at once."""
    fd = os.open(path, (os.O_RDONLY | os.O_DIRECTORY) if path.is_dir() else os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def dead_partials(folder: Path) -> list[Path]:
    """The partial files and folders in ``folder`` that no running release holds (a killed release's leftovers)."""
    return [path for path in partials(folder) if not locked(path)]


def as_count(value) -> int | None:
    """A cell read as an integer count, as a person would read it: ``3``, ``"03"``, ``" +3"``, ``3.0``.

    ``None`` for anything that is not an integer (text, fractions, missing values, booleans).
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value == int(value) else None
    if isinstance(value, str):
        if INTEGER_TEXT.fullmatch(value):
            return int(value)
        try:
            number = float(value)
        except ValueError:
            return None
        return as_count(number) if math.isfinite(number) else None
    try:  # decimals
        return as_count(float(value))
    except (TypeError, ValueError):
        return None


def copies_of_counts(columns: dict[str, list], counts: dict[str, list[int]]) -> list[str]:
    """The released columns that equal a true count column on every row, read as integers.

    ``columns``: released column name -> values; ``counts``: true count column -> its counts.
    """
    found = []
    for name, values in columns.items():
        read = [as_count(v) for v in values]
        for count, truth in counts.items():
            if len(read) == len(truth) and all(r is not None and r == t for r, t in zip(read, truth, strict=True)):
                found.append(f"released column {name!r} equals the true count column {count!r} on every row")
    return found


NOT_A_NUMBER = object()
"""What :func:`as_number` returns for a value that is present but not a number (text, a flag)."""


def as_number(value):
    """A cell read as an exact number: a :class:`~fractions.Fraction`, ``None`` when missing (a null, a
    float NaN or infinity, blank text, which is how a CSV writes a missing value, or text that is not a
    decimal number once thousands separators are dropped), or :data:`NOT_A_NUMBER` (booleans)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool):
        return NOT_A_NUMBER
    if isinstance(value, int | float):
        return Fraction(value) if math.isfinite(value) else None
    if isinstance(value, str):  # text that does not read as a number is a missing value, like a blank
        text = value.strip().replace(",", "")
        return Fraction(text) if text and DECIMAL_TEXT.fullmatch(text) else None
    try:  # decimals
        return Fraction(value)
    except (TypeError, ValueError):
        return NOT_A_NUMBER


def _rank(rows: list[list[Fraction]]) -> int:
    """The rank of a matrix given by its rows, by exact Gaussian elimination."""
    matrix = [list(row) for row in rows]
    rank, width = 0, len(matrix[0]) if matrix else 0
    for col in range(width):
        pivot = next((r for r in range(rank, len(matrix)) if matrix[r][col] != 0), None)
        if pivot is None:
            continue
        matrix[rank], matrix[pivot] = matrix[pivot], matrix[rank]
        for r in range(len(matrix)):
            if r != rank and matrix[r][col] != 0:
                factor = matrix[r][col] / matrix[rank][col]
                matrix[r] = [a - factor * b for a, b in zip(matrix[r], matrix[rank], strict=True)]
        rank += 1
    return rank


def affine_in_counts(values: Sequence, counts: Sequence[Sequence[int]], sizes: Sequence[int]) -> bool:
    """Whether a published column gives the counts away as an affine function of them, by the threat
    model's rule, decided here in exact arithmetic: on its present rows (nulls and NaN set aside) every
    value is a number, the column equals ``a_1 c_1 + ... + a_K c_K + b n + d`` on all of them, there are
    more such rows than the fit's free parameters (the rank of the rows' ``[c_1..c_K, n, 1]``), and no
    function ``b n + d`` of the public sizes alone fits them.
    """
    read = [as_number(v) for v in values]
    if any(x is NOT_A_NUMBER for x in read):
        return False
    present = [r for r, x in enumerate(read) if x is not None]
    full = [[Fraction(c[r]) for c in counts] + [Fraction(sizes[r]), Fraction(1)] for r in present]
    public = [row[len(counts):] for row in full]
    x = [read[r] for r in present]
    rank = _rank(full)
    if len(present) <= rank:
        return False

    def spans(features: list[list[Fraction]]) -> bool:
        return _rank([row + [v] for row, v in zip(features, x, strict=True)]) == _rank(features)

    return spans(full) and not spans(public)


def read_csv_columns(path: Path) -> tuple[list[str], list[list[str]]]:
    """A CSV's header and its rows, parsed by the standard library."""
    with open(path, newline="", encoding="utf-8") as stream:
        rows = list(csv.reader(stream))
    return rows[0], rows[1:]


# ---------------------------------------------------------------------------------- processes
def command(args: list[str]) -> list[str]:
    """``python -m countdp.cli ARGS`` with this interpreter."""
    return [sys.executable, "-m", "countdp.cli", *args]


def environment(tmpdir: Path) -> dict[str, str]:
    """This environment with ``TMPDIR`` pointed at ``tmpdir``."""
    return {**os.environ, "TMPDIR": str(tmpdir)}


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (read from /proc/*/stat)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stream:
                stat = stream.read()
        except OSError:
            continue
        if int(stat.rsplit(b")", 1)[1].split()[1]) == pid:
            found.append(int(name))
    return found


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, dead but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stream:
            return stream.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def mentioning(text: str) -> list[int]:
    """The processes whose command line contains ``text`` (a lingering guardian names the sidecar)."""
    found = []
    needle = text.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as stream:
                if needle in stream.read() and alive(int(name)):
                    found.append(int(name))
        except OSError:
            continue
    return found


def open_files(pid: int) -> set[str]:
    """The paths process ``pid`` holds open."""
    found = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for fd in fds:
        with contextlib.suppress(OSError):
            found.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return found


def unnamed_files(pid: int, folder: Path) -> dict[int, int]:
    """The unnamed (O_TMPFILE) files ``pid`` holds open in ``folder``: fd -> bytes written so far."""
    found = {}
    prefix = f"{folder}/#"
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith(prefix) and target.endswith("(deleted)"):
                found[int(fd)] = os.stat(f"/proc/{pid}/fd/{fd}").st_size
        except OSError:
            continue
    return found


def phase(pid: int, out: Path) -> str:
    """Where a running release is, seen from outside: ``starting`` (nothing written yet),
    ``writing`` (unnamed files open), ``commit`` (its guardian is running), ``linked`` (a name is in place).
    """
    if out.exists() or sidecar_of(out).exists():
        return "linked"
    if children(pid):
        return "commit"
    if unnamed_files(pid, out.parent):
        return "writing"
    return "starting"


def collect(proc: subprocess.Popen, timeout: float = 120, out: Path | None = None) -> tuple[str, str]:
    """Wait for a release; with ``out``, also (up to 10 s) for its commit guardian, which outlives a
    killed release by the moment it takes to tidy up, so that what is judged next is the end state."""
    stdout, stderr = proc.communicate(timeout=timeout)
    if out is not None:
        wait_until(lambda: not mentioning(str(sidecar_of(out))), timeout=10)
    return stdout, stderr


def error_lines(stderr: str) -> list[str]:
    """The ``countdp: error:`` lines of a run's stderr."""
    return [line for line in stderr.splitlines() if line.startswith("countdp: error:")]


def one_line_error(stderr: str) -> list[str]:
    """Why ``stderr`` is not one ``countdp: error: ...`` line (plus ``#`` notes and the progress bar)."""
    problems = []
    errors = error_lines(stderr)
    if len(errors) != 1:
        problems.append(f"{len(errors)} 'countdp: error:' lines, not one: {stderr!r}")
    if "Traceback" in stderr:
        problems.append(f"a traceback: {stderr!r}")
    for line in stderr.splitlines():
        if line in errors or line.startswith("#") or line.startswith("\r") or line.startswith("[") or not line:
            continue
        problems.append(f"an unexpected stderr line {line!r}")
    return problems


@contextlib.contextmanager
def environment_variable(name: str, value: str) -> Iterator[None]:
    """``os.environ[name] = value`` for the block (for in-process runs; the guardian inherits it)."""
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            del os.environ[name]
        else:
            os.environ[name] = saved


def run_in_process(argv: list[str]) -> tuple[int, str, str]:
    """``countdp.cli.main(argv)`` with stdout and stderr captured: ``(status, stdout, stderr)``."""
    from countdp.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse's own usage errors
            status = exc.code
    return status, out.getvalue(), err.getvalue()


def wait_until(condition, timeout: float, step: float = 0.002) -> bool:
    """Poll ``condition()`` until it holds (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return False


def stopped_at_first_fsync(tracer: str) -> list[str]:
    """A command prefix running what follows under strace, which stops it (SIGSTOP, injected) as it enters
    its first ``fsync``: a release's commit, once its partial files or folder exist and are locked.  It goes on
    only when :func:`run_on` sends SIGCONT, so a test can act while the release is provably mid-release for as
    long as it needs, whatever the machine's load (a held ``fsync``'s fixed delay can run out first)."""
    return [tracer, "-f", "-o", "/dev/null", "-e", "trace=fsync", "-e", "inject=fsync:signal=SIGSTOP:when=1"]


def run_on(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    """Let ``proc`` (started in a session of its own under :func:`stopped_at_first_fsync`) run to its end; its
    exit status and stderr.  SIGCONT goes to its process group every 50 ms until it ends: the stop may come
    after an earlier SIGCONT (the release had not reached its ``fsync`` yet), and SIGCONT leaves a running
    process alone."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGCONT)
        time.sleep(0.05)
    _, err = proc.communicate(timeout=10)
    return proc.returncode, err


@contextlib.contextmanager
def held_lock(path: Path) -> Iterator[subprocess.Popen]:
    """A real process (util-linux ``flock --no-fork``) holding an exclusive lock on ``path`` for the block,
    as a running release holds its partials; ``pytest.skip`` where ``flock`` is missing."""
    import pytest

    tool = shutil.which("flock")
    if tool is None:
        pytest.skip("util-linux flock is needed to hold a lock from another process")
    proc = subprocess.Popen([tool, "--no-fork", "-x", str(path), "sleep", "600"])  # the lock ends with it
    try:
        assert wait_until(lambda: locked(path), timeout=30), f"{path}: flock never took the lock"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def pid_namespace(last_pid: int | None = None) -> list[str] | None:
    """A command prefix running what follows in a new PID namespace with its own ``/proc``
    (``unshare -p --kill-child --mount-proc``, which forks): as process 1, or with ``last_pid`` as
    process ``last_pid + 1`` (the namespace's ``ns_last_pid`` set first).  ``None`` where that cannot
    be had (root is needed)."""
    tool = shutil.which("unshare")
    if tool is None:
        return None
    prefix = [tool, "-p", "--kill-child", "--mount-proc"]  # the namespace ends with unshare, killed or not
    if last_pid is not None:
        prefix += ["sh", "-c", f'echo {last_pid} > /proc/sys/kernel/ns_last_pid && "$@"; exit $?', "sh"]
    probe = subprocess.run([*prefix, "sh", "-c", "echo $$"], capture_output=True, text=True)
    expected = str(1 if last_pid is None else last_pid + 1)
    return prefix if probe.returncode == 0 and probe.stdout.strip() == expected else None


def traceable_strace() -> str:
    """strace's path, installed from Debian's package if need be; ``pytest.skip`` where it is missing or
    cannot trace here (no root, a container without ptrace)."""
    import pytest  # lazy: the helpers load without pytest (as held_lock does)

    path = debian_tool("strace", "strace")
    if path is None or subprocess.run([path, "-o", "/dev/null", "true"], capture_output=True).returncode != 0:
        pytest.skip("strace is needed and must be able to trace here")
    return path


def debian_tool(binary: str, package: str) -> str | None:
    """The path of ``binary``, installing Debian's ``package`` with apt-get when it is missing (root only).

    Returns ``None`` if it cannot be had; the caller skips with that reason.
    """
    path = shutil.which(binary)
    if path is None:
        done = subprocess.run(["apt-get", "install", "-y", package], capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            subprocess.run(["apt-get", "update"], capture_output=True, timeout=900)
            subprocess.run(["apt-get", "install", "-y", package], capture_output=True, text=True, timeout=900)
        path = shutil.which(binary)
    return path
