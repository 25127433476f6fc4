"""Records grouped by DuckDB, read by the release as a stream of Arrow batches: no true-count table on disk.

:func:`duckdb_records` opens an in-memory DuckDB database whose ``temp_directory`` is the release's
own temporary folder (a locked partial folder beside ``out``, :mod:`countdp.release.partials`, so
a killed release's spill files are removed by the next release there), with the memory limit of
:class:`~countdp.release.records.RecordsSettings`; a grouping kept in memory (no ``out``) borrows a
connection to its process's shared database instead (:mod:`countdp.release.records_databases`), its views
and group table temporary, the connection's own.  It reads the records in place (a CSV or Parquet
file, a glob, a folder of Parquet or CSV files with Hive partitions, or a pandas or Polars
DataFrame, an Arrow table or a DuckDB relation), checks every name and predicate before anything
runs (each predicate is bound by DuckDB against an empty table of the records' schema, and must be
boolean, read no other record and convert no text column: :mod:`countdp.release.records_bind`), checks one
record per person, and
runs the grouping query once, ordered by the group-by columns, into a temporary table of the
in-memory database (held in DuckDB's memory, and beyond its limit in DuckDB's own spill files in
the release's temporary folder).  It returns an :class:`~countdp.release.sources.ArrowSource` whose
every pass streams that table in Arrow batches: the grouping is out of core, and the grouped counts
are never written as a table.  A DuckDB relation is grouped on its own connection, again for each
pass.  ``close()`` closes the database (which frees the table and removes its spill files) and the
temporary folder.

Column types never come from the values (:data:`countdp.release.records.TYPING`): a CSV is read with
``all_varchar``, Hive partition values stay text (``hive_types_autocast = false``), and a pandas
DataFrame's object columns are made text first (:func:`~countdp.release.records.text_columns`).  The
records are registered as :data:`RAW`; :data:`VIEW`, which every check and the grouping read, is a
projection of them with each declared column ``TRY_CAST`` to its type (:func:`typed_select`).  A grouping
that fails while it runs (an explicit CAST of a bad value, say) is refused without the engine's message,
which may quote a record.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb

from countdp.release.partials import SPILL, create_partial
from countdp.release.records import (
    ROW_LOCAL,
    VOLATILE,
    RecordsSettings,
    RecordsSpec,
    choice_key,
    conversion,
    first_line,
    missing_column,
    quoted,
    runtime_error,
    text_columns,
    type_hint,
)
from countdp.release.records_bind import VIEW, predicate_finding, tried
from countdp.release.records_databases import borrow, open_database
from countdp.release.sources import ArrowSource

RAW = "countdp_input"
CHOSEN = "countdp_chosen"
GROUPS = "countdp_groups"
_GLOB = re.compile(r"[*?\[]")
_CSV = (".csv", ".tsv", ".txt", ".csv.gz")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def reader_sql(path: str) -> str:
    """The DuckDB table function that reads ``path`` in place: a CSV or Parquet file, a glob, or a folder of
    Parquet (or else CSV) files, Hive-partitioned (``county=x/part-0.parquet``)."""
    text = str(path)
    if not _GLOB.search(text):
        found = Path(text)
        if found.is_dir():
            parquet = next((p for p in found.rglob("*") if p.suffix.lower() in (".parquet", ".pq")), None)
            pattern = str(found / "**" / ("*" + parquet.suffix if parquet else "*.csv"))
            return _reader(pattern, parquet is None)
        if not found.is_file():
            raise ValueError(f"{text}: no such file or folder of records")
    return _reader(text, text.lower().endswith(_CSV))


def _reader(pattern: str, csv: bool) -> str:
    if csv:
        return (f"read_csv({_literal(pattern)}, header = true, all_varchar = true, hive_partitioning = true, "
                "hive_types_autocast = false, union_by_name = true)")
    return (f"read_parquet({_literal(pattern)}, hive_partitioning = true, hive_types_autocast = false, "
            "union_by_name = true)")


class _Spill:
    """A release's folder for DuckDB's spill files: a locked partial folder beside ``out``, removed when the
    release ends (a release kept in memory borrows a shared database instead:
    :mod:`countdp.release.records_databases`)."""

    def __init__(self, out: Path) -> None:
        self.path, self.fd, _ = create_partial(out.parent, out.name, folder=True)

    def remove(self) -> None:
        try:
            for entry in os.listdir(self.path):
                if SPILL.match(entry):
                    os.unlink(self.path / entry)
            os.rmdir(self.path)
        except OSError:
            pass  # a stray file: the folder is a dead partial for the next release to remove
        finally:
            if self.fd is not None:
                os.close(self.fd)
                self.fd = None


_KINDS = {"pandas": "pandas DataFrame", "pyarrow": "Arrow table", "polars": "Polars DataFrame",
          "duckdb": "DuckDB relation"}


def _register(con, source: object) -> tuple[str, object]:
    """Make the records readable as :data:`RAW`: ``(label naming them in messages, a DuckDB relation or None)``.

    A DuckDB relation is queried on its own connection (``relation.query``), which it is bound to: its
    memory limit and spill folder are that connection's."""
    kind = type(source).__module__.split(".")[0]
    if isinstance(source, str | os.PathLike):
        con.execute(f"CREATE TEMP VIEW {RAW} AS SELECT * FROM {reader_sql(os.fspath(source))}")
        return os.fspath(source), None
    if kind == "duckdb" and hasattr(source, "query"):
        return _KINDS[kind], source
    if kind == "polars":
        source = source.to_arrow()
    elif kind == "pandas":
        source = text_columns(source)
    elif kind != "pyarrow":
        raise ValueError(f"records must be a path, a pandas or Polars DataFrame, an Arrow table or a DuckDB relation "
                         f"(or a Spark DataFrame with engine 'spark'), got {type(source).__name__}")
    con.register(RAW, source)
    return _KINDS[kind], None


