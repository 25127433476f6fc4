"""What a release publishes: nothing computed from a confidential value except through the noise.

Each test here closes a hole that a hostile reader found (docs/threat-model.md), and each fails
on the code before the fix: the input's digest in the sidecar, lone or pinned invariant
partitions, derived kept columns and columns published by default, a seeded release spending
a budget, a dry run that printed a guarantee computed at the confidential total.
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from countdp.cli import main


def _release(tmp_path: Path, table: Path, *extra: str, out: str = "noisy.csv") -> tuple[int, Path]:
    target = tmp_path / out
    code = main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--mechanism", "EM",
                 "--alpha", "2/3", "--out", str(target), *extra])
    return code, target


def _csv(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def _nothing_written(folder: Path, before: set[str]) -> bool:
    return {p.name for p in folder.iterdir()} == before


# ------------------------------------------------------------------ no digest of the input


def test_no_byte_published_holds_the_input_digest(tmp_path):
    """The adversary who knows every row but one hashed each candidate table to recover the last count."""
    rng = np.random.default_rng(1)
    sizes = rng.integers(1, 12, 40)
    table = _csv(tmp_path / "t.csv", "n,c", [f"{n},{rng.integers(0, n + 1)}" for n in sizes])
    code, out = _release(tmp_path, table)
    assert code == 0
    digest = hashlib.sha256(table.read_bytes()).hexdigest()
    published = out.read_bytes() + Path(str(out) + ".release.json").read_bytes()
    assert digest.encode() not in published and digest.upper().encode() not in published
    sidecar = json.loads(Path(str(out) + ".release.json").read_text())
    assert set(sidecar["input"]) == {"path", "rows"} and "threat-model" in sidecar["threat_model"]


# ------------------------------------------------------------------ default-deny publication


def test_columns_beside_the_counts_need_keep_and_the_refusal_lists_them(tmp_path, capsys):
    table = _csv(tmp_path / "t.csv", "region,n,c,young", ["a,4,1,2", "b,5,2,3", "c,6,3,1"])
    before = {p.name for p in tmp_path.iterdir()}
    code, _ = _release(tmp_path, table)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "'region'" in err and "'young'" in err and "--keep" in err and str(table) in err
    assert _nothing_written(tmp_path, before)
    code, out = _release(tmp_path, table, "--keep", "region")
    assert code == 0
    assert out.read_text().splitlines()[0] == "region,noisy_c,mechanism"


def test_a_table_of_sizes_and_counts_publishes_its_sizes_by_default(tmp_path):
    table = _csv(tmp_path / "t.csv", "n,c", ["4,1", "5,2"])
    code, out = _release(tmp_path, table)
    assert code == 0 and out.read_text().splitlines()[0] == "n,noisy_c,mechanism"


def _derived_table(tmp_path: Path, name: str, derive, rows: int = 60, null_row: int | None = None) -> Path:
    rng = np.random.default_rng(5)
    n = rng.integers(2, 15, rows)
    c = rng.integers(0, n + 1)
    x = [derive(int(a), int(b)) for a, b in zip(c, n, strict=True)]
    values = pa.array([None if r == null_row else v for r, v in enumerate(x)])
    path = tmp_path / f"{name}.parquet"
    pq.write_table(pa.table({"n": n, "c": c, "x": values}), path)
    return path


@pytest.mark.parametrize("name,derive,null_row", [
    ("complement", lambda c, n: n - c, None),
    ("plus_one", lambda c, n: c + 1, None),
    ("scaled", lambda c, n: 2.5 * c - 3 * n + 7, None),
    ("text_copy", lambda c, n: f"0{c}", None),
    ("copy_with_a_null", lambda c, n: c, 17),
    ("complement_with_a_null", lambda c, n: n - c, 3),
])
def test_a_kept_affine_function_of_the_counts_is_refused(tmp_path, capsys, name, derive, null_row):
    table = _derived_table(tmp_path, name, derive, null_row=null_row)
    before = {p.name for p in tmp_path.iterdir()}
    code, _ = _release(tmp_path, table, "--keep", "x", out="noisy.parquet")
    err = capsys.readouterr().err
    assert code == 2 and "'x'" in err and ("affine function of the counts" in err or "equals the count" in err)
    assert _nothing_written(tmp_path, before)


def test_a_csv_column_of_counts_plus_one_with_a_blank_cell_is_refused(tmp_path, capsys):
    """A blank CSV cell is a missing value, not a reason to stop checking the column."""
    table = _csv(tmp_path / "t.csv", "n,c,g", ["9,1,2", "9,4,", "9,2,3", "9,6,7", "9,3,4"])
    code, _ = _release(tmp_path, table, "--keep", "g")
    err = capsys.readouterr().err
    assert code == 2 and "'g' is an affine function of the counts" in err and "(1*count + 1)" in err, err


@pytest.mark.parametrize("name,derive", [
    ("size_copy", lambda c, n: n),
    ("size_affine", lambda c, n: 3 * n - 1),
    ("copy_wrong_on_one_row", None),
])
def test_a_kept_function_of_the_sizes_alone_is_published(tmp_path, name, derive):
    """The sizes are public; a column wrong on one row is not affine (default-deny covers it: it was named)."""
    if derive is None:
        counter = iter(range(10**6))
        derive = (lambda c, n: c + 1 if next(counter) == 30 else c)  # noqa: E731
    table = _derived_table(tmp_path, name, derive)
    code, _ = _release(tmp_path, table, "--keep", "x", out="noisy.parquet")
    assert code == 0


def test_a_copy_of_counts_that_equal_the_sizes_is_still_refused(tmp_path, capsys):
    """Where every count equals its group size, a kept copy is an exact function of the public sizes, so the
    affine check alone would publish it; but a neighbour's count differs from its size, and the copy with
    it. The copy check refuses it: it follows the counts, not what they happen to equal."""
    from countdp.release.derived import AffineWatch

    rows = [(n, n) for n in range(1, 41)]
    table = _csv(tmp_path / "t.csv", "n,c,x", [f"{n},{c},{c}" for n, c in rows])
    watch = AffineWatch("x", 1)
    sizes = np.array([n for n, _ in rows], dtype=np.int64)
    watch.feed(pa.array(sizes), [sizes.copy()], sizes)
    assert watch.derived() is None  # the affine check alone calls it public
    code, _ = _release(tmp_path, table, "--keep", "x")
    assert code == 2 and "'x' equals the count column 'c'" in capsys.readouterr().err


def test_the_affine_check_fails_when_it_should_not_be_fooled_by_a_tiny_table(tmp_path):
    """With no more rows than free parameters any column fits: a tiny table's kept column is not flagged."""
    table = _csv(tmp_path / "t.csv", "n,c,x", ["4,1,7", "5,2,3", "6,3,12"])
    code, _ = _release(tmp_path, table, "--keep", "x")
    assert code == 0


