"""The remap LP on a window: the releases near the hard inputs are free, every other release keeps its answers.

At large ``n`` the remap LP of :mod:`countdp.consumers.remap` (``(n+1)^2`` variables) is solved only
where it matters.  A *window* is a set ``T`` of releases, those a *hot* input (one whose loss is
above the best lower bound so far) produces with probability at least ``reach_tol`` times its
likeliest release's (widened by a margin), and the inputs ``U`` of the side information that
reach a release of ``T`` so.  (Relative, so that a floor, a uniform share of ``~1e-16`` per entry
in every column, ties no release to every input: what a release far from all of ``U`` costs them
is a floor draw, paid whatever it is answered with, and stays in ``fixed``.)  The LP

    ``min t``  s.t.  ``sum_{r in T, a} W[r, i]/D loss(i, a) R[a, r] + fixed_i <= t``  (``i`` in ``U``),
    ``sum_a R[a, r] = 1``  (``r`` in ``T``),  ``R >= 0``,

where ``fixed_i`` is what the releases outside ``T`` (keeping the current remap) cost input ``i``
(and the releases of ``T`` that reach ``i`` only below ``reach_tol``, at their current answers),
has every input it can change as a row, so the patched remap's worst case is the larger of ``t``
and the losses of the inputs it does not touch.  Its dual on ``U`` is a prior, whose Bayes risk
over *every* release and answer (:func:`countdp.consumers.structured_certificate.prior_risks`) is
a lower bound on the whole problem.

The answers ``a`` are generated: a release starts with its current answers and the reference's
(the Bayes response to a uniform prior) and its neighbours, and after each solve every release of
``T`` is priced over all ``n + 1`` answers at the LP's prior (:func:`countdp.consumers.risks.answer_risks`):
each answer cheaper than its release's candidates joins, until the gains together (a bound on how
far any further answers could lower the LP's value) are below ``tol / 10``, or two rounds leave the
value where it was (a degenerate LP has many priors, and the one HiGHS returns may price answers
that change nothing).

Numerics: the loss rows are scaled so that their largest coefficient is :data:`LARGEST_ENTRY`
(HiGHS silently drops entries below :data:`HIGHS_SMALLEST`, and far tails decide the last digits
of the value); a weight whose coefficient would still fall below that stays out, in ``fixed`` at
its release's current answer, and the LP is solved once more with those at its own answers.
HiGHS's primal simplex answers; its basis's exact vertex (:func:`countdp.design.polish.basis_vertex`,
one sparse LU) replaces its point, whose rows hold only to its tolerance.  Nothing is trusted:
the certificate evaluates the remap, and the prior, on every weight.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from countdp.consumers.answer_table import AnswerTable
from countdp.consumers.remap import CertificateError, RemapSettings
from countdp.consumers.risks import answer_risks, loss_values
from countdp.consumers.structured_certificate import chunk_losses, input_losses
from countdp.consumers.weight_blocks import WeightBlocks
from countdp.design.highspy_loader import load_highspy
from countdp.design.polish import basis_vertex
from countdp.design.solvers.highs import basis_statuses, highs_lp

PRIMAL_SIMPLEX = 4
"""HiGHS's ``simplex_strategy`` for its primal simplex: on these degenerate LPs (a worst case over many
inputs tied at the optimum) its dual simplex can stall for hundreds of thousands of iterations."""

HIGHS_SMALLEST = 1e-9
"""HiGHS drops matrix entries below this (its ``small_matrix_value``; lower, its simplex fails on these LPs).
The loss rows are multiplied so that their largest coefficient is :data:`LARGEST_ENTRY`; a weight whose
coefficient at its release's current answer still falls below this stays out of the LP, at that answer,
rather than silently count as 0."""
LARGEST_ENTRY = 1e6
"""The loss rows' largest coefficient once scaled: a coefficient ``1e-15`` of it still reaches HiGHS."""


@dataclass(frozen=True)
class _Model:
    """An LP ``min cost z`` over ``col_lower <= z <= col_upper``, ``row_lower <= A z <= row_upper``."""

    A: sp.csc_matrix
    cost: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray


@dataclass(frozen=True)
class Window:
    """Free releases ``releases``, the inputs ``inputs`` (of the side information) they reach, each input's
    largest weight ``peaks`` (what ``reach_tol`` is relative to), and ``reached``: every release those
    inputs reach (free in the dual LP)."""

    releases: np.ndarray
    inputs: np.ndarray
    peaks: np.ndarray
    reached: np.ndarray


