"""Mechanisms held as structure (a short table and a rule), sampled and certified without their matrix."""