def typed_select(spec: RecordsSpec) -> str:
    """The projection that gives each declared column its type, ``TRY_CAST`` (a value that does not convert is
    NULL), every column in its place: ``* REPLACE (TRY_CAST("age" AS INTEGER) AS "age")``, or ``*``."""
    if not spec.types:
        return "*"
    casts = ", ".join(f"TRY_CAST({quoted(c)} AS {kind}) AS {quoted(c)}" for c, kind in spec.types)
    return f"* REPLACE ({casts})"


def _typed(con, relation, spec: RecordsSpec):
    """``run(sql)`` over :data:`VIEW`, the records with their declared types (:func:`typed_select`)."""
    if relation is not None:
        projected = relation.project(typed_select(spec))
        return lambda sql: projected.query(VIEW, sql)
    con.execute(f"CREATE TEMP VIEW {VIEW} AS SELECT {typed_select(spec)} FROM {RAW}")
    return con.sql


def _columns(con, relation, label: str) -> dict[str, str]:
    try:
        found = relation.query(RAW, f"DESCRIBE {RAW}") if relation is not None else con.sql(f"DESCRIBE {RAW}")
        return {row[0]: row[1] for row in found.fetchall()}
    except duckdb.Error as exc:
        raise ValueError(f"{label}: cannot read the records ({first_line(exc)})") from None


def check_names(spec: RecordsSpec, columns: dict[str, str], label: str, spell) -> None:
    """Every group-by, person-id and declared column exists in the records."""
    missing_column(spec, columns, label, spell)


def check_predicates(columns: dict[str, str], spec: RecordsSpec, label: str, spell) -> None:
    """Each predicate bound by DuckDB against the records' schema, ``columns`` with the declared types over
    them, on an empty table (:func:`countdp.release.records_bind.predicate_finding`: nothing read, nothing
    run): one boolean expression of the record's own columns, or refused in one line.  A subquery is refused:
    it can read other people's records (``age < (SELECT max(age) FROM ...)``), and then one person changes
    others' counts, which the guarantee (one person's bit in one group's count) does not cover; so is a
    conversion of a text column (``age = 30`` on text, ``CAST(age AS INTEGER)``), which would fail on one
    person's value."""
    flag = spell.repeated("count", "counts")
    declared = dict(spec.types)
    schema = tuple((name, declared.get(name, kind)) for name, kind in columns.items())
    for name, predicate in spec.counts:
        shown = f"{flag} {name}={predicate!r}"
        finding = predicate_finding(schema, predicate)
        if finding is None:
            continue
        why, *detail = finding
        if why == "converts":
            raise conversion(shown, detail[0], detail[1], spell)
        reason = {
            "statements": "not one expression", "subquery": ROW_LOCAL, "volatile": VOLATILE,
            "schema": "a column's type cannot be recreated, to bind the predicate against the records' schema",
            "kind": f"not a true-or-false expression over the records (it gives {detail[0] if detail else ''})",
        }.get(why)
        raise ValueError(f"{shown}: {reason or type_hint(detail[0], spell)}")


