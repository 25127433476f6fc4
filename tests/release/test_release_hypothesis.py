"""What a table release publishes, for any table: Hypothesis over tables, and streaming against an
independent computation of the seeded draws.

* Random tables (column names with duplicates, unicode, blanks, commas and quotes; counts valid,
  out of range, negative, fractional, blank, missing; random group sizes; CSV and Parquet; the
  published columns named with ``--keep``, or not) are each either released correctly or refused
  with one line and nothing left behind.  Which of the two must happen is predicted independently,
  from the documented rules (docs/release.md, docs/threat-model.md: publication is default-deny,
  and a kept column that is a copy or an affine function of the counts is refused).
* A seeded release over several batches equals what the documented seeding must give, computed
  here row by row from ``SeedSequence(seed).spawn(columns)[k]`` and the mechanisms' integer
  weights: so the result does not depend on how the table was cut into batches.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from countdp.release.tables import CSV_BLOCK_BYTES, PARQUET_BATCH_ROWS
from countdp.services.artifact import load_design
from countdp.services.mechanism_cache import MechanismCache
from countdp.structural.form import StructuralMechanism
from tests.helpers.release_checks import (
    INTEGER_TEXT,
    affine_in_counts,
    as_count,
    copies_of_counts,
    entries,
    environment_variable,
    outcome,
    read_csv_columns,
    run_in_process,
    sidecar_of,
)
from tests.helpers.structural_draw import documented_outputs

FILE_N = 6
SIZES = range(1, 9)
ALPHAS = ("1/2", "9/10")
SEED = 3


@pytest.fixture(scope="module")
def mechanisms(tmp_path_factory) -> dict:
    """A mechanism FILE (GM n=6, alpha 1/2) and a cache of EM for n = 1..8 at both alphas, designed once."""
    root = tmp_path_factory.mktemp("release_mechanisms")
    file = root / "gm6.json"
    status, _, err = run_in_process(["design", "GM", "--n", str(FILE_N), "--alpha", "1/2", "--out", str(file)])
    assert status == 0, err
    cache = MechanismCache(root / "cache")
    for alpha in ALPHAS:
        for n in SIZES:
            cache.get("EM", n, alpha)
    return {"file": file, "cache": root / "cache", "root": root}


# --------------------------------------------------------------------------- random tables
COUNT_NAMES = ("c", "d", "né")
NAMES = st.one_of(
    st.sampled_from(["g", "é名", "x y", "a,b", 'q"x', " g", "名前 ", "mechanism", "noisy_c", "mechanism_c"]),
    st.text(alphabet='ab,"é名 ', min_size=1, max_size=3))
"""Names of the other columns: unicode, blanks, commas, quotes; some are the names a release adds."""
ANY_NAMES = st.one_of(NAMES, st.sampled_from(["", "c", "n"]))
"""Also names a table must not have twice, or at all (the empty name)."""
TEXT = st.text(alphabet='xyé名 ,";\n', max_size=4)
"""Kept text: no digits, so a kept text column can only equal the counts by being a copy (see
``test_a_kept_column_that_reads_as_the_counts_is_refused`` for copies written differently).  Kept
integer and float columns may, on a few rows, happen to be an affine function of the counts: the
oracle predicts their refusal exactly (:func:`tests.helpers.release_checks.affine_in_counts`)."""
BAD_COUNTS = ("2.5", "x", "", "1e1", "0x1", "1" * 19, None)
BAD_SIZES = (0, -2, "x", "", "2.5", None)


@dataclass
class Case:
    """A random table and the release asked of it, with what the documented rules say must happen."""

    fmt: str
    form: str
    counts: list[str]
    names: list[str]
    cells: dict[int, list]  # column position -> values (None: missing)
    kinds: dict[int, str]  # column position -> "int" | "text" | "float" | "bool"
    keep: str | None
    csv_dialect: tuple[int, str] = (csv.QUOTE_MINIMAL, "\n")
    ragged: bool = False
    refusals: list[tuple[str, bool]] = field(default_factory=list)  # (why, whether the error names the input)

    @property
    def rows(self) -> int:
        return len(next(iter(self.cells.values()), []))


def _rarely(draw, one_in: int) -> bool:
    """True about once in ``one_in`` draws (shrinking goes to False, the common case)."""
    return draw(st.integers(0, one_in - 1)) == one_in - 1


def _count_cell(draw, limit: int | None, kind: str, corrupt: bool):
    """One count cell: a count in 0..limit (text may have blanks around it); in a corrupt table,
    often out of range, negative, not an integer, blank or missing."""
    top = limit if limit is not None else 8
    choice = draw(st.sampled_from(["valid", "padded", "high", "negative", "bad"])) if corrupt and \
        _rarely(draw, 3) else draw(st.sampled_from(["valid", "padded"]))
    if choice == "valid" or (choice == "padded" and kind != "text"):
        return draw(st.integers(0, top))
    if choice == "padded":
        return draw(st.sampled_from([" ", ""])) + str(draw(st.integers(0, top))) + draw(st.sampled_from([" ", ""]))
    if choice == "high":
        return top + draw(st.integers(1, 3))
    if choice == "negative":
        return -draw(st.integers(1, 3))
    bad = draw(st.sampled_from(BAD_COUNTS))
    return None if kind != "text" and bad is not None else bad


def _as_kind(value, kind: str):
    """A generated cell in its column's type: float and text columns hold floats and text."""
    if value is None or kind == "text":
        return None if value is None else str(value)
    if not isinstance(value, int):
        return None  # text that a numeric column cannot hold: a missing value there
    return float(value) if kind == "float" else value


