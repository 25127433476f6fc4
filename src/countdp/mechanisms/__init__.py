"""Mechanisms: the paper's closed forms, the structural property checks, and the artifact file format."""
