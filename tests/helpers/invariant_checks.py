"""Shared helpers of the invariant tests: the certified GM and EM release weights they condition."""

from __future__ import annotations

import functools
from fractions import Fraction

from countdp.mechanisms.closed_forms import explicit_fair, geometric
from countdp.privacy.rounding import round_to_release


@functools.cache
def mechanism(family: str, n: int, alpha: str, K: int = 62):
    """GM or EM at ``n`` and exact ``alpha``, rounded to exactly alpha-DP integer weights over ``2**K``."""
    form = geometric if family == "GM" else explicit_fair
    return round_to_release(form(n, float(Fraction(alpha))), Fraction(alpha), K)
