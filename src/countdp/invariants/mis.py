"""Gong and Meng's Algorithm 1: the Metropolized independent sampler (MIS) of the congenial release.

Target: ``p*(s) ∝ p(s) 1(A s = a, B s >= b)`` with ``p(s) = prod_i alpha^|s_i - s*_i|`` (the
double-geometric mechanism around the confidential ``s*``).  Each step (their Algorithm 1):

1. propose ``s~_I ~ q``: independent double-geometric noise with its own dispersion
   ``epsilon~`` around ``s*_I`` on the proposal index set ``I`` (``|I| = d - d_A`` and
   ``A[:, I^c]`` invertible); solve ``A[:, I] s~_I + A[:, I^c] s~_{I^c} = a`` for the rest;
2. accept with probability ``min{1, p(s~) 1(B s~ >= b) q(s_I^(t)) / (p(s^(t)) q(s~_I))}``;
3. otherwise keep ``s^(t)``.

The proposal does not depend on the state, so proposals and their log importance weights
``log p(s~) - log q(s~_I)`` are computed in vectorised chunks, and so is the accept/reject
chain: the state only changes at an acceptance, so the next acceptance is the first later step
whose test passes against the current weight, found by vectorised compares over short windows.
Floats throughout: this is their sampler, reproduced for comparison with the exact one
(:mod:`countdp.invariants.block_sums`).  A proposal whose solved coordinates are not integers
(possible only when ``A[:, I^c]`` is not unimodular) has ``p = 0`` and is rejected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MISProblem:
    """Algorithm 1's inputs but the proposal dispersion: ``center`` = s*, ``A s = a``, ``B s >= b``, index set ``I``.

    ``target_alpha``: the per-cell alpha of the unconstrained mechanism (``e^-epsilon``, or the
    exact rational the exact sampler uses, as a float).  ``inequality=None`` means ``s >= 0``.
    """

    center: np.ndarray
    A: np.ndarray
    a: np.ndarray
    proposal_index: tuple[int, ...]
    target_alpha: float
    inequality: tuple[np.ndarray, np.ndarray] | None = None


@dataclass(frozen=True)
class MISSettings:
    """``chunk``: proposals generated and scored per vectorised pass (it fixes the order of the random draws);
    ``window``: steps tested per vectorised compare when looking for the next acceptance (speed only)."""

    chunk: int = 1 << 16
    window: int = 64


@dataclass(frozen=True)
class MISResult:
    """The kept states (one row each, int64), and the accept count over all ``steps`` (burn-in included)."""

    draws: np.ndarray
    accepted: int
    steps: int

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.steps if self.steps else float("nan")


def double_geometric(rng: np.random.Generator, a: float, size: object) -> np.ndarray:
    """Two-sided geometric noise ``Pr[u] = (1-a)/(1+a) a^|u|``: the difference of two geometric variables.

    Each geometric is ``floor(E / ln(1/a))`` with ``E`` standard exponential (``Pr[k] = (1-a) a^k``),
    twice as fast as numpy's ``geometric`` here.
    """
    first, second = _geometric_pair(rng, a, size)
    return first.astype(np.int64) - second.astype(np.int64)


def _geometric_pair(rng: np.random.Generator, a: float, size: object) -> tuple[np.ndarray, np.ndarray]:
    """The two geometric variables of :func:`double_geometric` as integer-valued floats (same draws, same order)."""
    rate = -math.log(a)
    first = rng.standard_exponential(size)
    np.floor(np.divide(first, rate, out=first), out=first)
    second = rng.standard_exponential(size)
    np.floor(np.divide(second, rate, out=second), out=second)
    return first, second


def _solver(problem: MISProblem) -> tuple[np.ndarray, np.ndarray]:
    """``(I, I^c)`` as index arrays, checking ``|I^c| = rank A`` and that ``A[:, I^c]`` is invertible."""
    d = problem.center.size
    index = np.array(sorted(set(problem.proposal_index)), dtype=np.int64)
    rest = np.setdiff1d(np.arange(d), index)
    if rest.size != problem.A.shape[0] or abs(np.linalg.det(problem.A[:, rest].astype(float))) < 0.5:
        raise ValueError(f"the proposal index set must leave {problem.A.shape[0]} cells whose columns of A "
                         f"form an invertible matrix, it leaves {rest.size}")
    return index, rest


def _log_importance(problem: MISProblem, total: np.ndarray, on_index: np.ndarray, log_a_proposal: float,
                    support: np.ndarray) -> np.ndarray:
    """``log p(s) - log q(s_I)`` per row (constants dropped), ``-inf`` where the proposal is outside the support.

    ``total``, ``on_index``: ``|s - s*|`` summed over all cells and over ``I`` (integers, possibly
    held as floats: exact either way, so the weights are the same floats).
    """
    log_p = math.log(problem.target_alpha) * total
    log_q = log_a_proposal * on_index
    return np.where(support, log_p - log_q, -np.inf)


def _inside(problem: MISProblem, states: np.ndarray) -> np.ndarray:
    """Per row: the inequalities ``B s >= b`` hold (``s >= 0`` when none are given)."""
    if problem.inequality is None:
        return (states >= 0).all(axis=1)
    B, b = problem.inequality
    return (states @ B.T >= b[None, :]).all(axis=1)


def _column_runs(columns: np.ndarray) -> list[tuple[int, int, int]]:
    """Ascending ``columns`` as maximal runs ``(start, stop, offset)``: ``columns[offset:offset + stop - start]``."""
    breaks = np.flatnonzero(np.diff(columns) != 1) + 1
    offsets = [0, *breaks.tolist()]
    ends = [*breaks.tolist(), columns.size]
    return [(int(columns[o]), int(columns[e - 1]) + 1, o) for o, e in zip(offsets, ends, strict=True) if e > o]


def _proposals(problem: MISProblem, index: np.ndarray, rest: np.ndarray, inverse: np.ndarray, a_tilde: float,
               rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` proposals (steps 1-1 to 1-3) and their log importance weights (before the ``log q`` factor's scale).

    Returns ``(s, (total, on_index, support))`` for :func:`_log_importance`: a proposal is in the
    support when its solved coordinates are integers (then ``A s = a``) and it meets the inequalities.
    """
    free, scratch = _geometric_pair(rng, a_tilde, (n, index.size))
    np.subtract(free, scratch, out=free)  # the noise, as integer-valued floats: exact below 2**53
    on_index = np.abs(free, out=scratch).sum(axis=1)
    np.add(free, problem.center[index][None, :], out=free)  # in place: these arrays are the chunk's largest
    # float matmuls (BLAS): exact on integers this small; the solution is unique, so it is integral iff exact
    solved = (problem.a[None, :] - free @ problem.A[:, index].T.astype(float)) @ inverse.T
    solved_int = np.rint(solved).astype(np.int64)
    s = np.empty((n, problem.center.size), dtype=np.int64)
    for start, stop, offset in _column_runs(index):  # slices: far faster than scattering by index
        s[:, start:stop] = free[:, offset:offset + stop - start]
    s[:, rest] = solved_int
    total = on_index + np.abs(solved_int - problem.center[rest][None, :]).sum(axis=1)
    if problem.inequality is None:
        inside = (free >= 0).all(axis=1) & (solved_int >= 0).all(axis=1)
    else:
        inside = _inside(problem, s)
    return s, (total, on_index, inside & (np.abs(solved - solved_int) < 1e-6).all(axis=1))


