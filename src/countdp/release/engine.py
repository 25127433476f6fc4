"""A table release from end to end: check every row, find the mechanisms, debit the budget, then
draw, write and commit, all or nothing.

1. :func:`~countdp.release.request.validate` reads every row once (nothing drawn yet);
2. each count column and group size gets its certified mechanism (a mechanism file, or the
   mechanism cache, which designs a size once and then loads it);
3. with ``--budget``, the ledger is debited (under its lock) before any noise is drawn;
4. the table is read again batch by batch; each batch's kept columns are copied, its noisy
   counts drawn, and the batch is written to an unnamed file, hashed as it is written;
5. if the input's SHA-256 matches the first pass (a check made here and never published: the
   digest of a confidential table would let anyone who knows all its rows but one recover the
   last), the sidecar is written and both files are committed together
   (:class:`~countdp.release.atomic.AtomicPair`, or for ``--out DIR/`` a folder named by one rename,
   :class:`~countdp.release.atomic_folder.AtomicFolder`); the ledger entry is marked committed.

Memory stays bounded by the batch size whatever the number of rows.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa

from countdp.release.atomic import AtomicPair
from countdp.release.atomic_folder import AtomicFolder, existing_problem, is_mount_point
from countdp.release.draws import ColumnSampler, Randomness
from countdp.release.invariant import ColumnInvariant, choose_alpha, column_invariant, conditioned_draw, read_columns
from countdp.release.levels import LevelsSampler
from countdp.release.partials import MARKER, SIDECAR_SUFFIX, longest_name, partial_name
from countdp.release.provenance import column_epsilon, sidecar_record
from countdp.release.request import ReleaseRequest, Validated, validate
from countdp.release.signals import HeldSignals
from countdp.release.sources import MemoryCommit, MemorySink, Tee
from countdp.release.tables import TableSink, integer_values
from countdp.validation import check_matrices_fit
from countdp.values.alpha import alpha_text

HELD_BYTES_PER_ENTRY = 80
"""Memory per entry of a group size's matrix mechanism while a release holds it: the loaded design,
its integer weights and cumulative weights, and the sampler's share (the measurement is in
docs/release.md)."""

LOOKUP_LIMIT = 1 << 24
"""Largest group size for which rows find their mechanism by a lookup table rather than a search."""


def sidecar_path(out: Path) -> Path:
    """Where a release records its provenance: ``noisy.csv`` -> ``noisy.csv.release.json``."""
    return out.with_name(out.name + ".release.json")


@dataclass
class Prepared:
    """A validated request with its mechanisms: ``mechanisms[k][s]`` for count column k and size index s."""

    request: ReleaseRequest
    validated: Validated
    mechanisms: list[list]
    epsilon: object
    _lookup: np.ndarray | None = None
    invariants: list[ColumnInvariant] | None = None
    conditioned: list[np.ndarray] | None = None
    counts: dict[str, np.ndarray] | None = None

    @cached_property
    def labels(self) -> list[pa.Array]:
        """Per count column, the mechanism column's value for each size index (``EM n=12``; alpha is in
        the sidecar), built once for the release."""
        return [pa.array([f"{d.mechanism} n={d.n}" for d in designs], type=pa.string()) for designs in self.mechanisms]

    @cached_property
    def samplers(self) -> list[ColumnSampler | LevelsSampler]:
        """Each count column's sampler over its mechanisms (or level chains), built once for the release."""
        sizes = self.validated.sizes
        return [LevelsSampler(designs) if column.levels else ColumnSampler([d.released for d in designs], sizes)
                for column, designs in zip(self.request.columns, self.mechanisms, strict=True)]

    @cached_property
    def streams(self) -> list[list[int]]:
        """Per count column, the random streams of its noisy columns (one per level): see :func:`streams`."""
        return streams(self.request)

    def size_index(self, sizes: np.ndarray) -> np.ndarray:
        """Each row's index into the validated group sizes (a lookup table while the sizes are small)."""
        known = self.validated.sizes
        if known[-1] <= LOOKUP_LIMIT:
            if self._lookup is None:
                self._lookup = np.zeros(known[-1] + 1, dtype=np.int32)
                self._lookup[known] = np.arange(len(known), dtype=np.int32)
            return self._lookup[sizes]
        return np.searchsorted(known, sizes).astype(np.int32)