def _widened(mask: np.ndarray, margin: int) -> np.ndarray:
    """``mask`` with every ``True`` spread ``margin`` places either way."""
    if margin <= 0:
        return mask
    counts = np.concatenate([[0], np.cumsum(mask)])
    i = np.arange(mask.size)
    return counts[np.minimum(i + margin + 1, mask.size)] - counts[np.maximum(i - margin, 0)] > 0


def hot_clusters(blocks: WeightBlocks, hot: np.ndarray, settings: RemapSettings) -> list[np.ndarray]:
    """The hot inputs in groups whose windows may overlap, each solved as its own window LP: an input's
    releases (those at ``reach_tol`` of its likeliest or above) span an interval; widened by its own
    length either way (the inputs its releases reach), overlapping intervals join one group.  Two
    corners of ``0..n`` are two small LPs, not one holding both and every pair between them."""
    N = blocks.N
    lo, hi = np.zeros(hot.size, dtype=np.int64), np.zeros(hot.size, dtype=np.int64)
    start = 0
    for cols in blocks.spans(hot):
        near = blocks.columns(cols)
        near = near >= settings.reach_tol * near.max(axis=0)
        lo[start:start + cols.size] = np.argmax(near, axis=0)
        hi[start:start + cols.size] = N - 1 - np.argmax(near[::-1], axis=0)
        start += cols.size
    width = hi - lo + 1
    lo, hi = lo - width, hi + width
    order = np.argsort(lo, kind="stable")
    groups, reach = [[order[0]]], hi[order[0]]
    for k in order[1:]:
        if lo[k] <= reach:
            groups[-1].append(k)
        else:
            groups.append([k])
        reach = max(reach, hi[k]) if lo[k] <= reach else hi[k]
    return [np.sort(hot[g]) for g in groups]


def window_around(blocks: WeightBlocks, hot: np.ndarray, side: np.ndarray, margin: int,
                  settings: RemapSettings) -> Window:
    """The window of the hot inputs (module docstring); ``CertificateError`` if it couples more than
    ``settings.window_entries`` (release, input) pairs."""
    N = blocks.N
    reached = np.zeros(N, dtype=bool)
    for cols in blocks.spans(hot):
        M = blocks.columns(cols)
        reached |= (M >= settings.reach_tol * M.max(axis=0)).any(axis=1)
    releases = np.flatnonzero(_widened(reached, margin))
    touched, peaks, all_reached = np.zeros(N, dtype=bool), np.zeros(N), np.zeros(N, dtype=bool)
    touched[hot] = True
    free = np.zeros(N, dtype=bool)
    free[releases] = True
    for cols in blocks.spans(side):
        M = blocks.columns(cols)
        peaks[cols] = M.max(axis=0)
        near = M >= settings.reach_tol * peaks[cols]
        touched[cols] |= near[free].any(axis=0)
        all_reached |= near[:, touched[cols]].any(axis=1)
    inputs = side[touched[side]]
    if int(all_reached.sum()) * inputs.size > settings.window_entries:
        raise CertificateError(
            f"the hard inputs ({hot.size:,} of them, {int(hot.min())}..{int(hot.max())}) need a window LP of "
            f"{int(all_reached.sum()):,} releases x {inputs.size:,} inputs, more than the {settings.window_entries:,} "
            "pairs it may hold (the least favourable prior spreads too wide at this alpha and n)")
    return Window(releases, inputs, peaks[inputs], np.flatnonzero(all_reached | free))


def _initial_answers(table: AnswerTable, reference: np.ndarray, releases: np.ndarray,
                     N: int) -> tuple[np.ndarray, np.ndarray]:
    """``(position in releases, answer)`` of each starting candidate: the current answers, the reference's
    and its neighbours."""
    at = np.full(N, -1, dtype=np.int64)
    at[releases] = np.arange(releases.size)
    current = table.releases
    inside = at[current] >= 0
    pos = np.concatenate([at[current[inside]], np.repeat(np.arange(releases.size), 3)])
    ans = np.concatenate([table.answers[inside], (reference[releases][:, None] + np.arange(-1, 2)).ravel()])
    keep = (ans >= 0) & (ans < N)
    pairs = np.unique(np.stack([pos[keep], ans[keep]], axis=1), axis=0)
    return pairs[:, 0], pairs[:, 1]


