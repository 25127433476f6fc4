"""A neighbour audit of ``countdp release``: every published byte but the noise, between neighbours.

Threat model (docs/threat-model.md): the adversary knows every record but one person's, reads
every published file (the released table and its sidecar ``OUT.release.json``) and every line
the command prints (stdout and stderr).  So a release of a table and a release of any neighbour
of it (the tables that differ in that one person, under the form's unit of privacy) must publish
the same bytes everywhere except the noisy values.  This module runs a release form on a table
and on its neighbours, each in its own folder with the same relative file names (so paths and
the recorded command line are identical), and names every published field that differs: a JSON
path of the sidecar (``input.sha256``), a table column (``o.csv column 'region' row 2``),
``stdout line 4``, ``exit status``, or ``file NAME`` for a file published by one run only.

Set aside, because they depend on nothing confidential (:data:`SET_ASIDE` says why, entry by
entry): the sidecar's ``created_utc``, ``output.sha256`` and ``budget.entry``, and the noisy
columns themselves (their values; in Parquet also their column chunks and the byte offsets that
shift with those chunks' sizes).  Nothing else: the list is short on purpose, since every entry
is a place where a leak would go unseen.

The releases run in-process (``countdp.cli.main``), stdout and stderr captured, ``sys.argv`` set
to the command so that the sidecar records it as a shell would.  What the curator keeps (the
input table, the ledger, the mechanism file) is not compared: it is not published.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import random
import shutil
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from countdp.cli import main

SIDECAR = ".release.json"
LEDGER = "budget.ledger"
"""The ledger's file name; it and its lock stay with the curator, so they are never compared."""

SIDECAR_SET_ASIDE = {
    "created_utc": "the wall-clock time of the release: the same for every table, it says when, not what",
    "output.sha256": "a digest of the published table, which holds the noisy values: it is a function of what "
                     "is published, so it reveals nothing the table does not",
    "budget.entry": "the ledger entry's id: its position in the ledger and random hex from os.urandom, drawn "
                    "without looking at the data",
}
"""Sidecar fields (JSON paths) that may differ between neighbours, and why each depends on nothing confidential."""

SET_ASIDE = {
    **{f"sidecar {path}": why for path, why in SIDECAR_SET_ASIDE.items()},
    "table noisy columns": "the noisy values themselves, the one place the data may show, through the noise; in "
                           "Parquet also what is a function of them alone: their column chunks (statistics, "
                           "encodings, sizes) and the byte offsets and row-group byte size that shift with those "
                           "chunks' sizes",
}
"""The whole set-aside list, as the report gives it."""

_CHUNK_LAYOUT = {"file_offset", "data_page_offset", "dictionary_page_offset", "index_page_offset"}


@dataclass(frozen=True)
class Table:
    """A small table of true counts: a header and rows of ``int`` or ``str`` cells."""

    header: tuple[str, ...]
    rows: tuple[tuple, ...]

    def column(self, name: str) -> list:
        k = self.header.index(name)
        return [row[k] for row in self.rows]

    def changed(self, changes: dict[tuple[int, str], int]) -> Table:
        """The table with ``changes[(row, column)]`` added to those cells (rows from 0)."""
        rows = [list(row) for row in self.rows]
        for (r, name), delta in changes.items():
            rows[r][self.header.index(name)] += delta
        return Table(self.header, tuple(tuple(row) for row in rows))

    def write(self, path: Path) -> None:
        """As CSV (plain text, no quoting needed) or, for a ``.parquet`` name, Parquet (int64 and string)."""
        if path.suffix == ".parquet":
            columns = {name: self.column(name) for name in self.header}
            pq.write_table(pa.table({name: pa.array(values, pa.int64() if isinstance(values[0], int) else pa.string())
                                     for name, values in columns.items()}), path)
            return
        lines = [",".join(self.header)] + [",".join(str(cell) for cell in row) for row in self.rows]
        path.write_text("\n".join(lines) + "\n")


