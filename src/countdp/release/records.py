"""Person records in, a table of groups out: what a records release asks for, checked before anything runs.

A records release (``countdp release --records people.parquet --group-by county,age_band --count
young="age < 30" ...``, :func:`countdp.release_records`) groups the records by public columns and
counts, in each group, the records for which each predicate holds; the group size is the number
of the group's records.  The grouped table is then released exactly as a table release is, by the
same engine (:mod:`countdp.release.engine`), read as a stream of Arrow batches from the query
(:mod:`countdp.release.records_duckdb`, :mod:`countdp.release.records_spark`): the true counts
exist only in the query engine's memory and its own spill files, never as a table on disk.

**The unit of privacy** is the paper's: group membership and group sizes are public, each person's
bit is private.  The ``--group-by`` columns are taken as public attributes, and the group sizes are
published exactly (the mechanism column names each group's size).  Each record is one person's;
with ``person_id`` a person found in several records is refused (naming how many such people
there are), or with ``one_record_per_person="random"`` one of their records is kept, chosen by a
keyed SHA-256 of the record under a key of 256 bits from the OS's secure source: the contribution
bounding of Tumult Analytics and PipelineDP.  docs/threat-model.md states it.

**Column types never come from the records' values** (:data:`TYPING`): one person's value must not
change how every other record is read.  A CSV column and a Hive partition column are text, and a
pandas column of Python objects is pandas' string dtype (:func:`text_columns`); a Parquet file's,
an Arrow table's or a typed DataFrame column's own schema is taken as part of the public schema.
Other types are declared (``types``, ``--type age=INTEGER``, :data:`TYPES`) and converted with
TRY_CAST, once, in a projection over the records that the predicates, the person id and the
group-by columns all read: a value that does not convert is NULL, so no predicate holds on it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from countdp.release.options import Spelling, names

UNIT = (
    "one person's bit in each count column of their group: the records are grouped by public attributes (the "
    "group-by columns), so group membership and the group sizes are public and published exactly (the mechanism "
    "column names each group's size); a person contributes one record, and a neighbouring set of records changes "
    "the other attributes of one person's record, which changes their group's count by at most one in each count "
    "column. Groups compose in parallel; the count columns compose sequentially.")
"""The unit of privacy a records release states in its sidecar."""

PUBLIC = ("the group-by columns are taken as public attributes, and the group sizes (the number of each group's "
          "records) are published exactly; a group with no record does not appear")
ONE_RECORD = {
    None: "each record is taken as a different person: a person with k records is protected at k times each "
          "column's epsilon (give a person id to enforce one record per person)",
    "refuse": "a person id found in more than one record was refused: each person contributed one record",
    "random": "one record per person: of each person's records one was kept, chosen by SHA-256 keyed with 256 bits "
              "from the OS's secure source (os.urandom), as Tumult Analytics' and PipelineDP's contribution bounding "
              "does; the rest were dropped before grouping",
}
"""What the sidecar says about each person's contribution, by ``one_record_per_person``."""

TYPES = {"BOOLEAN": "BOOLEAN", "INTEGER": "INT", "BIGINT": "BIGINT", "DOUBLE": "DOUBLE", "DATE": "DATE",
         "TIMESTAMP": "TIMESTAMP", "VARCHAR": "STRING"}
"""The types a column may be declared, by DuckDB's name, with Spark's."""

TYPING = ("column types never come from the records' values: a CSV column, a Hive partition column and a pandas "
          "column of Python objects are text unless declared in 'types'; a Parquet file's, an Arrow table's or a "
          "typed DataFrame column's own schema is taken as public; a declared column is converted with TRY_CAST, "
          "and a value that does not convert is NULL, on which no predicate holds")
"""What the sidecar says about the records' column types."""

SEEDED_KEY = "derived from the seed: a seeded release is an experiment, whose choice of records anyone can repeat"
_NAME = re.compile(r"^[^\x00-\x1f\"]+$")


