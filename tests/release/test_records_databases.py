"""Groupings kept in memory share one DuckDB database per process, each on a connection of its own.

Opening a database costs far more than grouping a small table (Figure 10's Adult evaluations group the
records 950 times), so :mod:`countdp.release.records_databases` lends each grouping a connection to a
database the process opens once.  What is checked here: a grouping sees nothing another created (in
turn, and two at once in two threads), each result is pandas' count of the same records; a borrowed
connection still reads a declared column with TRY_CAST (DuckDB's ``type_pushdown`` off), so a neighbour's
value that does not convert is NULL; a database whose folder holds a spill file is retired (closed, its
folder removed) when its grouping ends; and a release into a file keeps its own database, as before.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

import countdp
from countdp.release.records import RecordsSettings
from countdp.release.records_databases import SPILL_PREFIX, borrow, shared_folders, sweep_dead_spills
from countdp.release.records_run import group_records


def _records(seed: int, rows: int = 5000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"g": rng.integers(0, 40, rows), "age": rng.integers(17, 90, rows)})


def _expected(frame: pd.DataFrame) -> list[int]:
    return frame.assign(y=frame.age < 30).groupby("g")["y"].sum().astype(int).tolist()


def _grouped(frame: pd.DataFrame, settings: RecordsSettings | None = None) -> list[int]:
    table = group_records(pa.Table.from_pandas(frame, preserve_index=False), ["g"], {"y": "age < 30"},
                          settings=settings)
    return table.column("y").to_pylist()


def test_groupings_in_turn_share_one_database_and_see_nothing_of_each_other():
    first, second = _records(1), _records(2)
    assert _grouped(first) == _expected(first)
    folders = shared_folders()
    assert len(folders) == 1 and folders[0].is_dir()
    assert _grouped(second) == _expected(second)
    assert _grouped(first) == _expected(first)
    assert shared_folders() == folders  # the same database, opened once


def test_two_groupings_at_once_in_two_threads():
    frames = [_records(seed, 200_000) for seed in (3, 4)]
    found: dict[int, list[int]] = {}
    threads = [threading.Thread(target=lambda k=k: found.__setitem__(k, _grouped(frames[k]))) for k in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == {0: _expected(frames[0]), 1: _expected(frames[1])}


def test_a_borrowed_connection_reads_a_declared_column_with_try_cast(tmp_path):
    """With ``type_pushdown`` on, DuckDB would read ``age`` as an INTEGER in the CSV reader and stop on ``3x``."""
    counts = []
    for k, last in enumerate(["30", "3x"]):
        path = tmp_path / f"people{k}.csv"
        path.write_text("g,age\n" + "".join(f"{g},{a}\n" for g, a in [("a", "10"), ("a", "40"), ("b", last)]))
        table = group_records(path, ["g"], {"y": "age < 35"}, types={"age": "INTEGER"})
        counts.append(table.column("y").to_pylist())
    assert counts == [[1, 1], [1, 0]]
    con, give_back = borrow(RecordsSettings())
    try:
        assert con.execute("SELECT current_setting('disabled_optimizers')").fetchone()[0] == "type_pushdown"
    finally:
        give_back()


def test_a_database_that_spilled_is_retired_with_its_folder():
    settings = RecordsSettings(memory_limit_mb=512)  # settings of their own: a database of its own
    before = set(shared_folders())
    con, give_back = borrow(settings)
    (folder,) = set(shared_folders()) - before
    assert con.execute("SELECT current_setting('temp_directory')").fetchone()[0] == str(folder)
    (folder / "duckdb_temp_storage-0.tmp").write_bytes(b"spilled")  # as a spill would leave it
    give_back()
    give_back()  # closing twice gives the connection back once
    assert not folder.exists() and folder not in shared_folders()
    assert _grouped(_records(5), settings) == _expected(_records(5))  # the next grouping opens a new database
    assert len(set(shared_folders()) - before) == 1


def test_a_release_into_a_file_keeps_its_own_database(tmp_path):
    before = shared_folders()
    frame = _records(6)
    table, _ = countdp.release_records(frame, ["g"], {"y": "age < 30"}, mechanism="EM", alpha="1/1000000000",
                                       seed=3, out=tmp_path / "o.parquet",
                                       settings=RecordsSettings(memory_limit_mb=64))
    assert shared_folders() == before  # no shared database opened for its settings
    assert table["noisy_y"].tolist() == _expected(frame)


CHILD = """
import sys, time
from countdp.release.records import RecordsSettings
from countdp.release.records_databases import borrow, shared_folders
con, give_back = borrow(RecordsSettings(memory_limit_mb=96))
(folder,) = shared_folders()
(folder / "duckdb_temp_storage-0.tmp").write_bytes(b"records spilled")  # as a spill would leave it
print(folder, flush=True)
time.sleep(600)
"""


def test_a_killed_processs_spill_folder_is_removed_by_the_next_shared_database():
    """SIGKILL skips ``atexit``: the killed study's spill folder, which may hold spilled records, stays in the
    temporary folder until the next shared database opened removes it; a live process's folder is kept."""
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    try:
        folder = Path(child.stdout.readline().strip())
        assert folder.name.startswith(f"{SPILL_PREFIX}{child.pid}-") and folder.is_dir()
        assert sweep_dead_spills() == []  # alive: kept
        child.kill()
        child.wait()
        assert folder.is_dir()  # nothing of the child's removed it
        con, give_back = borrow(RecordsSettings(memory_limit_mb=97))  # a new shared database
        give_back()
        assert not folder.exists()
        mine = [f for f in shared_folders() if f.exists()]
        assert all(f.name.startswith(f"{SPILL_PREFIX}{os.getpid()}-") for f in mine)
    finally:
        child.kill()
        child.wait()
