"""Tables that are not files: what a release reads from memory or from a query, and writes to memory.

The release engine reads its input twice (a first pass that checks every row, a second that
draws and writes) and compares the two passes' SHA-256, so that a table changing under the
release is refused.  A file is :class:`~countdp.release.tables.TableSource`; anything else is an
:class:`ArrowSource`: a stream of Arrow record batches that can be opened once per pass (an
in-memory Arrow table, or a query that a DuckDB or Spark connection runs again each time, so the
query's result is never held whole nor written anywhere).  Its digest is that of the batches'
Arrow IPC messages, every column of every row, in the order read.

:class:`MemorySink` is where a release without ``out`` writes: the released batches, kept in
memory and hashed the same way, so the sidecar's ``output.sha256`` names the table returned.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator

import pyarrow as pa

from countdp.release.tables import HEAD_ROWS

OUTPUT_FORMATS = ("csv", "parquet")


def _checked_names(label: str, schema: pa.Schema) -> list[str]:
    """The schema's column names, refusing (one line naming ``label``) an empty or repeated name."""
    columns = list(schema.names)
    for k, name in enumerate(columns):
        if name == "":
            raise ValueError(f"{label}: column {k + 1} has no name")
        if columns.index(name) != k:
            raise ValueError(f"{label}: the column name {name!r} appears more than once")
    return columns


class ArrowSource:
    """A table read as Arrow record batches from ``open_batches()``, which starts a new pass each call.

    ``label`` names the table in every message and in the sidecar (``pandas DataFrame``, the records'
    path); ``description`` is what the sidecar records about it beside the number of rows;
    ``close()`` is called once the release is done with it (a query's connection, its spill files).
    """

    is_file = False

    def __init__(self, label: str, schema: pa.Schema, open_batches: Callable[[], Iterable[pa.RecordBatch]],
                 description: dict | None = None, close: Callable[[], None] | None = None) -> None:
        self.label = label
        self.schema = schema
        self.columns = _checked_names(label, schema)
        self.open_batches = open_batches
        self.description = {"kind": label} if description is None else description
        self._close = close

    @classmethod
    def of_table(cls, table: pa.Table, label: str, rows_per_batch: int = 1 << 16) -> ArrowSource:
        """An in-memory Arrow table, read in batches of ``rows_per_batch`` rows (no copy)."""
        return cls(label, table.schema, lambda: table.to_batches(max_chunksize=rows_per_batch))

    def batches(self, columns: list[str], seen: dict | None = None, head: bool = False) -> Iterator[pa.RecordBatch]:
        """The table's ``columns`` batch by batch (only a first small batch if ``head``); at the end of a
        whole pass, ``seen["sha256"]`` is the digest of every column of every row read."""
        digest = hashlib.sha256()
        try:
            for batch in self.open_batches():
                if batch.num_rows == 0:
                    continue
                if head:
                    yield batch.select(columns).slice(0, HEAD_ROWS)
                    return
                digest.update(batch.serialize())
                yield batch.select(columns)
        except pa.ArrowException as exc:
            raise ValueError(f"{self.label}: {str(exc).strip().splitlines()[0]}") from None
        if seen is not None and not head:
            seen["sha256"] = digest.hexdigest()

    def close(self) -> None:
        if self._close is not None:
            close, self._close = self._close, None
            close()


class MemorySink:
    """Released batches kept in memory (``table()``), hashed as :class:`ArrowSource` hashes its input."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.kept: list[pa.RecordBatch] = []
        self.digest = hashlib.sha256()

    def write(self, batch: pa.RecordBatch) -> None:
        self.digest.update(batch.serialize())
        self.kept.append(batch)

    def close(self) -> str:
        return self.digest.hexdigest()

    def table(self) -> pa.Table:
        return pa.Table.from_batches(self.kept, schema=self.schema)


class Tee:
    """A file sink whose batches are also kept in memory (a release written to ``out`` and returned)."""

    def __init__(self, sink, schema: pa.Schema) -> None:
        self.sink = sink
        self.memory = MemorySink(schema)

    def write(self, batch: pa.RecordBatch) -> None:
        self.memory.kept.append(batch)
        self.sink.write(batch)

    def close(self) -> str:
        return self.sink.close()

    def table(self) -> pa.Table:
        return self.memory.table()


class _Discard:
    """A sidecar stream that keeps nothing: a release in memory returns its sidecar record instead."""

    def write(self, data) -> int:
        return len(data)


class _NoFile:
    stream = _Discard()


class MemoryCommit:
    """The committer of a release kept in memory: nothing is named, so the commit only marks it done."""

    method = "in memory: the noisy table and its sidecar record were returned, nothing was written"

    def __init__(self) -> None:
        self.table = self.sidecar = _NoFile()
        self.committed = False

    def __enter__(self) -> MemoryCommit:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def commit(self, hold=None) -> None:
        self.committed = True


__all__ = ["OUTPUT_FORMATS", "ArrowSource", "MemoryCommit", "MemorySink", "Tee"]
