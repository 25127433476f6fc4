"""GM released at several privacy levels for groups of any size: a level chain held as structure.

Level 0 is GM's structural form (:func:`countdp.structural.geometric.geometric_form`: a tail
table, a centre mass and a floor over ``D = 2**K``); level ``k+1`` moves level ``k``'s value ``r``
through GM's exact transition in integer form (:mod:`countdp.multilevel.structural_kernel`): keep
``r``, or re-noise it to ``clamp(r + Z, 0, n)``, or (the floor) draw it uniformly, all from one draw
over ``D`` read from the column type of ``r`` (interior, or ``r`` in ``{0, n}``).  Nothing of size
``n`` is stored: a level is a few tables of length ``L ~ K ln 2 / ln(1/alpha)``.

:class:`StructuralLevelChain` implements the mechanism protocol (representation ``"levels"``, like
:class:`~countdp.multilevel.chain.LevelChain`, whose consumers it serves unchanged: ``sample`` takes
one word per level and count, ``column`` is the joint of the levels) and is certified by
:mod:`countdp.multilevel.structural_certificate` in exact arithmetic on its tables, with no
``(n+1)^2`` object.  :func:`build_structural_chain` aims each kernel's floor at twice what its level's
proof needs and doubles it if a level ever fails; a chain it returns is certified.
``K`` is 62 up to :data:`~countdp.structural.form.NARROW_MAX_N` and 124 beyond (a second word for
about ``10^-15`` of the draws), as for the structural GM.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import cached_property

import numpy as np

from countdp.multilevel.certificate import LevelsCertificate
from countdp.multilevel.levels_base import LevelsBase
from countdp.multilevel.settings import ChainSettings, parse_levels
from countdp.multilevel.structural_certificate import Recursion, certify_structural_levels, first_deviation
from countdp.multilevel.structural_kernel import StructuralKernel, kernel, transition_bound
from countdp.multilevel.transitions import stay_weights
from countdp.privacy.exact import RELEASE_K
from countdp.privacy.rounding import check_release_alpha
from countdp.structural.form import COARSE_BITS, NARROW_MAX_N, WIDE_K
from countdp.structural.geometric import StructuralGM, geometric_form
from countdp.validation import check_fits_in_memory, check_n
from countdp.values.alpha import alpha_text


class StructuralLevelChain(LevelsBase):
    """GM at levels ``alphas`` for groups of size ``n``: level 0's structural form and, per later level,
    its transition's two column types ``kernels[k-1] = (interior, edge)`` (module docstring)."""

    structural = True
    mechanism = "GM"

    def __init__(self, n: int, alphas: Sequence[object], first: StructuralGM,
                 kernels: Sequence[tuple[StructuralKernel, StructuralKernel]],
                 settings: ChainSettings | None = None) -> None:
        self.n, self.alphas = check_n(n), parse_levels(alphas)
        self.first, self.kernels = first, tuple(tuple(pair) for pair in kernels)
        self.K = first.K
        self.settings = settings or ChainSettings()
        if len(self.kernels) != len(self.alphas) - 1 or any(len(pair) != 2 for pair in self.kernels):
            raise ValueError(f"{len(self.alphas)} levels need {len(self.alphas) - 1} transitions, each an "
                             "(interior, edge) pair")

    @property
    def nbytes(self) -> int:
        """Memory held by the tables and guides: what the chain costs instead of ``m`` matrices."""
        return self.first.nbytes + sum(k.nbytes for pair in self.kernels for k in pair)

    # -- the weights, densely, for small n -------------------------------------------------------
    def transition_weights(self, k: int) -> np.ndarray:
        """Transition ``k``'s ``(n+1) x (n+1)`` weights (column ``r`` from ``r``'s column type); small n only."""
        check_fits_in_memory(self.n, 64, "a structural transition's matrix")
        inner, edge = self.kernels[k]
        columns = [(edge if r in (0, self.n) else inner).input_column(r) for r in range(self.n + 1)]
        return np.stack(columns, axis=1)

    def _dense(self) -> tuple[np.ndarray, list[np.ndarray]]:
        return self.first.dense_weights(), [self.transition_weights(k) for k in range(len(self.kernels))]

    def column(self, j: int | np.ndarray) -> np.ndarray:
        """The joint distribution of the levels for input ``j`` (exact integers over :attr:`denominator`,
        one axis a level; an array of inputs adds a last axis), refused when ``(n+1)^m`` entries do not fit."""
        inputs = np.asarray(j)
        if inputs.size and (inputs.min() < 0 or inputs.max() > self.n):
            raise ValueError(f"inputs must lie in 0..{self.n}")
        check_fits_in_memory(self.n, 64 * max(1, inputs.size), "a level chain's joint distribution",
                             power=max(2, self.levels))
        first, transitions = self._dense()
        joint = first[:, inputs].astype(object)
        joint = np.moveaxis(joint, 0, -1) if inputs.ndim else joint
        for T in transitions:
            joint = joint[..., None] * T.T.astype(object)
        return np.moveaxis(joint, 0, -1) if inputs.ndim else joint

    def marginal(self, k: int) -> np.ndarray:
        """Level ``k``'s sampled distribution, exact integers over ``2**(K (k+1))`` (small n only)."""
        if not 0 <= k < self.levels:
            raise ValueError(f"level must be in 0..{self.levels - 1}, got {k}")
        first, transitions = self._dense()
        A = first.astype(object)
        for T in transitions[:k]:
            A = T.astype(object).dot(A)
        return A

    # -- certificate -----------------------------------------------------------------------------
    @cached_property
    def _certificate(self) -> LevelsCertificate:
        dense = self._dense if self.K <= 62 else None
        return certify_structural_levels(self.n, self.alphas, self.K, self.first, self.kernels,
                                         self.settings.joint_max_cells, dense)

    def certify(self) -> LevelsCertificate:
        """Every level ``alpha_k``-DP and every colluding set ``alpha_min``-DP, proven on the tables sampled."""
        return self._certificate

    # -- sampling --------------------------------------------------------------------------------
    def sample(self, counts: np.ndarray, words: np.ndarray, sizes: np.ndarray | None = None,
               second: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
        """Every level's release of ``counts`` (integers in ``0..n``), levels first.

        ``words[k]`` (shaped like ``counts``) holds a uniform 64-bit word per count for level ``k``;
        its top bits are the level's draw (level 0 through GM at column ``x``, level ``k+1`` through
        the kernel of ``r_k``'s column type at column ``r_k``).  For ``K = 124``, ``second(positions)``
        gives a word for each of the rare draws that need more bits, by position in ``words``
        flattened (level-major).  ``sizes`` must be this ``n``.
        """
        x, w = self.checked_sample(counts, words, sizes)
        flat = w.reshape(self.levels, -1)
        count = flat.shape[1]
        draws = (flat >> np.uint64(64 - self.first.coarse_bits)).astype(np.int64)
        out = np.empty(draws.shape, dtype=np.int64)
        out[0] = self.first.outputs(x.reshape(-1).astype(np.int64), draws[0], None, self._fine(second, 0, count))
        for k, (inner, edge) in enumerate(self.kernels, start=1):
            r = out[k - 1]
            at_edge = (r == 0) | (r == self.n)
            for form, rows in ((inner, np.flatnonzero(~at_edge)), (edge, np.flatnonzero(at_edge))):
                if rows.size:
                    out[k, rows] = form.outputs(r[rows], draws[k, rows], None, self._fine(second, k, count, rows))
        return out.reshape(w.shape)

    def _fine(self, second, level: int, count: int, rows: np.ndarray | None = None):
        """The second-word source of one level's draws (positions within them -> their low bits), or None."""
        if second is None or not self.first.wide:
            return None
        shift = np.uint64(64 - (self.K - self.first.coarse_bits))

        def fine(positions: np.ndarray) -> np.ndarray:
            original = positions if rows is None else rows[positions]
            return (np.asarray(second(level * count + original), dtype=np.uint64) >> shift).astype(np.int64)

        return fine

    def digest(self) -> str:
        """SHA-256 (hex) of what is sampled: n, K, the alphas, and every table's digest."""
        h = hashlib.sha256()
        alphas = ",".join(map(alpha_text, self.alphas))
        h.update(f"countdp-structural-levels mechanism=GM n={self.n} K={self.K} alphas={alphas}\n".encode())
        for form in (self.first, *(k for pair in self.kernels for k in pair)):
            h.update(f"{form.reserve} {sorted(form.parameters().items())} {form.digest()}\n".encode())
        return h.hexdigest()


def _aimed_floors(n: int, levels: Sequence[Fraction], first: StructuralGM, margin: float) -> list[int]:
    """Per transition, the floor ``f`` giving ``c_k >= margin (1 + alpha_k) eps_k / (1 - alpha_k)`` with
    each kernel's deviation taken as 4 draws (about what rounding to nearest leaves)."""
    D = first.denominator
    state = Recursion(Fraction(first.reserve, D), first_deviation(first), Fraction(first.floor, D))
    margin_q = Fraction(margin)
    floors = []
    for alpha, beta in zip(levels, levels[1:], strict=False):
        eps = transition_bound(alpha, beta) * state.eps + Fraction(4, D)
        need = margin_q * (1 + beta) * eps / (1 - beta) - stay_weights(alpha, beta)[0] * state.c
        f = max(1, -(-(need * D).numerator // (need * D).denominator)) if need > 0 else 1
        floors.append(int(f))
        state = Recursion(state.theta, eps, stay_weights(alpha, beta)[0] * state.c + Fraction(f, D))
    return floors


def _kernels(n: int, levels: Sequence[Fraction], K: int, floors: Sequence[int], coarse_bits: int) -> tuple:
    return tuple((kernel(n, a, b, K, f * (n + 1), False, coarse_bits), kernel(n, a, b, K, f * (n + 1), True,
                                                                               coarse_bits))
                 for a, b, f in zip(levels[:-1], levels[1:], floors, strict=True))


def build_structural_chain(n: int, alphas: Sequence[object], K: int | None = None,
                           settings: ChainSettings | None = None,
                           coarse_bits: int = COARSE_BITS) -> StructuralLevelChain:
    """The certified structural GM chain for groups of size ``n`` at levels ``alphas`` (module docstring).

    ``K`` defaults to 62 up to n = 2048 and 124 beyond; ``coarse_bits`` (the bits a draw takes from
    its first word) is lowered only by tests that enumerate every draw.  Raises a one-line
    ``ValueError`` for a bad n or level, an n too large for ``2**K``, or a chain the floors cannot certify.
    """
    settings = settings or ChainSettings()
    n, levels = check_n(n), parse_levels(alphas)
    K = int(K) if K is not None else RELEASE_K if n <= NARROW_MAX_N else WIDE_K
    for a in levels:
        check_release_alpha(a, K)
    first = geometric_form(n, levels[0], K, coarse_bits)
    floors = _aimed_floors(n, levels, first, settings.lambda_margin)
    for _ in range(settings.max_doublings):
        if any(2 * f * (n + 1) >= 1 << K for f in floors):
            break
        chain = StructuralLevelChain(n, levels, first, _kernels(n, levels, K, floors, coarse_bits), settings)
        certificate = chain.certify()
        if certificate.holds:
            return chain
        failing = [v.level for v in certificate.levels if not v.holds]
        if not failing or failing[0] == 0:
            raise ValueError(f"structural GM chain n = {n}: {certificate.levels[0].reason or certificate.collusion}")
        floors[failing[0] - 1] *= 2
    raise ValueError(f"no certified structural GM chain for n = {n} at levels {','.join(map(alpha_text, levels))} "
                     f"over 2^{K}: lower n or the levels' alphas")


__all__ = ["StructuralLevelChain", "build_structural_chain"]
