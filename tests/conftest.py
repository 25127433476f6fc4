"""Shared fixtures: repository paths and an independent LP built from the SPEC's definitions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

REPO = Path(__file__).resolve().parents[1]


def reference_lp(n: int, alpha: float, properties: set[str], loss: np.ndarray) -> tuple[float, np.ndarray]:
    """Solve the design LP with scipy's linprog, every constraint written out entry by entry.

    Independent of countdp.constraints: this follows SPEC sections 1-3 literally, one row per
    inequality, so agreement between the two is evidence that both encode the definitions.
    ``loss[i, j]`` is the objective coefficient of P[i, j].
    """
    N = n + 1

    def var(i: int, j: int) -> int:
        return i * N + j

    A_ub, b_ub, A_eq, b_eq = [], [], [], []

    def le(terms: dict[int, float], rhs: float = 0.0) -> None:  # sum coef*x <= rhs
        row = np.zeros(N * N)
        for k, c in terms.items():
            row[k] += c
        A_ub.append(row)
        b_ub.append(rhs)

    def eq(terms: dict[int, float], rhs: float = 0.0) -> None:
        row = np.zeros(N * N)
        for k, c in terms.items():
            row[k] += c
        A_eq.append(row)
        b_eq.append(rhs)

    for j in range(N):
        eq({var(i, j): 1.0 for i in range(N)}, 1.0)
    for i in range(N):
        for j in range(n):
            le({var(i, j + 1): alpha, var(i, j): -1.0})
            le({var(i, j): alpha, var(i, j + 1): -1.0})
    for i in range(N):
        for j in range(N):
            if "RH" in properties and i != j:
                le({var(i, j): 1.0, var(i, i): -1.0})
            if "CH" in properties and i != j:
                le({var(i, j): 1.0, var(j, j): -1.0})
            if "RM" in properties:
                if 1 <= j <= i:
                    le({var(i, j - 1): 1.0, var(i, j): -1.0})
                if i <= j < n:
                    le({var(i, j + 1): 1.0, var(i, j): -1.0})
            if "CM" in properties:
                if 1 <= i <= j:
                    le({var(i - 1, j): 1.0, var(i, j): -1.0})
                if j <= i < n:
                    le({var(i + 1, j): 1.0, var(i, j): -1.0})
            if "S" in properties and (i, j) != (n - i, n - j):
                eq({var(i, j): 1.0, var(n - i, n - j): -1.0})
        if "WH" in properties:
            le({var(i, i): -1.0}, -1.0 / N)
        if "F" in properties and i > 0:
            eq({var(i, i): 1.0, var(0, 0): -1.0})
    res = linprog(loss.ravel(), A_ub=np.array(A_ub), b_ub=b_ub, A_eq=np.array(A_eq), b_eq=b_eq,
                  bounds=(0, 1), method="highs-ipm")
    assert res.status == 0, res.message
    return float(res.fun), res.x.reshape(N, N)


def uniform_l0_loss(n: int) -> np.ndarray:
    """Coefficients of L0 under a uniform prior: (n+1)/n * 1/(n+1) for every off-diagonal entry."""
    return (1 - np.eye(n + 1)) / n


@pytest.fixture
def repo() -> Path:
    return REPO
