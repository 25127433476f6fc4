"""What a curator asks to release, and the first pass that checks every row before any noise.

A :class:`ReleaseRequest` names the input table, the count columns (each with its own exact
alpha), the kept columns, and where the mechanisms come from: one designed mechanism file for
every row (:attr:`ReleaseRequest.mechanism_file`), or a size column whose every distinct group
size gets its own certified mechanism (:attr:`ReleaseRequest.mechanism`).

:func:`validate` reads the whole table once, in batches, and refuses with one ``ValueError``
line (naming the table the user gave, the row and the column) anything that cannot be
released: a missing column, a count outside ``0..n``, a bad group size, a kept column equal to
a count column on every row or an affine function of the counts and sizes
(:mod:`countdp.release.derived`), a nested kept column.  Publication is default-deny: a table
with columns beside its count, size and partition columns needs ``--keep`` to name what is
published.  It returns the :class:`Validated` facts the release needs: the
rows, the distinct group sizes, the input's SHA-256, and whether CSV text needs quoting.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from countdp.release.atomic_folder import table_name
from countdp.release.derived import AffineWatch, unchecked
from countdp.release.tables import TableSource, integer_values, table_format
from countdp.structural.catalogue import MAX_INPUTS


@dataclass(frozen=True)
class ColumnPrivacy:
    """One count column: its exact alpha, the epsilon asked for (if given as epsilon), the noisy column's name.

    ``levels`` (increasing alphas, the first equal to ``alpha``) asks for a multi-level release:
    one noisy column per level (:mod:`countdp.release.levels`).
    """

    count_column: str
    alpha: Fraction
    epsilon_requested: Fraction | None
    noisy_column: str
    levels: tuple[Fraction, ...] = ()

    @property
    def noisy_columns(self) -> list[str]:
        """``noisy_<c>``, or ``noisy_<c>_level1`` ... ``noisy_<c>_levelL`` for a multi-level column."""
        if not self.levels:
            return [self.noisy_column]
        return [f"{self.noisy_column}_level{k}" for k in range(1, len(self.levels) + 1)]


@dataclass(frozen=True)
class ReleaseRequest:
    """A table release.  Exactly one of ``mechanism_file`` and ``mechanism`` (with ``size_column``) is set.

    ``invariant``: condition each count column's noisy counts on its true total (within each value
    of ``invariant_by``, if set); ``target_alpha``: choose the per-group alpha so that the conditioned
    release meets it (:mod:`countdp.release.invariant`).

    ``out_folder``: ``out`` names a release folder to create (``--out DIR/``), holding the table
    :attr:`table_path` and its sidecar, committed by one rename (:mod:`countdp.release.atomic_folder`).
    ``out_typed``: ``--out`` exactly as the user typed it, which every message about it repeats.
    ``out=None``: the release is kept in memory and returned (the Python API), nothing written.

    ``source``: a table that is not a file (:class:`~countdp.release.sources.ArrowSource`); ``input`` is
    then its label.  ``records``: for a release of person records grouped by a query, what the sidecar
    records about them (:mod:`countdp.release.records`).
    """

    input: Path
    out: Path | None
    columns: tuple[ColumnPrivacy, ...]
    keep: tuple[str, ...] | None = None
    size_column: str | None = None
    mechanism: str | None = None
    objective: str = "L0"
    mechanism_file: Path | None = None
    n: int | None = None
    cache: Path | None = None
    seed: int | None = None
    budget: Path | None = None
    overwrite: bool = False
    command: tuple[str, ...] = ()
    invariant: bool = False
    invariant_by: str | None = None
    target_alpha: Fraction | None = None
    out_folder: bool = False
    out_typed: str | None = None
    source: object | None = None
    records: dict | None = None

    def open_source(self):
        """The table read: :attr:`source` (a table that is not a file, :mod:`countdp.release.sources`), or the
        file :attr:`input`."""
        return self.source if self.source is not None else TableSource(self.input)

    @property
    def output_format(self) -> str:
        """``csv`` or ``parquet``: a file's own format; for any other source, ``out``'s suffix (Parquet for a
        release folder or a release kept in memory)."""
        if self.source is None:
            return table_format(self.input)
        if self.out is None or self.out_folder:
            return "parquet"
        return table_format(self.out)

    @property
    def table_path(self) -> Path | None:
        """The published table, which readers open: ``out``, or ``out/table.<input's suffix>`` for a folder
        (``table.parquet`` or ``table.csv`` for a source that is not a file); ``None`` for a release kept in
        memory."""
        if self.out is None:
            return None
        if not self.out_folder:
            return self.out
        return self.out / (table_name(self.input) if self.source is None else f"table.{self.output_format}")

    @property
    def out_text(self) -> str:
        """``out`` as the user typed it (``''`` if empty); without :attr:`out_typed`, ``out`` and, for a
        release folder, a trailing ``/``."""
        if self.out_typed is not None:
            return self.out_typed or "''"
        return f"{self.out}/" if self.out_folder else str(self.out)

    @property
    def table_text(self) -> str:
        """:attr:`table_path` as the user would write it: :attr:`out_text`, or inside a release folder
        the table's name after it."""
        return f"{self.out_text.rstrip('/')}/{self.table_path.name}" if self.out_folder else self.out_text

    @property
    def count_names(self) -> list[str]:
        return [c.count_column for c in self.columns]

    def mechanism_columns(self) -> list[str]:
        """``mechanism`` for one count column, ``mechanism_<count column>`` for several."""
        if len(self.columns) == 1:
            return ["mechanism"]
        return [f"mechanism_{c.count_column}" for c in self.columns]


