"""The Adult groups made from person records by a records release's grouping are the studies' groups.

:func:`countdp.studies.adult_groups.adult_group_counts` groups the person records with DuckDB; the
same ``rng`` must give exactly the counts of the numpy reshape-and-sum that the studies used before
(:func:`countdp.evaluate.data.group_counts`), so the studies' results do not change.
"""

from __future__ import annotations

import numpy as np
import pytest

from countdp.evaluate.data import group_counts
from countdp.studies.adult_groups import adult_group_counts


@pytest.mark.parametrize("n", [1, 2, 7, 16, 500])
def test_the_records_grouping_gives_the_studies_groups(n):
    bits = (np.random.default_rng(n).random(5003) < 0.3).astype(np.int64)
    for seed in (0, 1):
        expected = group_counts(bits, n, np.random.default_rng(seed))
        found = adult_group_counts(bits, n, np.random.default_rng(seed), "young")
        assert found.dtype == np.int64 and np.array_equal(found, expected)
    assert np.array_equal(adult_group_counts(bits, n), group_counts(bits, n))


def test_a_different_grouping_is_seen():
    """The comparison above can fail: another random order gives other counts."""
    bits = (np.random.default_rng(3).random(5003) < 0.3).astype(np.int64)
    assert not np.array_equal(adult_group_counts(bits, 4, np.random.default_rng(1)),
                              group_counts(bits, 4, np.random.default_rng(2)))


def test_bad_bits_and_sizes_are_refused():
    with pytest.raises(ValueError, match="0/1"):
        adult_group_counts(np.array([0, 2, 1]), 2)
    with pytest.raises(ValueError, match="fewer than one group"):
        adult_group_counts(np.array([0, 1]), 3)
