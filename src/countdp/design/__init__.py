"""Mechanism design: the design LP (constraints, objectives), its backends, and certificates of optimality."""