@dataclass
class Validated:
    """What the first pass found: every row is releasable."""

    rows: int
    kept: list[str]
    sizes: np.ndarray
    rows_per_size: np.ndarray
    input_sha256: str
    csv_quoted: bool
    schema: pa.Schema


def _names(source: TableSource, request: ReleaseRequest) -> list[str]:
    """The kept columns, after checking every named column and the output names."""
    where = f"{request.input}"
    counts = request.count_names
    for name in counts + [c for c in (request.size_column, request.invariant_by) if c]:
        if name not in source.columns:
            raise ValueError(f"{where}: no column {name!r}; the table has {', '.join(map(repr, source.columns))}")
    if len(set(counts)) != len(counts):
        raise ValueError(f"a count column is named twice in --count-column: {','.join(counts)}")
    if request.size_column in counts:
        raise ValueError(f"{request.size_column!r} cannot be both the size column and a count column")
    if request.invariant_by in counts:
        raise ValueError(f"--invariant-by {request.invariant_by!r} is a count column: partitions must be public")
    public = [c for c in (request.size_column, request.invariant_by) if c]
    if request.keep is None:
        beside = [name for name in source.columns if name not in counts and name not in public]
        if beside:
            what = f"the column {beside[0]!r} stands" if len(beside) == 1 else \
                f"the columns {', '.join(map(repr, beside))} stand"
            raise ValueError(f"{where}: {what} beside the count and size columns; nothing is published unless named: "
                             "list the columns to publish with --keep "
                             f"(e.g. --keep {','.join(dict.fromkeys(public + beside))}), or --keep '' for none")
        kept = [name for name in source.columns if name in public]
    else:
        kept = list(request.keep)
        for name in kept:
            if name in counts:
                raise ValueError(f"--keep names the count column {name!r}: a true count is never released")
            if name not in source.columns:
                raise ValueError(f"{where}: --keep names no column {name!r}")
        if len(set(kept)) != len(kept):
            raise ValueError(f"--keep names a column twice: {','.join(kept)}")
        for name in kept:
            why = unchecked(source.schema.field(name))
            if why is not None:
                raise ValueError(f"{where}: --keep names {name!r}, {why}; only flat columns are published, whose "
                                 "every value the release checks")
    added = [name for c in request.columns for name in c.noisy_columns] + request.mechanism_columns()
    for name in added:
        if name in kept or added.count(name) > 1:
            raise ValueError(f"the output would have two columns named {name!r}; rename with --noisy-column "
                             "or leave that column out with --keep")
    return kept


