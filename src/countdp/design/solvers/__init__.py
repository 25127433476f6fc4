"""The numerical kernels of the design engine: solver runs on a reduced design LP and their helpers.

:mod:`~countdp.design.solvers.solved` is the record of one run; :mod:`~countdp.design.solvers.highs`
and :mod:`~countdp.design.solvers.clarabel` run HiGHS and Clarabel; :mod:`~countdp.design.solvers.scaling`
puts a model in the units those solvers' absolute tolerances suit; :mod:`~countdp.design.solvers.interior`
gives Clarabel's points on the scaled model, :mod:`~countdp.design.solvers.basis_guess` reads a simplex
basis off such a point, :mod:`~countdp.design.solvers.guided` runs the simplex from it, and
:mod:`~countdp.design.solvers.template_guide` builds the guide from the same LP at a smaller ``n``.
Nothing here proves anything: :mod:`countdp.design.lp_solve` proves every answer.
"""
