"""`countdp release --mechanism WM` for groups beyond the matrix path: the template design's structure.

Checked: sizes up to 2048 stay matrices and larger ones come from the spread's tables, each
certified in the sidecar with where its optimality is proven; the released frequencies at a
million follow the weights; an alpha whose corners are too wide for any structure is refused in one line.
"""

from __future__ import annotations

import json

import numpy as np

from countdp.cli import main
from countdp.design.forms import template_form


def _release(table, out, cache, alpha, *extra):
    return main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--mechanism", "WM",
                 "--alpha", alpha, "--out", str(out), "--cache", str(cache), *extra])


def test_large_groups_are_drawn_from_the_spread(tmp_path):
    rng = np.random.default_rng(2)
    sizes = np.concatenate([[40, 300], rng.integers(2049, 10**6, 200), np.full(3000, 10**6)])
    counts = np.concatenate([sizes[:-3000] // 2, np.full(3000, 10**6 // 2)])
    table = tmp_path / "t.csv"
    table.write_text("n,c\n" + "".join(f"{n},{c}\n" for n, c in zip(sizes, counts, strict=True)))
    out = tmp_path / "o.csv"
    assert _release(table, out, tmp_path / "cache", "1/2", "--seed", "5") == 0
    sidecar = json.loads((tmp_path / "o.csv.release.json").read_text())
    matrices = sorted(e["n"] for e in sidecar["mechanisms"] if e["representation"] == "matrix")
    assert matrices == [40, 300]
    spread = [e for e in sidecar["mechanisms"] if e["representation"] == "structural"]
    assert spread and all(e["structural_certificate"]["holds"] for e in spread)
    assert sum(e["sizes_served"] for e in spread) == np.unique(sizes[2:]).size
    assert all(e["structure"]["optimal_proven_at_n"] == e["structure"]["canonical_size"] for e in spread)
    noisy = np.loadtxt(out, delimiter=",", skiprows=1, usecols=1, dtype=np.int64)
    assert ((noisy >= 0) & (noisy <= sizes)).all()
    big = noisy[-3000:] - 10**6 // 2
    weights = template_form(10**6, "1/2", 62).for_size(10**6).column(10**6 // 2)
    expected = weights[10**6 // 2] / 2**62  # the truthful probability at a million
    assert abs(np.mean(big == 0) - expected) < 5 * np.sqrt(expected * (1 - expected) / 3000)


def test_an_alpha_without_structure_is_refused_in_one_line(tmp_path, capsys):
    table = tmp_path / "t.csv"
    table.write_text("n,c\n3000,10\n")
    assert _release(table, tmp_path / "o.csv", tmp_path / "cache", "499/500", "--seed", "1") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no structure" in err[0] and "do not fit" in err[0]
    assert not (tmp_path / "o.csv").exists()


def test_a_second_release_loads_the_tables_and_a_tampered_one_is_refused(tmp_path, capsys):
    """The cache keeps each size range's tables beside its record: a later release reads and
    re-certifies them instead of solving the canonical design again; altered tables are refused."""
    table = tmp_path / "t.csv"
    table.write_text("n,c\n5000,2500\n70000,100\n")
    cache = tmp_path / "cache"
    assert _release(table, tmp_path / "a.csv", cache, "3/4", "--seed", "1") == 0
    stored = sorted(cache.rglob("sizes=*.npz"))
    assert len(stored) == 2 and all(p.with_suffix(".json").is_file() for p in stored)
    assert sum(p.stat().st_size for p in stored) < 20 * 2**20
    assert _release(table, tmp_path / "b.csv", cache, "3/4", "--seed", "1") == 0
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()
    with np.load(stored[0]) as tables:
        S, delta = np.array(tables["S"]), np.array(tables["delta"])
    S[S.shape[0] // 2, S.shape[0] // 2] += 1
    np.savez_compressed(stored[0], S=S, delta=delta)
    capsys.readouterr()
    assert _release(table, tmp_path / "c.csv", cache, "3/4", "--seed", "1") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(stored[0].with_suffix(".json")) in err[0]
    assert not (tmp_path / "c.csv").exists()
