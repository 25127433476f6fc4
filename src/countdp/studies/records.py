"""Shared helpers of the studies: alpha and name spellings, certified records, matrix summaries.

A *record* is a certified mechanism artifact as :func:`countdp.services.artifact.load_certified`
returns it (DP re-verified on its stored floats): ``mechanism``, ``n``, ``alpha``, ``objective``,
``matrix`` (``P[i, j] = Pr[output i | input j]``), ``objective_value``, ``l0``, ...
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from countdp.services.artifact import load_certified
from countdp.values.objectives import parse_objective

VISUAL_TOL = 1e-3
"""Tolerance for statements read off a plot ("the curves coincide")."""
EXACT_TOL = 1e-9
"""Tolerance for statements about LP solutions (solver output is exact to ~1e-12)."""
def objective_from_slug(slug: str) -> str:
    """``L0d1`` (path spelling) -> ``L0d:1``; ``L0``/``L1``/``L2`` unchanged."""
    return str(parse_objective(slug))

def load_matrix_records(paths: Iterable[str | Path]) -> list[dict]:
    """Certified records (DP re-verified on the stored floats), each with its path."""
    records = []
    for path in paths:
        record = load_certified(path)
        record["path"] = str(path)
        records.append(record)
    return records


def find_record(records: Sequence[dict], mechanism: str, n: int, alpha: float, objective: str = "L0") -> dict:
    obj = objective_from_slug(objective)
    for r in records:
        if r["mechanism"] == mechanism and r["n"] == n and np.isclose(r["alpha"], alpha, rtol=0, atol=1e-15) \
                and r["objective"] == obj:
            return r
    raise KeyError(f"no artifact for {mechanism} n={n} alpha={alpha} objective={obj}")


def mass_on(P: np.ndarray, outputs: Sequence[int]) -> np.ndarray:
    """Per input j: Pr[output in ``outputs`` | j]."""
    return np.asarray(P)[list(outputs), :].sum(axis=0)


def mass_within(P: np.ndarray, d: int) -> np.ndarray:
    """Per input j: Pr[|output - j| <= d | j]."""
    P = np.asarray(P)
    i = np.arange(P.shape[0])
    near = np.abs(i[:, None] - i[None, :]) <= d
    return np.where(near, P, 0.0).sum(axis=0)


def constant_output(P: np.ndarray, tol: float = EXACT_TOL) -> int | None:
    """The output a mechanism always reports (``None`` if it is not constant)."""
    rows = np.flatnonzero(np.min(np.asarray(P), axis=1) >= 1.0 - tol)
    return int(rows[0]) if rows.size else None


def wh_threshold(alpha: float) -> float:
    """Lemma 2: GM is weakly honest iff ``n >= 2a/(1-a)``."""
    return 2 * alpha / (1 - alpha)


def gm_l0(alpha: float) -> float:
    return 2 * alpha / (1 + alpha)
