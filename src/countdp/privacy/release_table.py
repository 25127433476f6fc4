"""Releasing the counts of a table: every input column kept, one noisy count added per row.

Two forms:

* :func:`release_table`: one mechanism for every row (all groups of the same size n);
* :func:`release_by_size`: a size column gives each row its group size n, and each distinct
  n gets its own certified mechanism (designed once, then cached: :mod:`countdp.privacy.mechanism_cache`).

A CSV table is read as text (every column kept verbatim); a Parquet table keeps its types.
Bad input raises ``ValueError`` with one line naming the row (counted from 1, after the header)
and the column, before any noise is drawn.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from countdp.privacy.sampling import release
from countdp.progress import Progress

PARQUET_SUFFIXES = (".parquet", ".pq")


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """A CSV (every column as text) or Parquet table, or ``ValueError`` naming the file."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    try:
        if path.suffix.lower() in PARQUET_SUFFIXES:
            return pd.read_parquet(path)
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError, UnicodeDecodeError, ImportError) as exc:
        kind = "Parquet" if path.suffix.lower() in PARQUET_SUFFIXES else "CSV"
        raise ValueError(f"{path}: not a readable {kind} table ({str(exc).splitlines()[0]})") from None


def write_table(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write CSV or Parquet (by suffix) atomically: a temporary file renamed into place."""
    from countdp.mechanisms.artifact import atomic_path, write_csv_atomic

    if Path(path).suffix.lower() in PARQUET_SUFFIXES:
        with atomic_path(path) as tmp:
            frame.to_parquet(tmp, index=False)
    else:
        write_csv_atomic(frame, path)


def integer_column(frame: pd.DataFrame, column: str, what: str) -> np.ndarray:
    """The integers of ``column`` (``what`` names them in errors), or ``ValueError`` naming the first bad row."""
    if column not in frame.columns:
        raise ValueError(f"no column {column!r}; the table has {', '.join(map(repr, map(str, frame.columns)))}")
    if frame.empty:
        raise ValueError("the table has no rows")
    values = frame[column]
    if pd.api.types.is_integer_dtype(values.dtype):
        return values.to_numpy(dtype=np.int64)
    text = values.astype(str).str.strip()
    valid = text.str.fullmatch(r"[+-]?\d{1,18}").to_numpy(dtype=bool)
    if not valid.all():
        row = int(np.argmin(valid))
        raise ValueError(f"row {row + 1}, column {column!r}: {text.iloc[row]!r} is not an integer {what}")
    return text.astype(np.int64).to_numpy()


def _check_range(values: np.ndarray, low: int | np.ndarray, high: int | np.ndarray, column: str,
                 message: Callable[[int], str]) -> None:
    inside = (values >= low) & (values <= high)
    if not inside.all():
        row = int(np.argmin(inside))
        raise ValueError(f"row {row + 1}, column {column!r}: {message(row)}")


def true_counts(frame: pd.DataFrame, column: str, n: int) -> np.ndarray:
    """The integer counts of ``column`` (each in ``0..n``), or ``ValueError`` naming the first bad row."""
    counts = integer_column(frame, column, "count")
    _check_range(counts, 0, n, column, lambda row: f"count {counts[row]} is outside 0..{n}")
    return counts


def _noisy_name(frame: pd.DataFrame, count_column: str, noisy_column: str | None) -> str:
    name = noisy_column or f"noisy_{count_column}"
    if name in frame.columns:
        raise ValueError(f"the table already has a column {name!r}; choose another with --noisy-column")
    return name


def release_table(frame: pd.DataFrame, mechanism: object, count_column: str, noisy_column: str | None = None,
                  rng: object = None) -> pd.DataFrame:
    """``frame`` with a column of noisy counts (``noisy_<count_column>`` by default) drawn by :func:`release`.

    ``rng=None`` draws from the OS's secure source; a seeded numpy Generator is for tests only.
    """
    released = getattr(mechanism, "released", mechanism)
    counts = true_counts(frame, count_column, released.n)
    name = _noisy_name(frame, count_column, noisy_column)
    out = frame.copy()
    out[name] = release(mechanism, counts, rng)
    return out


def release_by_size(frame: pd.DataFrame, mechanism_for_size: Callable[[int], object], count_column: str,
                    size_column: str, noisy_column: str | None = None, mechanism_column: str = "mechanism",
                    rng: object = None, progress: Progress | None = None) -> tuple[pd.DataFrame, dict[int, tuple]]:
    """Each row released with the mechanism for its own group size; returns the table and ``{n: (mechanism, rows)}``.

    ``mechanism_for_size(n)`` returns a certified mechanism for groups of size ``n`` (called
    once per distinct size).  The output adds the noisy count and ``mechanism_column`` (the
    mechanism's name and n).  Every row is validated before any mechanism is designed.
    """
    sizes = integer_column(frame, size_column, "group size")
    _check_range(sizes, 1, np.iinfo(np.int64).max, size_column, lambda row: f"group size {sizes[row]} is not >= 1")
    counts = integer_column(frame, count_column, "count")
    _check_range(counts, 0, sizes, count_column,
                 lambda row: f"count {counts[row]} is outside 0..{sizes[row]} (the group size in {size_column!r})")
    name = _noisy_name(frame, count_column, noisy_column)
    if mechanism_column in frame.columns:
        raise ValueError(f"the table already has a column {mechanism_column!r}")
    distinct, index = np.unique(sizes, return_inverse=True)
    progress = progress or Progress(len(distinct), "group sizes")
    noisy = np.empty(len(frame), dtype=np.int64)
    labels = np.empty(len(distinct), dtype=object)
    used: dict[int, tuple] = {}
    for k, n in enumerate(distinct.tolist()):
        mechanism = mechanism_for_size(n)
        rows = np.flatnonzero(index == k)
        noisy[rows] = release(mechanism, counts[rows], rng)
        used[n] = (mechanism, int(rows.size))
        labels[k] = f"{getattr(mechanism, 'mechanism', 'mechanism')} n={n}"
        progress.advance()
    progress.close()
    out = frame.copy()
    out[name] = noisy
    out[mechanism_column] = labels[index]
    return out, used


def release_record(input_path: str | os.PathLike, output_path: str | os.PathLike, table: pd.DataFrame,
                   used: dict[int, tuple], cache, alpha, randomness: str, options: dict) -> dict:
    """The provenance of a table release: alpha, where the noise came from, and each mechanism's certificate.

    ``certificate_sha256`` is the SHA-256 of the mechanism's canonical release block
    (alpha_exact, denominator, weights): the same digest means the same released distribution.
    """
    import hashlib
    import json

    from countdp.privacy.alpha import alpha_text, exact_alpha

    def digest(design) -> str:
        block = {"alpha_exact": alpha_text(design.alpha_exact), **design.released.to_dict()}
        del block["certificate"]
        return hashlib.sha256(json.dumps(block, sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    input_bytes = Path(input_path).read_bytes()
    return {
        "input": str(input_path), "input_sha256": hashlib.sha256(input_bytes).hexdigest(),
        "output": str(output_path), "rows": len(table), **{k: v for k, v in options.items() if v is not None},
        "alpha_exact": alpha_text(exact_alpha(alpha)), "randomness": randomness,
        "mechanism_cache": str(cache.root), "designed_sizes": sorted(cache.designed),
        "cached_sizes": sorted(cache.hits),
        "mechanisms": [{"n": n, "rows": rows, "artifact": str(cache.path(design.mechanism, n, alpha, design.objective)),
                        "certificate_sha256": digest(design),
                        "exact_certificate": design.released.certificate.to_dict()}
                       for n, (design, rows) in sorted(used.items())],
    }


__all__ = ["integer_column", "read_table", "release_by_size", "release_record", "release_table", "true_counts",
           "write_table"]
