"""Atomic file writes: a temporary file in the target's folder, renamed into place on success.

A killed job never leaves a half-written file under its final name: until the rename, what is
being written is ``.{name}.XXXXXXXX{suffix}`` next to the target (the workflow removes such
leftovers when the next run starts, ``workflow/rules/common.smk``).

The temporary is created with ``os.open(..., O_CREAT | O_EXCL, 0o666)``, so the kernel applies
the user's umask (and a folder's default ACL) exactly as for any new file: 0644 under umask 022,
0600 under 077.  ``tempfile.mkstemp`` would make every result 0600 whatever the umask, unreadable
by colleagues on a shared filesystem.
"""

from __future__ import annotations

import os
import secrets
from contextlib import contextmanager
from pathlib import Path

_NAME_CHARACTERS = "abcdefghijklmnopqrstuvwxyz0123456789_"
"""The temporary's 8 random characters (the alphabet ``ATOMIC_TEMP_RE`` of the workflow expects)."""


def _create_temporary(target: Path, suffix: str) -> Path:
    """A new empty file ``.{target.name}.XXXXXXXX{suffix}`` next to ``target``, mode ``0o666 & ~umask``."""
    for _ in range(100):
        token = "".join(secrets.choice(_NAME_CHARACTERS) for _ in range(8))
        tmp = target.with_name(f".{target.name}.{token}{suffix}")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"no free temporary name next to {target}")


@contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = ""):
    """Yield a temporary path next to ``path``; rename it onto ``path`` only on success.

    The temporary (and so the final file) has the mode a new file gets under the user's umask.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _create_temporary(target, suffix or target.suffix)
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_csv_atomic(frame, path: str | os.PathLike, float_format: str | None = None) -> None:
    """Write a pandas ``frame`` as CSV (no index, ``\\n`` line ends) so a killed job leaves no partial
    file; ``float_format`` e.g. ``"%.12g"`` (default: full ``repr`` precision)."""
    write_text_atomic(path, frame.to_csv(index=False, lineterminator="\n", float_format=float_format))


__all__ = ["atomic_path", "write_bytes_atomic", "write_csv_atomic", "write_text_atomic"]
