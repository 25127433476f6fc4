"""Releases and exact expected errors of a structural mechanism, without its matrix.

The two things :func:`countdp.evaluate.experiments.simulate` needs of a mechanism, for a
:class:`~countdp.structural.form.StructuralMechanism`:

* :func:`release_structural`: noisy counts drawn by the structural sampler itself
  (:meth:`~countdp.structural.form.StructuralMechanism.sample`) from integer draws of a seeded
  generator: one raw 64-bit word per count, as :func:`countdp.privacy.sampling.uniform_draws`
  takes them, and for a wide form (``K > 62``) a second word, from the same generator, for the
  rare rows whose first word does not settle the draw.  Exact: output ``i`` is released for
  exactly ``W[i, j]`` of the ``2**K`` draws.
* :func:`column_losses`: ``E[loss(out - j) | j]`` for every input ``j``, from the form's
  description (module docstring of :mod:`countdp.structural.form`): a draw is the floor's with
  probability ``R / D`` (output ``i`` then has ``f + [i < r]`` of those ``R`` draws), or else
  falls in category ``c`` with probability ``masses[c] / D``, and the category and ``j`` give
  the output (:meth:`~countdp.structural.form.StructuralMechanism.category_outputs`).  So a
  column's loss is the masses times the categories' losses (an ``(n+1) x C`` array, built in
  blocks of inputs) plus the floor's part in closed form.  In float, as the matrix path's
  :func:`countdp.evaluate.metrics.expected_errors` (``W / D`` in float); the two agree to
  rounding wherever both exist.  A structure whose draws are not categories of one table (a
  template design's spread: per-column reserves, its own sampler) has no
  :meth:`~countdp.structural.form.StructuralMechanism.category_outputs`; its losses are read
  off its columns (:meth:`~countdp.structural.form.StructuralMechanism.column`), one by one.

Every name of :data:`countdp.structural.catalogue.FORMS` works: nothing here depends on which
structure the form has.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from countdp.evaluate.metrics import parse_objective
from countdp.structural.form import StructuralMechanism
from countdp.validation import check_distribution

BLOCK_ENTRIES = 1 << 21
"""Entries of the (inputs x categories) block of :func:`column_losses` (16 MB of int64): its memory bound."""


def release_structural(form: StructuralMechanism, true_counts: Sequence[np.ndarray],
                       rngs: Sequence[np.random.Generator]) -> list[np.ndarray]:
    """Each array of true counts released by ``form``'s sampler with draws from its own generator."""
    if len(true_counts) != len(rngs):
        raise ValueError(f"{len(true_counts)} arrays of counts for {len(rngs)} random sources")
    out = []
    for counts, rng in zip(true_counts, rngs, strict=True):
        counts = np.asarray(counts, dtype=np.int64)
        if counts.size and (counts.min() < 0 or counts.max() > form.n):
            raise ValueError(f"true counts must lie in 0..{form.n}")
        words = rng.bit_generator.random_raw(counts.size)
        fine = None
        if form.wide:
            shift = np.uint64(64 - (form.K - form.coarse_bits))

            def fine(rows, rng=rng, shift=shift):  # the second word of each row that needs one
                return (rng.bit_generator.random_raw(np.size(rows)) >> shift).astype(np.int64)

        out.append(form.sample(counts.ravel(), words, fine=fine).reshape(counts.shape))
    return out


def _loss_kind(measure: str) -> tuple[str, int]:
    """``("L0", 0)``, ``("L0d", d)`` or ``("L2", 0)`` (RMSE's loss is the squared error)."""
    if isinstance(measure, str) and measure.strip().upper() == "RMSE":
        return "L2", 0
    obj = parse_objective(measure)
    if obj.name == "L1":
        raise ValueError("L1 is not a release measure of Figures 9-13 (L0, L0d:D, RMSE)")
    return obj.name, obj.d


