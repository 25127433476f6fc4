"""A release whose matrix mechanisms would not fit in memory at once is refused before any design.

A WM, WH or LP release holds one matrix per group size while it streams the table; a table with a
thousand sizes in the thousands would need hundreds of GiB.  The refusal must come at once (no
design, which would take hours), in one line naming the table, with exit status 2 and nothing
written, while GM, EM and UM (held as structure) release the same table.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from countdp.cli import main
from countdp.validation import available_memory, check_matrices_fit


def _table(path, sizes):
    path.write_text("n,c\n" + "".join(f"{n},{n // 3}\n" for n in sizes))
    return path


def _release(table, out, cache, mechanism, *extra):
    return main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--mechanism",
                 mechanism, "--alpha", "9/10", "--out", str(out), "--cache", str(cache), "--seed", "1", *extra])


@pytest.fixture
def many_sizes(tmp_path):
    """1,000 distinct sizes 1,000..1,999 (WM is a matrix up to 2048): sum (n+1)^2 is about 2.3e9 entries, far
    beyond any test machine."""
    return _table(tmp_path / "many.csv", range(1000, 2000))


@pytest.mark.parametrize("mechanism, objective", [("WM", "L0"), ("WH", "L1")])
def test_matrices_beyond_memory_are_refused_at_once(many_sizes, tmp_path, capsys, mechanism, objective):
    """(WH under L0 is GM's structure at these sizes, so it is released: see test_wh_stand_in.)"""
    start = time.perf_counter()
    assert _release(many_sizes, tmp_path / "o.csv", tmp_path / "cache", mechanism, "--objective", objective) == 2
    assert time.perf_counter() - start < 30  # refused before designing (one WM at n = 1,000 takes longer)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("countdp: error:")
    assert str(many_sizes) in err[0] and "1,000 matrices (group sizes up to n = 1,999)" in err[0]
    assert not (tmp_path / "o.csv").exists() and not (tmp_path / "o.csv.release.json").exists()
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.json"))


def test_each_noisy_column_holds_its_own_matrices(tmp_path, capsys):
    """Each noisy column holds its own matrices: one copy more than fits is refused, fewer pass."""
    have = available_memory()
    if have is None:
        pytest.skip("this machine does not say how much memory is available")
    sizes = np.array([2000])
    per_copy = 80 * 2001 ** 2
    copies = have // per_copy + 1  # just beyond what is available
    with pytest.raises(ValueError, match="held at once"):
        check_matrices_fit(sizes, int(copies), 80, "t.csv")
    check_matrices_fit(sizes, max(1, int(copies) - 2), 80, "t.csv")  # fewer copies fit


def test_the_estimate_is_the_sum_of_squares():
    """The bytes asked for are copies x bytes x sum (n+1)^2 (closed form n(n+1)(2n+1)/6 shifted)."""
    m = 30_000  # sizes 0..m-1: sum (n+1)^2 = m(m+1)(2m+1)/6, about 9e12 entries
    entries = m * (m + 1) * (2 * m + 1) // 6
    with pytest.raises(ValueError) as info:
        check_matrices_fit(np.arange(m), 1, 1, "x")
    assert f"about {entries / 2**30:,.1f} GiB" in str(info.value)


@pytest.mark.parametrize("mechanism", ["GM", "WH"])
def test_structural_mechanisms_release_the_same_table(many_sizes, tmp_path, mechanism):
    assert _release(many_sizes, tmp_path / "o.csv", tmp_path / "cache", mechanism) == 0
    assert (tmp_path / "o.csv").exists()


def test_a_few_matrices_pass_the_check(tmp_path):
    table = _table(tmp_path / "few.csv", [5, 6, 6, 7])
    assert _release(table, tmp_path / "o.csv", tmp_path / "cache", "WM") == 0


def test_each_column_counts_its_own_sizes_at_its_own_alpha(tmp_path, capsys):
    """WH under L0 is GM's structure from n >= 2a/(1-a) where GM's rounded weights are weakly honest: at
    alpha = 1/2 every size here is structure; at alpha = 0.999 (2a/(1-a) = 1998, where GM's diagonal
    is exactly 1/(n+1) and its rounded weights fall below) sizes 1000..1998 are LP matrices and 1999
    is structure. A second column at 0.999 makes the release hold those 999 matrices; the check
    counts them, exactly as the cache serves them."""
    table = tmp_path / "two.csv"
    table.write_text("n,c,d\n" + "".join(f"{n},{n // 3},{n // 5}\n" for n in range(1000, 2000)))
    common = ["release", "--input", str(table), "--size-column", "n", "--mechanism", "WH", "--out",
              str(tmp_path / "o.csv"), "--cache", str(tmp_path / "cache"), "--seed", "1"]
    # with only c counted, d stands beside it and must be named to be published (default-deny)
    assert main(common + ["--count-column", "c", "--keep", "n,d", "--alpha", "1/2", "--dry-run"]) == 0
    capsys.readouterr()
    assert main(common + ["--count-column", "c,d", "--alpha", "1/2,999/1000"]) == 2
    err = capsys.readouterr().err.strip()
    assert "999 matrices (group sizes up to n = 1,998)" in err and not (tmp_path / "o.csv").exists()
