"""Validation of the parameters every mechanism shares: group size n and privacy alpha."""

from __future__ import annotations

import numbers
import os
import stat
from pathlib import Path

import numpy as np


def check_n(n: object) -> int:
    """Return ``n`` as an int, or raise ``ValueError`` unless it is an integer >= 1."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        if isinstance(n, float) and n.is_integer():
            return check_n(int(n))
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    return int(n)


def check_alpha(alpha: object) -> float:
    """Return ``alpha`` as a float, or raise ``ValueError`` unless 0 < alpha < 1."""
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise ValueError(f"alpha must be a number with 0 < alpha < 1, got {alpha!r}")
    value = float(alpha)  # a Fraction (exact alpha) is rounded to the nearest float
    if not (0.0 < value < 1.0):
        raise ValueError(f"alpha must satisfy 0 < alpha < 1 (alpha = exp(-epsilon)), got {alpha!r}")
    return value


def check_distribution(weights: object, n: int, name: str = "weights") -> np.ndarray:
    """Return ``weights`` as a length-(n+1) probability vector, or raise ``ValueError``."""
    if np.iscomplexobj(np.asarray(weights)):
        raise ValueError(f"{name} must be real, got complex entries")
    try:
        w = np.asarray(weights, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a vector of n+1 = {n + 1} numbers") from None
    if w.shape != (n + 1,):
        raise ValueError(f"{name} must have n+1 = {n + 1} entries, got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"{name} must be finite and non-negative")
    total = w.sum()
    if not np.isclose(total, 1.0, rtol=0, atol=1e-9):
        raise ValueError(f"{name} must sum to 1, got {total!r}")
    return w / total


def check_matrix(P: object) -> np.ndarray:
    """Return ``P`` as a square float array with at least 2 rows, or raise ``ValueError``."""
    if np.iscomplexobj(np.asarray(P)):
        raise ValueError("a mechanism must be a real matrix, got complex entries")
    try:
        M = np.asarray(P, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("a mechanism must be a square numeric (n+1)x(n+1) matrix") from None
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] < 2:
        raise ValueError(f"a mechanism must be a square (n+1)x(n+1) matrix with n >= 1, got shape {M.shape}")
    if not np.all(np.isfinite(M)):
        raise ValueError("a mechanism must have finite entries")
    return M


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux ``MemAvailable``), or None if unknown."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


class BeyondMemory(ValueError):
    """A size whose arrays would need more memory than this machine has available (one line): a
    ``ValueError``, which a caller can tell from the others to say what else would serve that size."""


def check_fits_in_memory(n: int, bytes_per_entry: int, what: str, power: int = 2) -> None:
    """Raise :class:`BeyondMemory` (one line) if ``what`` for groups of size n would need more memory than is
    available.

    ``bytes_per_entry`` is the measured peak per entry of the (n+1)x(n+1) matrix (of ``(n+1)^power``
    entries, for an array with ``power`` axes of ``n + 1``).
    """
    need = (n + 1) ** power * bytes_per_entry
    have = available_memory()
    if have is not None and need > have:
        raise BeyondMemory(f"n = {n} is beyond this machine: {what} needs about {need / 2**30:,.1f} GiB of memory, "
                         f"and {have / 2**30:,.1f} GiB is available")


def check_matrices_fit(sizes: np.ndarray, copies: int, bytes_per_entry: int, what: str) -> None:
    """Raise ``ValueError`` (one line) if ``copies`` matrices of each group size in ``sizes``, held at
    once at ``bytes_per_entry`` each entry, would need more memory than is available."""
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.size == 0:
        return
    need = copies * bytes_per_entry * int(np.sum((sizes.astype(object) + 1) ** 2))
    have = available_memory()
    if have is not None and need > have:
        raise ValueError(f"{what}: {sizes.size:,} matrices (group sizes up to n = {int(sizes.max()):,}) held at once "
                         f"need about {need / 2**30:,.1f} GiB, and {have / 2**30:,.1f} GiB is available")


def check_tol(tol: object) -> float:
    """Return a tolerance as a float, or raise ``ValueError`` unless it is finite and >= 0."""
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not np.isfinite(tol) or tol < 0:
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    return float(tol)


def check_probability(p: object, name: str = "p") -> float:
    """Return ``p`` as a float, or raise ``ValueError`` unless it is a number in [0, 1]."""
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not (0.0 <= float(p) <= 1.0):
        raise ValueError(f"{name} must be a number in [0, 1], got {p!r}")
    return float(p)


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words, for a refusal that names it: ``"a file"``,
    ``"a directory"``, ``"a named pipe (FIFO)"``, ``"a device"``, ``"a socket"``."""
    kinds = ((stat.S_ISREG, "a file"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
             (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))
    return next((word for test, word in kinds if test(mode)), "not a regular file")


def file_problem(path: str | os.PathLike, what: str) -> str | None:
    """Why ``path`` cannot be read as ``what`` (``"no such file"``, ``"a directory, not a mechanism file"``,
    a FIFO or a device, which a read would block on or never finish), or ``None`` for a regular file."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "no such file"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    return None if stat.S_ISREG(mode) else f"{file_kind(mode)}, not {what}"


def folder_problem(path: str | os.PathLike, writable: bool = False) -> str | None:
    """Why ``path`` cannot be (or be made) a folder: it, or the nearest of its parents that exists, is not
    one (``"a device, not a folder"``, ``"its parent /dev/null is a device, not a folder"``), or, with
    ``writable``, this process cannot write there (``"a folder on a read-only file system"``); else ``None``.

    Writing is asked of the kernel (``access``), which refuses root too on a read-only mount or an
    immutable folder, where permission bits alone would not."""
    path = Path(path)
    for candidate in (path, *path.parents):
        try:
            mode = os.stat(candidate).st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            return f"cannot be reached ({exc.strerror})"
        where = "" if candidate == path else f"its parent {candidate} is "
        if not stat.S_ISDIR(mode):
            return f"{where}{file_kind(mode)}, not a folder"
        if writable and not os.access(candidate, os.W_OK | os.X_OK):
            return f"{where}a folder {_unwritable(candidate)}"
        return None
    return None


def _unwritable(folder: Path) -> str:
    """Why a folder ``access`` says cannot be written: its file system is mounted read-only, or this process
    may not (its permissions, an immutable folder)."""
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    return "on a read-only file system" if read_only else "this process may not write to"
