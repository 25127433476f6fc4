"""Records grouped by Spark in local mode: the same table as DuckDB, the same refusals, from a path, a
Spark DataFrame, and the command line (``--engine spark``).

One Spark session serves every test (the ``spark`` fixture, session scope); the tests skip, saying
why, only where no Java runtime is installed (CI installs Java 17).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import countdp
from countdp.cli import main

pytestmark = pytest.mark.spark

COUNTS = {"young": "age < 30", "rich": "income = '>50K'"}


@pytest.fixture(scope="module")
def people() -> pd.DataFrame:
    rng = np.random.default_rng(9)
    rows = 3000
    return pd.DataFrame({"county": rng.choice(["a", "b", "c", None], rows), "band": rng.integers(0, 5, rows),
                         "age": rng.integers(17, 90, rows), "income": rng.choice([">50K", "<=50K"], rows),
                         "pid": np.arange(rows)})


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


def _release(source, engine, cache, **extra):
    return countdp.release_records(source, ["county", "band"], COUNTS, mechanism="EM", total_epsilon=1, cache=cache,
                                   seed=13, engine=engine, **extra)


def test_a_seeded_release_is_the_same_table_on_spark_as_on_duckdb(spark, tmp_path, people, cache):
    source = tmp_path / "people.parquet"
    pq.write_table(pa.Table.from_pandas(people, preserve_index=False), source)
    on_spark, record = _release(source, "spark", cache)
    on_duckdb, _ = _release(source, "duckdb", cache)
    assert on_spark.equals(on_duckdb)
    assert on_spark.num_rows == people.groupby(["county", "band"], dropna=False).ngroups
    assert record["input"]["records"]["engine"] == "spark"
    assert record["input"]["records"]["partitions"] >= 1


def test_a_spark_dataframe_comes_back_as_one(spark, people, cache):
    frame = spark.createDataFrame(people)
    table, record = _release(frame, None, cache)
    assert type(table).__name__ == "DataFrame" and type(table).__module__.startswith("pyspark")
    expected, _ = _release(people, "duckdb", cache)
    pd.testing.assert_frame_equal(table.toPandas().astype(str), expected.astype(str))
    assert record["input"]["records"]["source"] == "Spark DataFrame"


def test_the_command_line_groups_on_spark_and_commits_both_files(spark, tmp_path, people, cache):
    source = tmp_path / "people.parquet"
    pq.write_table(pa.Table.from_pandas(people, preserve_index=False), source)
    code = main(["release", "--records", str(source), "--group-by", "county,band", "--count", "young=age < 30",
                 "--engine", "spark", "--mechanism", "EM", "--alpha", "1/2", "--cache", str(cache), "--out",
                 f"{tmp_path}/o/"])
    assert code == 0
    assert sorted(os.listdir(tmp_path / "o")) == ["table.parquet", "table.parquet.release.json"]
    assert sorted(os.listdir(tmp_path)) == ["o", "people.parquet"]


@pytest.mark.parametrize(("count", "message"), [
    ("young=agee < 30", "UNRESOLVED_COLUMN"),
    ("young=age + 1", "not a true-or-false expression over the records (it gives BIGINT)"),
    ("young=count(*) > 1", "INVALID_AGGREGATE_FILTER"),
    ("young=age < 3; select 1", "not one expression"),
    ("young=age < (SELECT max(age) FROM countdp_records)", "a subquery reads beyond the record"),
    ("young=age IN (SELECT 30)", "a subquery reads beyond the record"),
    ("young=EXISTS (SELECT 1 FROM countdp_records WHERE age > 60)", "a subquery reads beyond the record"),
])
def test_a_bad_predicate_is_refused_by_spark_in_one_line(spark, tmp_path, people, capsys, count, message):
    source = tmp_path / "people.parquet"
    pq.write_table(pa.Table.from_pandas(people, preserve_index=False), source)
    code = main(["release", "--records", str(source), "--group-by", "county,band", "--count", count, "--engine",
                 "spark", "--mechanism", "EM", "--alpha", "1/2", "--out", str(tmp_path / "o.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert os.listdir(tmp_path) == ["people.parquet"]


def test_one_record_per_person_on_spark(spark, people, cache):
    doubled = pd.concat([people, people.assign(band=(people.band + 1) % 5)], ignore_index=True)
    with pytest.raises(ValueError, match=f"{len(people)} people appear in more than one record"):
        _release(doubled, "spark", cache, person_id="pid")
    table, _ = _release(doubled, "spark", cache, person_id="pid", one_record_per_person="random")
    assert table["n"].sum() == len(people)


def test_release_table_takes_a_spark_dataframe_and_returns_one(spark, people, cache):
    groups = people.groupby(["county", "band"]).size().reset_index(name="n")
    groups["young"] = groups["n"] // 2
    args = {"counts": ["young"], "size": "n", "mechanism": "EM", "alpha": "1/2", "keep": ["county", "band", "n"],
            "cache": cache, "seed": 2}
    table, record = countdp.release_table(spark.createDataFrame(groups), **args)
    expected, _ = countdp.release_table(groups, **args)
    assert type(table).__module__.startswith("pyspark") and record["input"]["kind"] == "Spark DataFrame"
    pd.testing.assert_frame_equal(table.toPandas().astype(str), expected.astype(str))
