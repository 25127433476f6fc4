"""The floor's closed forms against brute-force summation, in Python integers and in numpy arrays.

Independent fact: the sums written out term by term (``sum(j**p for j in range(a, b + 1))``, the
floor's column ``f + [i < r]`` over ``i = 0..n`` summed with its loss), at every small argument.
"""

from __future__ import annotations

import numpy as np
import pytest

from countdp.structural.power_sums import (
    band_count,
    floor_band,
    floor_squares,
    floor_squares_total,
    power_sum,
    pyramid,
    square_sum,
)


def _floor_column(n: int, f: int, r: int) -> list[int]:
    return [f + (i < r) for i in range(n + 1)]


def test_power_sums_are_the_sums_written_out():
    for p in range(4):
        for a in range(0, 12):
            for b in range(-2, 14):
                assert power_sum(p, a, b) == sum(j**p for j in range(a, b + 1)), (p, a, b)
    with pytest.raises(ValueError, match="p must be"):
        power_sum(4, 0, 3)
    with pytest.raises(ValueError, match="start at 0"):
        power_sum(1, -1, 3)


def test_square_sums_and_pyramids_are_the_sums_written_out():
    for x in range(-1, 30):
        assert square_sum(x) == sum(i * i for i in range(x + 1)), x
    for m in range(-2, 30):
        assert pyramid(m) == sum(square_sum(x) for x in range(m + 1)), m
    x = np.arange(-1, 2000, dtype=np.int64)  # int64 arrays give the same numbers while the products fit
    assert square_sum(x).tolist() == [square_sum(int(v)) for v in x]
    big = 10**9 + 7  # past int64's products: object arrays stay exact
    assert square_sum(np.array([big], dtype=object))[0] == big * (big + 1) * (2 * big + 1) // 6


@pytest.mark.parametrize("n", [0, 1, 2, 7, 12])
def test_floor_squares_and_their_totals_are_the_column_sums(n):
    for f in (0, 1, 5, 3 << 61):  # the last needs Python integers: its products pass 2**63
        for r in range(n + 1):
            column = _floor_column(n, f, r)
            brute = [sum((i - j) ** 2 * w for i, w in enumerate(column)) for j in range(n + 1)]
            assert [floor_squares(j, n, f, r) for j in range(n + 1)] == brute, (f, r)
            j = np.arange(n + 1, dtype=np.int64).astype(object)
            assert floor_squares(j, n, f, r).tolist() == brute
            for a in range(n + 1):
                for b in range(a - 1, n + 1):
                    assert floor_squares_total(a, b, n, f, r) == sum(brute[a:b + 1]), (f, r, a, b)


@pytest.mark.parametrize("n", [0, 1, 5, 11])
def test_floor_bands_are_the_column_sums(n):
    j = np.arange(n + 1, dtype=np.int64)
    for d in (0, 1, 3, n + 2):
        for top in range(-1, n + 1):
            assert band_count(j, d, top).tolist() == [sum(abs(i - jj) <= d for i in range(top + 1)) for jj in j]
        for f in (0, 2, 1 << 62):
            for r in range(n + 1):
                column = _floor_column(n, f, r)
                brute = [sum(w for i, w in enumerate(column) if abs(i - jj) <= d) for jj in range(n + 1)]
                per_input = np.full(n + 1, f, dtype=object), np.full(n + 1, r, dtype=object)
                assert floor_band(j, d, n, *per_input).tolist() == brute, (d, f, r)
