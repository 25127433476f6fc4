"""Privacy: float and exact certificates, integer weights, the exact sampler and its audit (the exact alpha is
:mod:`countdp.values.alpha`)."""