def check_people(run, spec: RecordsSpec, label: str, spell) -> None:
    """With a person id and no rule to choose: refuse people found in several records, and records without one."""
    pid = quoted(spec.person_id)
    several, missing = run(
        f"SELECT count(*) FILTER (WHERE k > 1 AND p IS NOT NULL), coalesce(sum(k) FILTER (WHERE p IS NULL), 0) "
        f"FROM (SELECT {pid} AS p, count(*) AS k FROM {VIEW} GROUP BY {pid})").fetchall()[0]
    if missing:
        raise ValueError(f"{label}: {missing} record(s) have no {spell('person_id')} {spec.person_id!r} value")
    if several and not spec.one_per_person:
        raise ValueError(f"{label}: {several} people appear in more than one record ({spell('person_id')} "
                         f"{spec.person_id!r}); each person must contribute one record: give "
                         f"{spell('one_record_per_person')} random to keep one of each person's records")


def grouped_sql(spec: RecordsSpec, table: str) -> str:
    """The grouping query over ``table``: the group-by columns, the size, one count per predicate, in order, each
    predicate inside ``TRY`` (:func:`~countdp.release.records_bind.tried`: an error on a value is NULL)."""
    keys = ", ".join(quoted(k) for k in spec.group_by)
    order = ", ".join(f"{quoted(k)} ASC NULLS LAST" for k in spec.group_by)
    counts = ", ".join(f"(count(*) FILTER (WHERE {tried(predicate)}))::BIGINT AS {quoted(name)}"
                       for name, predicate in spec.counts)
    return (f"SELECT {keys}, count(*)::BIGINT AS {quoted(spec.size)}, {counts} FROM {table} "
            f"GROUP BY {keys} ORDER BY {order}")


def chosen_sql(spec: RecordsSpec, key: str) -> str:
    """One record per person, as a subquery: each person's record with the least SHA-256 of the key and the
    record's text (identical records tie, and either gives the same counts)."""
    return (f"(SELECT * EXCLUDE (countdp_rank) FROM (SELECT *, sha256({_literal(key)} || CAST(r AS VARCHAR)) AS "
            f"countdp_rank FROM {VIEW} r) QUALIFY row_number() OVER (PARTITION BY {quoted(spec.person_id)} "
            f"ORDER BY countdp_rank) = 1) AS {CHOSEN}")


def duckdb_records(source: object, spec: RecordsSpec, out: Path | None, spell, seed: int | None = None,
                   settings: RecordsSettings | None = None) -> ArrowSource:
    """The grouped records as an :class:`~countdp.release.sources.ArrowSource` (see the module docstring)."""
    settings = settings or RecordsSettings()
    spill = _Spill(out) if out is not None else None
    con = give_back = None
    label = os.fspath(source) if isinstance(source, str | os.PathLike) else type(source).__name__  # never its repr
    try:
        if spill is not None:
            con = open_database(spill.path, settings)
        else:  # kept in memory: a connection to this process's shared database, given back at close
            con, give_back = borrow(settings)
        label, relation = _register(con, source)
        columns = _columns(con, relation, label)
        check_names(spec, columns, label, spell)
        check_predicates(columns, spec, label, spell)
        run = _typed(con, relation, spec)
        table, note = VIEW, None
        if spec.person_id is not None:
            check_people(run, spec, label, spell)
            if spec.one_per_person:
                key, note = choice_key(seed)
                table = chosen_sql(spec, key)
        query = grouped_sql(spec, table)
        if run == con.sql:  # grouped once, held by DuckDB (in memory, or spilled to the release's folder)
            _group(con, query, label, spell)
            query = f"SELECT * FROM {GROUPS}"
        schema = run(f"SELECT * FROM ({query}) LIMIT 0").arrow().schema
    except duckdb.Error as exc:
        _close(con, spill, give_back)
        raise ValueError(f"{label}: {first_line(exc)}") from None
    except BaseException:
        _close(con, spill, give_back)
        raise

    def batches():
        try:
            yield from run(query).to_arrow_reader(settings.batch_rows)
        except duckdb.Error:
            raise runtime_error(label, spell) from None

    description = spec.describe(label, "duckdb", note)
    return ArrowSource(label, schema, batches, description, close=lambda: _close(con, spill, give_back))


def _group(con, query: str, label: str, spell) -> None:
    """Run the grouping into :data:`GROUPS`; a failure while it runs is refused without the engine's message."""
    try:
        con.execute(f"CREATE TEMP TABLE {GROUPS} AS {query}")
    except duckdb.Error:
        raise runtime_error(label, spell) from None


def _close(con, spill: _Spill | None, give_back) -> None:
    if give_back is not None:
        give_back()
    elif con is not None:
        con.close()
    if spill is not None:
        spill.remove()


__all__ = ["CHOSEN", "GROUPS", "RAW", "VIEW", "check_names", "check_people", "check_predicates", "chosen_sql",
           "duckdb_records", "grouped_sql", "reader_sql", "typed_select"]
