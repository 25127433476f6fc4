"""Table releases with groups of any size: GM, EM and UM held as structure, never as a matrix.

What a curator sees: a table whose groups hold up to a million people is released in one pass;
the cache holds a few hundred bytes per size range; the sidecar names the representation, the
sizes each table served and its structural certificate; the noisy counts are the documented
draw of each row's structure (recomputed here from the published tables); a dry run prints the
exact errors; a tampered cache record is refused by name.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from countdp.cli import main
from countdp.design.forms import structural_form
from countdp.structural.errors import structural_errors
from tests.helpers.structural_draw import documented_outputs


@pytest.fixture(scope="module")
def big_table(tmp_path_factory):
    """3,000 groups of 1 to 10^6 people (a few of each extreme), counts uniform in 0..n."""
    rng = np.random.default_rng(11)
    sizes = rng.integers(1, 10**6 + 1, 3000)
    sizes[:5] = [1, 2, 3, 10**6, 10**6 - 1]
    counts = rng.integers(0, sizes + 1)
    path = tmp_path_factory.mktemp("big") / "counties.parquet"
    pq.write_table(pa.table({"county": np.arange(sizes.size), "people": sizes, "cases": counts}), path)
    return path, sizes, counts


KEEP = ("--keep", "county,people")
"""The big table's published columns (publication is default-deny)."""


def _release(table, out, cache, mechanism, *extra):
    return main(["release", "--input", str(table), "--size-column", "people", "--count-column", "cases",
                 "--mechanism", mechanism, "--alpha", "9/10", "--out", str(out), "--cache", str(cache), *extra])