def test_nested_kept_columns_are_refused(tmp_path, capsys):
    n = np.array([4, 5, 6, 7])
    c = np.array([1, 2, 3, 4])
    table = tmp_path / "t.parquet"
    pq.write_table(pa.table({"n": n, "c": c, "l": pa.array([[int(v)] for v in c]),
                             "s": pa.array([{"v": int(v)} for v in c])}), table)
    for column in ("l", "s"):
        code, _ = _release(tmp_path, table, "--keep", column, out=f"{column}.parquet")
        assert code == 2 and "nested" in capsys.readouterr().err


# ------------------------------------------------------------------ invariant partitions


@pytest.mark.parametrize("rows,by,word", [
    (["x,5,2", "y,6,3", "y,4,1"], "g", "single group"),   # x is a lone group
    (["x,5,0", "x,6,0", "y,4,1", "y,3,2"], "g", "total of 0"),  # x's total 0 pins both counts
    (["x,5,5", "x,6,6", "y,4,1", "y,3,2"], "g", "total of 0 or of their whole size"),  # x's total is full
    (["x,5,2"], None, "single group"),  # a one-row table
])
def test_a_partition_the_total_would_pin_is_refused_naming_it(tmp_path, capsys, rows, by, word):
    table = _csv(tmp_path / "t.csv", "g,n,c", rows)
    before = {p.name for p in tmp_path.iterdir()}
    extra = ["--invariant", "total", "--keep", "g,n"] + (["--invariant-by", by] if by else [])
    code, _ = main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--mechanism",
                    "GM", "--alpha", "2/3", "--out", str(tmp_path / "o.csv"), *extra]), None
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and word.split(" or ")[0] in err
    assert ("g='x'" in err) if by else ("the table" in err)
    assert _nothing_written(tmp_path, before)


