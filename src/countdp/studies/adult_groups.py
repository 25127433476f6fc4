"""The Adult groups of the extrinsic and congenial studies, made from the Adult person records by a
records release's grouping (:func:`countdp.release.records_run.group_records`), not by hand.

Figure 10 and the congenial study put the Adult people into random groups of ``n``: a random
order of the people (one ``rng.permutation``, as the studies have always drawn it), then
consecutive blocks of ``n``, the last incomplete block dropped.  Here each person's record gets its
block number as a public ``group`` column, and DuckDB groups the records by it and counts the
records whose target bit is 1, exactly as ``countdp release --records`` would: the groups and their
counts are those of :func:`countdp.evaluate.data.group_counts` with the same ``rng``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from countdp.release.records_run import group_records


def adult_group_counts(bits, n: int, rng: np.random.Generator | None = None, target: str = "target") -> np.ndarray:
    """The count of ones in each random group of ``n`` people (in group order), grouped from the records."""
    b = np.asarray(bits)
    if b.ndim != 1 or (b.size and not ((b == 0) | (b == 1)).all()):
        raise ValueError("bits must be a 1-d array of 0/1 values")
    n = int(n)
    if n < 1:
        raise ValueError(f"group size n must be >= 1, got {n!r}")
    order = rng.permutation(b.size) if rng is not None else np.arange(b.size)
    groups = b.size // n
    if groups == 0:
        raise ValueError(f"{b.size} bits are fewer than one group of n = {n}")
    position = np.empty(b.size, dtype=np.int64)
    position[order] = np.arange(b.size)  # the person at order[k] is k-th in the random order
    kept = position < groups * n
    records = pa.table({"group": position[kept] // n, target: b[kept].astype(np.int8)})
    table = group_records(records, ["group"], {"ones": f'"{target}" = 1'})
    return table.column("ones").to_numpy().astype(np.int64)


__all__ = ["adult_group_counts"]