@pytest.mark.parametrize("mechanism", ["GM", "EM", "UM"])
def test_groups_of_a_million_are_released_as_their_documented_draw(big_table, tmp_path, mechanism):
    table, sizes, counts = big_table
    out, cache = tmp_path / "noisy.parquet", tmp_path / "cache"
    assert _release(table, out, cache, mechanism, *KEEP, "--seed", "9") == 0
    noisy = pq.read_table(out).column("noisy_cases").to_numpy()
    assert ((0 <= noisy) & (noisy <= sizes)).all()
    stream = np.random.SeedSequence(9).spawn(1)[0]
    words = np.random.Generator(np.random.PCG64(stream)).bit_generator.random_raw(sizes.size)
    for n in np.unique(sizes)[:: max(1, np.unique(sizes).size // 60)].tolist():  # 60 sizes across the range
        rows = np.flatnonzero(sizes == n)
        form = structural_form(mechanism, n, "9/10")
        assert np.array_equal(noisy[rows], documented_outputs(form, sizes[rows], counts[rows], words[rows]))
    sidecar = json.loads((tmp_path / "noisy.parquet.release.json").read_text())
    entries = sidecar["mechanisms"]
    assert {e["representation"] for e in entries} == {"structural"}
    assert all(e["structural_certificate"]["holds"] for e in entries)
    assert sum(e["rows"] for e in entries) == sizes.size
    assert sum(e["sizes_served"] for e in entries) == np.unique(sizes).size
    stored = [p for p in cache.rglob("*") if p.is_file()]
    assert len(stored) == len(entries) and sum(p.stat().st_size for p in stored) < 1000 * len(stored)


def test_the_sampled_frequencies_at_a_million_are_the_weights(tmp_path):
    """20,000 rows of one county of 10^6 people with 400,000 cases, OS source: each output near the
    truth appears as often as its exact weight says (five standard deviations)."""
    n, truth, rows = 10**6, 400_000, 20_000
    table = tmp_path / "one.parquet"
    pq.write_table(pa.table({"people": np.full(rows, n), "cases": np.full(rows, truth)}), table)
    assert _release(table, tmp_path / "o.parquet", tmp_path / "cache", "GM") == 0
    noisy = pq.read_table(tmp_path / "o.parquet").column("noisy_cases").to_numpy()
    column = structural_form("GM", n, "9/10").for_size(n)
    for i in range(truth - 3, truth + 4):
        p = column.column(truth)[i] / column.denominator
        assert abs((noisy == i).sum() - rows * p) <= 5 * np.sqrt(rows * p * (1 - p)) + 1


def test_a_dry_run_prints_the_exact_errors_of_the_structure(big_table, tmp_path, capsys):
    table, sizes, _ = big_table
    capsys.readouterr()
    assert _release(table, tmp_path / "o.parquet", tmp_path / "cache", "GM", *KEEP, "--dry-run") == 0
    report = capsys.readouterr().out
    rows = {line.split()[1]: line.split() for line in report.splitlines() if line.startswith("cases")}
    served = [range(int(k.split("..")[0]), int(k.split("..")[-1]) + 1) for k in rows]
    assert sum(int(r[2]) for r in rows.values()) == sizes.size
    assert all(sum(n in r for r in served) == 1 for n in np.unique(sizes).tolist())  # each size in one row
    [top] = [k for k in rows if k.endswith(str(10**6))]
    errors = structural_errors(structural_form("GM", 10**6, "9/10"), 10**6)
    assert float(rows[top][4]) == pytest.approx(float(errors.l0_uniform), abs=1e-4)
    assert float(rows[top][4]) == pytest.approx(2 * 0.9 / 1.9, abs=1e-4)  # GM's L0 away from the ends
    assert float(rows[top][8]) == pytest.approx(errors.rmse_uniform, abs=1e-4)
    assert not (tmp_path / "cache").exists() and not (tmp_path / "o.parquet").exists()


def test_a_tampered_cache_record_is_refused_by_name(big_table, tmp_path, capsys):
    table, _, _ = big_table
    cache = tmp_path / "cache"
    assert _release(table, tmp_path / "a.parquet", cache, "EM", *KEEP) == 0
    record = sorted(cache.rglob("*.json"))[-1]
    data = json.loads(record.read_text())
    data["reserve"] += 1
    record.write_text(json.dumps(data))
    capsys.readouterr()
    assert _release(table, tmp_path / "b.parquet", cache, "EM", *KEEP) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("countdp: error:") and str(record) in err[0]
    assert not (tmp_path / "b.parquet").exists()


def test_an_invariant_release_samples_the_same_weights_as_a_matrix(tmp_path):
    """A release conditioned on its total reads whole columns: structural sizes become their matrices."""
    rng = np.random.default_rng(3)
    sizes = rng.choice([4, 6, 9], 30)
    table = tmp_path / "t.csv"
    table.write_text("n,c\n" + "".join(f"{n},{c}\n" for n, c in zip(sizes, rng.integers(0, sizes + 1), strict=True)))
    assert main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--invariant",
                 "total", "--mechanism", "EM", "--alpha", "9/10", "--out", str(tmp_path / "o.csv"),
                 "--cache", str(tmp_path / "cache"), "--seed", "1"]) == 0
    sidecar = json.loads((tmp_path / "o.csv.release.json").read_text())
    assert {e["representation"] for e in sidecar["mechanisms"]} == {"matrix"}


def test_a_rows_second_word_depends_on_its_row_not_its_batch():
    """Draws over 2^124 rarely need a second word; seeded, row r's comes from Philox at counter r, so
    a release is the same whatever its batches (and each stream has its own)."""
    from countdp.release.draws import Randomness

    seeded = Randomness(5, 2)
    words = seeded.second_words(1, np.array([3, 10, 7]))
    assert words.dtype == np.uint64 and len(set(words.tolist())) == 3
    assert seeded.second_words(1, np.array([7]))[0] == words[2]
    assert Randomness(5, 2).second_words(1, np.array([10]))[0] == words[1]
    assert seeded.second_words(0, np.array([3]))[0] != words[0]
    assert Randomness(6, 2).second_words(1, np.array([3]))[0] != words[0]
    assert Randomness(None, 2).second_words(0, np.arange(4)).size == 4
