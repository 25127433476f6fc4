"""The size and memory of the design LP built whole (:class:`countdp.design.highs_model.DesignModel`),
predicted without building it.

The studies beyond the paper that compare designs directly (minimax against Bayesian designs,
prior-aware designs, the 128 property subsets) do not go through the design engine: each solves the
plain formulation of :class:`countdp.design.model.DesignProblem` in one HiGHS model, without
reductions or template strategies, lexicographically (two solves on one model), and the subsets
study then its minimum-norm optimum (a QP: HiGHS's, else Clarabel's through cvxpy).  No memory
bound of the engine applies there, so a caller that must know beforehand whether such a study fits
(a workflow config check) asks :func:`full_model_bytes`: arithmetic only, no numpy, no LP stack.

:func:`full_model_size` counts the model's columns, rows and constraint non-zeros as
:mod:`countdp.design.constraints` builds them (``N = n + 1``): ``N^2`` entries and the column
bound ``t``; non-negativity (``N^2`` rows of one entry), the column sums (``N`` rows of ``N``), DP
(``2 N n`` rows of two), each property (RH, CH, RM, CM: ``N n`` rows of two; F: ``n`` of two; WH:
``N`` of one; S: ``floor(N^2 / 2)`` of two) and the ``N`` column-loss rows (at most ``N n``
non-zeros: no objective charges the truth, and the ``-1`` of ``t`` in each).  The lexicographic
bound row added between the two solves is not counted.

The peak memory follows the design estimate's model (:mod:`countdp.design.estimate`): the process,
a path overhead and a cost per entry of the ``(n + 1)^2`` matrix.  Measured peak resident growth
(``resource.getrusage``, a fresh process per run with the LP stack imported first, alpha = 0.91,
L0): the lexicographic pair of solves 22 MB at n = 60 and 62 MB at n = 100 with no property (6,060
B an entry), 35 MB at n = 60, 93 MB at n = 100, 167 MB at n = 140 and 344 MB at n = 200 with all
seven (8,400-9,500 B an entry), hence :data:`LEXICOGRAPHIC_BYTES_PER_ENTRY`.  The subsets study
keeps every subset's constraint system and optimum of its ``(n, alpha)`` point while it runs, and
its QP falls back to Clarabel from about n = 80: the whole study at one point grew 35 MB at n = 24
and 73 MB at n = 36 (54,000-58,500 B an entry), hence :data:`SUBSET_MAP_BYTES_PER_ENTRY`.
"""

from __future__ import annotations

from dataclasses import dataclass

from countdp.design.memory import PATH_OVERHEAD_BYTES, PROCESS_BYTES

LEXICOGRAPHIC_BYTES_PER_ENTRY = 10_000
"""Peak memory per matrix entry of a lexicographic design on the full model (module docstring)."""
SUBSET_MAP_BYTES_PER_ENTRY = 60_000
"""Peak memory per matrix entry of the subsets study at one ``(n, alpha)`` (module docstring)."""
ALL_PROPERTIES = ("RH", "RM", "CH", "CM", "F", "WH", "S")
"""The seven properties: the largest model of any property set."""


@dataclass(frozen=True)
class ModelSize:
    """The full model's columns (the ``(n + 1)^2`` entries and ``t``), rows and constraint non-zeros."""

    columns: int
    rows: int
    nonzeros: int

    def describe(self) -> str:
        """``"10,202 columns, 76,304 rows, 162,304 non-zeros"``."""
        return f"{self.columns:,} columns, {self.rows:,} rows, {self.nonzeros:,} non-zeros"


def _property_rows(name: str, n: int) -> tuple[int, int]:
    """``(rows, non-zeros)`` of property ``name`` at ``n`` (module docstring)."""
    N = n + 1
    if name in ("RH", "CH", "RM", "CM"):
        return N * n, 2 * N * n
    if name == "F":
        return n, 2 * n
    if name == "WH":
        return N, N
    if name == "S":
        return N * N // 2, 2 * (N * N // 2)
    raise ValueError(f"unknown property {name!r}; allowed: {', '.join(ALL_PROPERTIES)}")


def full_model_size(n: int, properties: tuple[str, ...] = ()) -> ModelSize:
    """The size of the full model of BasicDP + ``properties`` at ``n`` as
    :class:`~countdp.design.highs_model.DesignModel` builds it (module docstring; the loss rows'
    non-zeros are an upper bound, exact for L0, L1 and L2)."""
    N = n + 1
    rows = N * N + N + 2 * N * n + N
    nonzeros = N * N + N * N + 4 * N * n + N * n + N
    for name in dict.fromkeys(properties):
        extra_rows, extra_nonzeros = _property_rows(name, n)
        rows, nonzeros = rows + extra_rows, nonzeros + extra_nonzeros
    return ModelSize(N * N + 1, rows, nonzeros)


def full_model_bytes(n: int, bytes_per_entry: int = LEXICOGRAPHIC_BYTES_PER_ENTRY) -> int:
    """What a process solving the full model at ``n`` needs: the process, the path overhead and
    ``bytes_per_entry`` an entry (:data:`LEXICOGRAPHIC_BYTES_PER_ENTRY`, or
    :data:`SUBSET_MAP_BYTES_PER_ENTRY` for the subsets study)."""
    return PROCESS_BYTES + PATH_OVERHEAD_BYTES + bytes_per_entry * (n + 1) ** 2


__all__ = ["ALL_PROPERTIES", "LEXICOGRAPHIC_BYTES_PER_ENTRY", "SUBSET_MAP_BYTES_PER_ENTRY", "ModelSize",
           "full_model_bytes", "full_model_size"]
