"""The claims table: every claim of the paper with the verdict computed from the study tables."""
