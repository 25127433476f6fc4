"""The conditioned sampler's work on clustered against spread counts of one total, by a deterministic
operation counter (``WorkCounter`` of benchmarks/bench_conditioned_work.py): the sampler's Python
bytecodes, its big-number multiplications/divisions and additions/subtractions/shifts/comparisons
(every int it reads is replaced by a counting number, so each operation the code does on them is
seen), the rows of its numpy products and splits, the bits of ``U`` drawn, refinements and
extensions, for one build and one seeded draw.

What holds, and is asserted: the *number* of every kind of operation is the same for any counts of
one total (fixed by the group sizes, ``K``, ``T`` and the settings), for both methods.  What does not
hold, and is only bounded: the *sizes* of the operands.  The packed products have one length (a
sentinel limb), the split's running sums are offset to one length (``decide``), but the leaves'
products (the column values ``W[y, x_g]``), the radii and masses of the bounds and the exact weights
(``"exact"``, and a lazy refinement) have magnitudes set by the counts.  Measured here: operand words
differ by under 0.1% (lazy) and a few percent (exact), so the time of one operation, and so the
running time, still depends weakly on the counts.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from countdp.invariants import group_total as gt

REPO = Path(__file__).resolve().parents[2]
CASES = [  # (groups, size cycle, total as a fraction of sum n: numerator, denominator)
    (8, (3, 8, 15, 30), 1, 2),
    (16, (10, 25, 50), 1, 3),
    (5, (2, 7), 3, 5),
]
COUNTS = ("bytecodes", "mul", "add", "rows", "bits", "refinements", "extensions")


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_conditioned_work",
                                                  REPO / "benchmarks" / "bench_conditioned_work.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def work(bench, case, method: str, seed: int = 1) -> dict:
    """The counter's totals for clustered and spread counts of one total."""
    groups, cycle, num, den = case
    mechanisms = bench.partition(groups, cycle)
    sizes = np.array([m.n for m in mechanisms])
    total = int(sizes.sum()) * num // den
    return {kind: bench.count_work(mechanisms, bench.counts(sizes, total, kind), seed, bench.SETTINGS[method])
            for kind in ("clustered", "spread")}


@pytest.mark.parametrize("method", ["lazy", "exact"])
@pytest.mark.parametrize("case", CASES)
def test_clustered_and_spread_counts_take_the_same_number_of_operations(bench, case, method):
    found = work(bench, case, method)
    clustered, spread = found["clustered"], found["spread"]
    assert clustered["mul"] > 0 and clustered["bytecodes"] > 0
    assert {k: clustered[k] for k in COUNTS} == {k: spread[k] for k in COUNTS}
    # not equal: the operands' sizes (see the module docstring); bounded as measured
    tolerance = 0.001 if method == "lazy" else 0.03
    for key in ("mul_limbs", "add_limbs"):
        assert abs(clustered[key] - spread[key]) <= tolerance * spread[key], key


def test_the_counter_sees_a_count_dependent_step(bench, monkeypatch):
    """A planted step (a linear scan of the running sums that stops where half the weight is reached, as
    the bisection does not) makes the numbers of operations differ: the equality above is not vacuous."""
    decide = gt.decide

    def scanning(p_lo, p_hi, u, bits, offset, exact):
        i = 1
        while 2 * p_lo[i] < p_lo[len(p_lo) - 1]:
            i += 1
        return decide(p_lo, p_hi, u, bits, offset, exact)

    monkeypatch.setattr(gt, "decide", scanning)
    for method in ("lazy", "exact"):
        found = work(bench, (16, (10, 25, 50), 1, 3), method)
        assert found["clustered"]["add"] != found["spread"]["add"]  # (its bytecodes, in this file, are not traced)
