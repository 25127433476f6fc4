"""A table release from end to end: check every row, find the mechanisms, debit the budget, then
draw, write and commit, all or nothing.

1. :func:`~countdp.release.request.validate` reads every row once (nothing drawn yet);
2. each count column and group size gets its certified mechanism (a mechanism file, or the
   mechanism cache, which designs a size once and then loads it);
3. with ``--budget``, the ledger is debited (under its lock) before any noise is drawn;
4. the table is read again batch by batch; each batch's kept columns are copied, its noisy
   counts drawn, and the batch is written to an unnamed file, hashed as it is written;
5. if the input's SHA-256 matches the first pass, the sidecar is written and both files are
   committed together (:class:`~countdp.release.atomic.AtomicPair`); the ledger entry is marked
   committed.

Memory stays bounded by the batch size whatever the number of rows.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa

from countdp.release.atomic import AtomicPair
from countdp.release.draws import ColumnSampler, Randomness
from countdp.release.provenance import column_epsilon, sidecar_record
from countdp.release.request import ReleaseRequest, Validated, validate
from countdp.release.tables import TableSink, TableSource, integer_values

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

    @cached_property
    def labels(self) -> list[pa.Array]:
        """Per count column, the mechanism column's value for each size index (``EM n=12``; alpha is in
        the sidecar), built once for the release."""
        return [pa.array([f"{d.mechanism} n={d.n}" for d in designs], type=pa.string()) for designs in self.mechanisms]

    @cached_property
    def samplers(self) -> list[ColumnSampler]:
        """Each count column's sampler over its mechanisms, built once for the release."""
        return [ColumnSampler([design.released for design in designs]) for designs in self.mechanisms]

    def size_index(self, sizes: np.ndarray) -> np.ndarray:
        """Each row's index into the validated group sizes (a lookup table while the sizes are small)."""
        known = self.validated.sizes
        if known[-1] <= LOOKUP_LIMIT:
            if self._lookup is None:
                self._lookup = np.zeros(known[-1] + 1, dtype=np.int32)
                self._lookup[known] = np.arange(len(known), dtype=np.int32)
            return self._lookup[sizes]
        return np.searchsorted(known, sizes).astype(np.int32)


def check_paths(request: ReleaseRequest) -> None:
    """Refuse an output that is the input (also through a link), sits in no folder, or already exists."""
    out, sidecar = request.out, sidecar_path(request.out)
    for path in (out, sidecar):
        if path.exists() and request.input.exists() and os.path.samefile(path, request.input):
            raise ValueError(f"--out {request.out} is the input table {request.input}; choose another name")
        if os.path.realpath(path) == os.path.realpath(request.input):
            raise ValueError(f"--out {request.out} is the input table {request.input}; choose another name")
    if not out.parent.is_dir():
        raise ValueError(f"--out {request.out}: no folder {out.parent}")
    if not request.overwrite:
        for path in (out, sidecar):
            if path.exists() or path.is_symlink():
                raise ValueError(f"{path} already exists; remove it, choose another --out, or pass --overwrite")


def prepare(request: ReleaseRequest, mechanism_for, progress=None) -> Prepared:
    """Validate every row, then get each column's mechanism for each group size (nothing drawn)."""
    check_paths(request)
    validated = validate(request, progress)
    mechanisms = [[mechanism_for(k, int(n)) for n in validated.sizes.tolist()] for k in range(len(request.columns))]
    epsilon = sum((column_epsilon(c.alpha, c.epsilon_requested) for c in request.columns), start=0)
    return Prepared(request, validated, mechanisms, epsilon)


def _output_schema(prepared: Prepared, schema: pa.Schema) -> pa.Schema:
    request = prepared.request
    fields = [schema.field(name) for name in prepared.validated.kept]
    fields += [pa.field(c.noisy_column, pa.int64(), nullable=False) for c in request.columns]
    fields += [pa.field(name, pa.dictionary(pa.int32(), pa.string()), nullable=False)
               for name in request.mechanism_columns()]
    return pa.schema(fields)


def _released_batch(prepared: Prepared, batch: pa.RecordBatch, randomness: Randomness, schema: pa.Schema,
                    counts_of) -> pa.RecordBatch:
    request = prepared.request
    size_index = None
    if request.size_column:
        size_index = prepared.size_index(counts_of(batch, request.size_column, "group size"))
    arrays = [batch.column(name) for name in prepared.validated.kept]
    labels = []
    index = pa.array(np.zeros(batch.num_rows, dtype=np.int32) if size_index is None else size_index, pa.int32())
    for k, column in enumerate(request.columns):
        counts = counts_of(batch, column.count_column, "count")
        words = randomness.words(k, batch.num_rows)
        arrays.append(pa.array(prepared.samplers[k].sample(counts, size_index, words), type=pa.int64()))
        labels.append(pa.DictionaryArray.from_arrays(index, prepared.labels[k]))
    return pa.RecordBatch.from_arrays(arrays + labels, schema=schema)


def write_release(prepared: Prepared, randomness: Randomness, version: str, debit: dict | None = None,
                  progress=None) -> dict:
    """Pass two: draw, write, and commit the table and its sidecar together; returns the sidecar record."""
    request, validated = prepared.request, prepared.validated
    source = TableSource(request.input)
    wanted = list(dict.fromkeys(validated.kept + request.count_names +
                                ([request.size_column] if request.size_column else [])))
    schema = _output_schema(prepared, validated.schema)
    row = [1]

    def counts_of(batch, name, what):
        return integer_values(batch.column(name), name, what, row[0])

    with AtomicPair(request.out, sidecar_path(request.out), replace=request.overwrite) as pair, \
            ThreadPoolExecutor(1) as writer:
        sink = TableSink(pair.table.stream, schema, source.format, validated.csv_quoted)
        seen: dict = {}
        written = None  # one batch is written (pyarrow, without the GIL) while the next is drawn
        for batch in source.batches(wanted, seen):
            released = _released_batch(prepared, batch, randomness, schema, counts_of)
            if written is not None:
                written.result()
            written = writer.submit(sink.write, released)
            row[0] += batch.num_rows
            if progress is not None:
                progress(batch.num_rows)
        if written is not None:
            written.result()
        output_sha256 = sink.close()
        if seen.get("sha256") != validated.input_sha256 or row[0] - 1 != validated.rows:
            raise ValueError(f"{request.input}: the table changed while it was being released; nothing was written")
        record = sidecar_record(request, validated, prepared.mechanisms, randomness, output_sha256, schema.names,
                                pair.method, debit, version)
        pair.sidecar.stream.write((json.dumps(record, indent=1) + "\n").encode())
        pair.commit()
    return record


__all__ = ["Prepared", "check_paths", "prepare", "sidecar_path", "write_release"]
