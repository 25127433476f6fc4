"""A records release takes its column types from the declaration, never from the records' values.

One person's value must not change how every other record is read: a CSV column is text on both
engines (DuckDB's ``all_varchar``, Spark without ``inferSchema``), a Hive partition value stays text,
a pandas column of Python objects is text, and a type is declared (``--type code=INTEGER``,
``types={"code": "INTEGER"}``) and converted with TRY_CAST, a value that does not convert being NULL.
Each case runs on two neighbouring record sets, the second with one person's ``code`` made
non-numeric (``30`` → ``3x``): every group's count moves by at most one (a tiny alpha with a fixed
seed, so the noisy count is the true one), and everything else published (the sidecar, every printed
line, the exit status) is the same, by :mod:`tests.helpers.neighbour_audit`'s comparator.
"""

from __future__ import annotations

import os

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import countdp
from countdp.cli import main
from countdp.release.records import RUNTIME
from countdp.release.records_bind import text_casts
from tests.helpers.neighbour_audit import Publication, differences, json_differences, run_cli

GROUPS = ["a", "a", "b", "b", "c", "c", "d", "d", "d"]
CODES = ["10", "12", "15", "11", "13", "14", "20", "7", "30"]
NEIGHBOUR = CODES[:-1] + ["3x"]
"""The reviewer's records: ``g,code``; the neighbour changes one person's non-group attribute."""
TINY = ["--mechanism", "EM", "--alpha", "1/1000000000", "--seed", "3"]
"""Noise so small that the noisy count is the true count (seeded: the same draws on both sides)."""
CASES = {"text": ["--count", "y=code < '5'"], "declared": ["--count", "y=code < 5", "--type", "code=INTEGER"]}
SPARK = ["--engine", "spark", "--spark-master", "local[2]"]


def _csv(folder, codes, name="people.csv", column="code") -> None:
    folder.mkdir()
    (folder / name).write_text(f"g,{column}\n" + "".join(f"{g},{c}\n" for g, c in zip(GROUPS, codes, strict=True)))


def _publish(folder, codes, argv) -> Publication:
    _csv(folder, codes)
    status, out, err = run_cli(["release", "--records", "people.csv", "--group-by", "g", *argv, "--out", "o.parquet"],
                               folder)
    files = {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder)) if name != "people.csv"}
    return Publication(status, out, err, files)


def _counts(publication: Publication) -> list[int]:
    return pq.read_table(pa.BufferReader(publication.files["o.parquet"])).column("noisy_y").to_pylist()


def _assert_neighbours(base: Publication, other: Publication, shown: str = "3x") -> None:
    assert base.status == 0 and other.status == 0, (base.stderr, other.stderr)
    one, two = _counts(base), _counts(other)
    assert len(one) == len(two) == 4
    assert all(abs(x - y) <= 1 for x, y in zip(one, two, strict=True)), (one, two)
    assert differences(base, other, ("noisy_y",)) == []
    assert shown not in other.stderr + other.stdout


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_persons_value_moves_one_count_on_duckdb(tmp_path, case):
    argv = CASES[case] + TINY
    _assert_neighbours(_publish(tmp_path / "base", CODES, argv), _publish(tmp_path / "n", NEIGHBOUR, argv))


@pytest.mark.spark
@pytest.mark.parametrize("case", sorted(CASES))
def test_one_persons_value_moves_one_count_on_spark(spark, tmp_path, case):
    argv = CASES[case] + TINY + SPARK
    _assert_neighbours(_publish(tmp_path / "base", CODES, argv), _publish(tmp_path / "n", NEIGHBOUR, argv))


CONVERSIONS = ["code < 5", "code = 30", "code IN (30, 40)", "code BETWEEN 1 AND 20", "CAST(code AS INTEGER) < 5",
               "code::INTEGER < 5"]