def test_an_invariant_release_states_the_totals_it_publishes(tmp_path):
    table = _csv(tmp_path / "t.csv", "g,n,c", ["x,5,2", "x,6,3", "y,4,1", "y,3,2"])
    code = main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--mechanism", "GM",
                 "--alpha", "2/3", "--invariant", "total", "--invariant-by", "g", "--out", str(tmp_path / "o.csv")])
    assert code == 0
    column = json.loads((tmp_path / "o.csv.release.json").read_text())["guarantee"]["columns"][0]
    assert column["published_totals"] == [{"g": "x", "total": 5}, {"g": "y", "total": 3}]


def _dry_run(tmp_path: Path, rows: list[str], capsys, *extra: str) -> str:
    table = _csv(tmp_path / "t.csv", "g,n,c", rows)
    code = main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--mechanism", "GM",
                 "--alpha", "2/3", "--invariant", "total", "--invariant-by", "g", "--out", str(tmp_path / "o.csv"),
                 "--dry-run", *extra])
    assert code == 0
    return capsys.readouterr().out


def test_an_invariant_dry_run_prints_nothing_that_depends_on_the_totals(tmp_path, capsys):
    """A dry run publishes no total: tables with the same sizes and other totals print the same lines."""
    first = _dry_run(tmp_path, ["x,5,2", "x,6,3", "y,4,1", "y,3,2"], capsys)
    second = _dry_run(tmp_path, ["x,5,1", "x,6,3", "y,4,4", "y,3,2"], capsys)
    assert first == second and "whatever the totals" in first


# ------------------------------------------------------------------ seeds


def test_a_seed_is_refused_with_a_budget_and_spends_nothing(tmp_path, capsys):
    ledger = tmp_path / "b.ledger"
    assert main(["budget", "init", str(ledger), "--epsilon", "1"]) == 0
    before = ledger.read_text()
    table = _csv(tmp_path / "t.csv", "n,c", ["4,1", "5,2"])
    code, out = _release(tmp_path, table, "--seed", "3", "--budget", str(ledger))
    assert code == 2 and "--seed" in capsys.readouterr().err
    assert ledger.read_text() == before and not out.exists()


def test_a_seeded_sidecar_claims_no_guarantee(tmp_path):
    table = _csv(tmp_path / "t.csv", "n,c", ["4,1", "5,2"])
    code, out = _release(tmp_path, table, "--seed", "3")
    assert code == 0
    sidecar = json.loads(Path(str(out) + ".release.json").read_text())
    assert set(sidecar["guarantee"]) == {"claimed"} and sidecar["guarantee"]["claimed"].startswith("none")
    assert sidecar["randomness"]["privacy_release"] is False


# ------------------------------------------------------------------ the budget: before and after the debit


def _tmpfs(mount, pages: int, read_only: bool = False) -> Path:
    return mount(f"size={pages * 4096},mode=0755" + (",ro" if read_only else ""))


def _wide_table(tmp_path: Path, rows: int) -> Path:
    rng = np.random.default_rng(8)
    n = rng.integers(1, 30, rows)
    c = rng.integers(0, n + 1)
    rows = [f"{'place-' * 7}{k},{a},{b}" for k, (a, b) in enumerate(zip(n, c, strict=True))]
    return _csv(tmp_path / "wide.csv", "place,n,c", rows)