def streams(request: ReleaseRequest) -> list[list[int]]:
    """Per count column, the indices of its random streams: one per noisy column, numbered in output order."""
    out, start = [], 0
    for column in request.columns:
        out.append(list(range(start, start + len(column.noisy_columns))))
        start += len(column.noisy_columns)
    return out


def check_out_name(request: ReleaseRequest) -> None:
    """Refuse an ``--out`` no release can write, before anything else happens (one line naming it as typed).

    OUT must have a name (not ``.``, ``..``, ``/`` or empty), not one holding ``.countdp-partial-``
    (the hidden partials releases write and remove: :mod:`countdp.release.partials`), in an existing
    folder, and short enough that every name the release writes for it (its sidecar, its partial
    file or folder, ``NAME`` + 50 to 63 bytes) fits the folder's ``NAME_MAX``.
    """
    out, shown = request.out, request.out_text
    if out.name in ("", ".", ".."):
        what = "the release folder to create, e.g. --out results/noisy/" if request.out_folder else \
            "the table to write, e.g. --out results/noisy.csv (or, ending in '/', a folder to create)"
        raise ValueError(f"--out {shown}: name {what}")
    if MARKER in out.name:
        raise ValueError(f"--out {shown}: a name holding '{MARKER}' is a hidden partial, which countdp writes and "
                         "removes; choose another name")
    if not out.parent.is_dir():
        raise ValueError(f"--out {shown}: no folder {out.parent}")
    names = [out.name] if request.out_folder else [out.name, out.name + SIDECAR_SUFFIX]
    own = len(os.fsencode(out.name))
    longest = max(len(os.fsencode(partial_name(name))) for name in names)
    limit = longest_name(out.parent)
    if longest > limit:
        raise ValueError(f"--out {shown}: the name is {own} bytes, and the release writes names {longest - own} "
                         f"bytes longer beside it, past the {limit} bytes this folder takes for a name; choose a "
                         f"name of at most {limit - longest + own} bytes")


def check_paths(request: ReleaseRequest) -> None:
    """Refuse an output :func:`check_out_name` refuses, that is the input (also through a link), or
    already exists; with ``--overwrite``, a mount point (which cannot be removed or renamed), or for
    a release folder anything but a countdp release folder (:func:`~countdp.release.atomic_folder.existing_problem`)."""
    if request.out is None:
        return
    check_out_name(request)
    if request.out_folder:
        _check_folder(request)
        return
    if request.source is not None:
        _check_exists(request)
        return
    out, sidecar, shown = request.out, sidecar_path(request.out), request.out_text
    for path in (out, sidecar):
        if path.exists() and request.input.exists() and os.path.samefile(path, request.input):
            raise ValueError(f"--out {shown} is the input table {request.input}; choose another name")
        if os.path.realpath(path) == os.path.realpath(request.input):
            raise ValueError(f"--out {shown} is the input table {request.input}; choose another name")
    _check_exists(request)


def _check_exists(request: ReleaseRequest) -> None:
    """Refuse a table or sidecar already at ``out`` (without ``--overwrite``), or a mount point there (with it)."""
    shown = request.out_text
    for path, typed in ((request.out, shown), (sidecar_path(request.out), shown + SIDECAR_SUFFIX)):
        if not request.overwrite and (path.exists() or path.is_symlink()):
            raise ValueError(f"{typed} already exists; remove it, choose another --out, or pass --overwrite")
        if request.overwrite and is_mount_point(path):
            raise ValueError(f"{typed} is a mount point, which --overwrite cannot remove; choose another --out")


