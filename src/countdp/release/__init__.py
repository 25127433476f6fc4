"""Releasing noisy counts of a curator's table: streamed, all or nothing, labelled, within a privacy budget."""
