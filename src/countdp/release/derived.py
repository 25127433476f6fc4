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
"""A fit is exact on a row when ``|x - fit| <= tolerance * scale``, ``scale`` the largest distance of
the sampled values from the first one: relative to the column's own spread, so that neither a large
offset (``10**12 + c``) nor a tiny scale (``1e-11 c``) hides the counts."""
SINGLE_TOLERANCE = 1e-5
"""The same for 32-bit and 16-bit floats, whose rounding (about ``6e-8``) exceeds the tolerance above."""
_INTEGER_TEXT = r"^[+-]?[0-9]{1,18}$"
_NUMBER_TEXT = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"


def _integers(column: pa.Array) -> pa.Array | None:
    """Integer storage of an integer, date, time, timestamp or duration column (exact), else ``None``."""
    kind = column.type
    if pa.types.is_integer(kind):
        return column
    if pa.types.is_temporal(kind):
        return column.view(pa.int64() if kind.bit_width == 64 else pa.int32())
    return None


def _text_numbers(column: pa.Array) -> pa.Array:
    """Text as numbers, cell by cell: blanks and cells that do not read as a number (``NA``, ``-``,
    hexadecimal) are missing values; thousands separators and a leading ``+`` are dropped; integers
    stay exact (int64) when every number is one."""
    text = pc.replace_substring_regex(pc.replace_substring(pc.utf8_trim_whitespace(column), ",", ""), r"^\+", "")
    integer = pc.fill_null(pc.match_substring_regex(text, _INTEGER_TEXT), False)
    number = pc.fill_null(pc.match_substring_regex(text, _NUMBER_TEXT), False)
    if pc.all(pc.equal(integer, number)).as_py():
        return pc.cast(pc.if_else(integer, text, pa.scalar(None, text.type)), pa.int64())
    return pc.cast(pc.if_else(number, text, pa.scalar(None, text.type)), pa.float64())


def numbers(column: pa.Array) -> tuple[np.ndarray, bool, np.ndarray] | None:
    """The column's values as numbers, whether they are exact integers (int64 or uint64 storage), and
    which rows hold a value; ``None`` for a column that holds no numbers (booleans, other types).
    Missing values (nulls, blanks, unreadable text, NaN, infinities) are left out of the mask; text is
    parsed once, for both."""
    kind = column.type
    if pa.types.is_dictionary(kind):
        column, kind = column.dictionary_decode(), kind.value_type
    if pa.types.is_boolean(kind):
        return None
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        column = _text_numbers(column)
    valid = ~column.is_null().to_numpy(zero_copy_only=False)
    integers = _integers(column)
    if integers is not None:
        return pc.fill_null(integers, 0).to_numpy(zero_copy_only=False), True, valid
    try:
        values = pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
    except (pa.ArrowException, NotImplementedError):
        return None
    return values, False, valid & np.isfinite(values)


