"""Figures: one function per figure, one atomic save policy."""
