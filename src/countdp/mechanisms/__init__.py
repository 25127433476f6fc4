"""Mechanisms: the paper's closed forms and the structural property checks (their files: :mod:`countdp.services`)."""
