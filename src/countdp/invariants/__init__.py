"""Releases that satisfy invariants (mandated exact totals) by conditioning, after Gong and Meng.

Gong and Meng's congenial mechanism releases the unconstrained mechanism's output conditioned on
satisfying the invariants.  For double-geometric cells under subset-sum invariants:
:mod:`~countdp.invariants.spec` (which invariants are supported, as equations on block sums),
:mod:`~countdp.invariants.block_sums` (the exact sampler, no MCMC), with its exact choices in
:mod:`~countdp.invariants.prefix_choice`; :mod:`~countdp.invariants.mis` (their Metropolized
independent sampler, Algorithm 1, for comparison) and :mod:`~countdp.invariants.projection`
(the non-negative L2 post-processing they compare against).

For a curator's groups, each through its own certified mechanism and conditioned on the groups'
total: :mod:`~countdp.invariants.group_total` (the exact sampler) and
:mod:`~countdp.invariants.guarantee` (the privacy under the invariant, computed exactly or
bounded with proof, and the per-group alpha that meets a target).
"""