@dataclass(frozen=True)
class RecordsSettings:
    """Tuning of the grouping query: the engine's memory limit (beyond it DuckDB spills to the release's
    temporary folder), its threads (``None``: every core) and the rows of each Arrow batch read.

    On Spark, a release into a folder (``--out DIR/``) of more than ``executor_groups`` groups is drawn
    in the executors, as part files of about ``part_groups`` groups each
    (:mod:`countdp.release.records_executors`); fewer groups are collected to the driver and drawn there.
    """

    memory_limit_mb: int = 1024
    threads: int | None = None
    batch_rows: int = 1 << 16
    executor_groups: int = 1 << 18
    part_groups: int = 1 << 18


@dataclass(frozen=True)
class RecordsSpec:
    """How records become groups: the public ``group_by`` columns, the ``counts`` as ``(name, predicate)``
    pairs, the group size's column name, one record per person (``person_id``, and ``one_per_person``
    ``"random"`` to keep one of several, else several are refused), and the declared column ``types`` as
    ``(column, type)`` pairs (a type of :data:`TYPES`)."""

    group_by: tuple[str, ...]
    counts: tuple[tuple[str, str], ...]
    size: str = "n"
    person_id: str | None = None
    one_per_person: str | None = None
    types: tuple[tuple[str, str], ...] = ()

    @property
    def count_names(self) -> list[str]:
        return [name for name, _ in self.counts]

    def describe(self, source: str, engine: str, key_note: str | None = None, **extra) -> dict:
        """What the sidecar records about the records: nothing confidential, only how they were grouped."""
        mode = self.one_per_person if self.one_per_person else ("refuse" if self.person_id else None)
        record = {"source": source, "engine": engine, "group_by": list(self.group_by),
                  "counts": dict(self.counts), "size_column": self.size, "person_id": self.person_id,
                  "one_record_per_person": ONE_RECORD[mode], "public": PUBLIC, "types": dict(self.types),
                  "column_types": TYPING, **extra}
        if key_note is not None:
            record["choice_key"] = key_note
        return record


def parse_counts(counts: object, spell: Spelling) -> tuple[tuple[str, str], ...]:
    """``["young=age < 30", ...]`` (the command line's ``--count``) or ``{"young": "age < 30"}`` as pairs."""
    flag = spell.repeated("count", "counts")
    if isinstance(counts, dict):
        pairs = [(str(k), str(v)) for k, v in counts.items()]
    elif counts:
        pairs = []
        for item in counts:
            name, sign, predicate = str(item).partition("=")
            if not sign or not name.strip() or not predicate.strip():
                raise ValueError(f"{flag} {item!r}: give NAME=PREDICATE, e.g. {flag} young=\"age < 30\"")
            pairs.append((name.strip(), predicate.strip()))
    else:
        pairs = []
    if not pairs:
        raise ValueError(f"a records release needs at least one {flag} NAME=PREDICATE")
    for name, predicate in pairs:
        if not _NAME.match(name):
            raise ValueError(f"{flag} {name}={predicate}: the name {name!r} cannot name a column")
        if not predicate.strip():
            raise ValueError(f"{flag} {name}=: the predicate is empty")
    seen = [name for name, _ in pairs]
    for name in seen:
        if seen.count(name) > 1:
            raise ValueError(f"{flag} names the count {name!r} twice")
    return tuple(pairs)


def parse_types(types: object, spell: Spelling) -> tuple[tuple[str, str], ...]:
    """``["age=INTEGER", ...]`` (the command line's ``--type``) or ``{"age": "INTEGER"}`` as checked pairs, the
    type in upper case (one of :data:`TYPES`)."""
    flag = spell.repeated("type", "types")
    if not types:
        return ()
    if isinstance(types, dict):
        pairs = [(str(k), str(v)) for k, v in types.items()]
    else:
        pairs = []
        for item in [types] if isinstance(types, str) else types:
            name, sign, kind = str(item).partition("=")
            if not sign or not name.strip() or not kind.strip():
                raise ValueError(f"{flag} {item!r}: give COLUMN=TYPE, e.g. {flag} age=INTEGER")
            pairs.append((name.strip(), kind.strip()))
    checked = []
    for name, kind in pairs:
        if kind.strip().upper() not in TYPES:
            raise ValueError(f"{flag} {name}={kind}: unknown type; the types are {', '.join(TYPES)}")
        if name in [c for c, _ in checked]:
            raise ValueError(f"{flag} declares the column {name!r} twice")
        checked.append((name, kind.strip().upper()))
    return tuple(checked)


