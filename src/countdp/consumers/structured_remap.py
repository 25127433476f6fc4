"""A minimax consumer's remap of a release at large ``n``, from the weights' blocks, certified over all of them.

The remap LP of :mod:`countdp.consumers.remap` has ``(n+1)^2`` variables: 10^8 at ``n = 10^4``.  Its
answer has structure this path finds instead.  Weak duality brackets the optimum between the
worst-case loss of *any* remap and the Bayes risk of *any* prior on the side information ``S``
(:mod:`countdp.consumers.structured_certificate`); it suffices to find a remap and a prior whose
bounds meet within ``tol``:

1. **The reference remap**: each release answered by its Bayes response to the uniform prior on
   ``S``.  Deep inside a long run of ``S`` it is the identity (or a fixed shift), whose loss
   there is the noise's expected loss, the same at every such input.
2. **A geometric prior** ``y_i ~ rho^|i - c|`` on the longest run of ``S``, centred.  A release
   far out in either tail then has the posterior ``rho^(+-k) w(k)`` over offsets ``k`` from it
   (``w``: the mechanism's row at the centre), and the smallest ``rho`` for which the
   reference's answer is still a Bayes response to both (:func:`decay_rate`, by bisection) leaves
   the consumer nothing to gain anywhere: the prior's Bayes risk is the reference's loss at the
   centre, up to the mass the prior puts beyond the run's ends (``rho^(L/2)``).  For GM and L1
   ``rho = 2 alpha / (1 + alpha^2)``, for L0 ``rho = alpha``.
3. **Window LPs** (:mod:`countdp.consumers.window_lp`) where the reference's loss is still above
   the best lower bound: the releases near those inputs are re-solved as an LP (the rest keep their
   answers) and its dual is another prior.  Repeated with wider windows until the bounds meet.

A mechanism whose columns are all the same (UM) says nothing about the input: every release gets
the one answer distribution of the consumer's game against its side information (an LP with a
row per input of ``S`` and generated answers).

Each round costs a few passes over the ``(n+1)^2`` weights (O(n^2) time, memory of one block);
the window LPs are small when the hard inputs are few.  When they are not (the least favourable
prior spreads wider than a window may hold, as for L1 at alpha near 1 with ``n`` in the
thousands) the path stops with :class:`~countdp.consumers.remap.CertificateError`, never an
uncertified answer.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from countdp.consumers.answer_table import AnswerTable
from countdp.consumers.certificates import DualityCertificate
from countdp.consumers.losses import check_side, parse_loss
from countdp.consumers.remap import CertificateError, RemapSettings
from countdp.consumers.risks import answer_risks, loss_values
from countdp.consumers.structured_certificate import (
    first_pass,
    float_certificate,
    input_losses,
    prior_risks,
    rounding_chain,
)
from countdp.consumers.weight_blocks import WeightBlocks
from countdp.consumers.window_lp import hot_clusters, solve_columns, solve_window, window_around

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

WINDOW_MARGINS = (0, 32, 128)
"""Extra releases each side of a window, round by round (a window too narrow leaves its prior near its edges)."""
BLOCK_COPIES = 8
"""Block-sized float arrays alive at once in a pass (the weights, the weighted rows, the running sums)."""
WINDOW_COPIES = 10
"""Arrays of a window LP's size alive at once (its weights, the candidates' coefficients, the sparse model)."""
BASE_BYTES = 120 << 20
"""The interpreter with numpy, scipy and HiGHS loaded."""
PRIOR_FLOOR = 1e-200
"""A prior's entries below this times its largest are dropped: with weights of at least ``2^-124`` a product
``y_i W[r, i] / D`` stays far above the subnormal floats, where the relative rounding bounds of the
certificate would not hold."""


def memory_estimate(n: int, settings: RemapSettings) -> int:
    """Bytes the structured path needs at most for size ``n``: a pass's blocks and the largest window LP
    (both capped by ``settings``, whatever ``n``), and arrays of ``n + 1`` (inputs, releases, the prior)."""
    return BASE_BYTES + 8 * (BLOCK_COPIES * settings.block_entries + WINDOW_COPIES * settings.window_entries) \
        + 256 * (n + 1)


@dataclass(frozen=True)
class StructuredRemap:
    """A consumer's certified remap at large ``n``: ``table`` (answers per release), every input's loss
    ``per_input``, the worst over ``side``, the prior of the dual bound and the certificate (floats,
    rounding bounded: :func:`countdp.consumers.structured_certificate.float_certificate`)."""

    table: AnswerTable
    worst_loss: float
    per_input: np.ndarray
    side: np.ndarray
    prior: np.ndarray
    certificate: DualityCertificate
    attain_tol: float = 1e-9
    windows: int = 0

    @property
    def remap(self) -> sp.csc_matrix:
        """``R[a, r]`` as a sparse ``(n+1) x (n+1)`` matrix (columns: releases)."""
        return self.table.to_sparse()

    @property
    def attained(self) -> np.ndarray:
        """The inputs of ``side`` whose loss is the worst case (within ``attain_tol``)."""
        return self.side[self.per_input[self.side] >= self.worst_loss - self.attain_tol]


def _longest_run(side: np.ndarray) -> tuple[int, int]:
    """First and last input of the longest run of consecutive inputs in ``side`` (sorted)."""
    breaks = np.flatnonzero(np.diff(side) != 1)
    starts, ends = side[np.r_[0, breaks + 1]], side[np.r_[breaks, side.size - 1]]
    k = int(np.argmax(ends - starts))
    return int(starts[k]), int(ends[k])


def _answers_hold(spec: object, log_w: np.ndarray, at: int) -> bool:
    """Whether answer position ``at`` is a Bayes response (to relative 1e-12) for the weights ``exp(log_w)``."""
    w = np.exp(log_w - log_w.max())
    B = answer_risks(spec, w[None, :])[0]
    return bool(B[at] <= B.min() * (1.0 + 1e-12))


def decay_rate(spec: object, offsets: np.ndarray, profile: np.ndarray, shift: int, steps: int = 60) -> float | None:
    """The smallest ``rho`` in ``(0, 1]`` for which answering ``shift`` is a Bayes response to the posteriors
    ``rho^k profile[k]`` and ``rho^-k profile[k]`` over ``offsets`` (module docstring, step 2), by
    bisection; ``None`` if not even ``rho = 1`` (the uniform prior) gives it."""
    keep = profile > 0
    k, log_p = offsets[keep], np.log(profile[keep])
    if not np.any(k == shift):
        return None
    at = int(np.flatnonzero(k == shift)[0])
    pad = np.arange(k[0], k[-1] + 1)  # the answers between, as positions

    def holds(rho: float) -> bool:
        for sign in (1.0, -1.0):
            log_w = np.full(pad.size, -np.inf)
            log_w[k - k[0]] = log_p + sign * k * math.log(rho)
            if not _answers_hold(spec, log_w, int(k[at] - k[0])):
                return False
        return True

    if not holds(1.0):
        return None
    lo, hi = 0.0, 1.0
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        if mid > 0 and holds(mid):
            hi = mid
        else:
            lo = mid
    return hi


def plateau_rate(blocks: WeightBlocks, spec: object, side: np.ndarray,
                 settings: RemapSettings) -> tuple[float, int, int] | None:
    """``(rho, lo, hi)``: step 2's rate on the longest run ``lo..hi`` of ``side``, from the mechanism's row at
    the run's centre (entries below ``1e-3 tol`` of its largest left out: a floor's far tail carries
    no weight where the prior has any), or ``None`` (a run shorter than ``settings.plateau_min_run``,
    or no decay)."""
    lo, hi = _longest_run(side)
    if hi - lo + 1 < settings.plateau_min_run:
        return None
    c = (lo + hi) // 2
    uniform = np.zeros(blocks.N)
    uniform[side] = 1.0
    answer = int(prior_risks(blocks, spec, uniform, np.array([c]))[1][0])  # the reference's answer at c
    offsets = np.arange(lo, hi + 1) - c
    profile = blocks.block(np.array([c]), np.arange(lo, hi + 1))[0]
    profile = np.where(profile >= 1e-3 * settings.tol * profile.max(), profile, 0.0)
    rho = decay_rate(spec, offsets, profile, answer - c)
    return None if rho is None or rho >= 1.0 else (rho, lo, hi)


def plateau_prior(rate: tuple[float, int, int] | None, losses: np.ndarray, side: np.ndarray,
                  tol: float) -> np.ndarray | None:
    """Step 2's prior ``rho^|i - c|``, cut where it falls below ``1e-6 tol``, centred where the reference's
    loss is largest among the inputs of the run at least that far from its ends (its centre if none
    is): its Bayes risk is about the reference's loss at ``c``."""
    if rate is None:
        return None
    rho, lo, hi = rate
    reach = int(math.ceil(math.log(1e-6 * tol) / math.log(rho)))
    inner = np.arange(lo + reach, hi - reach + 1)
    c = int(inner[np.argmax(losses[inner])]) if inner.size else (lo + hi) // 2
    y = np.zeros(losses.size)
    span = np.arange(max(lo, c - reach), min(hi, c + reach) + 1)
    y[span] += rho ** np.abs(span - c).astype(float)
    return y


