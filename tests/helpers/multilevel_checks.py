"""Shared helpers of the multi-level tests: a chain with one transition broken on purpose."""

from __future__ import annotations

import dataclasses

import numpy as np


def corrupted(chain, level):
    """In every column of T_{level-1} but column 0, move the weight on row n to another row of the column.

    Row n of the level is then fed by r_{level-1} = 0 only; for level 1 it is proportional to
    W[0, x], whose neighbouring ratio is about alpha_0 < alpha_1, so the certificate must fail.
    """
    T = chain.transitions[level - 1].copy()
    n = chain.n
    cols = np.arange(1, n + 1)
    rows = np.minimum(cols, n - 1)
    T[rows, cols] += T[n, cols]
    T[n, cols] = 0
    transitions = list(chain.transitions)
    transitions[level - 1] = T
    return dataclasses.replace(chain, transitions=tuple(transitions))
