"""Streaming a curator's table: CSV or Parquet in record batches, hashed as it is read and written.

Nothing here holds a whole table.  :class:`TableSource` reads a CSV (every column as text, so
kept columns are written back verbatim) or a Parquet file (types kept) batch by batch with
pyarrow, and computes the file's SHA-256 from the bytes it reads.  :class:`TableSink` writes
batches as CSV or Parquet into an open binary stream and hashes the bytes it writes.

:func:`integer_values` turns a batch's column into int64 counts, or raises ``ValueError``
naming the first bad row (counted from 1 after the header, across batches) and the column.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

PARQUET_SUFFIXES = (".parquet", ".pq")
CSV_BLOCK_BYTES = 1 << 20
"""Bytes of CSV text per batch.  pyarrow parses several blocks ahead on its threads, so the
reader's memory is a multiple of this: 1 MiB keeps a pass near 150 MB at full parsing speed."""
PARQUET_BATCH_ROWS = 1 << 16
"""Rows per Parquet batch."""
HEAD_ROWS = 1 << 12
"""Rows of the first look at a table (which kept columns could be a copy of a count column)."""
_HASH_CHUNK = 1 << 22
_INTEGER = r"^\s*[+-]?[0-9]{1,18}\s*$"
_STRUCTURAL = re.compile(r'[,"\r\n]')


def table_format(path: Path) -> str:
    """``"parquet"`` for a ``.parquet``/``.pq`` name, else ``"csv"``."""
    return "parquet" if path.suffix.lower() in PARQUET_SUFFIXES else "csv"


