"""Privacy: exact alpha, float and exact certificates, rounding to integer weights, the exact sampler, audits and table release."""