@dataclass(frozen=True)
class Form:
    """One release form: its table, the release's arguments (relative names ``t.csv``/``o.csv``, without
    ``--seed``, ``--budget`` or ``--dry-run``), its noisy columns, and its unit of privacy.

    ``limit`` is each count's largest value: the size column's name, or the mechanism's n.
    ``invariant`` forms have invariant neighbours (``by``: the partition column, or one partition).
    ``folder`` publishes a release folder (``--out o/``, holding ``table.<fmt>`` and its sidecar).
    """

    name: str
    table: Table
    release: tuple[str, ...]
    noisy: tuple[str, ...]
    counts: tuple[str, ...]
    limit: str | int
    fmt: str = "csv"
    invariant: bool = False
    by: str | None = None
    design: tuple[str, ...] = ()
    folder: bool = False

    @property
    def input(self) -> str:
        return f"t.{self.fmt}"

    @property
    def out(self) -> str:
        return "o/" if self.folder else f"o.{self.fmt}"

    @property
    def published(self) -> set[str]:
        """The files a release publishes, as paths relative to its folder: the table and its sidecar."""
        table = f"o/table.{self.fmt}" if self.folder else self.out
        return {table, table + SIDECAR}

    def argv(self, dry_run: bool, budget: bool) -> list[str]:
        """The release command: seeded without a budget (the seed is refused with one), unseeded dry runs."""
        argv = ["release", *self.release, "--input", self.input, "--out", self.out]
        if budget:
            argv += ["--budget", LEDGER]
        if dry_run:
            return [*argv, "--dry-run"]
        return argv if budget else [*argv, "--seed", "1"]

    def setup(self, budget: bool) -> list[list[str]]:
        """Commands run once before the releases: the mechanism file, a fresh ledger (copied to every run)."""
        commands = [list(self.design)] if self.design else []
        if budget:
            extra = ["--invariant-epsilon", "10"] if self.invariant else []
            commands.append(["budget", "init", LEDGER, "--epsilon", "10", *extra])
        return commands

    def neighbours(self, dry_run: bool, most: int) -> list[tuple[str, Table]]:
        """The form's neighbours of its table (a seeded sample of at most ``most`` of each kind); a dry run
        publishes no total, so an invariant form's dry run gets bit-level neighbours too."""
        bits = sample(bit_neighbours(self.table, self.counts, self.limit), most)
        if not self.invariant:
            return bits
        found = sample(invariant_neighbours(self.table, self.counts, self.limit, self.by), most)
        return found + bits if dry_run else found


def _limit(table: Table, limit: str | int) -> list[int]:
    """Each row's largest count: its size, or the one mechanism's n."""
    return table.column(limit) if isinstance(limit, str) else [limit] * len(table.rows)


def bit_neighbours(table: Table, counts: tuple[str, ...], limit: str | int) -> list[tuple[str, Table]]:
    """One person's record changed: one row's counts each moved by -1, 0 or +1 (not all 0), within 0..size.

    With several count columns one person's record can change every column at once.
    """
    found = []
    for r, top in enumerate(_limit(table, limit)):
        for deltas in itertools.product((-1, 0, 1), repeat=len(counts)):
            values = [table.column(c)[r] + d for c, d in zip(counts, deltas, strict=True)]
            if any(deltas) and all(0 <= v <= top for v in values):
                label = ", ".join(f"{c}{d:+d}" for c, d in zip(counts, deltas, strict=True) if d)
                found.append((f"row {r + 1}: {label}",
                              table.changed({(r, c): d for c, d in zip(counts, deltas, strict=True) if d})))
    return found


def invariant_neighbours(table: Table, counts: tuple[str, ...], limit: str | int,
                         by: str | None) -> list[tuple[str, Table]]:
    """Invariant neighbours: in one count column, one group's count -1 and another group's of the same
    partition +1 (every partition's total kept), over every ordered pair of groups."""
    tops, labels = _limit(table, limit), table.column(by) if by else [None] * len(table.rows)
    found = []
    for column in counts:
        values = table.column(column)
        for a, b in itertools.permutations(range(len(table.rows)), 2):
            if labels[a] == labels[b] and values[a] >= 1 and values[b] < tops[b]:
                found.append((f"{column}: row {a + 1} -1, row {b + 1} +1",
                              table.changed({(a, column): -1, (b, column): +1})))
    return found


def sample(neighbours: list, most: int, seed: int = 0) -> list:
    """All the neighbours, or a seeded sample of ``most`` of them (the same every run)."""
    return neighbours if len(neighbours) <= most else random.Random(seed).sample(neighbours, most)


@dataclass
class Publication:
    """What one run published: its exit status, printed lines, and every file it wrote but the ledger's."""

    status: int
    stdout: str
    stderr: str
    files: dict[str, bytes] = field(default_factory=dict)


