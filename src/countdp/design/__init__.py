"""Mechanism design: the design LP (constraints, objectives), its backends, certificates of optimality, and the
structural forms by name (:mod:`countdp.design.forms`: the template designs it proves and spreads)."""
