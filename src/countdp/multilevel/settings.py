"""The multi-level release's settings and its levels, shared by the matrix chain and the structural chain.

:class:`ChainSettings` tunes :func:`countdp.multilevel.chain.build_level_chain` (and the structural
chain it hands large GM groups to, :mod:`countdp.multilevel.structural_chain`); :func:`parse_levels`
reads the levels as exact, strictly increasing alphas.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from countdp.multilevel.derivable import DerivabilitySettings
from countdp.values.alpha import alpha_text, exact_alpha


@dataclass(frozen=True)
class ChainSettings:
    """Tuning of :func:`build_level_chain` and the certificate.

    ``lambda_margin``: how many times the worst-case rounding error the mixing (a structural
    chain's floors) covers; ``max_doublings``: retries of a failing level; ``max_n``: largest n of
    the matrix chain (exact marginals cost ``O(n^3)``; GM beyond it is released by the structural
    chain, :mod:`countdp.multilevel.structural_chain`, at any n); ``joint_max_cells``: largest
    ``(n+1)^(t+2)`` for which a colluding set of ``t`` levels is also enumerated exactly.
    ``max_em_n``: largest n for EM (its exact transitions are Fractions of ``O(n^2)`` bits, found by
    ``O(n^3)`` elimination);
    ``max_design_n``: largest n for WM/WH (each level is an LP design and each transition an LP
    with ``3 (n+1)^2`` variables); ``derivability``: the LP verdict's settings for WM/WH.
    """

    lambda_margin: float = 2.0
    max_doublings: int = 60
    max_n: int = 1000
    joint_max_cells: int = 200_000
    max_em_n: int = 60
    max_design_n: int = 100
    derivability: DerivabilitySettings = field(default_factory=DerivabilitySettings)


def parse_levels(alphas: Sequence[object]) -> tuple[Fraction, ...]:
    """The levels as exact Fractions, strictly increasing in (0, 1), or a one-line ``ValueError``."""
    if isinstance(alphas, str | bytes) or len(alphas) == 0:
        raise ValueError("levels must be a non-empty sequence of alphas, e.g. 1/2,2/3,9/10")
    levels = tuple(exact_alpha(a) for a in alphas)
    if any(b <= a for a, b in zip(levels, levels[1:], strict=False)):
        raise ValueError("levels must be strictly increasing alphas (each more private than the one before), "
                         f"got {','.join(alpha_text(a) for a in levels)}")
    return levels


__all__ = ["ChainSettings", "parse_levels"]