class _HashingReader:
    """A binary file read front to back, every byte read fed to SHA-256."""

    def __init__(self, path: Path) -> None:
        self.file = open(path, "rb")  # noqa: SIM115 - closed by the reader's owner
        self.digest = hashlib.sha256()
        self.quoted = False
        self.past_header = False
        self.closed = False

    def read(self, size: int = -1) -> bytes:
        data = self.file.read(size)
        self.digest.update(data)
        if not self.quoted:
            start = 0
            if not self.past_header:  # the header's quoting is decided apart, from the column names
                start = data.find(b"\n") + 1
                self.past_header = start > 0
            self.quoted = data.find(b'"', start if self.past_header else len(data)) >= 0
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.file.close()
        self.closed = True


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class TableSource:
    """A CSV or Parquet table read in batches; ``columns`` are its column names, in order.

    ``ValueError`` names ``path`` (the path the user gave) for an unreadable table, duplicated
    or empty column names.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.format = table_format(self.path)
        self.kind = "CSV" if self.format == "csv" else "Parquet"
        if not self.path.is_file():
            raise ValueError(f"{self.path}: no such file")
        try:
            self.schema = self._schema()
        except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
            raise ValueError(f"{self.path}: not a readable {self.kind} table ({_first_line(exc)})") from None
        self.columns = list(self.schema.names)
        for k, name in enumerate(self.columns):
            if name == "":
                raise ValueError(f"{self.path}: column {k + 1} has no name")
            if self.columns.index(name) != k:
                raise ValueError(f"{self.path}: the column name {name!r} appears more than once")

    def _schema(self) -> pa.Schema:
        if self.format == "parquet":
            return pq.ParquetFile(self.path).schema_arrow
        with pacsv.open_csv(self.path, read_options=pacsv.ReadOptions(block_size=1 << 16),
                            parse_options=pacsv.ParseOptions(newlines_in_values=True)) as reader:
            return pa.schema([pa.field(name, pa.string()) for name in reader.schema.names])

    def batches(self, columns: list[str], seen: dict | None = None, head: bool = False) -> Iterator[pa.RecordBatch]:
        """The table's ``columns`` batch by batch (only a first small batch if ``head``).

        At the end of a whole pass, ``seen["sha256"]`` is the file's SHA-256 and, for a CSV,
        ``seen["quoted"]`` says whether the file holds a quote character at all.
        """
        try:
            if self.format == "parquet":
                yield from self._parquet(columns, head)
                if seen is not None and not head:
                    seen["sha256"] = file_sha256(self.path)
            else:
                yield from self._csv(columns, seen, head)
        except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
            raise ValueError(f"{self.path}: not a readable {self.kind} table ({_first_line(exc)})") from None

    def _parquet(self, columns: list[str], head: bool) -> Iterator[pa.RecordBatch]:
        # pre_buffer (pyarrow's default) keeps what it has fetched for the file's lifetime: 700 MB
        # for a 100M-row table; reading through a 1 MiB buffer keeps memory flat at any length
        source = pq.ParquetFile(self.path, pre_buffer=False, buffer_size=1 << 20)
        batches = source.iter_batches(batch_size=HEAD_ROWS if head else PARQUET_BATCH_ROWS, columns=columns)
        for batch in batches:
            yield batch
            if head:
                return

    def _csv(self, columns: list[str], seen: dict | None, head: bool) -> Iterator[pa.RecordBatch]:
        stream = _HashingReader(self.path)
        try:
            options = pacsv.ConvertOptions(column_types={name: pa.string() for name in self.columns},
                                           include_columns=columns, strings_can_be_null=False,
                                           quoted_strings_can_be_null=False)
            block = HEAD_ROWS * 64 if head else CSV_BLOCK_BYTES
            with pacsv.open_csv(stream, read_options=pacsv.ReadOptions(block_size=block),
                                parse_options=pacsv.ParseOptions(newlines_in_values=True),
                                convert_options=options) as reader:
                for batch in reader:
                    yield batch
                    if head:
                        return
            if seen is not None:
                seen["sha256"], seen["quoted"] = stream.digest.hexdigest(), stream.quoted
        finally:
            stream.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def integer_values(column: pa.Array | pa.ChunkedArray, name: str, what: str, first_row: int) -> np.ndarray:
    """The int64 values of a batch's column, or ``ValueError`` naming the first bad row and the column.

    Text must be an optionally signed decimal integer of at most 18 digits (blanks around it
    allowed); Parquet integers are taken as they are; nulls and anything else are refused.
    ``first_row`` is the table row (from 1) of the batch's first row.
    """
    if pa.types.is_integer(column.type):
        if column.null_count:
            row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
            raise ValueError(f"row {first_row + row}, column {name!r}: a missing value is not an integer {what}")
        values = column.to_numpy(zero_copy_only=False)
        if pa.types.is_unsigned_integer(column.type) and values.size and values.max() > np.iinfo(np.int64).max:
            row = int(np.argmax(values > np.iinfo(np.int64).max))
            raise ValueError(f"row {first_row + row}, column {name!r}: {values[row]} is too large for a {what}")
        return values.astype(np.int64, copy=False)
    text = column if pa.types.is_string(column.type) or pa.types.is_large_string(column.type) else None
    if text is None:
        raise ValueError(f"column {name!r} holds {column.type}, not integer {what}s")
    if not text.null_count and pc.all(pc.ascii_is_decimal(text)).as_py():
        try:  # the common case, plain digits (checked first: Arrow's parser alone would also take hex)
            return pc.cast(text, pa.int64()).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:  # more than 18 digits: the row-by-row check below names it
            pass
    valid = pc.fill_null(pc.match_substring_regex(text, _INTEGER), False)
    if not pc.all(valid).as_py():
        row = int(np.flatnonzero(~valid.to_numpy(zero_copy_only=False))[0])
        shown = text[row].as_py()
        if shown is None:
            raise ValueError(f"row {first_row + row}, column {name!r}: a missing value is not an integer {what}")
        raise ValueError(f"row {first_row + row}, column {name!r}: {shown!r} is not an integer {what}")
    return pc.cast(pc.utf8_trim_whitespace(text), pa.int64()).to_numpy(zero_copy_only=False)


class _HashingWriter:
    """A binary stream that feeds every byte written to SHA-256."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.digest = hashlib.sha256()
        self.closed = False

    def write(self, data) -> int:
        view = memoryview(data)
        self.digest.update(view)
        self.stream.write(view)
        return view.nbytes

    def flush(self) -> None:
        self.stream.flush()

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        return self.stream.tell()

    def close(self) -> None:
        self.closed = True


class TableSink:
    """Batches written as CSV or Parquet into ``stream`` (an open binary file), hashed as written.

    CSV text is quoted only if ``quote_text`` (some kept value holds a comma, quote or line
    break): then pyarrow quotes every text value; otherwise none is, and the kept columns read
    exactly as they were written in the input.
    """

    def __init__(self, stream, schema: pa.Schema, kind: str, quote_text: bool = True) -> None:
        self._hashing = _HashingWriter(stream)
        sink = pa.PythonFile(self._hashing, mode="w")
        if kind == "parquet":  # dictionary pages for text only: numbers rarely repeat enough to pay for them
            text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
                    or pa.types.is_dictionary(f.type)]
            self._writer = pq.ParquetWriter(sink, schema, use_dictionary=text)
        else:
            header = any(_STRUCTURAL.search(name) for name in schema.names)
            options = pacsv.WriteOptions(quoting_style="needed" if quote_text else "none",
                                         quoting_header="needed" if header else "none", batch_size=1 << 16)
            self._writer = pacsv.CSVWriter(sink, schema, write_options=options)

    def write(self, batch: pa.RecordBatch) -> None:
        self._writer.write_batch(batch)

    def close(self) -> str:
        """Finish the file; returns the SHA-256 of every byte written."""
        self._writer.close()
        return self._hashing.digest.hexdigest()


__all__ = ["CSV_BLOCK_BYTES", "PARQUET_BATCH_ROWS", "TableSink", "TableSource", "file_sha256", "integer_values",
           "table_format"]