class _Pass:
    """Running state of the first pass: rows seen, group sizes, kept columns that still equal a count column."""

    def __init__(self, request: ReleaseRequest, candidates: set[tuple[str, str]], watched: list[str]) -> None:
        self.request = request
        self.rows = 0
        self.sizes: dict[int, int] = {}
        self.equal = dict.fromkeys(candidates, True)
        self.watches = [AffineWatch(name, len(request.columns)) for name in watched]
        self.quoted = False  # whether a kept text value needs CSV quoting (decided from published values only)

    def batch(self, batch: pa.RecordBatch) -> None:
        first = self.rows + 1
        request = self.request
        if request.size_column:
            sizes = integer_values(batch.column(request.size_column), request.size_column, "group size", first)
            bad = (sizes < 1) | (sizes >= MAX_INPUTS)
            if bad.any():
                row = int(np.argmax(bad))
                why = "is not >= 1" if sizes[row] < 1 else "is above the largest a mechanism serves (n + 1 <= 2^62)"
                raise ValueError(f"row {first + row}, column {request.size_column!r}: group size {sizes[row]} {why}")
            if sizes.max() <= 1 << 24:
                tally = np.bincount(sizes)
                present, counts = np.flatnonzero(tally), tally[tally > 0]
            else:
                present, counts = np.unique(sizes, return_counts=True)
            for n, rows in zip(present.tolist(), counts.tolist(), strict=True):
                self.sizes[n] = self.sizes.get(n, 0) + rows
            high, what = sizes, f" (the group size in {request.size_column!r})"
        else:
            high, what = np.int64(request.n), ""
        values = []
        for name in request.count_names:
            counts = integer_values(batch.column(name), name, "count", first)
            values.append(counts)
            outside = (counts < 0) | (counts > high)
            if outside.any():
                row = int(np.argmax(outside))
                limit = high[row] if isinstance(high, np.ndarray) else high
                raise ValueError(f"row {first + row}, column {name!r}: count {counts[row]} is outside 0..{limit}{what}")
        for kept, count in self.equal:
            if self.equal[(kept, count)]:
                self.equal[(kept, count)] = same_values(batch.column(kept), batch.column(count))
        sizes = high if isinstance(high, np.ndarray) else np.full(batch.num_rows, high, dtype=np.int64)
        for watch in self.watches:
            column = batch.column(watch.name)
            watch.feed(column, values, sizes)
            if not self.quoted and (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
                self.quoted = bool(pc.any(pc.match_substring_regex(column, r'[,"\r\n]')).as_py())
        self.rows += batch.num_rows


def same_values(kept: pa.Array, counts: pa.Array) -> bool:
    """Whether a kept column reads as the counts on every row of the batch: the same text (blanks
    trimmed), or the same numbers (``03``, ``+3``, ``3.0``, a Parquet decimal 3.00 are all 3).

    :class:`~countdp.release.derived.AffineWatch` catches most copies too, but not where the counts
    themselves equal a function of the public sizes on every row (each count its group's size): it then
    calls the copy public, while a neighbour's count, and so the copy, would differ."""
    if kept.null_count or pa.types.is_boolean(kept.type):  # a flag is not a count, even when it reads 0/1
        return False
    expected = pc.cast(counts, pa.float64()) if pa.types.is_integer(counts.type) else None
    try:
        numbers = pc.cast(pc.utf8_trim_whitespace(kept) if pa.types.is_string(kept.type) else kept, pa.float64())
        if expected is None:
            expected = pc.cast(pc.utf8_trim_whitespace(counts), pa.float64())
        return bool(pc.all(pc.equal(numbers, expected)).as_py())
    except pa.ArrowException:  # not numbers: compare the text
        pass
    try:
        left, right = pc.cast(kept, pa.string()), pc.cast(counts, pa.string())
    except pa.ArrowException:
        return False
    return bool(pc.all(pc.equal(pc.utf8_trim_whitespace(left), pc.utf8_trim_whitespace(right))).as_py())


def _copies(source: TableSource, kept: list[str], counts: list[str]) -> set[tuple[str, str]]:
    """The (kept, count) pairs that read the same on the table's first rows: the only ones worth following."""
    if not kept:
        return set()
    head = next(source.batches(list(dict.fromkeys(kept + counts)), head=True), None)
    if head is None:
        return set()
    return {(k, c) for k in kept for c in counts if same_values(head.column(k), head.column(c))}


def validate(request: ReleaseRequest, progress=None) -> Validated:
    """Read every row once and check it; ``ValueError`` (one line, naming the input) at the first problem."""
    source = request.open_source()
    kept = _names(source, request)
    if request.source is None and request.out is not None and not request.out_folder and \
            table_format(request.out) != source.format:
        raise ValueError(f"--out {request.out_text}: a {source.format.upper()} table is released as "
                         f"{source.format.upper()}; name the output with a matching suffix")
    if request.source is not None and request.out is not None and not request.out_folder and \
            request.out.suffix.lower() not in (".csv", ".parquet", ".pq"):
        raise ValueError(f"--out {request.out_text}: name a .csv or .parquet table (or, ending in '/', a folder)")
    seen: dict = {}
    try:
        watched = [name for name in kept if name != request.size_column]
        state = _Pass(request, _copies(source, kept, request.count_names), watched)
        followed = [k for k, _ in state.equal] + watched
        size = [request.size_column] if request.size_column else []
        for batch in source.batches(list(dict.fromkeys(request.count_names + size + followed)), seen):
            state.batch(batch)
            if progress is not None:
                progress(batch.num_rows)
    except ValueError as exc:
        text = str(exc)
        raise ValueError(text if text.startswith(str(request.input)) else f"{request.input}: {text}") from None
    if state.rows == 0:
        raise ValueError(f"{request.input}: the table has no rows")
    for (kept_name, count), equal in state.equal.items():
        if equal:
            raise ValueError(f"{request.input}: column {kept_name!r} equals the count column {count!r} on every row, "
                             "so keeping it would publish the true counts; leave it out with --keep")
    for watch in state.watches:
        formula = watch.derived()
        if formula is not None:
            raise ValueError(f"{request.input}: column {watch.name!r} is an affine function of the counts on every row "
                             f"({formula}), so keeping it would publish the true counts; leave it out of --keep")
    if request.size_column:
        sizes = np.array(sorted(state.sizes), dtype=np.int64)
        rows_per_size = np.array([state.sizes[n] for n in sizes.tolist()], dtype=np.int64)
    else:
        sizes, rows_per_size = np.array([request.n]), np.array([state.rows])
    return Validated(state.rows, kept, sizes, rows_per_size, seen["sha256"], state.quoted, source.schema)


__all__ = ["ColumnPrivacy", "ReleaseRequest", "Validated", "validate"]
