"""Records grouped by DuckDB, read by the release as a stream of Arrow batches: no true-count table on disk.

:func:`duckdb_records` opens an in-memory DuckDB database whose ``temp_directory`` is the release's
own temporary folder (a locked partial folder beside ``out``, :mod:`countdp.release.partials`, so
a killed release's spill files are removed by the next release there), with the memory limit of
:class:`~countdp.release.records.RecordsSettings`.  It reads the records in place (a CSV or Parquet
file, a glob, a folder of Parquet or CSV files with Hive partitions, or a pandas or Polars
DataFrame, an Arrow table or a DuckDB relation), checks every name and predicate before anything
runs (each predicate is bound by DuckDB, and must be boolean), checks one record per person, and
runs the grouping query once, ordered by the group-by columns, into a temporary table of the
in-memory database (held in DuckDB's memory, and beyond its limit in DuckDB's own spill files in
the release's temporary folder).  It returns an :class:`~countdp.release.sources.ArrowSource` whose
every pass streams that table in Arrow batches: the grouping is out of core, and the grouped counts
are never written as a table.  A DuckDB relation is grouped on its own connection, again for each
pass.  ``close()`` closes the database (which frees the table and removes its spill files) and the
temporary folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import duckdb

from countdp.release.partials import SPILL, create_partial
from countdp.release.records import ROW_LOCAL, RecordsSettings, RecordsSpec, choice_key, first_line, quoted
from countdp.release.sources import ArrowSource

VIEW = "countdp_records"
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
        return f"read_csv({_literal(pattern)}, header = true, hive_partitioning = true, union_by_name = true)"
    return f"read_parquet({_literal(pattern)}, hive_partitioning = true, union_by_name = true)"


class _Spill:
    """The release's temporary folder for DuckDB's spill files: a locked partial folder beside ``out``, or a
    private temporary folder for a release kept in memory."""

    def __init__(self, out: Path | None) -> None:
        self.fd = None
        if out is None:
            self.path = Path(tempfile.mkdtemp(prefix="countdp-spill-"))
        else:
            self.path, self.fd, _ = create_partial(out.parent, out.name, folder=True)

    def remove(self) -> None:
        try:
            for entry in os.listdir(self.path):
                if SPILL.match(entry):
                    os.unlink(self.path / entry)
            if self.fd is None:
                shutil.rmtree(self.path, ignore_errors=True)
            else:
                os.rmdir(self.path)
        except OSError:
            pass  # a stray file: the folder is a dead partial for the next release to remove
        finally:
            if self.fd is not None:
                os.close(self.fd)
                self.fd = None


def _connect(spill: _Spill, settings: RecordsSettings):
    config = {"temp_directory": str(spill.path), "memory_limit": f"{settings.memory_limit_mb}MB"}
    if settings.threads is not None:
        config["threads"] = settings.threads
    con = duckdb.connect(":memory:", config=config)
    con.execute("SET enable_progress_bar = false")  # the release draws its own progress, on stderr
    return con


_KINDS = {"pandas": "pandas DataFrame", "pyarrow": "Arrow table", "polars": "Polars DataFrame",
          "duckdb": "DuckDB relation"}


def _register(con, source: object) -> tuple[str, object]:
    """Make the records readable as :data:`VIEW`: ``(label naming them in messages, run(sql) -> relation)``.

    A DuckDB relation is queried on its own connection (``relation.query``), which it is bound to: its
    memory limit and spill folder are that connection's."""
    kind = type(source).__module__.split(".")[0]
    if isinstance(source, str | os.PathLike):
        con.execute(f"CREATE VIEW {VIEW} AS SELECT * FROM {reader_sql(os.fspath(source))}")
        return os.fspath(source), con.sql
    if kind == "duckdb" and hasattr(source, "query"):
        return _KINDS[kind], lambda sql: source.query(VIEW, sql)
    if kind == "polars":
        source = source.to_arrow()
    elif kind not in ("pandas", "pyarrow"):
        raise ValueError(f"records must be a path, a pandas or Polars DataFrame, an Arrow table or a DuckDB relation "
                         f"(or a Spark DataFrame with engine 'spark'), got {type(source).__name__}")
    con.register(VIEW, source)
    return _KINDS[kind], con.sql


def _columns(run, label: str) -> dict[str, str]:
    try:
        return {row[0]: row[1] for row in run(f"DESCRIBE {VIEW}").fetchall()}
    except duckdb.Error as exc:
        raise ValueError(f"{label}: cannot read the records ({first_line(exc)})") from None


