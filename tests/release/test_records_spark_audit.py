"""The records neighbour audit on Spark (real local mode): on the driver path and in the executors,
neighbouring records publish the same bytes but the noise, and print the same lines.

The unit of privacy is the records' (one person's non-grouping attributes changed); the comparator is
:mod:`tests.helpers.neighbour_audit`'s.  The executor path is reached through the settings passed in
(``RecordsSettings``: a few groups already count as many), so its parts, their names and the sidecar's
``partitions`` are compared too.  A person moved to another group (outside the unit: it changes two
published sizes) must be named, so the audit cannot pass vacuously on either path.
"""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import countdp
from countdp.release.records import RecordsSettings
from tests.helpers.neighbour_audit import Publication, differences, run_cli

pytestmark = pytest.mark.spark

PEOPLE = pa.table({"county": [c for c in "abcdef" for _ in range(2)],
                   "age": [20, 40, 25, 70, 22, 35, 19, 50, 60, 29, 31, 45],
                   "income": [">50K", "<=50K"] * 3 + ["<=50K", ">50K"] * 3})
COUNTS = {"young": "age < 30", "rich": "income = '>50K'"}
NOISY = ("noisy_young", "noisy_rich")
EXECUTORS = RecordsSettings(executor_groups=2, part_groups=4)
"""Six groups drawn in the executors, in two parts."""
CLI = ["release", "--records", "people.parquet", "--group-by", "county", "--count", "young=age < 30", "--count",
       "rich=income = '>50K'", "--mechanism", "EM", "--alpha", "1/2", "--seed", "7", "--engine", "spark",
       "--spark-master", "local[2]"]


def neighbours(most: int = 5) -> list[tuple[str, pa.Table]]:
    """A seeded sample of the records' neighbours: one person's age or income changed."""
    found = []
    for row in range(PEOPLE.num_rows):
        ages, incomes = PEOPLE.column("age").to_pylist(), PEOPLE.column("income").to_pylist()
        ages[row] = 90 if ages[row] < 30 else 18
        found.append((f"age of record {row}", PEOPLE.set_column(1, "age", pa.array(ages))))
        incomes[row] = "<=50K" if incomes[row] == ">50K" else ">50K"
        found.append((f"income of record {row}", PEOPLE.set_column(2, "income", pa.array(incomes))))
    return random.Random(3).sample(found, most)


def moved() -> pa.Table:
    """Outside the unit: the first person moved from county a to b."""
    return PEOPLE.set_column(0, "county", pa.array(["b"] + PEOPLE.column("county").to_pylist()[1:]))


def _published(folder) -> dict[str, bytes]:
    names = sorted(os.path.relpath(os.path.join(root, name), folder) for root, _, found in os.walk(folder)
                   for name in found)
    return {name: (folder / name).read_bytes() for name in names if name != "people.parquet"}


def by_cli(folder, records: pa.Table, out: str) -> Publication:
    folder.mkdir()
    pq.write_table(records, folder / "people.parquet")
    status, stdout, stderr = run_cli([*CLI, "--out", out], folder)
    return Publication(status, stdout, stderr, _published(folder))


def by_executors(folder, records: pa.Table, cache, capfd) -> Publication:
    """``release_records`` into ``folder/o/`` through the executor path; what it printed, at both levels."""
    folder.mkdir()
    pq.write_table(records, folder / "people.parquet")
    capfd.readouterr()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        countdp.release_records("people.parquet", ["county"], COUNTS, mechanism="EM", alpha="1/2", cache=cache,
                                seed=7, engine="spark", settings=EXECUTORS, out="o/")
    finally:
        os.chdir(cwd)
    printed = capfd.readouterr()
    return Publication(0, printed.out, printed.err, _published(folder))


@pytest.mark.parametrize("out", ["o.parquet", "o/"], ids=["table", "folder"])
def test_neighbouring_records_on_spark_publish_the_same_bytes_but_the_noise(spark, tmp_path, out):
    base = by_cli(tmp_path / "base", PEOPLE, out)
    assert base.status == 0, base.stderr
    assert base.files, "nothing was published"
    for k, (label, records) in enumerate(neighbours()):
        assert differences(base, by_cli(tmp_path / f"n{k}", records, out), NOISY) == [], label
    found = differences(base, by_cli(tmp_path / "moved", moved(), out), NOISY)
    assert any(name.endswith("column 'n'") for name in found), found


def test_neighbouring_records_in_the_executors_publish_the_same_bytes_but_the_noise(spark, tmp_path, capfd):
    cache = tmp_path / "cache"
    by_executors(tmp_path / "warm-up", PEOPLE, cache, capfd)  # the mechanisms designed once, as in every run after
    base = by_executors(tmp_path / "base", PEOPLE, cache, capfd)
    parts = sorted(name for name in base.files if name.startswith("o/table.parquet/"))
    assert parts == ["o/table.parquet/part-00000.parquet", "o/table.parquet/part-00001.parquet"], sorted(base.files)
    for k, (label, records) in enumerate(neighbours()):
        assert differences(base, by_executors(tmp_path / f"n{k}", records, cache, capfd), NOISY) == [], label
    found = differences(base, by_executors(tmp_path / "moved", moved(), cache, capfd), NOISY)
    assert any(name.endswith("column 'n'") for name in found), found
