"""Privacy: exact alpha, float and exact certificates, integer weights, the exact sampler, audits, table release."""