def _check_folder(request: ReleaseRequest) -> None:
    """:func:`check_paths` for a release folder: a new name in an existing folder, not holding the input;
    with ``--overwrite`` an existing OUT must be a countdp release folder (never a user's folder)."""
    out, shown = request.out, request.out_text
    inside = os.path.realpath(out) + os.sep
    if request.source is None and os.path.realpath(request.input).startswith(inside):
        raise ValueError(f"--out {shown} holds the input table {request.input}; choose another name")
    problem = existing_problem(out, request.overwrite, shown)
    if problem is not None:
        raise ValueError(problem)


def prepare(request: ReleaseRequest, mechanism_for, progress=None, dry_run: bool = False) -> Prepared:
    """Validate every row, then get each column's mechanism for each group size (nothing drawn).

    With an invariant, the table's counts are read once more and every partition's guarantee is
    computed on the weights that will be sampled; the column then spends that guarantee's epsilon.
    A dry run publishes no total, so its invariant guarantee is the bound for every total.
    """
    check_paths(request)
    own = getattr(request.source, "validate", None)  # a source that checks its rows where they are (Spark's executors)
    validated = own(request) if own is not None else validate(request, progress)
    check_held_matrices(request, validated.sizes, mechanism_for)
    if request.invariant:
        return _prepare_invariant(request, validated, mechanism_for, dry_run)
    many = getattr(mechanism_for, "many", None)
    mechanisms = [many(k, validated.sizes) if many is not None else
                  [mechanism_for(k, int(n)) for n in validated.sizes.tolist()] for k in range(len(request.columns))]
    epsilon = sum((column_epsilon(c.alpha, c.epsilon_requested) for c in request.columns), start=0)
    return Prepared(request, validated, mechanisms, epsilon)


def check_held_matrices(request: ReleaseRequest, sizes: np.ndarray, mechanism_for) -> None:
    """Refuse, before any design, a release whose matrix mechanisms would not fit in memory at once.

    Every noisy column (each level of a multi-level one) holds a matrix per group size while the
    table is streamed, except the sizes ``mechanism_for.matrix_sizes(k, sizes)`` says count column
    ``k`` holds as structure (from the cache); a conditioned release samples matrices for every size.
    """
    held = getattr(mechanism_for, "matrix_sizes", None)
    matrices = np.concatenate([sizes if held is None or request.invariant else held(k, sizes)
                               for k in range(len(request.columns))])
    copies = max(1, len(request.columns[0].levels or ()))
    hint = "" if request.mechanism in ("GM", "EM", "UM") else \
        " (GM, EM and UM are held as structure at any size, WM and WH under L0 at large sizes)"
    what = f"{request.input}: --mechanism {request.mechanism}{hint}"
    check_matrices_fit(matrices, copies, HELD_BYTES_PER_ENTRY, what)


def _prepare_invariant(request: ReleaseRequest, validated: Validated, mechanism_for, dry_run: bool) -> Prepared:
    try:
        columns, sizes, labels = read_columns(request.open_source(), request.count_names, request.size_column,
                                              request.invariant_by)
    except ValueError as exc:
        raise ValueError(f"{request.input}: {exc}") from None
    if request.target_alpha is not None:
        alpha = choose_alpha(sizes if sizes is not None else np.full(validated.rows, request.n), labels,
                             request.mechanism, request.target_alpha)
        request = replace(request, columns=tuple(replace(c, alpha=alpha, epsilon_requested=None)
                                                 for c in request.columns))
    mechanisms = [[mechanism_for(k, int(n), request.columns) if request.target_alpha is not None else
                   mechanism_for(k, int(n)) for n in validated.sizes.tolist()] for k in range(len(request.columns))]
    # a conditioned release reads whole columns of weights: structural sizes become their matrices
    mechanisms = [[d.as_matrix() if hasattr(d, "as_matrix") else d for d in designs] for designs in mechanisms]
    prepared = Prepared(request, validated, mechanisms, 0)
    index = None if sizes is None else prepared.size_index(sizes)
    try:
        prepared.invariants = [column_invariant([d.released for d in designs], index, columns[c.count_column], labels,
                                                request.invariant_by, dry_run)
                               for c, designs in zip(request.columns, mechanisms, strict=True)]
    except ValueError as exc:
        raise ValueError(f"{request.input}: {exc}") from None
    if request.target_alpha is not None:
        for column, invariant in zip(request.columns, prepared.invariants, strict=True):
            if invariant.worst.alpha < request.target_alpha:
                raise ValueError(f"{column.count_column}: the conditioned release is only "
                                 f"{alpha_text(invariant.worst.alpha)}-DP on the weights sampled, short of "
                                 f"--target-alpha {alpha_text(request.target_alpha)}")
    prepared.epsilon = sum((inv.worst.epsilon_bound for inv in prepared.invariants), start=0)
    prepared.counts = columns
    return prepared