@st.composite
def cases(draw) -> Case:
    fmt = draw(st.sampled_from(["csv", "parquet"]))
    form = draw(st.sampled_from(["file", "size"]))
    bad_names, corrupt = _rarely(draw, 10), _rarely(draw, 3)
    counts = draw(st.lists(st.sampled_from(COUNT_NAMES), min_size=1, max_size=2, unique=not bad_names))
    if bad_names:
        others = draw(st.lists(ANY_NAMES, max_size=3))
    else:
        taken = set(counts) | {"n"}
        others = draw(st.lists(NAMES.filter(lambda name: name not in taken), max_size=3, unique=True))
    rows = 0 if _rarely(draw, 12) else draw(st.integers(1, 5))
    names = counts + (["n"] if form == "size" else []) + others
    order = draw(st.permutations(range(len(names))))
    names = [names[i] for i in order]
    position = {old: new for new, old in enumerate(order)}
    cells: dict[int, list] = {}
    kinds: dict[int, str] = {}
    integer_kinds = ["text"] if fmt == "csv" else ["int", "int", "text"] + (["float"] if corrupt else [])
    sizes: list = []
    if form == "size":
        at = position[len(counts)]
        kinds[at] = draw(st.sampled_from(integer_kinds))
        for _ in range(rows):
            size = draw(st.sampled_from(BAD_SIZES)) if corrupt and _rarely(draw, 4) else draw(st.integers(1, 8))
            sizes.append(_as_kind(size, kinds[at]))
        cells[at] = sizes
    for k in range(len(counts)):
        at = position[k]
        kinds[at] = draw(st.sampled_from(integer_kinds))
        column = []
        for r in range(rows):
            limit = FILE_N if form == "file" else _count(sizes[r], kinds[position[len(counts)]])
            limit = limit if limit is not None and limit >= 1 else None
            column.append(_as_kind(_count_cell(draw, limit, kinds[at], corrupt), kinds[at]))
        cells[at] = column
    first = len(counts) + (form == "size")
    for k in range(len(others)):
        at = position[first + k]
        if _rarely(draw, 6):  # a copy of a count column under another name
            source = position[draw(st.integers(0, len(counts) - 1))]
            kinds[at], cells[at] = kinds[source], list(cells[source])
            continue
        if _rarely(draw, 3):  # a c + b n + d under another name, some rows null in Parquet
            source = position[draw(st.integers(0, len(counts) - 1))]
            a, b, d = draw(st.sampled_from([-1, 1, 2])), draw(st.integers(0, 1)), draw(st.integers(0, 3))
            kinds[at] = "text" if fmt == "csv" else draw(st.sampled_from(["int", "float"]))
            cells[at] = []
            for r in range(rows):
                c = _count(cells[source][r], kinds[source])
                n = FILE_N if form == "file" else _count(sizes[r], kinds[position[len(counts)]])
                missing = c is None or n is None or (fmt == "parquet" and _rarely(draw, 4))
                cells[at].append(_as_kind(None if missing else a * c + b * n + d, kinds[at]))
            continue
        kind = draw(st.sampled_from(["text", "int"] + ([] if fmt == "csv" else ["float", "bool"])))
        kinds[at] = kind
        values = {"text": TEXT, "int": st.integers(0, 9), "float": st.sampled_from([0.5, 1.0, 2.0, math.nan]),
                  "bool": st.booleans()}[kind]
        if fmt == "parquet":
            values = st.one_of(values, st.none())
        cells[at] = [draw(values) for _ in range(rows)]
    keep = draw(st.sampled_from([None, "all", "all", "", "subset", "subset"]))
    if keep == "all":  # every column but the counts that --keep can name: the old default, now said aloud
        nameable = [name for name in dict.fromkeys(names) if name and "," not in name and name == name.strip()
                    and name not in counts]
        keep = ",".join(nameable) if nameable else None
    elif keep == "subset":
        allowed = [name for name in names if name and "," not in name and name == name.strip()]
        nameable = allowed if _rarely(draw, 5) else [name for name in allowed if name not in counts]
        keep = ",".join(draw(st.lists(st.sampled_from(nameable), min_size=1, max_size=3))) if nameable else None
    case = Case(fmt, form, counts, names, cells, kinds, keep)
    if fmt == "csv":
        case.csv_dialect = (draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL])), draw(st.sampled_from(["\n",
                                                                                                              "\r\n"])))
        case.ragged = rows > 0 and len(names) > 1 and _rarely(draw, 20)
    case.refusals = _predicted_refusals(case)
    return case


