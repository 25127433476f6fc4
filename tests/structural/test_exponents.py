"""The two facts about EM's exponents that its structural certificate rests on, by enumeration.

1. every column holds exponent 0 once, each of ``1 .. floor(n/2)`` twice, and (odd n) ``(n+1)/2`` once;
2. neighbouring inputs change an exponent by at most one in every row.

Checked for every n up to 300 and a spread up to 2048, on the closed form's exponent grid
(Figure 4), which the structural form's ``exponents`` must also reproduce.
"""

import numpy as np
import pytest

from countdp.mechanisms.closed_forms import explicit_fair_exponents
from countdp.structural.fair import exponents

SIZES = [*range(1, 301), 511, 512, 1023, 1024, 2047, 2048]


@pytest.mark.parametrize("chunk", [SIZES[i::6] for i in range(6)])
def test_each_column_holds_the_same_exponents_and_rows_step_by_one(chunk):
    for n in chunk:
        e = explicit_fair_exponents(n)
        expected = np.sort(np.concatenate([[0], np.repeat(np.arange(1, n // 2 + 1), 2),
                                           [(n + 1) // 2] if n % 2 else []]).astype(np.int64))
        assert (np.sort(e, axis=0) == expected[:, None]).all(), n
        assert np.abs(np.diff(e, axis=1)).max() <= 1, n
        i = np.arange(n + 1)
        assert np.array_equal(np.stack([exponents(n, i, j) for j in range(n + 1)], axis=1), e), n