def run_cli(argv: list[str], folder: Path) -> tuple[int, str, str]:
    """``countdp ARGV`` in-process with ``folder`` as working directory; (status, stdout, stderr).

    Both levels of each stream are captured: Python's ``sys.stdout``/``sys.stderr`` and the file
    descriptors 1 and 2 (what a C library such as a solver prints), the latter appended to the former.
    """
    out, err = io.StringIO(), io.StringIO()
    cwd, saved_argv = os.getcwd(), sys.argv
    with tempfile.TemporaryFile() as fd_out, tempfile.TemporaryFile() as fd_err:
        saved_fds = os.dup(1), os.dup(2)
        os.chdir(folder)
        sys.argv = ["countdp", *argv]
        try:
            os.dup2(fd_out.fileno(), 1)
            os.dup2(fd_err.fileno(), 2)
            with redirect_stdout(out), redirect_stderr(err):
                status = main(list(argv))
        finally:
            for fd, saved in zip((1, 2), saved_fds, strict=True):
                os.dup2(saved, fd)
                os.close(saved)
            os.chdir(cwd)
            sys.argv = saved_argv
        fd_text = []
        for raw in (fd_out, fd_err):
            raw.seek(0)
            fd_text.append(raw.read().decode(errors="replace"))
    return status, out.getvalue() + fd_text[0], err.getvalue() + fd_text[1]


def prepare_template(form: Form, budget: bool, folder: Path) -> Path:
    """Run the form's setup once in ``folder`` (copied into every run's folder); fails on a setup error."""
    folder.mkdir(parents=True)
    for command in form.setup(budget):
        status, _, err = run_cli(command, folder)
        if status != 0:
            raise AssertionError(f"setup `countdp {' '.join(command)}` failed: {err.strip()}")
    return folder


def _files(folder: Path) -> set[str]:
    """Every file under ``folder``, as a path relative to it (``o.csv``, ``o/table.csv``)."""
    return {os.path.relpath(os.path.join(root, name), folder) for root, _, names in os.walk(folder) for name in names}


def publish(form: Form, table: Table, argv: list[str], template: Path, folder: Path) -> Publication:
    """One release of ``table`` in a copy of ``template``; the files it added, the ledger's left out."""
    shutil.copytree(template, folder)
    table.write(folder / form.input)
    before = _files(folder)
    status, out, err = run_cli(argv, folder)
    added = sorted(_files(folder) - before)
    files = {name: (folder / name).read_bytes() for name in added
             if not name.startswith(LEDGER) and not name.startswith(f".{LEDGER}")}
    return Publication(status, out, err, files)


def line_differences(a: str, b: str, stream: str) -> list[str]:
    """``stderr line 3`` for every line (from 1) that is not the same in both."""
    pairs = itertools.zip_longest(a.splitlines(), b.splitlines())
    return [f"{stream} line {k}" for k, (x, y) in enumerate(pairs, start=1) if x != y]


def flatten(value, path: str = "") -> list[tuple[str, object]]:
    """The leaves of a JSON value as ``(path, value)`` in document order: ``input.sha256``, ``mechanisms[0].n``."""
    if isinstance(value, dict) and value:
        return [leaf for key, item in value.items() for leaf in flatten(item, f"{path}.{key}" if path else key)]
    if isinstance(value, list) and value:
        return [leaf for k, item in enumerate(value) for leaf in flatten(item, f"{path}[{k}]")]
    return [(path, value)]


def json_differences(a, b, set_aside=SIDECAR_SET_ASIDE) -> list[str]:
    """The JSON paths whose values differ or that one side lacks, set-aside paths excepted; then key order."""
    left, right = flatten(a), flatten(b)
    one, two = dict(left), dict(right)
    names = [path for path in dict.fromkeys([p for p, _ in left] + [p for p, _ in right])
             if path not in set_aside and (path not in one or path not in two or one[path] != two[path]
                                           or type(one[path]) is not type(two[path]))]
    if not names and [p for p, _ in left] != [p for p, _ in right]:
        names.append("key order")
    return names


def csv_differences(a: bytes, b: bytes, noisy: tuple[str, ...], name: str) -> list[str]:
    """Header, row count and every cell outside the noisy columns, as written (quotes kept as characters)."""
    one, two = (list(csv.reader(io.StringIO(x.decode(), newline=""), quoting=csv.QUOTE_NONE)) for x in (a, b))
    if not one or not two or one[0] != two[0]:
        return [f"{name} header"]
    header, names = one[0], []
    if len(one) != len(two):
        names.append(f"{name} row count")
    for r, (x, y) in enumerate(zip(one[1:], two[1:], strict=False), start=1):
        if len(x) != len(y):
            names.append(f"{name} row {r} cells")
            continue
        names += [f"{name} column {header[k]!r} row {r}" for k in range(len(x))
                  if (k >= len(header) or header[k] not in noisy) and x[k] != y[k]]
    return names