def _text(value) -> str:
    return "" if value is None else str(value)


def _count(value, kind: str) -> int | None:
    """A count cell as the documentation accepts it: an integer (Parquet), or its decimal text with blanks around."""
    if kind == "float" or value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value)
    if INTEGER_TEXT.fullmatch(text) and len(text.strip().lstrip("+-")) <= 18:
        return int(text)
    return None


def kept_names(case: Case) -> list[str]:
    """The published input columns: those ``--keep`` names, or by default only the size column."""
    if case.keep is None:
        return ["n"] if case.form == "size" else []
    return [] if case.keep == "" else case.keep.split(",")


def beside_counts(case: Case) -> list[str]:
    """The columns beside the counts and the size column: without ``--keep``, any of them is a refusal."""
    return [name for name in case.names if name not in case.counts and not (case.form == "size" and name == "n")]


def added_names(case: Case) -> list[str]:
    noisy = [f"noisy_{c}" for c in case.counts]
    return noisy + (["mechanism"] if len(case.counts) == 1 else [f"mechanism_{c}" for c in case.counts])


def _predicted_refusals(case: Case) -> list[tuple[str, bool]]:
    """Every reason the documented rules give to refuse this release (empty: it must be released)."""
    why: list[tuple[str, bool]] = []
    names = case.names
    if any(name == "" for name in names) or len(set(names)) != len(names):
        why.append(("a column name is empty or appears twice", True))
    if len(set(case.counts)) != len(case.counts):
        why.append(("a count column is named twice", False))
    kept = kept_names(case)
    if case.keep is None and beside_counts(case):
        why.append(("a column beside the counts is not named by --keep (publication is default-deny)", True))
    if case.keep:
        if any(name in case.counts for name in kept):
            why.append(("--keep names a count column", False))
        if len(set(kept)) != len(kept):
            why.append(("--keep names a column twice", False))
    if any(name in kept for name in added_names(case)):
        why.append(("an output column would have an input column's name", False))
    if case.ragged:
        why.append(("a row has a missing field", True))
    if case.rows == 0:
        why.append(("no rows", True))
    if why:
        return why
    column = {name: case.names.index(name) for name in names}
    sizes = None
    if case.form == "size":
        at = column["n"]
        sizes = [_count(v, case.kinds[at]) for v in case.cells[at]]
        if any(s is None or s < 1 for s in sizes):
            why.append(("a group size is not an integer >= 1", True))
    truth = {}
    for name in case.counts:
        at = column[name]
        values = [_count(v, case.kinds[at]) for v in case.cells[at]]
        limits = [FILE_N] * case.rows if sizes is None else sizes
        if any(v is None or limit is None or not 0 <= v <= limit for v, limit in zip(values, limits, strict=True)):
            why.append((f"a count in {name!r} is not an integer in 0..n", True))
        truth[name] = values
    if not why:
        released = {name: [_as_read(case, v) for v in case.cells[column[name]]] for name in kept}
        if copies_of_counts(released, truth):
            why.append(("a kept column equals a count column", True))
        public = [FILE_N] * case.rows if sizes is None else sizes
        if any(affine_in_counts(released[name], list(truth.values()), public) for name in watched_names(case)):
            why.append(("a kept column is an affine function of the counts and sizes", True))
    return why


