"""The conditioned sampler's work on clustered against spread counts of one total, by a deterministic
operation counter (``WorkCounter`` of benchmarks/bench_conditioned_work.py): the sampler's Python
bytecodes, its big-number multiplications/divisions and additions/subtractions/comparisons (every
int and Decimal it reads is replaced by a counting number, so each operation the code does on them is
seen), the bits of ``U`` drawn, refinements and extensions, for one build and one seeded draw.

What holds, and is asserted: the *number* of every kind of operation is the same for any counts of
one total (fixed by the group sizes, ``K``, ``T`` and the settings), for both methods.  What does not
hold, and is only bounded: the *sizes* of the operands.  The draw's weights are offset so that its
operands have one length (``choose``, ``_weights``), but the leaves' Decimal products (the column
values ``W[y, x_g]``), the radii and masses of the bounds and the exact polynomials (``"exact"``, and a
lazy refinement) have magnitudes set by the counts.  Measured here: operand words (30-bit digits of an
int, 19-digit words of a Decimal) differ by under 0.1% (lazy) and up to about 2% (exact), so the time
of one operation, and so the running time, still depends weakly on the counts.
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
COUNTS = ("bytecodes", "mul", "add", "bits", "refinements", "extensions")


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
    """A planted step (the old ``_weights``, which skipped the products out of range) makes the
    numbers of operations differ: the equality above is not vacuous."""
    def skipping(left, right, target, offset=0):
        return [v * right[target - a] if 0 <= target - a < len(right) else 0 for a, v in enumerate(left)]

    monkeypatch.setattr(gt.GroupTotalSampler, "_weights", staticmethod(skipping))
    found = work(bench, (16, (10, 25, 50), 1, 3), "exact")  # (exact: no offset, so the old code as it was)
    assert found["clustered"]["mul"] != found["spread"]["mul"]  # (its bytecodes, outside group_total.py, not traced)
