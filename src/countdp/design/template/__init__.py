"""Large-n designs by aggregation onto a small template, proven on the full model.

Conventions as everywhere: ``P[i, j] = Pr[output i | input j]``, ``N = n + 1``, ``x = P.ravel()``,
``alpha = e^-eps``; the LP is :func:`countdp.design.optimality.design_lp_model` for objective L0,
L0d, L1 or L2, uniform weights and ``aggregate="sum"``.

**Structure used.**  Far from the two corners an optimal design looks like GM: along the
diagonal it is translation invariant, and away from the diagonal it decays by ``alpha`` per
step.  An entry ``(i, j)`` is described by three distances to the corners and the diagonal;
clipping them at a width ``W`` sends it to an entry of a template of size ``n0 = 3 W + 4``
(:mod:`.geometry`).

**Two small LPs** (:mod:`.restricted`).  The primal is restricted to ``x = E z`` (``z`` the
template, ``E`` a weighted copy map), the dual to ``u = F y0`` (every constraint row takes the
multiplier of the template row its first entry maps to).  Both are exact LPs of template size;
each gives a feasible point of the big primal, resp. dual, so their optimal values bracket the
big optimum.  For L0d, L1 and L2 only the restricted primal is used; the dual is the support
dual (:mod:`.support_dual`): which rows carry a multiplier is read off the general
LP's dual at template size, the values solve the complementary-slackness system on the full model.

**Correctness does not rest on the structure** (:mod:`.proof`).  The expanded primal (after the
float DP certificate of :func:`countdp.privacy.certify.certify`) and the expanded dual are
checked by the independent weak-duality routine :func:`countdp.design.optimality.check_optimality`
on the full model; only a closed gap is reported as optimal.  Where the structure does not hold
(corners wider than ``W``, ``alpha`` near 1, ``n`` too small) the gap stays open and the caller
(:mod:`countdp.design.strategies.large_n_template`) tries the next width or gives way to the
general LP.
"""