def watched_names(case: Case) -> list[str]:
    """The kept columns that must not be a function of the counts: all but the (public) size column."""
    return [name for name in kept_names(case) if not (case.form == "size" and name == "n")]


def _as_read(case: Case, value):
    """A kept cell as a reader of the table sees it: CSV cells are text."""
    return _text(value) if case.fmt == "csv" else value


ARROW_TYPES = {"int": pa.int64(), "text": pa.string(), "float": pa.float64(), "bool": pa.bool_()}


def write_table(case: Case, path: Path) -> None:
    if case.fmt == "parquet":
        arrays = [pa.array(case.cells[at], type=ARROW_TYPES[case.kinds[at]]) for at in range(len(case.names))]
        pq.write_table(pa.Table.from_arrays(arrays, schema=pa.schema(
            [pa.field(name, array.type) for name, array in zip(case.names, arrays, strict=True)])), path)
        return
    quoting, ending = case.csv_dialect
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream, quoting=quoting, lineterminator=ending)
        writer.writerow(case.names)
        for r in range(case.rows):
            row = [_text(case.cells[at][r]) for at in range(len(case.names))]
            if case.ragged and r == case.rows - 1:
                row = row[:-1]
            writer.writerow(row)


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def check_released(case: Case, path: Path, out: Path) -> None:
    """The output holds the kept columns verbatim, noisy counts in 0..n, the mechanism used, nothing else."""
    kept, added = kept_names(case), added_names(case)
    column = {name: case.names.index(name) for name in case.names}
    if case.fmt == "csv":
        header, rows = read_csv_columns(out)
        assert header == kept + added
        assert len(rows) == case.rows
        values = {name: [row[i] for row in rows] for i, name in enumerate(header)}
        for name in kept:
            assert values[name] == [_text(v) for v in case.cells[column[name]]], name
    else:
        table = pq.read_table(out)
        assert table.column_names == kept + added and table.num_rows == case.rows
        source = pq.read_table(path)
        values = {name: table.column(name).to_pylist() for name in table.column_names}
        for name in kept:
            assert table.schema.field(name).type == source.schema.field(name).type, name
            assert all(_same(a, b) for a, b in zip(values[name], source.column(name).to_pylist(), strict=True)), name
    sizes = [FILE_N] * case.rows if case.form == "file" else [
        _count(v, case.kinds[column["n"]]) for v in case.cells[column["n"]]]
    mechanism = "GM" if case.form == "file" else "EM"
    for k, name in enumerate(case.counts):
        noisy = [int(v) for v in values[added[k]]]
        assert all(0 <= v <= n for v, n in zip(noisy, sizes, strict=True)), (name, noisy, sizes)
        labels = values[added[len(case.counts) + k]]
        assert labels == [f"{mechanism} n={n}" for n in sizes]
    truth = {name: [_count(v, case.kinds[column[name]]) for v in case.cells[column[name]]] for name in case.counts}
    published = {name: values[name] for name in kept + added[len(case.counts):]}
    # the noisy columns are left out: on a table of a few rows they may match the counts by chance
    assert copies_of_counts(published, truth) == []
    assert [name for name in watched_names(case) if affine_in_counts(values[name], list(truth.values()), sizes)] == []


