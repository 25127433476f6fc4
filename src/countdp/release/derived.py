"""Kept columns that would publish the true counts: affine functions of the count and size columns.

A kept column is published verbatim.  If on every row it equals ``a_1 c_1 + ... + a_K c_K + b n + d``
(``c_k`` the count columns, ``n`` the group size, some ``a_k != 0``), an adversary who knows every
other row solves for the coefficients from them and reads the last row's count off its kept
value: ``n - c``, ``c + 1``, ``2c``, a copy in text (``"03"``), a copy with nulls on some rows all
do this.  :class:`AffineWatch` finds such a column in one streaming pass:

1. it collects the column's first non-null rows (up to :data:`SAMPLE_ROWS`, and more while the
   features ``[c_1..c_K, n, 1]`` have not reached full rank) and fits the column twice by least
   squares, once on the public features ``[n, 1]`` and once on all of them;
2. each fit that is exact on the sample (to :data:`RELATIVE_TOLERANCE`) is then checked on every
   later row, and dropped at the first row it misses;
3. at the end, a column that an exact public fit explains is public (a function of the sizes);
   otherwise a column that the full fit explains on every non-null row, with more rows than the
   fit has free parameters (so the fit is determined, not forced) and a count coefficient that is
   not zero, is derived from the counts, and the release refuses it.

What is refused is a property of the whole column, and the check runs before anything is drawn.
A column that is a copy of the counts on all rows but one is not affine and is not caught here:
publication is default-deny (``--keep`` must name every published column), so such a column is
published only if the curator names it.  Nested columns (lists, structs, maps) are refused
outright by the caller: their leaves could hold counts this check does not read.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SAMPLE_ROWS = 256
"""Non-null rows fitted before the fits are checked on the rest of the table."""
MAX_SAMPLE_ROWS = 1 << 16
"""Rows collected at most while the features lack full rank (constant sizes, say): memory stays bounded."""
RELATIVE_TOLERANCE = 1e-9
"""A fit is exact on a row when ``|x - fit| <= RELATIVE_TOLERANCE * max(1, |x|)``."""


def numeric_values(column: pa.Array) -> np.ndarray | None:
    """The column as float64 with NaN for nulls, or ``None`` when it is not numbers (text that does
    not parse, booleans, dates: not a count's affine image)."""
    if pa.types.is_boolean(column.type) or pa.types.is_temporal(column.type):
        return None
    try:
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            trimmed = pc.utf8_trim_whitespace(column)  # a blank CSV cell is a missing value
            column = pc.if_else(pc.equal(trimmed, ""), pa.scalar(None, trimmed.type), trimmed)
        values = pc.cast(column, pa.float64())
    except (pa.ArrowException, NotImplementedError):
        return None
    return values.to_numpy(zero_copy_only=False).astype(np.float64)


def _exact(features: np.ndarray, x: np.ndarray, coef: np.ndarray) -> bool:
    return bool(np.all(np.abs(features @ coef - x) <= RELATIVE_TOLERANCE * np.maximum(1.0, np.abs(x))))


class AffineWatch:
    """One kept column watched for being an affine function of the counts (see the module docstring)."""

    def __init__(self, name: str, counts: int) -> None:
        """``counts``: the number of count columns (the features are the counts, the size, and 1)."""
        self.name, self.counts = name, counts
        self.sample_x: list[np.ndarray] = []
        self.sample_f: list[np.ndarray] = []
        self.public = self.full = None  # fitted coefficients still exact on every row seen, or None
        self.fitted, self.numeric, self.rows, self.rank = False, True, 0, 0
        self.size_range = (np.inf, -np.inf)  # the smallest and largest group size seen

    def feed(self, column: pa.Array, counts: list[np.ndarray], sizes: np.ndarray) -> None:
        """One batch: the kept column, each count column and the group sizes (int64)."""
        if not self.numeric:
            return
        x = numeric_values(column)
        if x is None:
            self.numeric = False
            return
        seen = ~np.isnan(x)
        if sizes.size:
            self.size_range = (min(self.size_range[0], sizes.min()), max(self.size_range[1], sizes.max()))
        features = np.column_stack([*counts, sizes, np.ones(len(x))]).astype(np.float64)[seen]
        x = x[seen]
        self.rows += len(x)
        if not self.fitted:
            self.sample_x.append(x)
            self.sample_f.append(features)
            stacked = np.concatenate(self.sample_f)
            if len(stacked) >= MAX_SAMPLE_ROWS or (len(stacked) >= SAMPLE_ROWS and
                                                   np.linalg.matrix_rank(stacked) == stacked.shape[1]):
                self._fit()
            return
        self._check(features, x)

    def _fit(self) -> None:
        features, x = np.concatenate(self.sample_f), np.concatenate(self.sample_x)
        self.sample_x, self.sample_f, self.fitted = [], [], True
        if not len(x):
            return
        self.rank = int(np.linalg.matrix_rank(features))
        public = features[:, self.counts:]
        coef = np.linalg.lstsq(public, x, rcond=None)[0]
        self.public = np.concatenate([np.zeros(self.counts), coef]) if _exact(public, x, coef) else None
        coef = np.linalg.lstsq(features, x, rcond=None)[0]
        self.full = coef if _exact(features, x, coef) else None

    def _check(self, features: np.ndarray, x: np.ndarray) -> None:
        if self.public is not None and not _exact(features, x, self.public):
            self.public = None
        if self.full is not None and not _exact(features, x, self.full):
            self.full = None

    def derived(self) -> str | None:
        """After the last batch: the fitted formula if the column publishes the counts, else ``None``."""
        if not self.numeric:
            return None
        if not self.fitted:
            self._fit()
        coef = self.full
        if self.public is not None or coef is None or self.rows <= self.rank:
            return None
        if np.all(np.abs(coef[:self.counts]) <= RELATIVE_TOLERANCE):
            return None
        return self._formula(coef)

    def _formula(self, coef: np.ndarray) -> str:
        coef = coef.copy()
        if self.size_range[0] == self.size_range[1]:  # one size for every row: its term is a constant
            coef[-1] += coef[-2] * self.size_range[0]
            coef[-2] = 0.0
        terms = [f"{a:.6g}*count{k + 1 if self.counts > 1 else ''}" for k, a in enumerate(coef[:self.counts])
                 if abs(a) > RELATIVE_TOLERANCE]
        if abs(coef[-2]) > RELATIVE_TOLERANCE:
            terms.append(f"{coef[-2]:.6g}*size")
        if abs(coef[-1]) > RELATIVE_TOLERANCE:
            terms.append(f"{coef[-1]:.6g}")
        return " + ".join(terms).replace("+ -", "- ")


def nested(field: pa.Field) -> bool:
    """Whether a column holds lists, structs, maps or unions (published whole, read by no check)."""
    kind = field.type
    return pa.types.is_nested(kind) or pa.types.is_dictionary(kind) and pa.types.is_nested(kind.value_type)


__all__ = ["MAX_SAMPLE_ROWS", "RELATIVE_TOLERANCE", "SAMPLE_ROWS", "AffineWatch", "nested", "numeric_values"]
