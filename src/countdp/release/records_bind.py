"""Each predicate of a records release bound by DuckDB against the records' schema alone: nothing read, nothing run.

The schema is what the records' values never decide (:data:`countdp.release.records.TYPING`): each column's
name and type, the declared types over the rest (a CSV column is text).  :func:`predicate_finding` creates an
empty table of that schema, named as the records' view is, on a connection of its own, and binds the
predicate there: the outcome is a function of the schema and the predicate's text alone, the same whatever
the records hold, so it is kept per pair (a study that groups records many times, Figure 10's 950 groupings,
binds each predicate once).

Refused: text that is not one expression, a subquery (:func:`has_subquery`), a column that does not exist, an
expression that is not boolean, an aggregate, and a **conversion of a text column** to another type: an
explicit ``CAST(age AS INTEGER)``, or one DuckDB's binder inserts (``age = 30``, ``age IN (30, 40)``), read off
the bound plan (``json_serialize_plan``).  Such a CAST fails on a value that does not convert, so one person's
value would decide whether the release runs; the same predicate is refused on Spark
(:mod:`countdp.release.records_spark_predicates`), and ``TRY_CAST`` is not refused.  Any other error on a
record's value is NULL for that record: the grouping evaluates each predicate inside ``TRY`` (:func:`tried`),
and a volatile function, which ``TRY`` refuses, is refused here.  A plan DuckDB cannot serialize shows no
conversion: the predicate is then not refused for one, and a conversion in it that fails is NULL for its
record inside ``TRY``, as on Spark; the refusal is for one message and one behaviour on both engines, ``TRY``
is what keeps one person's value from stopping the release.  Where DuckDB's binder itself refuses
a text column compared with a number (``age < 30``), the column is found by binding again with each text
column the predicate reads given a type, so that both engines name it the same way.
"""

from __future__ import annotations

import functools
import json
import os
import threading

import duckdb

from countdp.release.records import quoted

VIEW = "countdp_records"
TEXT = "VARCHAR"
TRIED = ("INTEGER", "DOUBLE", "DATE", "TIMESTAMP", "BOOLEAN")
"""The types a text column is given, in turn, to find which column a binder error is about."""
_LOCK = threading.RLock()
_SHARED: dict[int, object] = {}


def _connection():
    """This process's connection for binding against schemas (a child process opens its own)."""
    con = _SHARED.get(os.getpid())
    if con is None:
        _SHARED.clear()
        con = _SHARED[os.getpid()] = duckdb.connect(":memory:")
    return con


def _create(con, schema: tuple[tuple[str, str], ...]) -> None:
    columns = ", ".join(f"{quoted(name)} {kind}" for name, kind in schema)
    con.execute(f"CREATE OR REPLACE TABLE {VIEW} ({columns})")


@functools.lru_cache(maxsize=1024)
def predicate_finding(schema: tuple[tuple[str, str], ...], predicate: str) -> tuple[str, ...] | None:
    """Why ``predicate`` is refused over records of ``schema`` (``(column, DuckDB type)`` pairs), or ``None``:
    ``("statements",)``, ``("subquery",)``, ``("error", first line)``, ``("kind", type)`` (not boolean),
    ``("volatile",)`` (refused inside ``TRY``, :func:`tried`), or ``("converts", column, type)`` (a text column
    converted to ``type``)."""
    try:
        if len(duckdb.extract_statements(f"SELECT ({predicate}) FROM {VIEW}")) != 1:
            return ("statements",)
    except duckdb.Error as exc:
        return ("error", str(exc).strip().splitlines()[0])
    if has_subquery(predicate):
        return ("subquery",)
    with _LOCK:
        con = _connection()
        try:
            _create(con, schema)
        except duckdb.Error:
            return ("schema",)
        try:
            kind = con.execute(f"DESCRIBE SELECT ({predicate}) AS p FROM {VIEW}").fetchall()[0][1]
            con.execute(f"DESCRIBE SELECT count(*) FILTER (WHERE ({predicate})) FROM {VIEW}").fetchall()
        except duckdb.Error as exc:
            found = _compared_text(con, schema, predicate)
            return ("converts", *found) if found else ("error", str(exc).strip().splitlines()[0])
        if kind != "BOOLEAN":
            return ("kind", kind)
        try:
            con.execute(f"DESCRIBE SELECT count(*) FILTER (WHERE {tried(predicate)}) FROM {VIEW}").fetchall()
        except duckdb.Error:
            return ("volatile",)
        plan = con.execute("SELECT json_serialize_plan(?)", [f"SELECT ({predicate}) AS p FROM {VIEW}"]).fetchone()[0]
    found = text_casts(json.loads(plan))
    return ("converts", *found[0]) if found else None