def release_argv(case: Case, mechanisms: dict, path: Path, out: Path) -> list[str]:
    common = ["--input", str(path), "--count-column", ",".join(case.counts), "--out", str(out), "--seed", str(SEED)]
    if case.keep is not None:
        common += ["--keep", case.keep]
    if case.form == "file":
        return ["release", str(mechanisms["file"]), *common]
    alphas = ",".join(ALPHAS[: len(case.counts)])
    return ["release", *common, "--size-column", "n", "--mechanism", "EM", "--alpha", alphas,
            "--cache", str(mechanisms["cache"])]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_any_table_is_released_correctly_or_refused_with_one_line(mechanisms, case):
    """Released exactly when the documented rules allow it, and then correctly (kept columns
    verbatim, noisy counts in 0..n, the mechanism used, no copy of a count, the sidecar's hashes
    right); otherwise refused with one line naming the table, and nothing left behind."""
    work = Path(tempfile.mkdtemp(dir=mechanisms["root"]))
    folder, tmpdir = work / "data", work / "tmp"
    folder.mkdir()
    tmpdir.mkdir()
    path = folder / f"groups.{case.fmt}"
    out = folder / f"noisy.{case.fmt}"
    write_table(case, path)
    before = entries(folder)
    with environment_variable("TMPDIR", str(tmpdir)):
        status, stdout, stderr = run_in_process(release_argv(case, mechanisms, path, out))
    state, problems = outcome(folder, out, path, before, tmpdir)
    event(f"{case.fmt} {case.form}: " + ("refused: " + case.refusals[0][0] if case.refusals else "released"))
    assert problems == []
    if case.refusals:
        assert status == 2, (case.refusals, stderr)
        lines = stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("countdp: error: "), stderr
        if all(names_input for _, names_input in case.refusals):
            assert str(path) in lines[0], (case.refusals, lines[0])
        assert state == "nothing" and entries(folder) == before
        return
    assert status == 0, stderr
    assert all(line.startswith("#") for line in stderr.splitlines()), stderr
    assert state == "pair"
    check_released(case, path, out)
    record = json.loads(sidecar_of(out).read_text())
    assert record["input"]["rows"] == case.rows and record["output"]["columns"] == kept_names(case) + added_names(case)


def test_the_oracle_predicts_refusals():
    """The independent prediction itself: each rule of docs/release.md and docs/threat-model.md, on a
    table built for it."""
    def case(names, cells, kinds=None, form="file", counts=("c",), keep=None, fmt="csv"):
        kinds = kinds or {at: "text" for at in range(len(names))}
        return _predicted_refusals(Case(fmt, form, list(counts), names, dict(enumerate(cells)), kinds, keep))

    unnamed = [("a column beside the counts is not named by --keep (publication is default-deny)", True)]
    copy, affine = [("a kept column equals a count column", True)], \
        [("a kept column is an affine function of the counts and sizes", True)]
    assert case(["c", "g"], [["1", "6"], ["x", "y"]], keep="g") == []
    assert case(["c", "g"], [["1", "6"], ["x", "y"]]) == unnamed  # default-deny
    assert case(["c"], [["1", "6"]]) == [] and case(["c", "n"], [["1"], ["3"]], form="size") == []
    assert case(["c", "g"], [["1", "7"], ["x", "y"]], keep="g") == [
        ("a count in 'c' is not an integer in 0..n", True)]
    assert case(["c", "g"], [[" 1", "+6"], ["x", "y"]], keep="g") == []
    assert case(["c", "g"], [["1", "6"], ["1", "6"]], keep="g") == copy  # two rows: too few to find a fit
    assert case(["c", "g"], [["1", "6", "0"], ["01", "6", " 0"]], keep="g") == copy + affine
    assert case(["c", "g"], [["1", "6"], ["1", "6"]], keep="") == []
    # affine functions of the counts, with more rows than free parameters: n - c, c + 1, 2c with a null
    assert case(["c", "g"], [["1", "6", "2"], ["5", "0", "4"]], keep="g") == affine
    assert case(["c", "n", "g"], [["1", "3", "0", "2"], ["2", "3", "5", "4"], ["2", "1", "6", "3"]], form="size",
                keep="g") == affine  # g = n - c + 1
    assert case(["c", "g"], [[1, 4, 2], [2, None, 4]], kinds={0: "int", 1: "int"}, fmt="parquet",
                keep="g") == []  # two present rows, two free parameters: the fit is forced, not found
    assert case(["c", "g"], [[1, 4, 2, 3], [2, None, 4, 6]], kinds={0: "int", 1: "int"}, fmt="parquet",
                keep="g") == affine
    # not functions of the counts: a function of the sizes alone, a column off on one row, flags
    assert case(["c", "n", "g"], [["1", "3", "0"], ["2", "3", "5"], ["4", "6", "10"]], form="size", keep="g") == []
    assert case(["c", "g"], [["1", "6", "2"], ["5", "0", "3"]], keep="g") == []
    assert case(["c", "g"], [[1, 0, 1], [True, False, True]], kinds={0: "int", 1: "bool"}, fmt="parquet",
                keep="g") == []
    assert case(["c", "c"], [["1"], ["2"]])[0][0] == "a column name is empty or appears twice"
    assert case(["c", "mechanism"], [["1"], ["2"]], keep="mechanism") == [
        ("an output column would have an input column's name", False)]
    assert case(["c", "n"], [["3"], ["2"]], form="size") == [("a count in 'c' is not an integer in 0..n", True)]
    assert case(["c", "n"], [[3.0], [3]], kinds={0: "float", 1: "int"}, form="size", fmt="parquet") == [
        ("a count in 'c' is not an integer in 0..n", True)]
    assert case(["c"], [[]]) == [("no rows", True)]


