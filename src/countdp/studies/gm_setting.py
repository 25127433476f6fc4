"""Gong and Meng's Section 3 example: the 2 x 23 sex-by-age table, its invariants and its data model.

The table (their Table 1) has rows Female, Male and 23 age groups; ``s`` is its row
vectorisation (46 cells, the 23 female cells first, so cell 1 in their 1-based numbering is
female aged 0-5).  The invariants are (1) total population, (2) female population ("proportion
female", with the total fixed), (3) voting-age population, ages 18+: the 19 columns from
"18-19" to "85+" (0-based columns 4..22) of both rows; their Table 1 bears this out (43
under-18s and 213 adults in both of its tables), and (4) non-negative cells.  As block sums:
female-minor + female-adult, male-minor + male-adult and female-adult + male-adult are
fixed, leaving one free block sum.

Their proposal index set is ``{2, ..., 22, 24, ..., 45}`` (1-based), so cells 1, 23 and 46
(female 0-5, female 85+ and male 85+) are solved from the three equalities.

Cells of the simulated confidential tables are "NegativeBinomial(100, .05)" with mean 5.26
and variance 5.54: the number of events of probability 0.05 before the 100th of probability
0.95, i.e. numpy's ``negative_binomial(n=100, p=0.95)`` (R's ``rnbinom(size=100, prob=0.95)``),
mean ``100 * 0.05 / 0.95 = 100/19`` and variance ``100 * 0.05 / 0.95**2 = 2000/361``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from countdp.invariants.spec import SubsetSum

SEXES = ("Female", "Male")
AGE_GROUPS = ("0-5", "6-10", "11-15", "16-17", "18-19", "20", "21", "22-24", "25-29", "30-34", "35-39", "40-44",
              "45-49", "50-54", "55-59", "60-61", "62-64", "65-66", "67-69", "70-74", "75-79", "80-84", "85+")
N_AGES = len(AGE_GROUPS)
N_CELLS = len(SEXES) * N_AGES
FIRST_VOTING_COLUMN = AGE_GROUPS.index("18-19")

PROPOSAL_INDEX = tuple(range(1, 22)) + tuple(range(23, 45))
"""Their proposal index set {2..22, 24..45} in 0-based cell numbers."""

NB_SIZE = 100
"""Gong and Meng's first NB parameter: the number of 'successes' (probability 0.95) to wait for."""

NB_EVENT_PROBABILITY = Fraction(1, 20)
"""Their second NB parameter (0.05): the probability of the counted event."""

EPSILON_CONDITIONAL = Fraction(1, 2)
"""epsilon_0 per cell of the unconstrained mechanism behind the conditional one."""

GM_CONFIDENTIAL = np.array([
    [8, 6, 3, 6, 4, 4, 4, 8, 5, 7, 7, 6, 1, 5, 4, 4, 9, 6, 2, 8, 8, 8, 7],
    [3, 4, 5, 8, 6, 4, 5, 5, 5, 6, 10, 7, 3, 2, 5, 11, 6, 4, 7, 4, 5, 3, 8]], dtype=np.int64)
"""Their Table 1 (top): the simulated confidential table (female total 130, male 126, 43 minors)."""

GM_RELEASE = np.array([
    [6, 6, 4, 3, 2, 10, 2, 5, 6, 7, 5, 6, 0, 5, 4, 5, 10, 8, 3, 8, 8, 12, 5],
    [9, 4, 5, 6, 3, 4, 5, 5, 3, 4, 7, 8, 5, 3, 2, 23, 8, 2, 6, 3, 0, 3, 8]], dtype=np.int64)
"""Their Table 1 (bottom): the constrained differentially private release they drew with Algorithm 1."""


def nb_moments() -> tuple[Fraction, Fraction]:
    """Exact mean and variance of a cell: ``r p / (1 - p)`` and ``r p / (1 - p)**2`` with r = 100, p = 0.05."""
    p = NB_EVENT_PROBABILITY
    return NB_SIZE * p / (1 - p), NB_SIZE * p / (1 - p) ** 2


def confidential_tables(rng: np.random.Generator, count: int) -> np.ndarray:
    """``count`` simulated confidential tables, ``(count, 46)``, cells i.i.d. as Gong and Meng's NB(100, .05)."""
    return rng.negative_binomial(NB_SIZE, float(1 - NB_EVENT_PROBABILITY), size=(count, N_CELLS)).astype(np.int64)


def block_labels() -> list[str]:
    """Per cell (row-vectorised): female/male x minor/adult, the blocks the invariants are sums over."""
    return [f"{sex.lower()}-{'adult' if col >= FIRST_VOTING_COLUMN else 'minor'}"
            for sex in SEXES for col in range(N_AGES)]


def invariants() -> tuple[SubsetSum, ...]:
    """Total, female and voting-age population, each equal to the confidential table's."""
    voting = tuple(row * N_AGES + col for row in range(len(SEXES)) for col in range(FIRST_VOTING_COLUMN, N_AGES))
    return (SubsetSum("total", tuple(range(N_CELLS))),
            SubsetSum("female", tuple(range(N_AGES))),
            SubsetSum("voting age", voting))


def equality_system(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(A, a)`` with ``A s = a`` the three equalities for confidential ``table`` (flat), for Algorithm 1."""
    A = np.zeros((3, N_CELLS), dtype=np.int64)
    for i, inv in enumerate(invariants()):
        A[i, list(inv.cells)] = 1
    return A, A @ np.asarray(table, dtype=np.int64).ravel()


def as_table(cells: np.ndarray) -> np.ndarray:
    """A flat 46-cell vector as the 2 x 23 table."""
    return np.asarray(cells).reshape(len(SEXES), N_AGES)
