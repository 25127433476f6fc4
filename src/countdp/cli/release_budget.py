"""A table release's budget, as the command line names it (the rules live in :mod:`countdp.release.budget`)."""

from __future__ import annotations

from countdp.release.budget import account, debit_release, one_partition

__all__ = ["account", "debit_release", "one_partition"]
