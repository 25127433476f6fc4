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
from countdp.structural.form import NARROW_MAX_N
from countdp.values.alpha import alpha_text, exact_alpha


@dataclass(frozen=True)
class ChainSettings:
    """Tuning of :func:`build_level_chain` and the certificate.

    ``lambda_margin``: how many times the worst-case rounding error the mixing (a structural
    chain's floors) covers; ``max_doublings``: retries of a failing level; ``max_n``: largest n of
    any matrix chain (its exact marginals, the certificate, cost ``O(n^3)`` time and ``O(n^2)``
    memory: about 10 s and 0.7 GB at n = 1024); ``max_gm_n``: largest n of GM's matrix chain,
    beyond which GM is released by the structural chain
    (:mod:`countdp.multilevel.structural_chain`, any n); ``joint_max_cells``: largest
    ``(n+1)^(t+2)`` for which a colluding set of ``t`` levels is also enumerated exactly.
    ``max_em_n``: largest n for EM; ``exact_em_n``: largest n at which EM's transitions are solved
    in Fractions (exact, but ``O(n^3)`` operations on numbers of ``O(n)`` digits: 7 s a pair at
    n = 60); beyond it they are solved in floats (:func:`~countdp.multilevel.derivable.derive`).
    ``max_design_n``: largest n for WM/WH (an LP design per level; a transition is an LP with
    ``3 (n+1)^2`` variables up to ``derivability.lp_max_n``, a solve beyond).
    ``derivability``: the verdict's settings for WM/WH (and EM beyond ``exact_em_n``).
    """

    lambda_margin: float = 2.0
    max_doublings: int = 60
    max_n: int = 1024
    max_gm_n: int = 1000
    joint_max_cells: int = 200_000
    max_em_n: int = 1024
    exact_em_n: int = 60
    max_design_n: int = 1024
    derivability: DerivabilitySettings = field(default_factory=DerivabilitySettings)

    def matrix_limit(self, mechanism: str) -> int:
        """The largest n of ``mechanism``'s matrix chain: ``max_n``, or its family's limit if smaller
        (``max_gm_n``, ``max_em_n``, or ``max_design_n`` for WM and WH), and never beyond
        :data:`~countdp.structural.form.NARROW_MAX_N` (2048), past which the designs are held as
        structure, with no matrix to chain."""
        own = {"GM": self.max_gm_n, "EM": self.max_em_n, "WM": self.max_design_n, "WH": self.max_design_n}
        return min(self.max_n, own.get(mechanism, self.max_n), NARROW_MAX_N)


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