"""Undeclared, ``code`` is text, and each of these converts it to a number: DuckDB's binder refuses ``code < 5``
and ``BETWEEN``, but casts ``code`` for ``=`` and ``IN`` and where asked, which fails on the neighbour's ``3x``
only; Spark (ANSI off) gives NULL for it, and turns ``IN``'s numbers into text."""


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
@pytest.mark.parametrize("predicate", CONVERSIONS)
def test_a_text_column_converted_is_refused_whatever_the_records(request, tmp_path, engine, predicate):
    """Refused by both engines from the schema alone (the declared types, text for the rest), before any record
    is read: the same line on both neighbours, naming the column and the declaration, and nothing written."""
    if engine == "spark":
        request.getfixturevalue("spark")
    argv = ["--count", f"y={predicate}", *TINY, *(SPARK if engine == "spark" else [])]
    base, other = _publish(tmp_path / "base", CODES, argv), _publish(tmp_path / "n", NEIGHBOUR, argv)
    assert base.status == other.status == 2, (base.stderr, other.stderr)
    assert base.stderr == other.stderr and base.stdout == other.stdout and base.files == other.files == {}
    assert base.stderr.count("\n") == 1 and "3x" not in other.stderr, base.stderr
    assert "the text column 'code' is converted to INTEGER here" in base.stderr
    assert "declare the column's type instead, --type code=INTEGER" in base.stderr


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
@pytest.mark.parametrize("predicate", ["TRY_CAST(code AS INTEGER) < 13", "code < '13'", "length(code) = 2"])
def test_a_text_column_read_as_text_or_tried_is_not_refused(request, tmp_path, engine, predicate):
    """What the refusal leaves alone: ``TRY_CAST`` (NULL for ``3x``), and text read as text."""
    if engine == "spark":
        request.getfixturevalue("spark")
    argv = ["--count", f"y={predicate}", *TINY, *(SPARK if engine == "spark" else [])]
    _assert_neighbours(_publish(tmp_path / "base", CODES, argv), _publish(tmp_path / "n", NEIGHBOUR, argv))


def _frame(codes: list[str]) -> pd.DataFrame:
    """Python objects, as a caller's mixed column is: ints, and the neighbour's one string."""
    return pd.DataFrame({"g": GROUPS, "code": pd.Series([int(c) if c.isdigit() else "x10" for c in codes],
                                                         dtype=object)})


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
@pytest.mark.parametrize("types", [None, {"code": "INTEGER"}], ids=["text", "declared"])
def test_a_pandas_object_column_is_text_and_prints_no_value(request, capfd, engine, types):
    if engine == "spark":
        request.getfixturevalue("spark")
    predicate = "code < 5" if types else "code < '5'"
    found = []
    for codes in (CODES, NEIGHBOUR):
        capfd.readouterr()
        table, record = countdp.release_records(_frame(codes), ["g"], {"y": predicate}, types=types, engine=engine,
                                                mechanism="EM", alpha="1/1000000000", seed=3)
        printed = capfd.readouterr()
        assert "x10" not in printed.out + printed.err, printed.err
        found.append((table["noisy_y"].tolist(), record))
    (one, first), (two, second) = found
    assert all(abs(x - y) <= 1 for x, y in zip(one, two, strict=True)), (one, two)
    assert json_differences(first, second) == []  # created_utc and output.sha256 set aside
    assert first["input"]["records"]["types"] == (types or {})


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def test_a_hive_partition_value_stays_text(request, tmp_path, engine):
    if engine == "spark":
        request.getfixturevalue("spark")
    pq.write_to_dataset(pa.table({"g": ["01", "01", "02"], "age": [20, 40, 25]}), tmp_path / "people",
                        partition_cols=["g"])
    table, _ = countdp.release_records(tmp_path / "people", ["g"], {"y": "age < 30"}, engine=engine,
                                       mechanism="EM", alpha="1/1000000000", seed=3)
    assert table.column("g").to_pylist() == ["01", "02"]


def test_a_person_id_is_text_whatever_the_other_ids(tmp_path):
    """``7`` and ``7.0`` are two people as text, whether or not another id is non-numeric (each a release);
    declared DOUBLE, they are one person, refused."""
    ids = ["1", "2", "3", "4", "5", "6", "7", "7.0", "8"]
    argv = ["release", "--records", "people.csv", "--group-by", "g", "--count", "y=pid = '1'", "--person-id", "pid",
            *TINY, "--dry-run"]
    found = []
    for k, last in enumerate(["8", "8x"]):
        _csv(tmp_path / f"r{k}", ids[:-1] + [last], column="pid")
        found.append(run_cli(argv, tmp_path / f"r{k}"))
    assert found[0][0] == found[1][0] == 0 and found[0][1] == found[1][1], found
    status, _, err = run_cli(argv + ["--type", "pid=DOUBLE"], tmp_path / "r0")
    assert status == 2 and "1 people appear in more than one record" in err


