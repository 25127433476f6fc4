"""Releases and exact expected errors of a structural mechanism, without its matrix.

The two things :func:`countdp.evaluate.experiments.simulate` needs of a mechanism, for a
:class:`~countdp.structural.form.StructuralMechanism`:

* its releases: drawn by the structural sampler itself through the protocol
  (:func:`countdp.privacy.sampling.release_each`): one raw 64-bit word per count from a seeded
  generator, and for a wide form (``K > 62``) a second word, from the same generator, for the
  rare rows whose first word does not settle the draw.  Exact: output ``i`` is released for
  exactly ``W[i, j]`` of the ``2**K`` draws;
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
  :meth:`~countdp.structural.form.StructuralMechanism.category_outputs`; its losses are its
  exact per-input numerators (:func:`countdp.structural.spread_errors.spread_losses`: prefix
  sums of its canonical columns and closed forms, O(m^2 + n)), each rounded to float once.

Every name of :data:`countdp.design.forms.FORMS` works: nothing here depends on which
structure the form has.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from countdp.structural.corner_errors import corner_losses
from countdp.structural.corners import StructuralCorners
from countdp.structural.form import StructuralMechanism
from countdp.structural.power_sums import band_count, floor_squares
from countdp.structural.spread import StructuralSpread
from countdp.structural.spread_errors import spread_losses
from countdp.validation import check_distribution
from countdp.values.objectives import parse_objective

BLOCK_ENTRIES = 1 << 21
"""Entries of the (inputs x categories) block of :func:`column_losses` (16 MB of int64): its memory bound."""


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
    """The floor's part of each input's loss: ``sum_{i<=n} loss(i - j) (f + [i < r]) / D``, from the floor's
    closed forms (:mod:`countdp.structural.power_sums`).  In float, as the rest of this path: the squares'
    ``f (T(j) + T(n - j))`` passes ``2**63``, and Python integers would make this O(n) big-integer work;
    the band's row counts are exact int64 and only ``f`` times them is rounded."""
    n, f, r, D = form.n, form.floor, form.extra_rows, float(form.denominator)
    j = np.arange(n + 1, dtype=np.int64)
    if kind == "L2":
        return floor_squares(j.astype(float), n, float(f), float(r)) / D
    # the floor's draws more than d from j: its rows of 0..n, and of 0..r-1, outside the band
    return (float(f) * ((n + 1) - band_count(j, d, n)) + (r - band_count(j, d, r - 1))) / D


def column_losses(form: StructuralMechanism, measure: str) -> np.ndarray:
    """``E[loss | input j]`` for ``j = 0..n`` under ``measure`` (L0, L0d:D, or RMSE's squared error).

    From the categories of the form's table (module docstring), or, for a template design's
    spread or a square-corner design (whose draws are not categories of one table), from its
    exact per-input numerators.
    """
    kind, d = _loss_kind(measure)
    if isinstance(form, StructuralSpread):
        return spread_losses(form, kind, d)
    if isinstance(form, StructuralCorners):
        return corner_losses(form, kind, d)
    return _category_losses(form, kind, d) + _floor_losses(form, kind, d)


def structural_expected_errors(form: StructuralMechanism, input_distributions: Sequence[object],
                               measure: str = "L0", losses: np.ndarray | None = None) -> np.ndarray:
    """The exact expected release error under each input distribution (RMSE: the root of the expected
    squared error), as :func:`countdp.evaluate.metrics.expected_errors` gives for the matrix form.
    ``losses``: the form's :func:`column_losses` for ``measure``, when the caller already holds them."""
    losses = column_losses(form, measure) if losses is None else losses
    values = np.array([float(check_distribution(q, form.n, "input_distribution") @ losses)
                       for q in input_distributions], dtype=float)
    return np.sqrt(values) if _loss_kind(measure)[0] == "L2" else values


__all__ = ["BLOCK_ENTRIES", "column_losses", "structural_expected_errors"]