def build_spec(group_by: object, counts: object, size: str | None, person_id: str | None,
               one_per_person: str | None, spell: Spelling, types: object = None) -> RecordsSpec:
    """The checked spec: names that do not collide, a contribution rule that is understood."""
    keys = tuple(names(group_by, spell("group_by"))) if group_by is not None else ()
    if not keys:
        raise ValueError(f"a records release needs {spell('group_by')}: the public columns that make the groups")
    if len(set(keys)) != len(keys):
        raise ValueError(f"{spell('group_by')} names a column twice: {','.join(keys)}")
    pairs = parse_counts(counts, spell)
    size = size or "n"
    taken = {key: spell("group_by") for key in keys}
    for name, why in [(size, spell("size"))] + [(n, spell.repeated("count", "counts"))
                                                 for n in [p[0] for p in pairs]]:
        if name in taken:
            raise ValueError(f"the output would have two columns named {name!r} ({taken[name]} and {why}); "
                             "choose another name")
        taken[name] = why
    if one_per_person not in (None, "random"):
        raise ValueError(f"{spell('one_record_per_person')} takes 'random', got {one_per_person!r}")
    if one_per_person and not person_id:
        raise ValueError(f"{spell('one_record_per_person')} needs {spell('person_id')}: the column naming each person")
    if person_id is not None and person_id in keys:
        raise ValueError(f"{spell('person_id')} {person_id!r} is a {spell('group_by')} column: a group per person "
                         "would publish who is in the data")
    return RecordsSpec(keys, pairs, size, person_id, one_per_person, parse_types(types, spell))


def missing_column(spec: RecordsSpec, columns, label: str, spell: Spelling) -> None:
    """Every group-by, person-id and declared column exists in the records, or one line names the first that
    does not."""
    declared = spell.repeated("type", "types")
    named = ([(k, spell("group_by")) for k in spec.group_by] + [(spec.person_id, spell("person_id"))]
             + [(c, declared) for c, _ in spec.types])
    for name, flag in named:
        if name is not None and name not in columns:
            raise ValueError(f"{label}: {flag} names no column {name!r}; the records have "
                             f"{', '.join(map(repr, columns))}")


def text_columns(frame):
    """A pandas DataFrame whose columns of Python objects are pandas' string dtype (a missing value stays
    missing); its typed columns as they are.  Both engines read a pandas DataFrame through it: an engine
    would otherwise pick an object column's type from its values (DuckDB samples them, Spark's Arrow
    conversion tries each), and one person's value would change how every record is read."""
    objects = {name: "string" for name, kind in frame.dtypes.items() if str(kind) == "object"}
    return frame.astype(objects) if objects else frame


def declarable(kind: str) -> str:
    """The type of :data:`TYPES` to declare for an engine's type name (DuckDB's ``DECIMAL(3,1)``, Spark's ``int``):
    itself if declarable, else the nearest (a decimal or a float as ``DOUBLE``, a small integer as ``INTEGER``)."""
    name = kind.strip().upper().split("(")[0].strip()
    spark = {spark: duck for duck, spark in TYPES.items()}
    if name in TYPES or name in spark:
        return name if name in TYPES else spark[name]
    if name in ("DECIMAL", "FLOAT", "REAL", "NUMERIC"):
        return "DOUBLE"
    if name in ("HUGEINT", "UBIGINT", "LONG"):
        return "BIGINT"
    return "TIMESTAMP" if name.startswith("TIMESTAMP") else "INTEGER"