def _budgeted_release(table: Path, ledger: Path, out: Path, *extra: str) -> int:
    return main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--mechanism", "EM",
                 "--epsilon", "0.3", "--budget", str(ledger), "--out", str(out), *extra])


def _ledger(tmp_path: Path, *extra: str) -> tuple[Path, str]:
    ledger = tmp_path / "b.ledger"
    assert main(["budget", "init", str(ledger), "--epsilon", "1", *extra]) == 0
    return ledger, ledger.read_text()


def _assert_refused_before_the_debit(tmp_path, folder, table, capsys, times: int = 1, *extra: str) -> None:
    """``times`` budgeted releases of ``table`` into ``folder`` each refused in one line, nothing spent or left."""
    ledger, before = _ledger(tmp_path)
    for _ in range(times):
        code = _budgeted_release(table, ledger, folder / "o.csv", *extra)
        err = capsys.readouterr().err
        assert code == 2 and "nothing was drawn or spent" in err, err
    assert ledger.read_text() == before and list(folder.iterdir()) == []


def test_releases_into_a_read_only_folder_spend_nothing(tmp_path, mount, capsys):
    """Three releases into a read-only folder published nothing and spent 0.9 of 1: now refused before the debit."""
    folder = _tmpfs(mount, 64, read_only=True)
    _assert_refused_before_the_debit(tmp_path, folder, _csv(tmp_path / "t.csv", "n,c", ["4,1", "5,2"]), capsys, 3)


def test_a_folder_without_room_is_refused_before_the_debit(tmp_path, mount, capsys):
    folder = _tmpfs(mount, 2)
    _assert_refused_before_the_debit(tmp_path, folder, _wide_table(tmp_path, 20_000), capsys, 1, "--keep", "place")


def test_a_disk_that_fills_during_the_write_marks_the_entry_failed(tmp_path, mount, capsys):
    """The lower bound of the output fits, the output does not: the debit stands and says failed."""
    from countdp.release.ledger import Ledger

    folder = _tmpfs(mount, 32)
    ledger, _ = _ledger(tmp_path)
    table = _wide_table(tmp_path, 20_000)
    code = _budgeted_release(table, ledger, folder / "o.csv", "--keep", "place")
    err = capsys.readouterr().err
    assert code == 2 and "No space left on device" in err and "marked failed" in err, err
    assert list(folder.iterdir()) == []
    state = Ledger(ledger).state()
    (entry,) = state.entries
    assert entry.status == "failed" and state.spent == Fraction(3, 10)


# ------------------------------------------------------------------ one account per unit of privacy


def _invariant_release(tmp_path: Path, ledger: Path) -> int:
    table = _csv(tmp_path / "t.csv", "g,n,c", ["x,5,2", "x,6,3", "y,4,1", "y,3,2"])
    return main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--mechanism", "GM",
                 "--alpha", "9/10", "--invariant", "total", "--invariant-by", "g", "--budget", str(ledger),
                 "--out", str(tmp_path / "o.csv")])


def test_an_invariant_release_is_charged_to_its_own_account(tmp_path):
    from countdp.release.ledger import Ledger

    ledger, _ = _ledger(tmp_path, "--invariant-epsilon", "5")
    assert _invariant_release(tmp_path, ledger) == 0
    sidecar = json.loads((tmp_path / "o.csv.release.json").read_text())
    state = Ledger(ledger).state()
    assert state.accounts["bit"].spent == 0
    assert state.accounts["invariant"].spent == Fraction(sidecar["guarantee"]["epsilon_total"])
    (entry,) = state.entries
    assert entry.what["published_totals"] == {"c": [{"g": "x", "total": 5}, {"g": "y", "total": 3}]}


def test_a_ledger_without_an_invariant_account_refuses_an_invariant_release(tmp_path, capsys):
    ledger, before = _ledger(tmp_path)
    assert _invariant_release(tmp_path, ledger) == 2
    assert "invariant" in capsys.readouterr().err
    assert ledger.read_text() == before and not (tmp_path / "o.csv").exists()


