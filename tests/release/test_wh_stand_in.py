"""WH under L0 released from GM's structure wherever GM is proven an optimum of the WH LP.

The facts checked, each independently of the cache's code:

* Lemma 2 and Theorem 3: from n >= 2 alpha/(1 - alpha) the WH LP's optimal L0 is GM's closed-form
  L0 (the dense LP solved by Clarabel through cvxpy, no closed form);
* weak honesty of the very weights sampled: every diagonal weight of the dense matrix is at least
  2^K/(n+1) at every size the bound serves, and fails just below Lemma 2's threshold, where the
  bound must not serve;
* a release draws those sizes exactly as GM's documented draw, and says so beside it.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from countdp.cli import main
from countdp.design.designer import design_named
from countdp.design.forms import structural_form
from countdp.mechanisms.closed_forms import geometric
from countdp.structural.catalogue import stand_in_lower_bound, weakly_honest_from
from countdp.values.objectives import objective_value
from tests.helpers.structural_draw import documented_outputs


@pytest.mark.parametrize("alpha", ["1/2", "9/10", "99/100"])
def test_the_bound_serves_only_weakly_honest_weights(alpha):
    a = Fraction(alpha)
    threshold = stand_in_lower_bound("WH", a)
    assert threshold == -(-2 * a // (1 - a))  # Lemma 2: n >= 2a/(1-a)
    for n in sorted({threshold, threshold + 1, 2 * threshold + 3, 300}):
        form = structural_form("GM", n, a).for_size(n)
        start = weakly_honest_from(form)
        W = form.dense_weights().astype(object)
        honest = all(W[i, i] * (n + 1) >= form.denominator for i in range(n + 1))
        if n >= start:
            assert honest, (alpha, n)
        assert start >= threshold  # never below Lemma 2's threshold


@pytest.mark.parametrize("alpha", ["2/3", "9/10"])
def test_below_the_threshold_gm_is_not_weakly_honest(alpha):
    """The check can fail: one size below 2a/(1-a), GM's interior diagonal is below 1/(n+1) (n >= 2)."""
    a = Fraction(alpha)
    n = stand_in_lower_bound("WH", a) - 1
    if n < 1:
        pytest.skip("no size below the threshold")
    form = structural_form("GM", n, a).for_size(n)
    W = form.dense_weights().astype(object)
    assert min(W[i, i] * (n + 1) for i in range(n + 1)) < form.denominator
    assert weakly_honest_from(form) > n


def test_a_table_without_a_centre_serves_no_size():
    form = structural_form("GM", 100, "9/10")
    form.centre = 1
    assert weakly_honest_from(form) > form.sizes[1]


@pytest.mark.parametrize("n", [19, 40])
def test_the_wh_lp_optimum_is_gm_from_the_threshold(n):
    """At alpha = 9/10 (threshold 18) the WH LP, solved by Clarabel without closed forms, has GM's L0."""
    design = design_named("WH", n, 0.9, solver="CLARABEL")  # the dense cvxpy model: no closed form
    assert design.solver == "CLARABEL"
    assert design.solver_objective == pytest.approx(objective_value(geometric(n, 0.9), "L0"), abs=1e-6)


def test_a_wh_release_draws_large_sizes_from_gm(tmp_path):
    sizes = np.array([5, 12, 18, 19, 40, 1000, 50_000, 10**6])
    counts = sizes // 3
    table = tmp_path / "t.csv"
    table.write_text("n,c\n" + "".join(f"{n},{c}\n" for n, c in zip(sizes, counts, strict=True)))
    out = tmp_path / "o.csv"
    assert main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--mechanism", "WH",
                 "--alpha", "9/10", "--out", str(out), "--cache", str(tmp_path / "cache"), "--seed", "4"]) == 0
    sidecar = json.loads((tmp_path / "o.csv.release.json").read_text())
    matrices = sorted(e["n"] for e in sidecar["mechanisms"] if e["representation"] == "matrix")
    assert matrices == [5, 12, 18]  # 18 = 2a/(1-a): GM's diagonal is exactly 1/19, not weakly honest once rounded
    structural = [e for e in sidecar["mechanisms"] if e["representation"] == "structural"]
    assert all(e["mechanism"] == "WH" and e["stand_in"]["form"] == "GM" for e in structural)
    assert sum(e["sizes_served"] for e in structural) == 5
    noisy = np.loadtxt(out, delimiter=",", skiprows=1, usecols=1, dtype=np.int64)
    stream = np.random.SeedSequence(4).spawn(1)[0]
    words = np.random.Generator(np.random.PCG64(stream)).bit_generator.random_raw(sizes.size)
    for row in range(3, sizes.size):
        form = structural_form("GM", int(sizes[row]), "9/10")
        expected = documented_outputs(form, sizes[row:row + 1], counts[row:row + 1], words[row:row + 1])
        assert noisy[row] == expected[0]
