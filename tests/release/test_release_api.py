"""The Python API of a table release (:func:`countdp.release_table`): the command line's engine and checks.

A seeded release through the API must give the very table the command line gives on the same table
written as Parquet (the same engine, the same streams); each kind of source comes back in its own
kind; ``out=`` writes the table and its sidecar under one commit, and the sidecar on disk is the
record returned; refusals are one ``ValueError`` line naming the keyword, and leave nothing.
"""

from __future__ import annotations

import json
import os

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import countdp
from countdp.cli import main

ROWS = 300


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = rng.integers(2, 30, ROWS)
    return pd.DataFrame({"region": rng.choice(["north", "south", "east"], ROWS), "n": n, "a": rng.integers(0, n + 1),
                         "b": rng.integers(0, n + 1)})


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


ARGS = {"counts": ["a", "b"], "size": "n", "mechanism": "EM", "total_epsilon": "1", "keep": ["region", "n"]}


def _cli(folder, table: pd.DataFrame, cache, *extra) -> pd.DataFrame:
    source = folder / "t.parquet"
    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), source)
    code = main(["release", "--input", str(source), "--count-column", "a,b", "--size-column", "n", "--mechanism",
                 "EM", "--total-epsilon", "1", "--keep", "region,n", "--cache", str(cache), "--seed", "11",
                 "--out", str(folder / "cli.parquet"), *extra])
    assert code == 0
    return pq.read_table(folder / "cli.parquet").to_pandas()


def test_a_seeded_release_of_a_dataframe_is_the_cli_release_of_the_same_table(tmp_path, frame, cache):
    table, record = countdp.release_table(frame, **ARGS, cache=cache, seed=11)
    expected = _cli(tmp_path, frame, cache)
    assert isinstance(table, pd.DataFrame)
    pd.testing.assert_frame_equal(table, expected, check_dtype=False, check_categorical=False)
    assert record["input"] == {"kind": "pandas DataFrame", "rows": ROWS}
    assert record["output"]["path"] is None
    assert list(table.columns) == ["region", "n", "noisy_a", "noisy_b", "mechanism_a", "mechanism_b"]
    # the noise is real: the noisy counts are not the true ones everywhere
    assert (table["noisy_a"] != frame["a"]).any()


@pytest.mark.parametrize("kind", ["polars", "arrow", "duckdb"])
def test_each_source_comes_back_in_its_own_kind(frame, cache, kind):
    arrow = pa.Table.from_pandas(frame, preserve_index=False)
    source = {"polars": pl.from_arrow(arrow), "arrow": arrow, "duckdb": duckdb.from_arrow(arrow)}[kind]
    table, _ = countdp.release_table(source, **ARGS, cache=cache, seed=11)
    reference, _ = countdp.release_table(frame, **ARGS, cache=cache, seed=11)
    back = {"polars": lambda t: t.to_pandas(), "arrow": lambda t: t.to_pandas(),
            "duckdb": lambda t: t.df()}[kind](table)
    assert type(table).__module__.split(".")[0] == {"polars": "polars", "arrow": "pyarrow",
                                                     "duckdb": "duckdb"}[kind]
    pd.testing.assert_frame_equal(back, reference, check_dtype=False, check_categorical=False)


def test_out_writes_table_and_sidecar_together_and_returns_both(tmp_path, frame, cache):
    out = tmp_path / "noisy.parquet"
    table, record = countdp.release_table(frame, **ARGS, cache=cache, seed=3, out=out)
    assert sorted(os.listdir(tmp_path)) == ["noisy.parquet", "noisy.parquet.release.json"]
    pd.testing.assert_frame_equal(pq.read_table(out).to_pandas(), table, check_dtype=False, check_categorical=False)
    assert json.loads((tmp_path / "noisy.parquet.release.json").read_text()) == json.loads(json.dumps(record))
    folder, folder_record = countdp.release_table(frame, **ARGS, cache=cache, seed=3, out=f"{tmp_path}/rel/")
    assert sorted(os.listdir(tmp_path / "rel")) == ["table.parquet", "table.parquet.release.json"]
    pd.testing.assert_frame_equal(folder, table, check_dtype=False, check_categorical=False)


def test_a_path_comes_back_as_arrow_or_as_the_path_written(tmp_path, frame, cache):
    source = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), source)
    table, record = countdp.release_table(source, **ARGS, cache=cache, seed=4)
    assert isinstance(table, pa.Table) and table.num_rows == ROWS and record["input"]["path"] == str(source)
    written, _ = countdp.release_table(str(source), **ARGS, cache=cache, seed=4, out=tmp_path / "o.parquet")
    assert written == tmp_path / "o.parquet"
    assert pq.read_table(written).equals(table)


def test_a_budget_is_debited_and_a_dry_run_draws_nothing(tmp_path, frame, cache):
    ledger = tmp_path / "b.ledger"
    assert main(["budget", "init", str(ledger), "--epsilon", "3/2"]) == 0
    args = {**ARGS, "cache": cache}
    nothing, text = countdp.release_table(frame, **args, budget=ledger, dry_run=True)
    assert nothing is None and "# dry run: 300 rows of pandas DataFrame checked" in text
    assert "(0.5) would remain" in text
    table, record = countdp.release_table(frame, **args, budget=ledger)
    assert record["budget"]["remaining_after"] in ("1/2", "0.5") and record["randomness"]["source"] == "os.urandom"
    with pytest.raises(ValueError) as refused:
        countdp.release_table(frame, **args, budget=ledger)
    assert "\n" not in str(refused.value) and str(ledger) in str(refused.value)


@pytest.mark.parametrize(("change", "message"), [
    ({"alpha": "1/2"}, "give exactly one of alpha=, epsilon=, total_epsilon=, levels= and target_alpha="),
    ({"counts": ["a", "zz"]}, "pandas DataFrame: no column 'zz'"),
    ({"keep": ["region", "a"]}, "keep names the count column 'a'"),
    ({"mechanism": None}, "size= needs mechanism="),
    ({"levels": "2/3,1/2", "total_epsilon": None}, "levels= must increase strictly"),
    ({"invariant_by": "region"}, "invariant_by= goes with invariant= total"),
    ({"seed": -1}, "seed= must be an integer >= 0, got -1"),  # once numpy's "expected non-negative integer"
    ({"seed": 1.5}, "seed= must be an integer >= 0, got 1.5"),
    ({"seed": True}, "seed= must be an integer >= 0, got True"),
])
def test_refusals_are_one_line_naming_the_keyword(tmp_path, frame, cache, change, message):
    with pytest.raises(ValueError) as refused:
        countdp.release_table(frame, **{**ARGS, **change}, cache=cache, out=tmp_path / "o.parquet")
    assert message in str(refused.value) and "\n" not in str(refused.value)
    assert os.listdir(tmp_path) == []


def test_a_source_of_another_kind_is_refused():
    with pytest.raises(ValueError, match="source must be a path, a pandas or Polars DataFrame"):
        countdp.release_table([1, 2, 3], counts=["a"])