CONVERTS = ("the text column {column!r} is converted to {kind} here, and a value that does not convert would stop "
            "the release, one person's value deciding whether it runs: declare the column's type instead, {hint} "
            "(a value that does not convert is then NULL, and not counted)")
"""Why a predicate that converts a text column (``age < 30``, ``age = 30``, ``CAST(age AS INTEGER)``) is refused,
by either engine, from the records' schema alone."""


def conversion(shown: str, column: str, kind: str, spell: Spelling) -> ValueError:
    """The refusal of a predicate that converts the text ``column`` to ``kind`` (:data:`CONVERTS`), suggesting the
    declaration in the caller's spelling."""
    kind = declarable(kind)
    hint = (f"--type {column}={kind}" if spell.style == "cli" else f"types={{{column!r}: {kind!r}}}".replace("'", '"'))
    return ValueError(f"{shown}: " + CONVERTS.format(column=column, kind=kind, hint=hint))


def type_hint(line: str, spell: Spelling) -> str:
    """An engine's refusal of a predicate, with the hint to declare a type where it compares text with a
    number (DuckDB's binder: "Cannot compare values of type VARCHAR and type INTEGER_LITERAL"), for a binder
    error that no single column's declaration explains."""
    if "VARCHAR" in line and ("explicit cast" in line or "No function matches" in line):
        hint = "--type COLUMN=INTEGER" if spell.style == "cli" else 'types={"COLUMN": "INTEGER"}'
        return (f"{line} (the column is text: declare its type, e.g. {hint}; a value that does not convert is "
                "then NULL, and not counted)")
    return line


VOLATILE = ("a function that is random or raises an error of its own (random(), error(), raise_error(), "
            "assert_true(), reflect()) is refused: a predicate is a condition on the record's own columns")
"""Why a predicate with a volatile or raising function is refused, by either engine: DuckDB evaluates each
predicate inside ``TRY``, which refuses a volatile function, and Spark's counterpart refuses the same."""


RUNTIME = ("the grouping failed while it ran, on a record it read (a malformed line of a CSV, say, or on Spark a "
           "function that raises on a value, such as a regular expression read from a record); the engine's message "
           "is withheld, as it may quote a record")
"""A grouping that failed while it ran, in one line that quotes nothing of the records."""


def choice_key(seed: int | None) -> tuple[str, str | None]:
    """The key of the random choice of one record per person, as 64 hex digits, and the sidecar's note:
    256 bits from the OS's secure source, or, for a seeded experiment, derived from the seed."""
    if seed is None:
        return os.urandom(32).hex(), None
    import numpy as np  # lazy: only a seeded experiment needs it

    words = np.random.SeedSequence(seed).spawn(1)[0].generate_state(4, np.uint64)
    return "".join(f"{int(w):016x}" for w in words), SEEDED_KEY


def quoted(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


ROW_LOCAL = ("a subquery reads beyond the record, so one person could change other people's counts; "
             "a predicate is a condition on the record's own columns")
"""Why a predicate with a subquery is refused, by either engine: the guarantee covers one person's bit
in one group's count, which holds only where each count reads each record alone."""


def first_line(exc: BaseException) -> str:
    """An engine's error in one line (its first)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def runtime_error(label: str, spell: Spelling) -> ValueError:
    """The refusal of a grouping that failed while it ran (:data:`RUNTIME`)."""
    return ValueError(f"{label}: " + RUNTIME.format(flag=spell.repeated("type", "types")))


__all__ = ["CONVERTS", "ONE_RECORD", "PUBLIC", "ROW_LOCAL", "RUNTIME", "SEEDED_KEY", "TYPES", "TYPING", "UNIT",
           "VOLATILE", "RecordsSettings", "RecordsSpec", "build_spec", "choice_key", "conversion", "declarable",
           "first_line", "missing_column", "parse_counts", "parse_types", "quoted", "runtime_error", "text_columns",
           "type_hint"]