def solve_columns(coef: np.ndarray, pos: np.ndarray, fixed: np.ndarray, n_releases: int,
           settings: RemapSettings) -> tuple[np.ndarray, np.ndarray, float]:
    """``min t`` over ``z >= 0`` with ``coef.T z + fixed <= t`` (one row per input; ``coef``: candidates x
    inputs, dense, whose entries below ``1e-3 tol / n_releases`` in size are left out, or sparse) and
    the candidates of each release (``pos``: its position, ``0..n_releases-1``) summing to one, by
    HiGHS's primal simplex, polished to its basis's vertex: ``(z, the rows' multipliers (a prior on
    the inputs), t)``.  Nothing is trusted: the certificate evaluates the remap."""
    highspy = load_highspy()
    k, m = coef.shape
    drop = 1e-3 * settings.tol / max(1, n_releases)
    if sp.issparse(coef):
        entries = sp.coo_matrix(coef)
        c_idx, u_idx, values = entries.row, entries.col, entries.data
    else:
        c_idx, u_idx = np.nonzero(np.abs(coef) >= drop)
        values = coef[c_idx, u_idx]
    scale = LARGEST_ENTRY / max(float(np.abs(values).max(initial=0.0)), 1.0)  # the loss rows, times this
    rows = np.concatenate([u_idx, np.arange(m), m + pos])
    cols = np.concatenate([c_idx, np.full(m, k), np.arange(k)])
    data = np.concatenate([values * scale, np.full(m, -scale), np.ones(k)])
    A = sp.csc_matrix((data, (rows, cols)), shape=(m + n_releases, k + 1))
    cost = np.zeros(k + 1)
    cost[-1] = 1.0
    row_lower = np.concatenate([np.full(m, -np.inf), np.ones(n_releases)])
    row_upper = np.concatenate([-fixed * scale, np.ones(n_releases)])
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("primal_feasibility_tolerance", settings.solver_tol)
    h.setOptionValue("dual_feasibility_tolerance", settings.solver_tol)
    h.setOptionValue("simplex_strategy", PRIMAL_SIMPLEX)
    h.setOptionValue("simplex_iteration_limit", settings.window_iterations)
    lp = _Model(A, cost, np.zeros(k + 1), np.full(k + 1, np.inf), row_lower, row_upper)
    h.passModel(highs_lp(lp.A, lp.cost, lp.col_lower, lp.col_upper, lp.row_lower, lp.row_upper))
    h.run()
    solution = h.getSolution()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal or not (solution.value_valid and solution.dual_valid):
        raise CertificateError(f"window LP ({m:,} inputs x {k:,} answers): HiGHS stopped without an optimum "
                               f"({h.modelStatusToString(h.getModelStatus())}, {settings.window_iterations:,} "
                               "simplex iterations allowed)")
    z, row_dual = np.array(solution.col_value), np.array(solution.row_dual)
    polished = basis_vertex(lp, *basis_statuses(highspy, h.getBasis())) if h.getBasis().valid else None
    if polished is not None:  # the basis's own vertex: its active rows hold to rounding, not to HiGHS's tolerance
        z, row_dual = polished[0], polished[1]
    return z[:-1], np.clip(-row_dual[:m] * scale, 0.0, None), float(z[-1])


