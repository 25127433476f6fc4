"""The structural mechanisms by name, and their two uses: released weights for a matrix, and releases without one.

``closed_structural_form("GM", n, alpha)`` returns a certified :class:`~countdp.structural.form.StructuralMechanism`
for any ``n`` up to what integer weights over ``2**K`` can hold (beyond ``10**9`` for GM and EM at
moderate alpha).  The same object gives:

* :func:`released_weights`: the matrix form's :class:`~countdp.privacy.exact.IntegerMechanism`,
  generated column by column, so a GM, EM or UM mechanism file samples exactly the distribution
  the structural sampler samples (one mechanism, two representations);
* :class:`GroupMechanism`: what a table release needs for a group size, held as structure (the
  structural certificate in place of the matrix's), or as the matrix of its weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from countdp.privacy.exact import RELEASE_K, IntegerMechanism
from countdp.privacy.rounding import check_release_alpha
from countdp.structural.fair import fair_form
from countdp.structural.form import NARROW_MAX_N, REPRESENTATION, WIDE_K, StructuralMechanism
from countdp.structural.geometric import geometric_form
from countdp.structural.template import TEMPLATE_MECHANISMS
from countdp.structural.uniform import uniform_form
from countdp.validation import check_fits_in_memory, check_n

MATRIX_BYTES_PER_ENTRY = 64
"""Peak memory per entry of a structural mechanism's matrix form (the weights, their check, the cumulative)."""

CLOSED_STRUCTURES: dict[str, Callable[[int, Fraction, int], StructuralMechanism]] = {
    "GM": geometric_form, "EM": fair_form, "UM": uniform_form}
"""The closed forms' structural tables, built from their formulas alone."""

SPREADS = frozenset(TEMPLATE_MECHANISMS)
"""The template designs with a structural form (spread by :mod:`countdp.design.forms`): L0 only, over
``2^62``, served as structure beyond :data:`NARROW_MAX_N` (below it, the matrix path designs and
proves each size)."""

STRUCTURAL_MECHANISMS = (*CLOSED_STRUCTURES, *sorted(SPREADS))
"""Every mechanism with a structural form: the closed forms and the template designs."""

STAND_INS: dict[tuple[str, str], str] = {("WH", "L0"): "GM"}
"""(mechanism, objective) whose optimum is a structural form from some size on: the LP with weak
honesty (WH + S) under L0 is GM wherever GM's weights are weakly honest (:func:`weakly_honest_from`)."""

STAND_IN_REASON = ("GM stands in for WH: its weights are weakly honest at every size served (each diagonal "
                   "weight at least 2^K/(n+1), exactly), it is symmetric, and it is L0-optimal among all "
                   "alpha-DP mechanisms (Theorem 3), so it is an optimum of the WH LP")
"""What a release's sidecar says of a WH size drawn from GM's structure."""


MAX_INPUTS = 1 << 62
"""The most inputs (``n + 1``) a structural form serves.  Its inputs, outputs and counts are int64, and
a draw adds noise to the count before it is clamped to ``0..n``: below ``2^62`` that sum cannot
overflow whatever the table's length."""


def certified_form(build: Callable[[int, Fraction, int], StructuralMechanism], mechanism: str, n: object,
                   alpha: object, K: int | None = None) -> StructuralMechanism:
    """``build(n, alpha, K)``'s table of ``mechanism`` for groups of size ``n``, certified alpha-DP by its structure.

    ``K`` defaults to 62 up to :data:`NARROW_MAX_N` (where the matrix form exists and is the same
    distribution) and to :data:`countdp.structural.form.WIDE_K` beyond (two words per draw, so
    the floor costs nothing; UM and the template designs need no floor and keep 62); a default
    ``K``'s table serves only sizes on its side of that line.  ``build`` is a closed form's
    constructor (:data:`CLOSED_STRUCTURES`) or, from the engine, a template design's spread.
    Raises ``ValueError`` (one line) for a bad ``n`` or alpha, an ``n + 1`` above :data:`MAX_INPUTS`,
    or an ``n`` too large for integer weights over ``2**K``; and if the certificate fails, which a
    correct construction never lets happen.
    """
    name = str(mechanism).upper()
    n = check_n(n)
    if n + 1 > MAX_INPUTS:
        raise ValueError(f"{name} for groups of {n:,}: a structural form serves groups with n + 1 <= 2^62 "
                         "(inputs, outputs and counts are int64)")
    chosen = K if K is not None else RELEASE_K if name in ("UM", *SPREADS) or n <= NARROW_MAX_N else WIDE_K
    a = check_release_alpha(alpha, chosen)
    form = build(n, a, chosen)
    if K is None and name not in ("UM", *SPREADS):
        lo, hi = form.sizes
        form.sizes = (lo, min(hi, NARROW_MAX_N)) if chosen == RELEASE_K else (max(lo, NARROW_MAX_N + 1), hi)
    form.sizes = (form.sizes[0], min(form.sizes[1], MAX_INPUTS - 1))
    check = form.certify()
    if not check.holds:
        raise ValueError(f"{name} n={n} alpha={alpha}: structural certificate failed: {check.reason}")
    return form


