"""The two bounds of a consumer's remap at large ``n``, over every weight, with their rounding bounded.

The same weak duality as :mod:`countdp.consumers.certificates`, evaluated block by block on the
release weights (:class:`~countdp.consumers.weight_blocks.WeightBlocks`) instead of a matrix:

* **primal**: every input's expected loss under a remap ``R`` (:class:`~countdp.consumers.answer_table.AnswerTable`,
  its columns summing to one exactly), ``sum_r W[r, i] / D sum_a R[a, r] loss(i, a)``, for all
  ``(n+1)^2`` weights; the worst over the side information is an upper bound on the optimum;
* **dual**: for a prior ``y`` on the side information, the Bayes risk
  ``sum_r min_a sum_i y_i W[r, i] / D loss(i, a)`` (each release answered by its best answer, over
  all ``n + 1`` answers: :func:`countdp.consumers.risks.answer_risks`), divided by ``sum y``: a
  lower bound on the optimum for every prior.

Both are sums of non-negative float terms, each entry within
:data:`~countdp.consumers.weight_blocks.ENTRY_ULPS` of its exact weight and each loss an exact
integer, so each computed bound is within a relative ``gamma_k`` of the exact value on the sampled
weights (``k``: the longest chain of roundings, :func:`rounding_chain`).  :func:`float_certificate`
widens the primal up and the dual down by that much: the bracket then holds for the exact weights
``W / 2**K``, not just for their floats.  The relative bounds need every term to be a normal float,
not a subnormal: a weight is at least ``2^-124``, a remap probability at least ``2^-52``, and the
remap path drops a prior's entries below ``1e-200`` of its largest, so every product is above
``1e-240``.  (An exact rational certificate, as the small-``n`` path
has, would take ``(n+1)^2`` big-integer products: minutes at ``n = 10^4``.)
"""

from __future__ import annotations

import math

import numpy as np

from countdp.consumers.answer_table import AnswerTable
from countdp.consumers.certificates import DualityCertificate
from countdp.consumers.risks import best_answers, chain_length, gamma, loss_values
from countdp.consumers.weight_blocks import ENTRY_ULPS, WeightBlocks


def _all(values: np.ndarray | None, N: int) -> np.ndarray:
    return np.arange(N) if values is None else np.asarray(values, dtype=np.int64)


def chunk_losses(spec: object, M: np.ndarray, inputs: np.ndarray, answers: np.ndarray,
                  probs: np.ndarray) -> np.ndarray:
    """``sum_r M[r, i] sum_s probs[r, s] loss(i, answers[r, s])`` for a block of releases ``M`` (rows) over
    ``inputs``."""
    C = probs[:, :1] * loss_values(spec, inputs[None, :], answers[:, :1])
    for s in range(1, answers.shape[1]):
        C += probs[:, s, None] * loss_values(spec, inputs[None, :], answers[:, s, None])
    return (M * C).sum(axis=0)


def input_losses(blocks: WeightBlocks, spec: object, table: AnswerTable, inputs: np.ndarray | None = None,
                 releases: np.ndarray | None = None) -> np.ndarray:
    """``sum_{r in releases} W[r, i] / D sum_a R[a, r] loss(i, a)`` for each input of ``inputs`` (default:
    every input, every release), accumulated over blocks of releases."""
    inputs, releases = _all(inputs, blocks.N), _all(releases, blocks.N)
    out = np.zeros(inputs.size)
    for rows in blocks.spans(releases, width=inputs.size):
        answers, probs = table.slots(rows)
        out += chunk_losses(spec, blocks.block(rows, inputs), inputs, answers, probs)
    return out


def first_pass(blocks: WeightBlocks, spec: object, side: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One pass over the weights, release block by block: every release's Bayes response to the uniform
    prior on ``side`` (the reference remap) and every input's loss under it, reading each block once."""
    N = blocks.N
    inputs = np.arange(N)
    lo, hi = int(side[0]), int(side[-1])
    reference, losses = np.zeros(N, dtype=np.int64), np.zeros(N)
    for rows in blocks.spans(inputs):
        M = blocks.rows(rows)
        w = np.zeros((rows.size, hi - lo + 1))
        w[:, side - lo] = M[:, side]
        reference[rows] = best_answers(spec, w)[1] + lo
        losses += chunk_losses(spec, M, inputs, reference[rows][:, None], np.ones((rows.size, 1)))
    return reference, losses


def prior_risks(blocks: WeightBlocks, spec: object, y: np.ndarray,
                releases: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per release of ``releases`` (default all): the smallest weighted loss
    ``min_a sum_i y_i W[r, i] / D loss(i, a)`` and the first answer attaining it (the Bayes response).

    Only answers between the prior's first and last input are weighed: a named loss does not fall
    with the distance, so an answer outside that span costs every input of the prior at least what
    the span's nearest end costs, and the minimum over all answers is the minimum over the span.
    """
    releases = _all(releases, blocks.N)
    y = np.asarray(y, dtype=float)
    support = np.flatnonzero(y > 0)
    risks, best = np.zeros(releases.size), np.zeros(releases.size, dtype=np.int64)
    if support.size == 0:
        return risks, best
    lo, hi = int(support[0]), int(support[-1])
    start = 0
    for rows in blocks.spans(releases, width=max(support.size, hi - lo + 1)):
        w = np.zeros((rows.size, hi - lo + 1))
        w[:, support - lo] = blocks.block(rows, support) * y[support]
        risk, answer = best_answers(spec, w)
        risks[start:start + rows.size], best[start:start + rows.size] = risk, answer + lo
        start += rows.size
    return risks, best


def rounding_chain(spec: object, N: int, answers_per_release: int) -> int:
    """The longest chain of float roundings behind either bound: an entry's, a product, the answers' sum
    or the running sums of :func:`countdp.consumers.risks.answer_risks`, the sum over releases, and the
    normalisations (a generous count: each is at most one rounding)."""
    return ENTRY_ULPS + chain_length(spec, N) + N + answers_per_release + 16


def float_certificate(worst: float, risks: np.ndarray, prior_total: float, chain: int,
                      tol: float) -> DualityCertificate:
    """``DualityCertificate(primal, dual)`` from the computed worst-case loss and per-release Bayes risks of
    a prior summing to ``prior_total``, each widened by ``4 gamma_chain`` (module docstring): ``primal``
    is above the exact worst case and ``dual`` below the exact Bayes risk of the normalised prior."""
    g = 4.0 * gamma(chain)
    dual = math.fsum(np.asarray(risks, dtype=float).tolist()) / prior_total if prior_total > 0 else 0.0
    return DualityCertificate(float(worst) * (1.0 + g), dual * (1.0 - g), tol, False)


__all__ = ["chunk_losses", "first_pass", "float_certificate", "input_losses", "prior_risks", "rounding_chain"]
