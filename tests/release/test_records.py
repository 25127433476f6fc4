"""Records in, a release out, grouped by DuckDB (``countdp release --records``, :func:`countdp.release_records`).

The grouping is checked against pandas' groupby of the same records (an independent count), and a
seeded records release against the seeded table release of that pandas table: the same noisy values.
The records may be Parquet, CSV, a glob or a Hive-partitioned folder, and a DataFrame; predicates and
names are refused in one line before anything runs, leaving nothing; a person in several records is
refused with the number of such people, or one record each is kept, chosen at random.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import countdp
from countdp.cli import main
from countdp.release.options import CLI
from countdp.release.records import build_spec
from countdp.release.records_duckdb import duckdb_records

RECORDS = 4000
COUNTS = {"young": "age < 30", "rich": "income = '>50K'"}


@pytest.fixture(scope="module")
def people() -> pd.DataFrame:
    rng = np.random.default_rng(8)
    return pd.DataFrame({"county": rng.choice(["a", "b", "c"], RECORDS), "band": rng.integers(0, 4, RECORDS),
                         "age": rng.integers(17, 90, RECORDS), "income": rng.choice([">50K", "<=50K"], RECORDS),
                         "pid": rng.integers(0, 3000, RECORDS)})


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


def pandas_groups(people: pd.DataFrame) -> pd.DataFrame:
    """The true counts by pandas: what the grouping must find, computed without DuckDB."""
    marked = people.assign(young=people.age < 30, rich=people.income == ">50K")
    grouped = marked.groupby(["county", "band"], sort=True)
    return pd.DataFrame({"n": grouped.size(), "young": grouped.young.sum(), "rich": grouped.rich.sum()}).reset_index()


def grouped(source, person_id=None, one=None, seed=None, types=None) -> pd.DataFrame:
    spec = build_spec(["county", "band"], COUNTS, "n", person_id, one, CLI, types)
    found = duckdb_records(source, spec, None, CLI, seed)
    try:
        return pd.concat([b.to_pandas() for b in found.batches(found.columns)], ignore_index=True)
    finally:
        found.close()


def test_the_grouping_is_pandas_groupby(people):
    pd.testing.assert_frame_equal(grouped(people), pandas_groups(people), check_dtype=False)


@pytest.mark.parametrize("form", ["parquet", "csv", "glob", "partitioned"])
def test_files_are_read_in_place_in_every_form(tmp_path, people, form):
    table = pa.Table.from_pandas(people, preserve_index=False)
    if form == "parquet":
        source = tmp_path / "p.parquet"
        pq.write_table(table, source)
    elif form == "csv":
        source = tmp_path / "p.csv"
        pacsv.write_csv(table, source)
    elif form == "glob":
        for k in range(3):
            pq.write_table(table.slice(k * 1500, 1500), tmp_path / f"part{k}.parquet")
        source = f"{tmp_path}/part*.parquet"
    else:
        pq.write_to_dataset(table, tmp_path / "folder", partition_cols=["county"])
        source = tmp_path / "folder"
    # a CSV column is text: its types are declared (a Parquet file's own schema is taken as declared)
    found = grouped(source, types={"band": "BIGINT", "age": "INTEGER"} if form == "csv" else None)
    found["county"] = found["county"].astype(str)
    pd.testing.assert_frame_equal(found, pandas_groups(people), check_dtype=False)


def test_a_seeded_records_release_is_the_table_release_of_the_pandas_groups(tmp_path, people, cache):
    source = tmp_path / "people.parquet"
    pq.write_table(pa.Table.from_pandas(people, preserve_index=False), source)
    args = ["--mechanism", "EM", "--total-epsilon", "1", "--cache", str(cache), "--seed", "5"]
    assert main(["release", "--records", str(source), "--group-by", "county,band", "--count", "young=age < 30",
                 "--count", "rich=income = '>50K'", *args, "--out", str(tmp_path / "r.parquet")]) == 0
    table = tmp_path / "groups.parquet"
    pq.write_table(pa.Table.from_pandas(pandas_groups(people), preserve_index=False), table)
    assert main(["release", "--input", str(table), "--count-column", "young,rich", "--size-column", "n",
                 "--keep", "county,band,n", *args, "--out", str(tmp_path / "t.parquet")]) == 0
    released, expected = (pq.read_table(tmp_path / name).to_pandas() for name in ("r.parquet", "t.parquet"))
    pd.testing.assert_frame_equal(released, expected, check_dtype=False, check_categorical=False)
    assert sorted(os.listdir(tmp_path)) == sorted(["people.parquet", "groups.parquet", "r.parquet",
                                                   "r.parquet.release.json", "t.parquet", "t.parquet.release.json"])


def test_the_python_api_returns_the_records_kind(people, cache):
    table, record = countdp.release_records(people, ["county", "band"], COUNTS, mechanism="EM", total_epsilon=1,
                                            cache=cache)
    assert isinstance(table, pd.DataFrame)
    assert list(table.columns) == ["county", "band", "n", "noisy_young", "noisy_rich", "mechanism_young",
                                   "mechanism_rich"]
    assert table["n"].tolist() == pandas_groups(people)["n"].tolist()
    assert record["input"]["records"]["engine"] == "duckdb"
    assert "published exactly" in record["input"]["records"]["public"]
    assert "group-by columns" in record["guarantee"]["unit_of_privacy"]


@pytest.mark.parametrize(("count", "message"), [
    ("young=agee < 30", "--count young='agee < 30': Binder Error: Referenced column \"agee\" not found"),
    ("young=age + 1", "not a true-or-false expression over the records (it gives BIGINT)"),
    ("young=age <", "Parser Error: syntax error"),
    ("young=count(*) > 1", "aggregate functions are not allowed"),
    ("young=age < 3); select (1", "not one expression"),
    # reading other people's records: one person would move others' counts, past the guarantee
    ("young=age < (SELECT max(age) FROM countdp_records)", "a subquery reads beyond the record"),
    ("young=age IN (SELECT 30)", "a subquery reads beyond the record"),
    ("young=EXISTS (SELECT 1 FROM countdp_records WHERE age > 60)", "a subquery reads beyond the record"),
    ("young", "give NAME=PREDICATE"),
    ("n=age < 3", "two columns named 'n'"),
])
def test_a_bad_predicate_is_refused_in_one_line_leaving_nothing(tmp_path, people, capsys, count, message):
    source = tmp_path / "people.parquet"
    pq.write_table(pa.Table.from_pandas(people, preserve_index=False), source)
    code = main(["release", "--records", str(source), "--group-by", "county,band", "--count", count,
                 "--mechanism", "EM", "--alpha", "1/2", "--out", str(tmp_path / "o.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1
    assert os.listdir(tmp_path) == ["people.parquet"]


def test_a_person_in_several_records_is_refused_with_their_number(tmp_path, people, capsys):
    source = tmp_path / "people.parquet"
    pq.write_table(pa.Table.from_pandas(people, preserve_index=False), source)
    several = sum(1 for k in Counter(people.pid).values() if k > 1)
    assert several > 100  # the fixture has such people: the refusal below must name them
    code = main(["release", "--records", str(source), "--group-by", "county,band", "--count", "y=age < 30",
                 "--person-id", "pid", "--mechanism", "EM", "--alpha", "1/2", "--out", str(tmp_path / "o.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and f"{several} people appear in more than one record (--person-id 'pid')" in err
    assert os.listdir(tmp_path) == ["people.parquet"]


def test_one_record_per_person_keeps_one_of_each_chosen_at_random(people):
    first, second = grouped(people, "pid", "random"), grouped(people, "pid", "random")
    assert first["n"].sum() == second["n"].sum() == people.pid.nunique()
    # each person kept one record: every group holds at most the records it had, and the choice is random
    whole = pandas_groups(people)
    assert (first["n"].to_numpy() <= whole.set_index(["county", "band"]).loc[
        list(zip(first.county, first.band, strict=True)), "n"].to_numpy()).all()
    assert not first.equals(second)  # two keys from os.urandom choose differently (a tie has probability ~0)
    assert grouped(people, "pid", "random", seed=3).equals(grouped(people, "pid", "random", seed=3))


def test_a_person_id_among_the_group_by_columns_is_refused():
    with pytest.raises(ValueError, match="is a --group-by column"):
        build_spec(["county", "pid"], COUNTS, "n", "pid", None, CLI)