def test_a_kept_column_that_reads_as_the_counts_is_refused(mechanisms, tmp_path):
    """A kept column holding the true counts written another way (``03``, ``+3``, ``3.0``, Parquet
    decimals) publishes the counts as surely as a verbatim copy: it must be refused like one.  So
    must one that holds them through an affine map (``n - c``, ``c + 1``, ``2c``, a copy with nulls)."""
    counts = [3, 0, 5, 6, 1]
    tables = {
        "leading zeros.csv": ["03", "00", "05", "06", "01"],
        "plus signs.csv": ["+3", "+0", "+5", "+6", "+1"],
        "decimals.csv": ["3.0", "0.0", "5.0", "6.0", "1.0"],
        "blanks.csv": [" 3", "0 ", "5", "6", " 1 "],  # refused today: the control
        "decimal type.parquet": pa.array([3, 0, 5, 6, 1], pa.decimal128(6, 2)),
    }
    derived = {
        "complement.csv": [str(FILE_N - c) for c in counts],
        "shifted.csv": [f"{c + 1:02d}" for c in counts],
        "halves.csv": [f"{c / 2}" for c in counts],
        "with nulls.parquet": pa.array([3, None, 5, None, 1], pa.int64()),
        "doubled with nulls.parquet": pa.array([6.0, None, 10.0, 12.0, math.nan], pa.float64()),
    }
    published = []

    def release_kept(name: str, column: str, values, refusal: str) -> None:
        path = tmp_path / name.replace(" ", "_")
        out = tmp_path / f"noisy_{path.name}"
        if path.suffix == ".csv":
            path.write_text(f"c,{column}\n" + "".join(f"{c},{v}\n" for c, v in zip(counts, values, strict=True)))
        else:
            pq.write_table(pa.table({"c": counts, column: values}), path)
        status, _, stderr = run_in_process(["release", str(mechanisms["file"]), "--input", str(path),
                                            "--count-column", "c", "--keep", column, "--out", str(out)])
        if status == 0:
            published.append(name)
        else:
            assert refusal in stderr, stderr
        assert not out.exists() or status == 0

    for name, copy in tables.items():
        release_kept(name, "copy", copy, "equals the count column")
    for name, values in derived.items():
        assert affine_in_counts(values.to_pylist() if isinstance(values, pa.Array) else values, [counts],
                                [FILE_N] * len(counts))  # the independent judge agrees it gives the counts away
        release_kept(name, "derived", values, "'derived' is an affine function of the counts")
    assert published == []