def check_names(spec: RecordsSpec, columns: dict[str, str], label: str, spell) -> None:
    """Every group-by and person-id column exists in the records."""
    for name, flag in [(k, spell("group_by")) for k in spec.group_by] + [(spec.person_id, spell("person_id"))]:
        if name is not None and name not in columns:
            raise ValueError(f"{label}: {flag} names no column {name!r}; the records have "
                             f"{', '.join(map(repr, columns))}")


def check_predicates(run, spec: RecordsSpec, label: str, spell) -> None:
    """Each predicate bound by DuckDB over the records (nothing run): one boolean expression of the
    record's own columns, or refused.  A subquery is refused (:func:`has_subquery`): it can read other
    people's records (``age < (SELECT max(age) FROM ...)``), and then one person changes others'
    counts, which the guarantee (one person's bit in one group's count) does not cover."""
    flag = spell("count") if spell.style == "cli" else spell("counts")
    for name, predicate in spec.counts:
        shown = f"{flag} {name}={predicate!r}"
        try:
            if len(duckdb.extract_statements(f"SELECT ({predicate}) FROM {VIEW}")) != 1:
                raise ValueError(f"{shown}: not one expression")
            if has_subquery(predicate):
                raise ValueError(f"{shown}: {ROW_LOCAL}")
            kind = run(f"DESCRIBE SELECT ({predicate}) AS p FROM {VIEW}").fetchall()[0][1]
            run(f"DESCRIBE SELECT count(*) FILTER (WHERE ({predicate})) FROM {VIEW}").fetchall()
        except duckdb.Error as exc:
            raise ValueError(f"{shown}: {first_line(exc)}") from None
        if kind != "BOOLEAN":
            raise ValueError(f"{shown}: not a true-or-false expression over the records (it gives {kind})")


def has_subquery(predicate: str) -> bool:
    """Whether ``predicate`` holds a subquery (``(SELECT ...)``, ``IN (SELECT ...)``, ``EXISTS``) anywhere,
    read off DuckDB's parse tree (``json_serialize_sql`` on a connection of its own: nothing bound, nothing
    read, nothing run)."""
    with duckdb.connect() as parser:
        text = parser.execute("SELECT json_serialize_sql(?)", [f"SELECT ({predicate}) FROM {VIEW}"]).fetchone()[0]
    tree = json.loads(text)
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("class") == "SUBQUERY":
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


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
    """The grouping query over ``table``: the group-by columns, the size, one count per predicate, in order."""
    keys = ", ".join(quoted(k) for k in spec.group_by)
    order = ", ".join(f"{quoted(k)} ASC NULLS LAST" for k in spec.group_by)
    counts = ", ".join(f"(count(*) FILTER (WHERE ({predicate})))::BIGINT AS {quoted(name)}"
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
    spill = _Spill(out)
    con = None
    try:
        con = _connect(spill, settings)
        label, run = _register(con, source)
        columns = _columns(run, label)
        check_names(spec, columns, label, spell)
        check_predicates(run, spec, label, spell)
        table, note = VIEW, None
        if spec.person_id is not None:
            check_people(run, spec, label, spell)
            if spec.one_per_person:
                key, note = choice_key(seed)
                table = chosen_sql(spec, key)
        query = grouped_sql(spec, table)
        if run == con.sql:  # grouped once, held by DuckDB (in memory, or spilled to the release's folder)
            con.execute(f"CREATE TEMP TABLE {GROUPS} AS {query}")
            query = f"SELECT * FROM {GROUPS}"
        schema = run(f"SELECT * FROM ({query}) LIMIT 0").arrow().schema
    except duckdb.Error as exc:
        _close(con, spill)
        raise ValueError(f"{source}: {first_line(exc)}") from None
    except BaseException:
        _close(con, spill)
        raise

    def batches():
        try:
            relation = run(query)
            reader = getattr(relation, "to_arrow_reader", None) or relation.fetch_record_batch
            yield from reader(settings.batch_rows)
        except duckdb.Error as exc:
            raise ValueError(f"{label}: {first_line(exc)}") from None

    description = spec.describe(label, "duckdb", note)
    return ArrowSource(label, schema, batches, description, close=lambda: _close(con, spill))


def _close(con, spill: _Spill) -> None:
    if con is not None:
        con.close()
    spill.remove()


__all__ = ["CHOSEN", "GROUPS", "VIEW", "check_names", "check_people", "check_predicates", "chosen_sql",
           "duckdb_records", "grouped_sql", "reader_sql"]