def tolerance_of(kind: pa.DataType) -> float:
    """The relative tolerance of a column's type (looser for floats narrower than 64 bits)."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    narrow = pa.types.is_floating(kind) and kind.bit_width < 64
    return SINGLE_TOLERANCE if narrow else RELATIVE_TOLERANCE


def centred(values: np.ndarray, exact: bool, origin) -> np.ndarray:
    """``values - origin`` as float64, exactly for integers (two's complement differences, so int64
    and uint64 beyond ``2**53`` lose nothing while the differences are small)."""
    if exact:
        shifted = values.astype(np.uint64, copy=False) - np.uint64(int(origin) % (1 << 64))
        return shifted.view(np.int64).astype(np.float64)
    return values - float(origin)


def _exact(features: np.ndarray, x: np.ndarray, coef: np.ndarray, tolerance: float) -> bool:
    return bool(np.all(np.abs(features @ coef - x) <= tolerance))


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
        self.origin, self.relative, self.tolerance = None, RELATIVE_TOLERANCE, 0.0
        self.decimal_origin = None  # a decimal column's first value (pyarrow scalar)

    def feed(self, column: pa.Array, counts: list[np.ndarray], sizes: np.ndarray) -> None:
        """One batch: the kept column, each count column and the group sizes (int64)."""
        if not self.numeric:
            return
        if pa.types.is_decimal(column.type):  # centred exactly in decimal arithmetic, then as floats
            column = self._decimal_centred(column)
        read = numbers(column)
        if read is None:
            self.numeric = False
            return
        values, exact, seen = read
        if not seen.any():
            return
        if self.origin is None:
            self.origin = values[seen][0].item()
            self.relative = tolerance_of(column.type)
        x = centred(values[seen], exact, self.origin)
        if sizes.size:
            self.size_range = (min(self.size_range[0], sizes.min()), max(self.size_range[1], sizes.max()))
        features = np.column_stack([*counts, sizes, np.ones(len(values))]).astype(np.float64)[seen]
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

    def _decimal_centred(self, column: pa.Array) -> pa.Array:
        """A decimal column less its first value, exactly (``10**30 + c`` keeps ``c``), as float64; the
        origin joins the fit's constant term (for the message only)."""
        kind = column.type
        wide = pa.decimal256(min(kind.precision, 75), kind.scale)  # room for the difference's extra digit
        try:
            column = pc.cast(column, wide)
            if self.decimal_origin is None:
                valid = column.drop_null()
                if not len(valid):
                    return pc.cast(column, pa.float64())
                self.decimal_origin = valid[0]
            return pc.cast(pc.subtract(column, self.decimal_origin), pa.float64())
        except pa.ArrowException:  # 76 digits: compared as floats
            return pc.cast(column, pa.float64())

    def _fit(self) -> None:
        if not self.sample_x:  # no row held a number
            self.fitted = True
            return
        features, x = np.concatenate(self.sample_f), np.concatenate(self.sample_x)
        self.sample_x, self.sample_f, self.fitted = [], [], True
        self.tolerance = self.relative * max(float(np.abs(x).max()), 1.0 if not x.any() else 0.0)
        self.rank = int(np.linalg.matrix_rank(features))
        public = features[:, self.counts:]
        coef = np.linalg.lstsq(public, x, rcond=None)[0]
        self.public = np.concatenate([np.zeros(self.counts), coef]) if _exact(public, x, coef, self.tolerance) \
            else None
        coef = np.linalg.lstsq(features, x, rcond=None)[0]
        self.full = coef if _exact(features, x, coef, self.tolerance) else None

    def _check(self, features: np.ndarray, x: np.ndarray) -> None:
        if self.public is not None and not _exact(features, x, self.public, self.tolerance):
            self.public = None
        if self.full is not None and not _exact(features, x, self.full, self.tolerance):
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
        if np.all(np.abs(coef[:self.counts]) * self._count_span() <= self.tolerance):
            return None
        return self._formula(coef)

    def _count_span(self) -> float:
        """The largest change of a count across rows (counts lie in 0..size)."""
        return float(max(self.size_range[1], 1.0))

    def _formula(self, coef: np.ndarray) -> str:
        """The fit in the column's own units, for the refusal's message."""
        coef = coef.copy()
        coef[-1] += float(self.origin) + (0.0 if self.decimal_origin is None else float(self.decimal_origin.as_py()))
        if self.size_range[0] == self.size_range[1]:  # one size for every row: its term is a constant
            coef[-1] += coef[-2] * self.size_range[0]
            coef[-2] = 0.0
        span, small = self._count_span(), self.tolerance
        terms = [f"{a:.6g}*count{k + 1 if self.counts > 1 else ''}" for k, a in enumerate(coef[:self.counts])
                 if abs(a) * span > small]
        if abs(coef[-2]) * span > small:
            terms.append(f"{coef[-2]:.6g}*size")
        if abs(coef[-1]) > small:
            terms.append(f"{coef[-1]:.6g}")
        return " + ".join(terms).replace("+ -", "- ")


def unchecked(field: pa.Field) -> str | None:
    """Why a column cannot be published (its values are not all read by the checks), or ``None``:
    nested columns (lists, structs, maps, unions) and extension types (a tensor, JSON), whose
    storage may hold counts the copy and affine checks do not read."""
    kind = field.type
    if isinstance(kind, pa.BaseExtensionType):
        return f"an extension type ({kind.extension_name})"
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return f"a nested column ({kind})" if pa.types.is_nested(kind) else None


__all__ = ["MAX_SAMPLE_ROWS", "RELATIVE_TOLERANCE", "SAMPLE_ROWS", "SINGLE_TOLERANCE", "AffineWatch", "centred",
           "numbers", "tolerance_of", "unchecked"]