# ----------------------------------------------------------------- streaming = one batch
def weights_digest(released) -> str:
    """The documented digest of sampled weights: SHA-256 of W as little-endian int64, row-major
    (the digest a mechanism file records for its weights)."""
    return hashlib.sha256(np.ascontiguousarray(released.weights, dtype="<i8").tobytes()).hexdigest()


def expected_release(seed: int, counts: list[np.ndarray], sizes: np.ndarray, mechanism) -> list[np.ndarray]:
    """The documented seeded release, computed here: count column k's words come from
    ``SeedSequence(seed).spawn(len(counts))[k]``, one per row in row order; a row's draw is its word's
    top K bits; its output is the smallest i with draw < W[0, j] + ... + W[i, j] for its true count j.

    ``mechanism(k, n)``: the certified mechanism of count column k for group size n.
    """
    streams = np.random.SeedSequence(seed).spawn(len(counts))
    expected = []
    for k, truth in enumerate(counts):
        words = np.random.Generator(np.random.PCG64(streams[k])).bit_generator.random_raw(len(truth))
        out = np.full(len(truth), -1, dtype=np.int64)
        for n in np.unique(sizes).tolist():
            released = mechanism(k, n).released
            rows = np.flatnonzero(sizes == n)
            if isinstance(released, StructuralMechanism):  # the structure's documented draw
                out[rows] = documented_outputs(released, sizes[rows], truth[rows], words[rows])
                continue
            cumulative = np.cumsum(np.asarray(released.weights, dtype=np.int64), axis=0)
            rows = np.flatnonzero(sizes == n)
            draws = (words[rows] >> np.uint64(64 - released.K)).astype(np.int64)
            for j in np.unique(truth[rows]).tolist():
                at = rows[truth[rows] == j]
                out[at] = np.searchsorted(cumulative[:, j], draws[truth[rows] == j], side="right")
        expected.append(out)
    return expected


@pytest.fixture(scope="module")
def long_table() -> pa.Table:
    """More than two Parquet batches and two CSV blocks, its length a multiple of neither."""
    rows = 2 * PARQUET_BATCH_ROWS + 12_345
    rng = np.random.default_rng(8)
    n = rng.integers(1, 9, rows)
    table = pa.table({"id": pa.array(np.arange(rows).astype(str)), "n": n, "a": rng.integers(0, n + 1),
                      "b": rng.integers(0, n + 1), "f": rng.integers(0, FILE_N + 1, rows),
                      "label": pa.array(np.array(["north", "south", "east", "west"])[rng.integers(0, 4, rows)])})
    return table


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("form", ["size", "file"])
def test_a_seeded_release_over_many_batches_is_the_documented_draw_row_by_row(mechanisms, long_table, tmp_path,
                                                                              fmt, form):
    path = tmp_path / f"long.{fmt}"
    if fmt == "csv":
        pacsv.write_csv(long_table, path)
        assert path.stat().st_size > 2 * CSV_BLOCK_BYTES
    else:
        pq.write_table(long_table, path, row_group_size=50_000)  # row groups that do not line up with the batches
    cache = MechanismCache(mechanisms["cache"])
    if form == "size":
        columns, head_args = ["a", "b"], []
        tail_args = ["--size-column", "n", "--mechanism", "EM", "--alpha", ",".join(ALPHAS),
                     "--cache", str(mechanisms["cache"])]
        sizes = long_table.column("n").to_numpy()

        def mechanism(k, n):
            return cache.get("EM", n, ALPHAS[k])
    else:
        columns, head_args, tail_args = ["f"], [str(mechanisms["file"])], []
        sizes = np.full(long_table.num_rows, FILE_N)
        design = load_design(mechanisms["file"])

        def mechanism(k, n):
            return design
    counts = [long_table.column(c).to_numpy() for c in columns]
    expected = expected_release(SEED, counts, sizes, mechanism)

    def release(table_path: Path, out: Path) -> tuple[pa.Table, dict]:
        status, _, stderr = run_in_process(["release", *head_args, "--input", str(table_path), "--count-column",
                                            ",".join(columns), "--keep", "id", "--out", str(out),
                                            "--seed", str(SEED), *tail_args])
        assert status == 0, stderr
        read = pq.read_table(out) if fmt == "parquet" else pacsv.read_csv(out)
        return read, json.loads(sidecar_of(out).read_text())

    released, record = release(path, tmp_path / f"noisy.{fmt}")
    for k, name in enumerate(columns):
        got = released.column(f"noisy_{name}").to_numpy()
        assert np.array_equal(got, expected[k]), (name, np.flatnonzero(got != expected[k])[:10])
    served = {(e["count_column"], n) for e in record["mechanisms"]
              for n in ([e["n"]] if "n" in e else range(e["n_min"], e["n_max"] + 1))}
    assert served >= {(c, n) for c in columns for n in np.unique(sizes).tolist()}
    assert sum(e["rows"] for e in record["mechanisms"]) == len(columns) * long_table.num_rows
    for entry in record["mechanisms"]:
        k = columns.index(entry["count_column"])
        sampled = mechanism(k, entry.get("n", entry.get("n_min"))).released
        digest = sampled.digest() if isinstance(sampled, StructuralMechanism) else weights_digest(sampled)
        assert entry["release_weights_sha256"] == digest
    # the table's head, released alone in one batch, is the head of the long release
    head = tmp_path / f"head.{fmt}"
    if fmt == "csv":
        pacsv.write_csv(long_table.slice(0, 1000), head)
    else:
        pq.write_table(long_table.slice(0, 1000), head)
    short, _ = release(head, tmp_path / f"noisy_head.{fmt}")
    for name in short.column_names:
        assert short.column(name).to_pylist() == released.column(name).slice(0, 1000).to_pylist(), name