def background_level(blocks: WeightBlocks, side: np.ndarray, settings: RemapSettings) -> float:
    """``settings.prior_background`` times the floor: the smallest over the largest weight of the column of
    the middle input of ``side`` (``~1e-16`` for a form over ``2^62``, ``~1e-33`` over ``2^124``)."""
    column = blocks.columns(side[side.size // 2: side.size // 2 + 1])[:, 0]
    return settings.prior_background * float(column.min()) / float(column.max())


def _uninformative(blocks: WeightBlocks) -> bool:
    """Whether every column of the weights is the same (UM): a release then says nothing about the input."""
    mechanism = blocks.mechanism
    if mechanism.representation == "matrix":
        W = np.asarray(mechanism.weights)
        return bool(np.all(W == W[:, :1]))
    return getattr(mechanism, "mechanism", "") == "UM"


def _game_columns(spec: object, side: np.ndarray, answers: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    """The game's rows as ``(coef, fixed)`` with ``coef`` sparse: ``loss(i, a)`` itself, or for L0d, whose
    loss is one beyond distance ``D``, ``fixed = 1`` less ``[|i - a| <= D]`` (``D`` small: few non-zeros)."""
    loss = parse_loss(spec)
    if loss.name in ("L1", "L2") or 2 * loss.d + 1 > side.size:
        return sp.csr_matrix(loss_values(spec, side[None, :], answers[:, None])), np.zeros(side.size)
    first = np.searchsorted(side, answers - loss.d)
    counts = np.searchsorted(side, answers + loss.d, side="right") - first
    rows = np.repeat(np.arange(answers.size), counts)
    cols = np.repeat(first - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts) + np.arange(counts.sum())
    near = sp.csr_matrix((-np.ones(rows.size), (rows, cols)), shape=(answers.size, side.size))
    return near, np.ones(side.size)


def game_remap(blocks: WeightBlocks, spec: object, side: np.ndarray,
               settings: RemapSettings) -> tuple[AnswerTable, np.ndarray]:
    """The consumer's minimax answer distribution against ``side``, delivered through the releases (for an
    uninformative mechanism, :func:`_coupled`): an LP over generated answers (every answer cheaper than the
    candidates at the LP's prior joins; for L0d every answer between the ends of ``side`` from the
    start, as its optimum spreads over many), and its prior."""
    N = blocks.N
    uniform = np.zeros(N)
    uniform[side] = 1.0
    start = int(np.argmin(answer_risks(spec, uniform[None, :])[0]))
    answers = np.unique(np.clip(np.array([side[0], side[-1], start - 1, start, start + 1]), 0, N - 1))
    loss = parse_loss(spec)
    if loss.name in ("L0", "L0d") and (2 * loss.d + 1) * side.size <= settings.window_entries:
        answers = np.arange(side[0], side[-1] + 1)  # a 0/1 loss mixes over many answers: take them all (sparse rows)
    for round_ in range(settings.pricing_rounds):
        coef, fixed = _game_columns(spec, side, answers)
        q, y, t = solve_columns(coef, np.zeros(answers.size, dtype=np.int64), fixed, 1, settings)
        prior = np.zeros(N)
        prior[side] = y
        B = answer_risks(spec, prior[None, :])[0]
        cheaper = np.setdiff1d(np.flatnonzero(B < B[answers].min() - 1e-3 * settings.tol * max(1.0, t)), answers)
        if cheaper.size == 0 or round_ == settings.pricing_rounds - 1:
            break
        answers = np.concatenate([answers, cheaper])
    return _coupled(blocks.columns(side[:1])[:, 0], answers, q), prior


def _coupled(masses: np.ndarray, answers: np.ndarray, q: np.ndarray) -> AnswerTable:
    """A remap sending the releases' distribution ``masses`` to the answers' ``q``: the two laid end to end
    on ``[0, 1]`` and matched in order, so each release splits over at most a few answers (not all of
    them: at n = 10^4 under L0, ``q`` is spread over every input, and ``R = q`` in every column would
    hold 10^8 entries).  Every input's loss is then that of ``q``, whichever release it sees."""
    keep = q > 0
    answers, q = answers[keep], q[keep] / q[keep].sum()
    edges_m = np.concatenate([[0.0], np.cumsum(masses / masses.sum())])
    edges_q = np.concatenate([[0.0], np.cumsum(q)])
    edges = np.unique(np.clip(np.concatenate([edges_m, edges_q]), 0.0, 1.0))
    middle = 0.5 * (edges[1:] + edges[:-1])
    release = np.clip(np.searchsorted(edges_m, middle, side="right") - 1, 0, masses.size - 1)
    answer = answers[np.clip(np.searchsorted(edges_q, middle, side="right") - 1, 0, answers.size - 1)]
    return AnswerTable.from_entries(masses.size, release, answer, np.diff(edges))


@dataclass
class _Bounds:
    """The best prior so far and its Bayes risks, with the current remap and its losses.

    Every prior offered gets a background of ``background`` times its largest entry on every input
    of ``side`` (:func:`background_level`).  Without it a release far from the prior's inputs (one
    they produce only as a floor draw, ``~1e-16`` of the diagonal in a form over ``2^62``) would be
    answered toward them, as only they could have sent it, and the floor's loss, which no remap near
    the optimum avoids, would vanish from the bound (for L1 at ``n = 10^4`` it is ``~5e-9``, for L2
    ``~1e-5``).  The background, far above the floor relative to the diagonal, makes such a release
    its own inputs'; it costs the bound what the consumer gains by serving the background (its
    share of the prior times the gap between two Bayes risks), which the certificate counts.
    """

    table: AnswerTable
    losses: np.ndarray
    side: np.ndarray
    background: float
    prior: np.ndarray | None = None
    risks: np.ndarray | None = None
    value: float = 0.0

    def offer(self, blocks: WeightBlocks, spec: object, prior: np.ndarray | None) -> None:
        """Keep ``prior``, or it with its background, if its Bayes risk over every release beats the best so
        far (both are tried: at small ``n`` a column's smallest weight is a far tail, not a floor, and
        the background would cost more than it saves).  Only its non-negative finite entries on ``side``
        count: weak duality bounds the worst case over ``side`` by the Bayes risk of a prior on it."""
        if prior is None:
            return
        prior = np.where(np.isin(np.arange(prior.size), self.side) & np.isfinite(prior), np.clip(prior, 0.0, None), 0.0)
        if not np.any(prior > 0):
            return
        prior = prior / prior.max()
        prior[prior < PRIOR_FLOOR] = 0.0  # every product of the dual bound then stays a normal float
        lifted = prior.copy()
        lifted[self.side] = np.maximum(prior[self.side], self.background * prior.max())
        for candidate in (prior, lifted):
            risks, _ = prior_risks(blocks, spec, candidate)
            value = math.fsum(risks.tolist()) / math.fsum(candidate.tolist())
            if value > self.value:
                self.prior, self.risks, self.value = candidate, risks, value


def _certificate(bounds: _Bounds, side: np.ndarray, spec: object, N: int, tol: float) -> DualityCertificate:
    worst = float(bounds.losses[side].max())
    if bounds.prior is None:
        return DualityCertificate(worst, 0.0, tol, False)
    chain = rounding_chain(spec, N, int(np.diff(bounds.table.indptr).max()))
    return float_certificate(worst, bounds.risks, math.fsum(bounds.prior.tolist()), chain, tol)


def structured_remap(released: object, loss: object, side: object = None,
                     settings: RemapSettings | None = None) -> StructuredRemap:
    """The consumer's optimal remap of ``released`` (module docstring), certified within ``settings.tol``,
    or :class:`~countdp.consumers.remap.CertificateError`.  ``loss``: a named loss (L0, L0d:D, L1, L2);
    ``side``: the side information (default every input); ``settings``: default :class:`RemapSettings`."""
    settings = RemapSettings() if settings is None else settings
    spec = parse_loss(loss)
    blocks = WeightBlocks(released, settings.block_entries)
    N = blocks.N
    S = np.arange(N) if side is None else check_side(side, N - 1)
    LOG.info("the reference remap and its losses: one pass over the (n+1)^2 = %s weights", f"{N * N:,}")
    if _uninformative(blocks):
        table, prior = game_remap(blocks, spec, S, settings)
        bounds = _Bounds(table, input_losses(blocks, spec, table), S, background_level(blocks, S, settings))
        reference = None
        bounds.offer(blocks, spec, prior)
    else:
        rate = plateau_rate(blocks, spec, S, settings)
        reference, losses = first_pass(blocks, spec, S)
        bounds = _Bounds(AnswerTable.deterministic(reference), losses, S, background_level(blocks, S, settings))
        LOG.info("the geometric prior's Bayes risk")
        bounds.offer(blocks, spec, plateau_prior(rate, losses, S, settings.tol))
    rounds = 0
    for margin in WINDOW_MARGINS[:settings.window_rounds]:
        certificate = _certificate(bounds, S, spec, N, settings.tol)
        if certificate.holds or reference is None:
            break
        hot = S[bounds.losses[S] > bounds.value + 0.5 * settings.tol * max(1.0, abs(bounds.value))]
        for cluster in hot_clusters(blocks, hot, settings):
            window = window_around(blocks, cluster, S, margin, settings)
            LOG.info("window LP %d: %s hard inputs, %s releases free", rounds + 1, f"{cluster.size:,}",
                     f"{window.releases.size:,}")
            table, prior, _ = solve_window(blocks, spec, bounds.table, reference, window, settings)
            losses = input_losses(blocks, spec, table)
            if losses[S].max() <= bounds.losses[S].max():  # the LP can keep the current remap: never worse, but
                bounds.table, bounds.losses = table, losses  # for the weights it leaves out, which may tip it
            bounds.offer(blocks, spec, prior)
        rounds += 1
    certificate = _certificate(bounds, S, spec, N, settings.tol)
    if not certificate.holds:
        raise CertificateError(f"structured remap: duality gap {float(certificate.gap):.3g} > {settings.tol:g} "
                               f"after {rounds} window LP(s)")
    prior = np.zeros(N) if bounds.prior is None else bounds.prior / math.fsum(bounds.prior.tolist())
    return StructuredRemap(bounds.table, float(bounds.losses[S].max()), bounds.losses, S, prior, certificate,
                           settings.attain_tol, rounds)


__all__ = ["StructuredRemap", "background_level", "decay_rate", "game_remap", "memory_estimate", "plateau_prior",
           "plateau_rate", "structured_remap"]