def _published_field(field: pa.Field) -> pa.Field:
    """A kept column as published: its values only, without the input's field metadata or a
    dictionary (whose unused entries would publish values no row holds)."""
    field = field.remove_metadata()
    return field.with_type(field.type.value_type) if pa.types.is_dictionary(field.type) else field


def _published_values(column: pa.Array) -> pa.Array:
    return column.dictionary_decode() if pa.types.is_dictionary(column.type) else column


def output_schema(prepared: Prepared, schema: pa.Schema) -> pa.Schema:
    request = prepared.request
    fields = [_published_field(schema.field(name)) for name in prepared.validated.kept]
    fields += [pa.field(name, pa.int64(), nullable=False) for c in request.columns for name in c.noisy_columns]
    fields += [pa.field(name, pa.dictionary(pa.int32(), pa.string()), nullable=False)
               for name in request.mechanism_columns()]
    return pa.schema(fields)


def draw_conditioned(prepared: Prepared, randomness: Randomness) -> None:
    """Every invariant column's noisy counts, drawn before the table is streamed (a partition needs all its rows)."""
    columns = zip(prepared.request.columns, prepared.invariants, prepared.streams, strict=True)
    prepared.conditioned = [conditioned_draw(prepared.counts[c.count_column], invariant,
                                             randomness.generator(streams[0])) for c, invariant, streams in columns]


def released_batch(prepared: Prepared, batch: pa.RecordBatch, randomness: Randomness, schema: pa.Schema,
                   counts_of, first: int) -> pa.RecordBatch:
    """One batch released: its kept columns, its noisy counts (``first``: the batch's first row, from 0, in
    the stream its words are drawn from) and its mechanism columns."""
    request = prepared.request
    size_index = None
    if request.size_column:
        size_index = prepared.size_index(counts_of(batch, request.size_column, "group size"))
    arrays = [_published_values(batch.column(name)) for name in prepared.validated.kept]
    labels = []
    index = pa.array(np.zeros(batch.num_rows, dtype=np.int32) if size_index is None else size_index, pa.int32())
    for k, column in enumerate(request.columns):
        counts = counts_of(batch, column.count_column, "count")
        if prepared.conditioned is not None:
            arrays.append(pa.array(prepared.conditioned[k][first:first + batch.num_rows], type=pa.int64()))
            labels.append(pa.DictionaryArray.from_arrays(index, prepared.labels[k]))
            continue
        words = [randomness.words(stream, batch.num_rows) for stream in prepared.streams[k]]
        if column.levels:
            noisy = prepared.samplers[k].sample(
                counts, size_index, words,
                lambda level, rows, s=prepared.streams[k]: randomness.second_words(s[level], first + rows))
        else:
            stream = prepared.streams[k][0]
            noisy = [prepared.samplers[k].sample(counts, size_index, words[0],
                                                 lambda rows, s=stream: randomness.second_words(s, first + rows))]
        arrays += [pa.array(values, type=pa.int64()) for values in noisy]
        labels.append(pa.DictionaryArray.from_arrays(index, prepared.labels[k]))
    return pa.RecordBatch.from_arrays(arrays + labels, schema=schema)