ARITHMETIC = ["CAST(code * 5 AS TINYINT) > 0", "code * 100000000 > 5"]
"""Declared INTEGER, ``code`` 30 overflows a TINYINT times 5, and an INTEGER times 10⁸; the neighbour's ``3x`` is
NULL, and overflows nothing.  DuckDB stopped the release on the first record set only."""


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
@pytest.mark.parametrize("predicate", ARITHMETIC)
def test_an_error_on_one_persons_value_is_null_for_their_record(request, tmp_path, engine, predicate):
    """DuckDB evaluates each predicate inside TRY, so the overflow is NULL for its record alone, as Spark's
    arithmetic with ANSI off never stops the release: both neighbours publish, one count apart at most."""
    if engine == "spark":
        request.getfixturevalue("spark")
    argv = ["--count", f"y={predicate}", "--type", "code=INTEGER", *TINY, *(SPARK if engine == "spark" else [])]
    _assert_neighbours(_publish(tmp_path / "base", CODES, argv), _publish(tmp_path / "n", NEIGHBOUR, argv))


RAISING = {"duckdb": ["CASE WHEN code > 25 THEN error('x') ELSE true END", "random() < 2"],
           "spark": ["CASE WHEN code > 25 THEN raise_error('x') ELSE true END", "assert_true(code < 25) IS NULL",
                     "rand() < 2", "reflect('java.lang.String', 'valueOf', code) = '30'"]}
"""A function that raises of its own, on ``code`` 30 only (the neighbour's is NULL), or that is random."""


@pytest.mark.parametrize(("engine", "predicate"), [("duckdb", p) for p in RAISING["duckdb"]]
                         + [pytest.param("spark", p, marks=pytest.mark.spark) for p in RAISING["spark"]])
def test_a_function_that_raises_or_is_random_is_refused_whatever_the_records(request, tmp_path, engine, predicate):
    if engine == "spark":
        request.getfixturevalue("spark")
    argv = ["--count", f"y={predicate}", "--type", "code=INTEGER", *TINY, *(SPARK if engine == "spark" else [])]
    base, other = _publish(tmp_path / "base", CODES, argv), _publish(tmp_path / "n", NEIGHBOUR, argv)
    assert base.status == other.status == 2, (base.stderr, other.stderr)
    assert base.stderr == other.stderr and base.files == other.files == {} and base.stderr.count("\n") == 1
    assert "a function that is random or raises an error of its own" in base.stderr, base.stderr


def test_a_regular_expression_from_a_record_is_null_on_duckdb(tmp_path):
    """One person's ``code`` is ``(``, not a regular expression: inside TRY it matches nothing."""
    argv = ["--count", "y=regexp_matches('1', code)", *TINY]
    _assert_neighbours(_publish(tmp_path / "base", CODES, argv), _publish(tmp_path / "n", CODES[:-1] + ["("], argv),
                       shown="(")


PATTERN, RAISER = "a pattern read from the records", "raises on a value it cannot convert"
SPARK_RAISERS = {
    "'1' RLIKE code": ("(", PATTERN), "regexp_extract('1', code, 0) = '1'": ("(", PATTERN),
    "'1' LIKE code": ("(", PATTERN), "to_date('2020-01-01', code) IS NULL": ("(", PATTERN),
    "url_decode(code) = '1'": ("%zz", RAISER), "to_binary(code, 'hex') IS NULL": ("%zz", RAISER),
    "unbase64(code) IS NULL": ("%zz", RAISER), "to_number(code, '99') = 1": ("%zz", RAISER),
    "xpath_string(code, 'a') = ''": ("%zz", RAISER)}
"""Predicates Spark evaluates with no TRY, each with one person's value that makes it raise even with ANSI mode
off (a pattern read from the records that does not compile, a value a function cannot convert), and the words
of the refusal."""


@pytest.mark.spark
@pytest.mark.parametrize("predicate", sorted(SPARK_RAISERS))
def test_a_predicate_that_could_raise_on_a_value_is_refused_on_spark_before_it_runs(spark, tmp_path, predicate):
    """Spark has no TRY: the grouping would stop on the records holding the value of :data:`SPARK_RAISERS` and not
    on their neighbour's, one bit about one person.  Both neighbours are refused alike, before any record is read."""
    value, why = SPARK_RAISERS[predicate]
    argv = ["--count", f"y={predicate}", *TINY, *SPARK]
    base, other = _publish(tmp_path / "base", CODES, argv), _publish(tmp_path / "n", CODES[:-1] + [value], argv)
    assert base.status == other.status == 2 and base.files == other.files == {}, (base.stderr, other.stderr)
    assert base.stderr == other.stderr and base.stderr.count("\n") == 1
    assert why in base.stderr, base.stderr


@pytest.mark.spark
def test_a_functions_try_form_publishes_on_spark(spark, tmp_path):
    argv = ["--count", "y=try_url_decode(code) = '1'", *TINY, *SPARK]
    _assert_neighbours(_publish(tmp_path / "base", CODES, argv), _publish(tmp_path / "n", CODES[:-1] + ["%zz"], argv),
                       shown="%zz")


