"""A records release has every form of the table release: the neighbour audit, ``--levels``,
``--invariant``, ``--budget``, ``--dry-run``; and no true-count table on disk, even when DuckDB
spills or the release is killed.

The neighbour audit (:mod:`tests.helpers.neighbour_audit`) runs a records release on the records
and on neighbours under the records' unit of privacy (one person's non-grouping attributes changed),
with the same seed: every published byte but the noisy values, and every printed line, must be the
same.  A planted neighbour outside the unit (a person moved to another group, which changes the
published group sizes) must be named by the comparator, so the audit cannot pass vacuously.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from countdp.release.partials import PARTIAL
from countdp.release.records import RecordsSettings
from tests.helpers.neighbour_audit import Publication, differences, run_cli

PEOPLE = pa.table({"county": ["a", "a", "a", "b", "b", "c", "c", "c", "c"], "age": [20, 40, 25, 70, 22, 35, 19, 50, 60],
                   "income": [">50K", "<=50K", "<=50K", ">50K", "<=50K", "<=50K", ">50K", ">50K", "<=50K"],
                   "pid": list(range(9))})
ARGS = ["release", "--records", "people.parquet", "--group-by", "county", "--count", "young=age < 30", "--count",
        "rich=income = '>50K'", "--mechanism", "EM", "--total-epsilon", "1", "--seed", "7"]
NOISY = ("noisy_young", "noisy_rich")


def _neighbours() -> list[pa.Table]:
    """Every record's age or income changed (one person's private attributes), one at a time."""
    out = []
    for row in range(PEOPLE.num_rows):
        ages, incomes = PEOPLE.column("age").to_pylist(), PEOPLE.column("income").to_pylist()
        ages[row] = 90 if ages[row] < 30 else 18
        out.append(PEOPLE.set_column(1, "age", pa.array(ages)))
        incomes[row] = "<=50K" if incomes[row] == ">50K" else ">50K"
        out.append(PEOPLE.set_column(2, "income", pa.array(incomes)))
    return out


def _publish(folder, records: pa.Table, argv: list[str]) -> Publication:
    folder.mkdir()
    pq.write_table(records, folder / "people.parquet")
    status, out, err = run_cli(argv, folder)
    names = sorted(os.path.relpath(os.path.join(root, name), folder) for root, _, found in os.walk(folder)
                   for name in found)
    files = {name: (folder / name).read_bytes() for name in names if name != "people.parquet"}
    return Publication(status, out, err, files)


@pytest.mark.parametrize("extra", [["--out", "o.parquet"], ["--out", "o.csv"], ["--out", "o/"], ["--dry-run"],
                                   ["--levels", "1/2,2/3", "--out", "o.parquet"]],
                         ids=["parquet", "csv", "folder", "dry-run", "levels"])
def test_neighbouring_records_publish_the_same_bytes_but_the_noise(tmp_path, extra):
    argv = [a for a in ARGS if a not in ("--total-epsilon", "1")] if "--levels" in extra else ARGS
    base = _publish(tmp_path / "base", PEOPLE, argv + extra)
    assert base.status == 0, base.stderr
    noisy = NOISY + tuple(f"{c}_level{k}" for c in NOISY for k in (1, 2))
    for k, records in enumerate(_neighbours()):
        other = _publish(tmp_path / f"n{k}", records, argv + extra)
        assert differences(base, other, noisy) == [], f"neighbour {k}"


def test_the_audit_names_a_neighbour_outside_the_unit(tmp_path):
    """A person moved from county a to b changes two published group sizes: the comparator must say so."""
    moved = PEOPLE.set_column(0, "county", pa.array(["b"] + PEOPLE.column("county").to_pylist()[1:]))
    base = _publish(tmp_path / "base", PEOPLE, ARGS + ["--out", "o.parquet"])
    other = _publish(tmp_path / "moved", moved, ARGS + ["--out", "o.parquet"])
    found = differences(base, other, NOISY)
    assert "o.parquet column 'n'" in found and "o.parquet column 'mechanism_young'" in found


def test_invariant_and_budget_hold_for_records(tmp_path):
    folder = tmp_path / "r"
    folder.mkdir()
    pq.write_table(PEOPLE, folder / "people.parquet")
    assert run_cli(["budget", "init", "b.ledger", "--epsilon", "2", "--invariant-epsilon", "5"], folder)[0] == 0
    argv = [a for a in ARGS if a not in ("--total-epsilon", "1", "--seed", "7")]
    status, _, err = run_cli(argv + ["--alpha", "1/2", "--invariant", "total", "--budget", "b.ledger", "--out",
                                     "o.parquet"], folder)
    assert status == 0, err
    record = json.loads((folder / "o.parquet.release.json").read_text())
    young = sum(1 for a in PEOPLE.column("age").to_pylist() if a < 30)
    assert record["guarantee"]["columns"][0]["published_totals"] == [{"total": young}]
    assert record["budget"]["account"] == "invariant"
    table = pq.read_table(folder / "o.parquet")
    assert sum(table.column("noisy_young").to_pylist()) == young


def test_a_spilling_grouping_leaves_no_file_behind(tmp_path):
    """With a memory limit far below the grouping's need, DuckDB spills into the release's temporary folder;
    after the release only the table and its sidecar remain."""
    import countdp

    rng = np.random.default_rng(0)
    records = pa.table({"g": rng.integers(0, 400_000, 1_500_000), "age": rng.integers(17, 90, 1_500_000)})
    seen: set[str] = set()
    settings = RecordsSettings(memory_limit_mb=40, threads=1)
    table, record = countdp.release_records(records, ["g"], {"young": "age < 30"}, mechanism="GM", alpha="1/2",
                                            settings=settings, out=tmp_path / "o.parquet",
                                            notes=lambda line: seen.update(os.listdir(tmp_path)))
    assert sorted(os.listdir(tmp_path)) == ["o.parquet", "o.parquet.release.json"]
    assert any(PARTIAL.match(name) for name in seen)  # the temporary folder existed while the release ran
    assert table.num_rows == len(np.unique(records.column("g").to_numpy()))


KILLED = """
import sys, numpy as np, pyarrow as pa, countdp
from countdp.release.records import RecordsSettings
rng = np.random.default_rng(0)
records = pa.table({"g": rng.integers(0, 2_000_000, 6_000_000), "age": rng.integers(17, 90, 6_000_000)})
settings = RecordsSettings(memory_limit_mb=60, threads=1)
print("ready", flush=True)
countdp.release_records(records, ["g"], {"young": "age < 30"}, mechanism="GM", alpha="1/2", settings=settings,
                        out=sys.argv[1])
"""


def test_a_killed_records_release_leaves_only_a_partial_which_the_next_release_removes(tmp_path):
    out = tmp_path / "o.parquet"
    child = subprocess.Popen([sys.executable, "-c", KILLED, str(out)], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait for DuckDB to spill into the release's temporary folder
        partials = [p for p in tmp_path.iterdir() if PARTIAL.match(p.name)]
        if partials and any(name.startswith("duckdb_temp_") for p in partials for name in os.listdir(p)):
            break
        time.sleep(0.05)
    else:
        child.kill()
        pytest.fail("DuckDB never spilled")
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    left = sorted(os.listdir(tmp_path))
    assert all(PARTIAL.match(name) for name in left) and left, left
    assert not out.exists()
    folder = tmp_path / "next"
    folder.mkdir()
    pq.write_table(PEOPLE, folder / "people.parquet")
    status, _, err = run_cli(["release", "--records", str(folder / "people.parquet"), *ARGS[3:], "--out", "o.parquet"],
                             tmp_path)
    assert status == 0, err
    assert sorted(os.listdir(tmp_path)) == ["next", "o.parquet", "o.parquet.release.json"]