def _chunks(metadata) -> dict[tuple[int, str], dict]:
    return {(g, metadata.row_group(g).column(k).path_in_schema): metadata.row_group(g).column(k).to_dict()
            for g in range(metadata.num_row_groups) for k in range(metadata.num_columns)}


def parquet_differences(a: bytes, b: bytes, noisy: tuple[str, ...], name: str) -> list[str]:
    """Schema, file metadata, row groups, and the values and column chunks of every column but the noisy ones."""
    one, two = pq.ParquetFile(pa.BufferReader(a)), pq.ParquetFile(pa.BufferReader(b))
    names = []
    if one.schema_arrow.to_string(show_schema_metadata=True) != two.schema_arrow.to_string(show_schema_metadata=True):
        names.append(f"{name} schema")
    m1, m2 = one.metadata, two.metadata
    for key in ("num_rows", "num_row_groups", "num_columns", "created_by", "format_version"):
        if getattr(m1, key) != getattr(m2, key):
            names.append(f"{name} {key}")
    kv1, kv2 = m1.metadata or {}, m2.metadata or {}
    names += [f"{name} metadata {key.decode()}" for key in dict.fromkeys([*kv1, *kv2]) if kv1.get(key) != kv2.get(key)]
    if names:
        return names
    names += [f"{name} row group {g} num_rows" for g in range(m1.num_row_groups)
              if m1.row_group(g).num_rows != m2.row_group(g).num_rows]
    c1, c2 = _chunks(m1), _chunks(m2)
    for (g, column), chunk in c1.items():
        if column not in noisy:
            names += [f"{name} column {column!r} row group {g} {key}" for key in chunk
                      if key not in _CHUNK_LAYOUT and chunk[key] != c2[(g, column)].get(key)]
    t1, t2 = one.read(), two.read()
    names += [f"{name} column {column!r}" for column in t1.column_names
              if column not in noisy and t1.column(column).to_pylist() != t2.column(column).to_pylist()]
    return names


def differences(a: Publication, b: Publication, noisy: tuple[str, ...]) -> list[str]:
    """Every published field that differs between two runs, by name (empty: they publish the same)."""
    names = ["exit status"] if a.status != b.status else []
    names += line_differences(a.stdout, b.stdout, "stdout") + line_differences(a.stderr, b.stderr, "stderr")
    for name in sorted(set(a.files) | set(b.files)):
        if name not in a.files or name not in b.files:
            names.append(f"file {name}")
        elif name.endswith(SIDECAR):
            names += json_differences(json.loads(a.files[name]), json.loads(b.files[name]))
        elif name.endswith(".parquet"):
            names += parquet_differences(a.files[name], b.files[name], noisy, name)
        else:
            names += csv_differences(a.files[name], b.files[name], noisy, name)
    return names


def audit(form: Form, dry_run: bool, budget: bool, root: Path, most: int = 12) -> dict[str, list[str]]:
    """Release ``form`` on its table and on its neighbours (a seeded sample of at most ``most`` of each kind);
    for each neighbour that published something else, the names of the fields that differ.

    A warm-up run first fills the mechanism cache, so every compared run finds the same cache.  The base run
    must succeed and publish (a dry run: print, and write nothing), so the audit cannot pass vacuously.
    """
    template = prepare_template(form, budget, root / "setup")
    argv = form.argv(dry_run, budget)
    publish(form, form.table, argv, template, root / "warm-up")
    base = publish(form, form.table, argv, template, root / "base")
    assert base.status == 0, f"{form.name}: the release failed: {base.stderr.strip()}"
    expected = set() if dry_run else form.published
    assert set(base.files) == expected, f"{form.name}: published {sorted(base.files)}, expected {sorted(expected)}"
    assert base.stdout if dry_run else base.files, f"{form.name}: nothing was published"
    leaks = {}
    for k, (label, table) in enumerate(form.neighbours(dry_run, most)):
        names = differences(base, publish(form, table, argv, template, root / f"neighbour-{k}"), form.noisy)
        if names:
            leaks[label] = names
    return leaks


def report(leaks: dict[str, list[str]]) -> str:
    """One line per field that differs, with the neighbours where it did (for an assertion message)."""
    where: dict[str, list[str]] = {}
    for label, names in leaks.items():
        for name in names:
            where.setdefault(name, []).append(label)
    return "\n".join(f"{name}  (neighbours: {'; '.join(labels)})" for name, labels in where.items())


__all__ = ["SET_ASIDE", "SIDECAR_SET_ASIDE", "Form", "Publication", "Table", "audit", "bit_neighbours",
           "csv_differences", "differences", "invariant_neighbours", "json_differences", "line_differences",
           "parquet_differences", "publish", "report", "run_cli", "sample"]
