"""`countdp release --mechanism WM` near alpha = 1: groups beyond the matrix path from the square-corner form.

Checked: sizes up to 2048 stay matrices and larger ones come from the corner form's tables, each
certified in the sidecar with the structure's name and where its source design was proven; the
released frequencies at a million follow the weights; a second release reads the stored tables,
and an altered table is refused in one line naming the record.
"""

from __future__ import annotations

import json

import numpy as np

from countdp.cli import main
from countdp.design.forms import corner_source_size, template_form
from countdp.design.settings import DEFAULT_SETTINGS

ALPHA = "24/25"


def _release(table, out, cache, *extra):
    return main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--mechanism", "WM",
                 "--alpha", ALPHA, "--out", str(out), "--cache", str(cache), *extra])


def test_large_groups_are_drawn_from_the_corner_form(tmp_path):
    rng = np.random.default_rng(3)
    sizes = np.concatenate([[200], rng.integers(2049, 10**6, 100), np.full(3000, 10**6)])
    counts = sizes // 3
    table = tmp_path / "t.csv"
    table.write_text("n,c\n" + "".join(f"{n},{c}\n" for n, c in zip(sizes, counts, strict=True)))
    out = tmp_path / "o.csv"
    assert _release(table, out, tmp_path / "cache", "--seed", "5") == 0
    sidecar = json.loads((tmp_path / "o.csv.release.json").read_text())
    matrices = [e for e in sidecar["mechanisms"] if e["representation"] == "matrix"]
    assert [e["n"] for e in matrices] == [200]
    assert matrices[0]["optimal_proven"] is True and matrices[0]["method"]  # how the matrix was made
    corners = [e for e in sidecar["mechanisms"] if e["representation"] == "structural"]
    assert corners and all(e["structural_certificate"]["holds"] for e in corners)
    assert all(e["structure"]["structure"] == "square corners" for e in corners)
    assert all(e["structure"]["optimal_proven_at_n"] == corner_source_size(24 / 25,
                                                                           settings=DEFAULT_SETTINGS) for e in corners)
    assert sum(e["sizes_served"] for e in corners) == np.unique(sizes[1:]).size
    noisy = np.loadtxt(out, delimiter=",", skiprows=1, usecols=1, dtype=np.int64)
    assert ((noisy >= 0) & (noisy <= sizes)).all()
    big = noisy[-3000:] - 10**6 // 3
    weights = template_form(10**6, ALPHA, 62).for_size(10**6).column(10**6 // 3)
    expected = weights[10**6 // 3] / 2**62  # the truthful probability: GM's (1 - alpha)/(1 + alpha) in the middle
    assert abs(expected - 1 / 49) < 1e-6
    assert abs(np.mean(big == 0) - expected) < 5 * np.sqrt(expected * (1 - expected) / 3000)


def test_a_second_release_loads_the_tables_and_a_tampered_one_is_refused(tmp_path, capsys):
    table = tmp_path / "t.csv"
    table.write_text("n,c\n5000,2500\n70000,100\n")
    cache = tmp_path / "cache"
    assert _release(table, tmp_path / "a.csv", cache, "--seed", "1") == 0
    stored = sorted(cache.rglob("sizes=*.npz"))
    assert len(stored) == 2 and all(p.with_suffix(".json").is_file() for p in stored)
    assert _release(table, tmp_path / "b.csv", cache, "--seed", "1") == 0
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()
    with np.load(stored[0]) as tables:
        arrays = {name: np.array(tables[name]) for name in tables.files}
    arrays["strip"][3, 5] -= 1
    np.savez_compressed(stored[0], **arrays)
    capsys.readouterr()
    assert _release(table, tmp_path / "c.csv", cache, "--seed", "1") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(stored[0].with_suffix(".json")) in err[0]
    assert not (tmp_path / "c.csv").exists()