def _category_losses(form: StructuralMechanism, kind: str, d: int) -> np.ndarray:
    """``sum_c masses[c] / D * loss(out(j, c) - j)`` for every input ``j``, in blocks of inputs."""
    n, C = form.n, int(np.size(form.masses))
    total = np.zeros(n + 1)
    if C == 0:
        return total
    share = np.asarray(form.masses, dtype=object).astype(float) / float(form.denominator)
    categories = np.arange(C, dtype=np.int64)
    step = max(1, BLOCK_ENTRIES // C)
    for start in range(0, n + 1, step):
        j = np.arange(start, min(start + step, n + 1), dtype=np.int64)
        columns = np.repeat(j, C)
        out = form.category_outputs(columns, np.tile(categories, j.size), np.int64(n))
        diff = (out - columns).reshape(j.size, C)
        loss = diff.astype(float) ** 2 if kind == "L2" else (np.abs(diff) > d).astype(float)
        total[j] = loss @ share
    return total


def _floor_losses(form: StructuralMechanism, kind: str, d: int) -> np.ndarray:
    """The floor's part of each input's loss: ``(f sum_{i<=n} loss(i - j) + sum_{i<r} loss(i - j)) / D``."""
    n, f, r = form.n, form.floor, form.extra_rows
    j = np.arange(n + 1, dtype=np.int64)
    if kind == "L2":
        every = _square_sum(j) + _square_sum(n - j)  # sum over i = 0..n of (i - j)**2
        first = _square_sum(j) - _square_sum(np.maximum(j - r, 0)) + np.where(j < r, _square_sum(r - 1 - j), 0.0)
    else:  # how many outputs lie more than d from j: among 0..n, and among 0..r-1
        every = (n + 1) - (np.minimum(n, j + d) - np.maximum(0, j - d) + 1)
        first = r - np.clip(np.minimum(r - 1, j + d) - np.maximum(0, j - d) + 1, 0, None)
    D = float(form.denominator)
    return (float(f) / D) * every.astype(float) + first.astype(float) / D


def _square_sum(x: np.ndarray) -> np.ndarray:
    """``0**2 + 1**2 + ... + x**2`` elementwise, in float (exact below 2**53: up to x of about 4 * 10**5)."""
    x = np.asarray(x, dtype=float)
    return x * (x + 1) * (2 * x + 1) / 6


def _losses_from_columns(form: StructuralMechanism, kind: str, d: int) -> np.ndarray:
    """Each input's loss read off its own column of integer weights (:meth:`column`, as floats over ``D``):
    ``1 - W[j, j] / D`` (L0), one minus the band ``|i - j| <= d`` (L0d), or ``sum_i (i - j)**2 W[i, j] / D``.
    O(n) per input: the path for a structure whose draws are not categories of one table."""
    n, D = form.n, float(form.denominator)
    i = np.arange(n + 1)
    out = np.empty(n + 1)
    for j in range(n + 1):
        w = np.asarray(form.column(j)).astype(float) / D
        if kind == "L2":
            out[j] = float(((i - j).astype(float) ** 2) @ w)
        else:
            out[j] = 1.0 - float(w[max(0, j - d):j + d + 1].sum())
    return out


def column_losses(form: StructuralMechanism, measure: str) -> np.ndarray:
    """``E[loss | input j]`` for ``j = 0..n`` under ``measure`` (L0, L0d:D, or RMSE's squared error).

    From the categories of the form's table (module docstring), or, for a structure that draws
    otherwise (its :meth:`category_outputs` is not defined: a template design's spread), from
    its columns one by one.
    """
    kind, d = _loss_kind(measure)
    try:
        structured = _category_losses(form, kind, d)
    except NotImplementedError:
        return _losses_from_columns(form, kind, d)
    return structured + _floor_losses(form, kind, d)


@functools.lru_cache(maxsize=64)
def _cached_losses(form: StructuralMechanism, measure: str) -> np.ndarray:
    """:func:`column_losses` kept for the forms evaluated last (keyed by the form object itself: a sweep
    asks for the same form's losses for its Monte Carlo rows and again for the model's expectation)."""
    losses = column_losses(form, measure)
    losses.flags.writeable = False
    return losses


def structural_expected_errors(form: StructuralMechanism, input_distributions: Sequence[object],
                               measure: str = "L0") -> np.ndarray:
    """The exact expected release error under each input distribution (RMSE: the root of the expected
    squared error), as :func:`countdp.evaluate.metrics.expected_errors` gives for the matrix form."""
    losses = _cached_losses(form, measure)
    values = np.array([float(check_distribution(q, form.n, "input_distribution") @ losses)
                       for q in input_distributions], dtype=float)
    return np.sqrt(values) if _loss_kind(measure)[0] == "L2" else values


__all__ = ["BLOCK_ENTRIES", "column_losses", "release_structural", "structural_expected_errors"]