def _committer(request: ReleaseRequest) -> AtomicPair | AtomicFolder | MemoryCommit:
    """Where the release is written and how it is committed: a folder named by one rename (``--out DIR/``),
    a table and its sidecar named side by side, or nowhere (a release kept in memory)."""
    if request.out is None:
        return MemoryCommit()
    if request.out_folder:
        return AtomicFolder(request.out, request.table_path.name, replace=request.overwrite, shown=request.out_text)
    return AtomicPair(request.out, sidecar_path(request.out), replace=request.overwrite)


def _sink(request: ReleaseRequest, pair, schema: pa.Schema, quoted: bool, keep: bool):
    """Where the released batches go: the committer's table file (and memory too, if ``keep``), or memory alone."""
    if request.out is None:
        return MemorySink(schema)
    sink = TableSink(pair.table.stream, schema, request.output_format, quoted)
    return Tee(sink, schema) if keep else sink


def write_release(prepared: Prepared, randomness: Randomness, version: str, debit: dict | None = None,
                  progress=None, hold=None, returned: list | None = None) -> dict:
    """Pass two: draw, write, and commit the table and its sidecar together; returns the sidecar record.

    ``hold()``, if given, is called just before the commit's first name changes (:class:`HeldSignals`).
    Once the release is named, nothing raised afterwards reaches the caller: the release is published.
    ``returned``: a list that receives the released table (an Arrow table), for a release that returns
    it (always, with ``out=None``: nothing is written).
    """
    request, validated = prepared.request, prepared.validated
    source = request.open_source()
    wanted = list(dict.fromkeys(validated.kept + request.count_names +
                                ([request.size_column] if request.size_column else [])))
    schema = output_schema(prepared, validated.schema)
    row = [1]

    def counts_of(batch, name, what):
        return integer_values(batch.column(name), name, what, row[0])

    with _committer(request) as pair, ThreadPoolExecutor(1) as writer:
        sink = _sink(request, pair, schema, validated.csv_quoted, returned is not None)
        seen: dict = {}
        written = None  # one batch is written (pyarrow, without the GIL) while the next is drawn
        if prepared.invariants is not None:
            draw_conditioned(prepared, randomness)
        for batch in source.batches(wanted, seen):
            released = released_batch(prepared, batch, randomness, schema, counts_of, row[0] - 1)
            if written is not None:
                written.result()
            written = writer.submit(sink.write, released)
            row[0] += batch.num_rows
            if progress is not None:
                progress(batch.num_rows)
        if written is not None:
            written.result()
        output_sha256 = sink.close()
        if returned is not None:
            returned.append(sink.table())
        if seen.get("sha256") != validated.input_sha256 or row[0] - 1 != validated.rows:
            raise ValueError(f"{request.input}: the table changed while it was being released; nothing was written")
        record = sidecar_record(request, validated, prepared.mechanisms, randomness, output_sha256, schema.names,
                                pair.method, debit, version, prepared.invariants)
        commit_with_sidecar(pair, record, hold)
    return record


def commit_with_sidecar(pair, record: dict, hold) -> None:
    """Write the sidecar ``record`` last into the uncommitted ``pair`` (an atomic file pair or
    folder) and commit it.  Once the release is named it is published: what fails after (flushing
    the folder, removing the release it replaced) or arrives after (any exception) cannot undo
    that, and raising would not match the filesystem."""
    pair.sidecar.stream.write((json.dumps(record, indent=1) + "\n").encode())
    try:
        pair.commit(hold)
    except BaseException:
        if not pair.committed:
            raise


__all__ = ["HeldSignals", "Prepared", "check_out_name", "check_paths", "commit_with_sidecar", "draw_conditioned",
           "output_schema", "prepare", "released_batch", "sidecar_path", "streams", "write_release"]