def test_a_csv_with_line_breaks_in_values_streams_like_one_batch(mechanisms, tmp_path):
    """A valid CSV whose kept text has quoted line breaks: released in one block when small, so it
    must be released, identically row by row, when it spans several blocks."""
    rows = 90_000
    rng = np.random.default_rng(5)
    counts = rng.integers(0, FILE_N + 1, rows)
    notes = [f"visit {r}" + "\n-" * 6 for r in range(rows)]
    path = tmp_path / "notes.csv"
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(["note", "f"])
        writer.writerows([note, int(c)] for note, c in zip(notes, counts, strict=True))
    data = path.read_bytes()
    assert len(data) > 2 * CSV_BLOCK_BYTES
    # the last line break of every block boundary before the end lies inside a quoted value
    for boundary in range(CSV_BLOCK_BYTES, len(data), CSV_BLOCK_BYTES):
        last = data.rfind(b"\n", 0, boundary)
        assert data.count(b'"', 0, last) % 2 == 1, boundary
    small = tmp_path / "few_notes.csv"
    small.write_bytes(data[: data.index(b'"visit 100\n')])  # the first 100 rows, in one block: released
    status, _, stderr = run_in_process(["release", str(mechanisms["file"]), "--input", str(small),
                                        "--count-column", "f", "--keep", "note", "--out", str(tmp_path / "few.csv"),
                                        "--seed", "1"])
    assert status == 0, stderr
    out = tmp_path / "noisy.csv"
    status, _, stderr = run_in_process(["release", str(mechanisms["file"]), "--input", str(path),
                                        "--count-column", "f", "--keep", "note", "--out", str(out),
                                        "--seed", str(SEED)])
    assert status == 0, stderr
    design = load_design(mechanisms["file"])
    (expected,) = expected_release(SEED, [counts], np.full(rows, FILE_N), lambda k, n: design)
    header, written = read_csv_columns(out)
    assert header == ["note", "noisy_f", "mechanism"]
    assert [row[0] for row in written] == notes
    assert np.array_equal(np.array([int(row[1]) for row in written]), expected)


def test_as_count_reads_counts_as_a_person_would():
    assert [as_count(v) for v in (3, "03", " +3 ", 3.0, "3.0", "-0")] == [3, 3, 3, 3, 3, 0]
    assert [as_count(v) for v in (None, True, "x", "", 2.5, "2.5", math.nan, "nan")] == [None] * 8