def tried(predicate: str) -> str:
    """``predicate`` as the grouping evaluates it: inside ``TRY``, so that an error on one record's value (an
    overflow, a CAST between other types, ``strptime`` of a bad date) is NULL for that record alone, which no
    count counts, instead of a failure of the whole release that one person's value would decide.  ``TRY``
    refuses a volatile function (``random()``, ``error()``), when the predicate is bound."""
    return f"TRY(({predicate}))"


def _compared_text(con, schema, predicate: str) -> tuple[str, str] | None:
    """The text column, and a type for it, with which a predicate the binder refused binds (``age < 30`` binds
    with ``age`` an INTEGER), or ``None``."""
    read = set(column_names(predicate))
    for k, (name, kind) in enumerate(schema):
        if kind != TEXT or name not in read:
            continue
        for tried in TRIED:
            _create(con, schema[:k] + ((name, tried),) + schema[k + 1:])
            try:
                con.execute(f"DESCRIBE SELECT ({predicate}) AS p FROM {VIEW}").fetchall()
            except duckdb.Error:
                continue
            return name, tried
    return None


def text_casts(plan: object) -> list[tuple[str, str]]:
    """``(column, type)`` for each CAST in a serialized bound plan (``json_serialize_plan``) that converts text
    read from a column to another type; a ``TRY_CAST`` is not one.  DuckDB 1.x serializes a cast as
    ``BOUND_CAST`` (its input ``child``, ``try_cast``), 2.x as a function (``children``, ``function_data``):
    both are read."""
    found = []
    stack = [plan]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        if node.get("type") == "OPERATOR_CAST":
            inputs = [node["child"]] if "child" in node else list(node.get("children") or [])
            tried = node.get("try_cast", (node.get("function_data") or {}).get("try_cast", False))
            target = _type(node)
            if inputs and not tried and _type(inputs[0]) == TEXT and target not in (TEXT, None):
                found.extend((column, target) for column in _read(inputs[0]))
        stack.extend(node.values())
    return found


def _type(node: dict) -> str | None:
    kind = node.get("return_type")
    return kind.get("id") if isinstance(kind, dict) else None


def _read(expression: object) -> list[str]:
    """The columns a bound expression reads (its column references' names), in order."""
    names, stack = [], [expression]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
        elif isinstance(node, dict):
            if node.get("expression_class") in ("BOUND_REF", "BOUND_COLUMN_REF") and node.get("alias"):
                names.append(node["alias"])
            stack.extend(reversed(list(node.values())))
    return names


def _parsed(predicate: str) -> dict:
    """The parse tree of ``SELECT (predicate) FROM`` the view (``json_serialize_sql``: nothing bound)."""
    with _LOCK:
        text = _connection().execute("SELECT json_serialize_sql(?)", [f"SELECT ({predicate}) FROM {VIEW}"]).fetchone()
    return json.loads(text[0])


@functools.lru_cache(maxsize=256)
def has_subquery(predicate: str) -> bool:
    """Whether ``predicate`` holds a subquery (``(SELECT ...)``, ``IN (SELECT ...)``, ``EXISTS``) anywhere,
    read off DuckDB's parse tree: nothing bound, nothing read, nothing run.  A function of the text alone,
    so kept per text."""
    stack = [_parsed(predicate)]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("class") == "SUBQUERY":
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def column_names(predicate: str) -> list[str]:
    """The column names ``predicate`` refers to (the last part of each reference), from its parse tree."""
    names, stack = [], [_parsed(predicate)]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("class") == "COLUMN_REF" and node.get("column_names"):
                names.append(node["column_names"][-1])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return names


__all__ = ["TRIED", "VIEW", "column_names", "has_subquery", "predicate_finding", "text_casts", "tried"]