def run_mis(problem: MISProblem, proposal_epsilon: float, start: np.ndarray, steps: int, rng: np.random.Generator,
            thin: int = 1, burn_in: int = 0, settings: MISSettings = MISSettings()) -> MISResult:
    """Algorithm 1 for ``steps`` steps from ``start`` (inside the invariants), keeping every ``thin``-th state.

    Kept: the states after steps ``burn_in + thin, burn_in + 2 thin, ...`` (1-based), so
    ``thin=1, burn_in=0`` keeps the whole chain ``s^(1), ..., s^(nsim)`` as their output.
    """
    if thin < 1 or burn_in < 0 or steps < 0:
        raise ValueError("thin must be >= 1 and burn_in, steps >= 0")
    index, rest = _solver(problem)
    inverse = np.linalg.inv(problem.A[:, rest].astype(float))
    a_tilde, log_a_tilde = math.exp(-proposal_epsilon), -proposal_epsilon
    current = np.asarray(start, dtype=np.int64).copy()
    deviation = np.abs(current - problem.center)
    current_lw = _log_importance(problem, deviation.sum(), deviation[index].sum(), log_a_tilde,
                                 _inside(problem, current[None, :])[0] and (problem.A @ current == problem.a).all())
    if not np.isfinite(current_lw):
        raise ValueError("the start of the chain must satisfy the invariants")
    kept, accepted, done = [], 0, 0
    while done < steps:
        n = min(settings.chunk, steps - done)
        proposals, (total, on_index, support) = _proposals(problem, index, rest, inverse, a_tilde, rng, n)
        lw = _log_importance(problem, total, on_index, log_a_tilde, support)
        log_u = np.log(rng.random(n))
        held, current_lw, chunk_accepts = _chain(lw, log_u, current_lw, settings.window)
        accepted += chunk_accepts
        step_numbers = done + 1 + np.arange(n)
        keep = (step_numbers > burn_in) & ((step_numbers - burn_in) % thin == 0)
        positions = held[keep]
        states = np.where((positions >= 0)[:, None], proposals[np.maximum(positions, 0)], current[None, :])
        kept.append(states)
        if held.size and held[-1] >= 0:
            current = proposals[held[-1]].copy()
        done += n
    draws = np.concatenate(kept) if kept else np.empty((0, current.size), dtype=np.int64)
    return MISResult(draws, accepted, steps)


def _chain(lw: np.ndarray, log_u: np.ndarray, current_lw: float, window: int) -> tuple[np.ndarray, float, int]:
    """The accept/reject steps of one chunk: per step, the proposal index held (-1: the state from before the chunk).

    Step ``t`` accepts iff ``log_u[t] < lw[t] - current_lw`` (the same float expression as a
    step-by-step loop); between acceptances ``current_lw`` is fixed, so each acceptance is the
    first passing step of a vectorised compare, ``window`` steps at a time.
    """
    accepted_at, t, n = [], 0, lw.size
    while t < n:
        stop = min(n, t + window)
        hits = np.flatnonzero(log_u[t:stop] < lw[t:stop] - current_lw)
        if hits.size:
            t += int(hits[0])
            accepted_at.append(t)
            current_lw = float(lw[t])
            t += 1
        else:
            t = stop
    marks = np.full(n, -1, dtype=np.int64)
    marks[accepted_at] = accepted_at
    return np.maximum.accumulate(marks), current_lw, len(accepted_at)
