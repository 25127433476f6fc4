"""Releasing the counts of a table: every input column kept, one noisy count added per row.

The table is read as text (every column kept verbatim); the count column must hold integers
in ``0..n``.  Bad input raises ``ValueError`` with one line naming the row (counted from 1,
after the header) and the column, before any noise is drawn.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from countdp.sampling import release


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """A CSV table with every column read as text, or ``ValueError`` naming the file."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a readable CSV table ({str(exc).splitlines()[0]})") from None
    return frame


def true_counts(frame: pd.DataFrame, column: str, n: int) -> np.ndarray:
    """The integer counts of ``column`` (each in ``0..n``), or ``ValueError`` naming the first bad row."""
    if column not in frame.columns:
        raise ValueError(f"no column {column!r}; the table has {', '.join(map(repr, frame.columns))}")
    if frame.empty:
        raise ValueError("the table has no rows")
    text = frame[column].astype(str).str.strip()
    valid = text.str.fullmatch(r"[+-]?\d+")
    if not valid.all():
        row = int(np.argmin(valid.to_numpy()))
        raise ValueError(f"row {row + 1}, column {column!r}: {text.iloc[row]!r} is not an integer count")
    counts = np.array([int(v) for v in text], dtype=object)
    inside = np.array([0 <= v <= n for v in counts])
    if not inside.all():
        row = int(np.argmin(inside))
        raise ValueError(f"row {row + 1}, column {column!r}: count {counts[row]} is outside 0..{n}")
    return counts.astype(np.int64)


def release_table(frame: pd.DataFrame, mechanism: object, count_column: str, noisy_column: str | None = None,
                  rng: object = None) -> pd.DataFrame:
    """``frame`` with a column of noisy counts (``noisy_<count_column>`` by default) drawn by :func:`release`.

    ``rng=None`` draws from the OS's secure source; a seeded numpy Generator is for tests only.
    """
    released = getattr(mechanism, "released", mechanism)
    counts = true_counts(frame, count_column, released.n)
    name = noisy_column or f"noisy_{count_column}"
    if name in frame.columns:
        raise ValueError(f"the table already has a column {name!r}; choose another with --noisy-column")
    out = frame.copy()
    out[name] = release(mechanism, counts, rng)
    return out


__all__ = ["read_table", "release_table", "true_counts"]