def _priced(spec: object, weights: np.ndarray, inputs: np.ndarray, y: np.ndarray, pos: np.ndarray,
            ans: np.ndarray, N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """At prior ``y``: each release (position) whose best answer over all ``n + 1`` beats its candidates,
    that answer, and by how much (the gains' sum bounds how far more answers could lower the LP's value)."""
    w = np.zeros((weights.shape[0], N))
    w[:, inputs] = weights * y[None, :]
    B = answer_risks(spec, w)
    best = np.argmin(B, axis=1)
    have = np.full(weights.shape[0], np.inf)
    np.minimum.at(have, pos, B[pos, ans])
    gain = have - B[np.arange(B.shape[0]), best]
    new = np.flatnonzero(gain > 0)
    return new, best[new], gain[new]


def _generated(spec: object, weights: np.ndarray, inputs: np.ndarray, fixed: np.ndarray, pos: np.ndarray,
               ans: np.ndarray, n_releases: int, settings: RemapSettings, N: int) -> tuple:
    """The window LP over the rows ``inputs`` (``weights``: the free releases' weights on them) with answers
    generated from ``(pos, ans)`` (module docstring): ``(pos, ans, z, prior, t)`` of the last optimum."""
    solved, values = None, []
    for _ in range(settings.pricing_rounds):
        coef = weights[pos] * loss_values(spec, inputs[None, :], ans[:, None])
        try:
            z, y, t = solve_columns(coef, pos, fixed, n_releases, settings)
        except CertificateError:
            if solved is None:
                raise
            break  # more answers, one LP too many for HiGHS: keep the last optimum
        solved, small = (pos, ans, z, y, t), 0.1 * settings.tol * max(1.0, abs(t))
        values.append(t)
        new_pos, new_ans, gain = _priced(spec, weights, inputs, y, pos, ans, N)
        if gain.sum() <= small or (len(values) > 2 and values[-3] - t <= 1e-2 * small):
            break  # no further answers lower the value by more than tol / 10, or two rounds changed nothing
        pos, ans = np.concatenate([pos, new_pos]), np.concatenate([ans, new_ans])
    return solved


def _lp_data(blocks: WeightBlocks, spec: object, table: AnswerTable, window: Window, releases: np.ndarray,
             settings: RemapSettings) -> tuple[np.ndarray, np.ndarray]:
    """The free releases' weights on the window's inputs (floor-level ones zeroed) and each input's fixed
    cost: the other releases, and the floor-level weights, at their current answers."""
    U = window.inputs
    outside = np.setdiff1d(np.arange(blocks.N), releases, assume_unique=True)
    weights = blocks.block(releases, U)
    answers, probs = table.slots(releases)
    scale = np.maximum(loss_values(spec, U[None, :], answers[:, :1]), 1.0)  # the loss at the current answer
    # floor-level, or a coefficient too small for HiGHS to keep: a constant, whatever the answer
    largest = float((weights * scale).max(initial=0.0))
    loose = (weights < settings.reach_tol * window.peaks[None, :]) | \
        (weights * scale < HIGHS_SMALLEST * largest / LARGEST_ENTRY)
    fixed = input_losses(blocks, spec, table, U, outside) + chunk_losses(spec, weights * loose, U, answers, probs)
    weights[loose] = 0.0
    return weights, fixed


def solve_window(blocks: WeightBlocks, spec: object, table: AnswerTable, reference: np.ndarray, window: Window,
                 settings: RemapSettings) -> tuple[AnswerTable, np.ndarray, float]:
    """The window LP with generated answers (module docstring): the patched remap, a prior (zero off the
    window's inputs) and the LP's value ``t``.

    The weights left out of the LP (floor-level, or below HiGHS's smallest entry) count at the
    releases' answers before it; the LP is solved once more with them at its own answers, which
    removes most of what they moved.  The prior is that of a second LP, the *dual window*: the same
    inputs with every release they reach free.  The first LP's own prior may lean on inputs at the
    window's edge, whose losses releases outside the window (kept as they are) help decide; the
    consumer of the whole problem re-answers those, and that prior's Bayes risk would fall short.
    The dual window is the problem of a consumer who knows the input is one of the window's, a
    relaxation: its prior's Bayes risk is its value, below the optimum only by what knowing the
    window's ends is worth to the hard inputs far inside it.
    """
    N, T, U = blocks.N, window.releases, window.inputs
    weights, fixed = _lp_data(blocks, spec, table, window, T, settings)
    pos, ans = _initial_answers(table, reference, T, N)
    pos, ans, z, y_u, t = _generated(spec, weights, U, fixed, pos, ans, T.size, settings, N)
    keep = ~np.isin(table.releases, T)

    def patch(z: np.ndarray) -> AnswerTable:
        return AnswerTable.from_entries(N, np.concatenate([T[pos], table.releases[keep]]),
                                        np.concatenate([ans, table.answers[keep]]),
                                        np.concatenate([z, table.probabilities[keep]]))

    patched = patch(z)
    _, fixed = _lp_data(blocks, spec, patched, window, T, settings)  # the weights left out, at the new answers
    try:
        z, _, t = solve_columns(weights[pos] * loss_values(spec, U[None, :], ans[:, None]), pos, fixed, T.size,
                                settings)
        patched = patch(z)
    except CertificateError:
        pass  # the first answer stands
    wide = window.reached
    weights, fixed = _lp_data(blocks, spec, patched, window, wide, settings)
    pos, ans = _initial_answers(patched, reference, wide, N)
    try:
        y_u = _generated(spec, weights, U, fixed, pos, ans, wide.size, settings, N)[3]
    except CertificateError:
        pass  # the first LP's prior stands
    prior = np.zeros(N)
    prior[U] = y_u
    return patched, prior, t


__all__ = ["Window", "hot_clusters", "solve_columns", "solve_window", "window_around"]
