"""Which representation evaluates a mechanism at a group size: its matrix artifact, or its structural form.

Figures 9-13 evaluate the named mechanisms at every ``n`` a config asks for.  A matrix artifact
holds ``(n+1)**2`` entries (``10**8`` at ``n = 10**4``), so beyond
:attr:`Routing.structural_above` a mechanism with a structural form
(:data:`countdp.design.forms.FORMS`: a certified table of a few hundred integers and a
rule) is evaluated from that form instead, at the sizes the catalogue serves as structure
(:func:`countdp.structural.catalogue.served_as_structure`: GM, EM and UM at every size, a
template design such as WM only beyond the matrix path); a closed form's structural form
samples exactly the distribution its matrix form would
(:func:`countdp.structural.catalogue.released_weights`).  A mechanism with no structural form
has only the matrix path, up to :attr:`Routing.matrix_max_n`.

One exception is argued, not assumed.  WH (the L0 LP with weak honesty and symmetry) has no
structural form of its own, but the catalogue's stand-in rule
(:data:`countdp.structural.catalogue.STAND_INS`) serves it under L0 by GM wherever GM's weights
are weakly honest: GM is L0-optimal among *all* alpha-DP mechanisms (CKS Theorem 3) and symmetric,
so it is then an optimum of the WH LP.  The routing asks the catalogue's exact integer bound
(:func:`countdp.structural.catalogue.weakly_honest_from`, on the table that is sampled), and
:func:`evaluation_form` checks the sampled weights once more, independently (the smallest
diagonal weight, exactly, from :func:`countdp.structural.errors.structural_errors`).  This holds
under L0 only, so it serves Figures 9 and 10 and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from countdp.design.forms import FORMS, structural_form, structure_problem
from countdp.structural.catalogue import (
    NARROW_MAX_N,
    STAND_IN_REASON,
    served_as_structure,
    stand_in,
    stand_in_lower_bound,
    weakly_honest_from,
)
from countdp.structural.errors import structural_errors
from countdp.structural.form import REPRESENTATION, StructuralMechanism
from countdp.values.alpha import alpha_text, exact_alpha

MATRIX = "matrix"
"""The name of the matrix path (a design artifact), beside :data:`countdp.structural.form.REPRESENTATION`."""
WH_VIA_GM = "WH"
"""The one mechanism without a structural form that may be evaluated through another's (GM, under L0)."""


@dataclass(frozen=True)
class Routing:
    """Where the matrix path ends.

    ``structural_above``: mechanisms with a structural form are evaluated from it for ``n`` above
    this (small matrices are cheap and keep the default pipeline's artifacts); ``matrix_max_n``:
    the largest ``n`` of the matrix path, so a mechanism with no structural form stops there;
    ``max_n``: the largest group size a config may ask Figures 9-13 for.
    """

    structural_above: int = 256
    matrix_max_n: int = NARROW_MAX_N
    max_n: int = 10_000

    def structural(self, mechanism: str, n: int, alpha: object, l0_only: bool = True) -> bool:
        """Whether ``mechanism`` at ``(n, alpha)`` is evaluated without a matrix: from its own structural
        form, or (WH, in a study of L0 alone) from GM's where closed-form GM is weakly honest."""
        name, n = str(mechanism), int(n)
        if n <= self.structural_above:
            return False
        if name in FORMS:  # the figures' mechanisms are the L0 designs, whatever their study measures
            return served_as_structure(name, n, "L0") and structure_problem(name, alpha) is None
        return l0_only and gm_serves_wh(n, alpha)


ROUTING = Routing()
"""The workflow's routing."""


def gm_serves_wh(n: int, alpha: object) -> bool:
    """Whether WH at size ``n`` is served by GM's table under L0: from Lemma 2's threshold
    (:func:`~countdp.structural.catalogue.stand_in_lower_bound`) and the exact integer bound on the
    weights sampled (:func:`~countdp.structural.catalogue.weakly_honest_from`)."""
    a = exact_alpha(alpha)
    if stand_in(WH_VIA_GM, "L0") != "GM" or n < stand_in_lower_bound(WH_VIA_GM, a):
        return False
    return n >= weakly_honest_from(structural_form("GM", n, a))