# ------------------------------------------------------------------ what a hostile review published


def _typed_columns(c: np.ndarray, n: np.ndarray) -> dict[str, pa.Array]:
    import datetime

    start = datetime.datetime(2020, 1, 1)
    return {
        "offset_1e12": pa.array((10**12 + c).astype(np.int64)),
        "int64_past_2_53": pa.array(c.astype(np.int64) + np.int64(2**55)),
        "uint64_past_2_63": pa.array(c.astype(np.uint64) + np.uint64(2**63)),
        "tiny_scale": pa.array(c * 1e-11),
        "float32": pa.array((0.1 * c).astype(np.float32)),
        "text_with_NA": pa.array(["NA" if k == 5 else str(v) for k, v in enumerate(c)]),
        "text_with_plus_and_commas": pa.array([f"+{v},000" for v in c]),
        "float_with_inf": pa.array([np.inf if k == 2 else float(v) for k, v in enumerate(c)]),
        "timestamp": pa.array([start + datetime.timedelta(seconds=int(v)) for v in c], pa.timestamp("ms")),
        "date": pa.array([start.date() + datetime.timedelta(days=int(v)) for v in c], pa.date32()),
        "duration": pa.array((2 * c + 1).astype(np.int64), pa.duration("s")),
        "dictionary": pa.array([str(v) for v in c]).dictionary_encode(),
        "decimal_past_2_53": pa.array([Decimal(10**30 + int(v)) for v in c], pa.decimal128(38, 0)),
        "difference_of_sizes": pa.array(n - c),
    }


@pytest.fixture(scope="module")
def typed_table(tmp_path_factory) -> Path:
    rng = np.random.default_rng(3)
    n = rng.integers(2, 15, 300)
    c = rng.integers(0, n + 1)
    public = {"id": pa.array(np.arange(300)), "constant": pa.array(np.full(300, 7)), "size_copy": pa.array(n),
              "noise": pa.array(rng.normal(size=300)),
              "tensor": pa.FixedShapeTensorArray.from_numpy_ndarray(c.reshape(-1, 1).astype(np.int64))}
    path = tmp_path_factory.mktemp("typed") / "t.parquet"
    pq.write_table(pa.table({"n": n, "c": c, **_typed_columns(c, n), **public}), path)
    return path


@pytest.mark.parametrize("column", list(_typed_columns(np.arange(3), np.arange(3))))
def test_a_count_in_any_numeric_type_or_encoding_is_refused(typed_table, tmp_path, capsys, column):
    code, out = _release(tmp_path, typed_table, "--keep", column, out="o.parquet")
    err = capsys.readouterr().err
    assert code == 2 and f"'{column}'" in err and ("affine function" in err or "equals the count" in err), err
    assert not out.exists()


@pytest.mark.parametrize("column", ["id", "constant", "size_copy", "noise"])
def test_public_columns_of_any_type_are_published(typed_table, tmp_path, column):
    code, out = _release(tmp_path, typed_table, "--keep", column, out="o.parquet")
    assert code == 0 and pq.read_table(out).column_names[0] == column


def test_an_extension_column_is_refused(typed_table, tmp_path, capsys):
    """A tensor extension column holding [c] was published: its storage is read by no check."""
    code, _ = _release(tmp_path, typed_table, "--keep", "tensor", out="o.parquet")
    assert code == 2 and "extension type" in capsys.readouterr().err


def test_parquet_publishes_no_field_metadata_and_no_unused_dictionary_entry(tmp_path):
    values = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0, 1], pa.int32()), pa.array(["a", "b", "SECRET"]))
    field = pa.field("region", values.type, metadata={"total_c": "9"})
    table = pa.table([pa.array([4, 5, 6, 7]), pa.array([1, 2, 3, 3]), values],
                     schema=pa.schema([pa.field("n", pa.int64()), pa.field("c", pa.int64()), field]))
    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    code, out = _release(tmp_path, path, "--keep", "region", out="o.parquet")
    assert code == 0
    published = out.read_bytes()
    assert b"SECRET" not in published and b"total_c" not in published
    assert pq.read_table(out).column("region").to_pylist() == ["a", "b", "a", "b"]