@pytest.mark.spark
def test_a_literal_pattern_publishes_on_spark(spark, tmp_path):
    argv = ["--count", "y=code RLIKE '^1'", *TINY, *SPARK]
    _assert_neighbours(_publish(tmp_path / "base", CODES, argv), _publish(tmp_path / "n", NEIGHBOUR, argv))


def test_what_remains_on_duckdb_a_malformed_line_quotes_no_value(tmp_path):
    malformed = tmp_path / "malformed"
    malformed.mkdir()
    (malformed / "people.csv").write_text("g,code\n" + "a,1\n" * 30000 + "b,1,(\n")
    status, _, err = run_cli(["release", "--records", "people.csv", "--group-by", "g", "--count", "y=code = '1'",
                              *TINY, "--out", "o.parquet"], malformed)
    assert status == 2 and err == f"countdp: error: people.csv: {RUNTIME}\n", err
    assert os.listdir(malformed) == ["people.csv"]


@pytest.mark.parametrize(("extra", "message"), [
    (["--type", "code=INT4"], "--type code=INT4: unknown type; the types are BOOLEAN, INTEGER, BIGINT, DOUBLE, "
                              "DATE, TIMESTAMP, VARCHAR"),
    (["--type", "code"], "--type 'code': give COLUMN=TYPE"),
    (["--type", "code=INTEGER", "--type", "code=BIGINT"], "--type declares the column 'code' twice"),
    (["--type", "nope=INTEGER"], "--type names no column 'nope'; the records have 'g', 'code'"),
    ([], "--count y='code < 5': the text column 'code' is converted to INTEGER here"),
])
def test_a_bad_declaration_is_refused_in_one_line(tmp_path, capsys, extra, message):
    _csv(tmp_path / "r", CODES)
    code = main(["release", "--records", str(tmp_path / "r" / "people.csv"), "--group-by", "g", "--count",
                 "y=code < 5", *extra, *TINY, "--out", str(tmp_path / "r" / "o.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert os.listdir(tmp_path / "r") == ["people.csv"]


def test_python_spells_the_declaration_types(tmp_path):
    _csv(tmp_path / "r", CODES)
    with pytest.raises(ValueError, match=r"^types= code=int4: unknown type; the types are BOOLEAN"):
        countdp.release_records(tmp_path / "r" / "people.csv", ["g"], {"y": "code < 5"}, types={"code": "int4"},
                                mechanism="EM", alpha="1/2")
    with pytest.raises(ValueError, match=r'declare the column\'s type instead, types=\{"code": "INTEGER"\}'):
        countdp.release_records(tmp_path / "r" / "people.csv", ["g"], {"y": "code < 5"}, mechanism="EM", alpha="1/2")
    table, record = countdp.release_records(tmp_path / "r" / "people.csv", ["g"], {"y": "code < 15"},
                                            types={"code": "integer"}, mechanism="EM", alpha="1/1000000000", seed=3)
    assert table.column("noisy_y").to_pylist() == [2, 1, 2, 1]
    assert record["input"]["records"]["types"] == {"code": "INTEGER"}
    assert "never come from the records' values" in record["input"]["records"]["column_types"]


def test_a_type_without_records_is_refused(tmp_path, capsys):
    assert main(["release", "--type", "code=INTEGER", "--input", "t.csv", "--count-column", "y", "--size-column", "n",
                 "--mechanism", "EM", "--alpha", "1/2", "--out", str(tmp_path / "o.csv")]) == 2
    assert "--type go with --records" in capsys.readouterr().err


V1_CAST = {"expression_class": "BOUND_CAST", "type": "OPERATOR_CAST", "return_type": {"id": "INTEGER"},
           "try_cast": False,
           "child": {"expression_class": "BOUND_REF", "alias": "age", "return_type": {"id": "VARCHAR"}}}
"""``age = 30``'s cast of ``age`` as DuckDB 1.5 serializes it (2.0 makes it a function: the test above runs that)."""


def test_the_plan_reader_finds_a_duckdb_1_cast_and_not_a_try_cast():
    assert text_casts({"plans": [{"expressions": [{"left": V1_CAST}]}]}) == [("age", "INTEGER")]
    assert text_casts({"left": {**V1_CAST, "try_cast": True}}) == []
    assert text_casts({"left": {**V1_CAST, "return_type": {"id": "VARCHAR"}}}) == []
    constant = {"expression_class": "BOUND_CONSTANT", "return_type": {"id": "VARCHAR"}}
    assert text_casts({**V1_CAST, "child": constant}) == []  # d < '2020-01-01': a constant, not a record's value