def routing_problem(mechanism: str, n: int, alpha: object, l0_only: bool, routing: Routing = ROUTING) -> str | None:
    """Why ``mechanism`` cannot be evaluated at ``n`` (one line), or None if it can.

    ``l0_only``: the study measures L0 alone (Figures 9 and 10), where WH may be evaluated as GM.
    """
    name, n = str(mechanism), int(n)
    if n > routing.max_n:
        return f"n = {n} is above the largest group size evaluated, {routing.max_n}"
    if n <= routing.matrix_max_n or routing.structural(name, n, alpha, l0_only):
        return None
    beyond = f"{name} has no structural form beyond n = {routing.matrix_max_n}"
    if name in FORMS:
        return structure_problem(name, alpha) or f"{name} is not served as structure at n = {n}"
    if name != WH_VIA_GM:
        return f"{beyond}; structural forms: {', '.join(FORMS)}"
    if not l0_only:
        return f"{beyond}; it is evaluated as GM only under L0, in Figures 9 and 10"
    a = exact_alpha(alpha)
    return (f"{beyond}, and GM (an optimal WH design where weakly honest) is evaluated as WH only from "
            f"n >= 2a/(1-a) = {float(2 * a / (1 - a)):.6g} where its weights are weakly honest")


@dataclass(frozen=True)
class Provenance:
    """What evaluated ``mechanism`` at ``(n, alpha)``: the representation, the form used, and why it is that one."""

    mechanism: str
    n: int
    alpha_exact: str
    representation: str
    evaluated_as: str
    reason: str
    K: int
    sizes: tuple[int, int]
    uniform_share: float
    tables_sha256: str

    def to_dict(self) -> dict:
        return {"mechanism": self.mechanism, "n": self.n, "alpha_exact": self.alpha_exact,
                "representation": self.representation, "evaluated_as": self.evaluated_as, "reason": self.reason,
                "K": self.K, "sizes": f"{self.sizes[0]}..{self.sizes[1]}", "uniform_share": self.uniform_share,
                "tables_sha256": self.tables_sha256}


def evaluation_form(mechanism: str, n: int, alpha: object) -> tuple[StructuralMechanism, Provenance]:
    """The certified structural form that evaluates ``mechanism`` at ``(n, alpha)``, and its provenance.

    A name of :data:`~countdp.design.forms.FORMS` is its own form.  WH is GM's form after
    the weak-honesty test on the sampled weights (module docstring): raises ``ValueError`` (one
    line) when GM's smallest diagonal weight is below ``D/(n+1)``, and for any other name.
    """
    name, n, a = str(mechanism), int(n), exact_alpha(alpha)
    if name in FORMS:
        form = structural_form(name, n, a)
        reason = f"{name}'s own structural form (certified alpha-DP by its structure)"
    elif name == WH_VIA_GM:
        form = structural_form("GM", n, a)
        smallest_diagonal = 1 - structural_errors(form).l0_worst  # min_j W[j, j] / D, exactly
        if smallest_diagonal < Fraction(1, n + 1):
            raise ValueError(f"WH at n={n}, alpha={alpha_text(a)}: GM's sampled weights are not weakly honest "
                             f"(smallest diagonal {float(smallest_diagonal):.6g} < 1/(n+1)), so GM is not a WH design")
        reason = f"{STAND_IN_REASON} (smallest sampled diagonal {float(smallest_diagonal):.6g} >= 1/(n+1))"
    else:
        raise ValueError(f"{name} has no structural form (structural forms: {', '.join(FORMS)}; WH under L0 via GM)")
    return form, Provenance(name, n, alpha_text(a), REPRESENTATION, form.mechanism, reason, form.K, form.sizes,
                            float(form.uniform_share), form.digest())


__all__ = ["MATRIX", "ROUTING", "WH_VIA_GM", "Provenance", "Routing", "evaluation_form", "gm_serves_wh",
           "routing_problem"]