def test_csv_quoting_depends_on_the_published_columns_only(tmp_path):
    """A quote in a column left out changed how every published text value was quoted."""
    plain = _csv(tmp_path / "a.csv", "id,n,c,notes", ["r1,4,1,ok", "r2,5,2,fine"])
    quoted = _csv(tmp_path / "b.csv", "id,n,c,notes", ["r1,4,1,ok", 'r2,5,2,"ok, fine"'])
    outputs = []
    for table in (plain, quoted):
        code, out = _release(tmp_path, table, "--keep", "id", "--seed", "1", out=f"{table.stem}-out.csv")
        assert code == 0
        outputs.append([line.split(",")[0] for line in out.read_text().splitlines()])
    assert outputs[0] == outputs[1] == [["id", "r1", "r2"][k] for k in range(3)]


def test_totals_of_one_column_by_two_partitions_are_refused(tmp_path, capsys):
    """Region totals and band totals together had one solution: the true counts (sizes all 2)."""
    ledger, _ = _ledger(tmp_path, "--invariant-epsilon", "20")
    table = _csv(tmp_path / "m.csv", "region,band,n,c", ["X,P,2,2", "X,Q,2,1", "Y,P,2,1", "Y,Q,2,0"])

    def release(by: str, out: str) -> int:
        return main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--mechanism",
                     "GM", "--alpha", "1/2", "--invariant", "total", "--invariant-by", by, "--keep", "region,band,n",
                     "--budget", str(ledger), "--out", str(tmp_path / out)])

    assert release("region", "r.csv") == 0
    before = ledger.read_text()
    capsys.readouterr()
    assert release("band", "b.csv") == 2
    assert "'region'" in capsys.readouterr().err and ledger.read_text() == before
    assert not (tmp_path / "b.csv").exists()
    assert release("region", "r2.csv") == 0  # the same partition again publishes nothing new


def test_a_cache_that_cannot_be_read_is_refused_before_the_debit(tmp_path, capsys):
    """The mechanisms are all found (and every cached record verified) before the budget is touched."""
    table = _csv(tmp_path / "t.csv", "n,c", ["4,1", "5,2", "6,3"])
    cache = tmp_path / "cache"
    argv = ["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--mechanism", "WM",
            "--alpha", "2/3", "--cache", str(cache)]
    assert main([*argv, "--out", str(tmp_path / "a.csv")]) == 0
    for record in cache.rglob("*.npz"):
        record.write_bytes(record.read_bytes()[:-40])  # a truncated array file
    ledger, before = _ledger(tmp_path)
    capsys.readouterr()
    assert main([*argv, "--budget", str(ledger), "--out", str(tmp_path / "b.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(cache) in err[0], err
    assert ledger.read_text() == before and not (tmp_path / "b.csv").exists()


def test_a_marked_lone_sidecar_at_out_is_repaired_before_the_release(tmp_path):
    """What a release killed together with its guardian between the links leaves (a sidecar marked
    "its table may be missing") does not block the next release to the same --out."""
    from countdp.release.atomic import MARK

    table = _csv(tmp_path / "t.csv", "n,c", ["4,1", "5,2"])
    out = tmp_path / "o.csv"
    lone = Path(str(out) + ".release.json")
    lone.write_text("{}\n")
    lone.chmod(lone.stat().st_mode | MARK)
    code, _ = _release(tmp_path, table, out="o.csv")
    assert code == 0 and out.exists() and json.loads(lone.read_text())["format"] == "countdp-release/2"
    assert not lone.stat().st_mode & MARK
    unmarked = Path(str(tmp_path / "p.csv") + ".release.json")
    unmarked.write_text("{}\n")  # a sidecar nobody marked is the curator's: never removed
    assert _release(tmp_path, table, out="p.csv")[0] == 2 and unmarked.read_text() == "{}\n"