def closed_structural_form(mechanism: str, n: object, alpha: object, K: int | None = None) -> StructuralMechanism:
    """A closed form's (GM, EM or UM) :func:`certified_form`; the template designs are
    :func:`countdp.design.forms.structural_form`'s."""
    name = str(mechanism).upper()
    if name not in CLOSED_STRUCTURES:
        raise ValueError(f"{mechanism!r} has no closed structural form; closed forms: {', '.join(CLOSED_STRUCTURES)}")
    return certified_form(CLOSED_STRUCTURES[name], name, n, alpha, K)


def served_as_structure(mechanism: str, n: int, objective: str = "L0") -> bool:
    """Whether a release draws size ``n`` of ``mechanism`` from a structural form (else a matrix):
    GM, EM and UM always; a template design under L0 beyond :data:`NARROW_MAX_N`."""
    if mechanism not in STRUCTURAL_MECHANISMS:
        return False
    return mechanism not in SPREADS or (objective == "L0" and n > NARROW_MAX_N)


def stand_in(mechanism: str, objective: str) -> str | None:
    """The structural form that is ``mechanism``'s optimum under ``objective`` at large sizes, if any."""
    return STAND_INS.get((str(mechanism).upper(), str(objective)))


def stand_in_lower_bound(mechanism: str, alpha: Fraction) -> int:
    """The smallest size at which the stand-in can be an optimum: for WH, GM's interior diagonal
    ``(1 - alpha)/(1 + alpha)`` reaches ``1/(n+1)`` at ``n >= 2 alpha / (1 - alpha)`` (Lemma 2)."""
    p, q = alpha.numerator, alpha.denominator
    return -(-2 * p // (q - p))


def weakly_honest_from(form: StructuralMechanism) -> int:
    """The smallest size from which every size ``form`` (a GM table) serves is weakly honest.

    Every diagonal weight is at least ``c + f`` (the centre mass and the floor ``R // (n+1) >=
    (R - n)/(n+1)``), so ``(n+1)(c + f) >= (n+1)(c - 1) + R + 1``, which is at least ``2^K`` once
    ``n + 1 >= (2^K - R) / (c - 1)``: a sufficient condition in integers, increasing in ``n``.
    """
    centre = getattr(form, "centre", 0)
    if centre <= 1:
        return form.sizes[1] + 1  # no size of this table is shown weakly honest
    return max(form.sizes[0], -(-(form.denominator - form.reserve) // (centre - 1)) - 1)


def released_weights(form: StructuralMechanism, matrix: np.ndarray,
                     objective: Callable[[np.ndarray], float] | None = None) -> IntegerMechanism:
    """The matrix form of ``form``: its weights column by column, checked again by the dense exact test.

    ``matrix`` is the float mechanism they stand for (the closed form); the certificate records
    the floor's share of each column (``rounding_lambda``), ``max |W / D - P|`` and, given the
    design's ``objective``, how far the weights move it.
    """
    W = form.dense_weights()
    approx = W / float(form.denominator)
    rounding = {"rounding_lambda": form.uniform_share,
                "max_abs_error": float(np.max(np.abs(approx - matrix)))}
    if objective is not None:
        rounding["objective_change"] = float(objective(approx) - objective(matrix))
    return IntegerMechanism(form.alpha, form.K, W, rounding=rounding)


@dataclass(slots=True)
class GroupMechanism:
    """A group size's mechanism in a table release: ``released`` samples size ``n``.

    ``released`` is a structural table (serving a range of sizes that holds ``n``) or, from
    :meth:`as_matrix`, the integer weights of size ``n`` as a matrix.
    """

    mechanism: str
    n: int
    objective: str
    released: StructuralMechanism | IntegerMechanism

    @property
    def representation(self) -> str:
        return self.released.representation

    def as_matrix(self) -> GroupMechanism:
        """The same distribution as a matrix of integer weights (re-checked by the dense exact test),
        for samplers that need a whole column's weights; refused when the matrix would not fit."""
        if self.released.representation != REPRESENTATION:
            return self
        check_fits_in_memory(self.n, MATRIX_BYTES_PER_ENTRY, f"{self.mechanism}'s matrix of integer weights")
        form = self.released.for_size(self.n) if not self.released.wide else \
            closed_structural_form(self.released.mechanism, self.n, self.released.alpha, RELEASE_K).for_size(self.n)
        return GroupMechanism(self.mechanism, self.n, self.objective,
                              IntegerMechanism(form.alpha, form.K, form.dense_weights(),
                                               rounding={"rounding_lambda": form.uniform_share}))


__all__ = ["CLOSED_STRUCTURES", "MAX_INPUTS", "NARROW_MAX_N", "SPREADS", "STAND_INS", "STAND_IN_REASON",
           "STRUCTURAL_MECHANISMS",
           "GroupMechanism", "certified_form", "closed_structural_form", "released_weights", "served_as_structure",
           "stand_in", "stand_in_lower_bound", "weakly_honest_from"]
