"""The sampled object of a multi-level release: weights for level 0, integer transitions after it.

Levels ``alpha_0 < alpha_1 < ... < alpha_{m-1}`` (0-based here; larger alpha = more private) of one
mechanism ``M`` (GM, EM, WM or WH; :mod:`countdp.multilevel.families` says what each brings and
where it is refused).  ``r_0 ~ M(n, alpha_0)(x)`` through :attr:`LevelChain.first` (an
:class:`~countdp.privacy.exact.IntegerMechanism`), and ``r_{k+1} ~ T_k(. | r_k)`` through the int64
weights ``transitions[k]`` (rows ``r_{k+1}``, columns ``r_k``, every column summing to ``2**K``).
The transitions are the family's ``T_k`` (exact for GM and EM, an LP's for WM and WH), mixed with a
little of the uniform channel and rounded (:mod:`countdp.multilevel.rounding`); they are not DP
themselves and need not be.  What must hold is that each level's *realized* marginal
``T_{k-1} ... T_0 W / 2**(K (k+1))`` is ``alpha_k``-DP, and :meth:`LevelChain.certificate`
decides it exactly (plus the collusion verdicts, :mod:`countdp.multilevel.certificate`).

:func:`build_level_chain` aims the mixing weights so that the rounding error of every level
(which grows along the chain by at most the largest row sum of each ``T_k``) is covered twice
over (and, for an LP's transitions, the float DP deficit of each unrounded level), certifies
the result, and doubles the weight of the first failing level if a check ever fails (at most
``max_doublings`` times).  A chain it returns is certified.

Cost: the exact marginals are ``O(m^2 n^3)`` float64 BLAS work (multi-modular,
:mod:`countdp.multilevel.exact_products`) plus ``O(m^2 n^2)`` big-integer operations; n is
capped per family (:meth:`ChainSettings.matrix_limit`: 1000 for GM, 1024 for EM, WM, WH); GM
beyond it is the structural chain's (:mod:`countdp.multilevel.structural_chain`), which needs no matrix.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

import numpy as np

from countdp.multilevel.certificate import LevelsCertificate, certify_levels
from countdp.multilevel.exact_forms import gm_table
from countdp.multilevel.exact_products import chain_products
from countdp.multilevel.families import LevelPlan, check_mechanism, level_plan, reference_matrices
from countdp.multilevel.levels_base import LevelsBase
from countdp.multilevel.rounding import dp_deficit, mixing_weight, round_table
from countdp.multilevel.settings import ChainSettings, parse_levels
from countdp.multilevel.structural_chain import StructuralLevelChain, build_structural_chain
from countdp.privacy.exact import MIN_RELEASE_K, RELEASE_K, IntegerMechanism
from countdp.privacy.inverse_cdf import guide_table, outputs_for_draws
from countdp.privacy.rounding import check_release_alpha
from countdp.validation import check_fits_in_memory, check_n
from countdp.values.alpha import alpha_text


@dataclass(frozen=True, eq=False)
class LevelChain(LevelsBase):
    """The weights a multi-level release samples, with their exact certificate (:meth:`certificate`).

    ``mechanism``: the family released at every level; ``reference[k]``: ``M(n, alpha_k)`` as
    floats, for the deviations the certificate reports (computed for GM and EM when omitted;
    WM/WH chains carry their designs).
    """

    n: int
    alphas: tuple[Fraction, ...]
    first: IntegerMechanism
    transitions: tuple[np.ndarray, ...]
    K: int = RELEASE_K
    mixing: tuple[Fraction, ...] = ()
    settings: ChainSettings = field(default_factory=ChainSettings)
    mechanism: str = "GM"
    reference: tuple[np.ndarray, ...] = ()

    def __post_init__(self) -> None:
        n = check_n(self.n)
        mechanism = check_mechanism(self.mechanism)
        if n > self.settings.matrix_limit(mechanism):
            raise ValueError(f"a {mechanism} matrix chain supports n <= {self.settings.matrix_limit(mechanism)}, "
                             f"got n = {n}")
        levels = parse_levels(self.alphas)
        if not MIN_RELEASE_K <= self.K <= 62 or self.first.K != self.K:
            raise ValueError(f"a level chain needs {MIN_RELEASE_K} <= K <= 62, the same for every level")
        if self.first.alpha != levels[0] or self.first.n != n:
            raise ValueError("the first level must be released at the first alpha and size n")
        if len(self.transitions) != len(levels) - 1:
            raise ValueError(f"{len(levels)} levels need {len(levels) - 1} transitions, got {len(self.transitions)}")
        frozen = []
        for T in self.transitions:
            W = np.array(T, dtype=np.int64)
            if W.shape != (n + 1, n + 1):
                raise ValueError(f"every transition must be {n + 1}x{n + 1}, got {W.shape}")
            W.setflags(write=False)
            frozen.append(W)
        reference = tuple(np.asarray(R, dtype=float) for R in self.reference)
        reference = reference or reference_matrices(mechanism, n, levels)
        if len(reference) != len(levels) or any(R.shape != (n + 1, n + 1) for R in reference):
            raise ValueError(f"a chain needs one {n + 1}x{n + 1} reference matrix per level")
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "alphas", levels)
        object.__setattr__(self, "mechanism", mechanism)
        object.__setattr__(self, "reference", reference)
        object.__setattr__(self, "transitions", tuple(frozen))
        object.__setattr__(self, "mixing", tuple(Fraction(x) for x in self.mixing))

    def column(self, j: int | np.ndarray) -> np.ndarray:
        """The joint distribution of the levels released for input ``j``: exact integers over
        :attr:`denominator`, one axis a level (``out[r_0, ..., r_{m-1}]``; an array of inputs adds
        a last axis).  ``(n+1)^m`` entries, refused (one line) when they would not fit in memory."""
        inputs = np.asarray(j)
        if inputs.size and (inputs.min() < 0 or inputs.max() > self.n):
            raise ValueError(f"inputs must lie in 0..{self.n}")
        check_fits_in_memory(self.n, 64 * max(1, inputs.size), "a level chain's joint distribution",
                             power=self.levels)
        joint = self.first.weights[:, inputs].astype(object)  # (n+1,) or (n+1, inputs)
        joint = np.moveaxis(joint, 0, -1) if inputs.ndim else joint
        for T in self.transitions:  # joint[..., r_k] * T[r_{k+1}, r_k] -> joint[..., r_k, r_{k+1}]
            joint = joint[..., None] * T.T.astype(object)
        return np.moveaxis(joint, 0, -1) if inputs.ndim else joint

    @cached_property
    def marginals(self) -> tuple[np.ndarray, ...]:
        """Every level's exact marginal (object ndarrays of Python ints); ``ValueError`` if a weight is negative."""
        return tuple(chain_products(self.first.weights, self.transitions))

    def marginal(self, k: int) -> np.ndarray:
        """The distribution of level ``k`` (0-based) that is sampled: ``T_{k-1} ... T_0 W``, exact integers.

        Divide by :meth:`denominator` ``(k) = 2**(K (k+1))`` for probabilities; rows outputs, columns inputs.
        """
        if not 0 <= k < self.levels:
            raise ValueError(f"level must be in 0..{self.levels - 1}, got {k}")
        return self.marginals[k]

    @cached_property
    def _certificate(self) -> LevelsCertificate:
        prefix = 0  # the marginals exist up to the first transition with a negative weight
        while prefix < len(self.transitions) and self.transitions[prefix].min() >= 0:
            prefix += 1
        marginals = list(self.marginals if prefix == len(self.transitions)
                         else chain_products(self.first.weights, self.transitions[:prefix]))
        marginals += [None] * (self.levels - len(marginals))
        return certify_levels(self.n, self.alphas, self.K, self.first.weights, self.transitions, marginals,
                              self.mixing, self.reference, self.settings.joint_max_cells, self.mechanism)

    def certify(self) -> LevelsCertificate:
        """The exact verdicts: every level ``alpha_k``-DP, every colluding set ``alpha_min``-DP."""
        return self._certificate

    @cached_property
    def _tables(self) -> tuple[tuple[np.ndarray, tuple[np.ndarray, int]], ...]:
        """Per transition: its cumulative table (one row per ``r_k``) and guide table, read-only."""
        out = []
        for T in self.transitions:
            cumulative = np.ascontiguousarray(np.cumsum(T, axis=0).T)
            cumulative.setflags(write=False)
            table, shift = guide_table(cumulative, self.K)
            table.setflags(write=False)
            out.append((cumulative, (table, shift)))
        return tuple(out)

    def sample(self, counts: np.ndarray, words: np.ndarray, sizes: np.ndarray | None = None,
               second=None) -> np.ndarray:
        """Every level's release of the true ``counts`` (integers in ``0..n``), levels first.

        ``words[k]`` (shaped like ``counts``) holds a uniform 64-bit word per count for level
        ``k``, whose top ``K`` bits are the draw: level 0 maps it through the first level's
        inverse CDF at column ``x``, level ``k+1`` through ``T_k``'s at column ``r_k``.
        Vectorised over all counts; ``sizes`` must be this ``n``; ``second`` is never needed.
        """
        x, w = self.checked_sample(counts, words, sizes)
        draws = (w.reshape(self.levels, -1) >> np.uint64(64 - self.K)).astype(np.int64)
        out = np.empty(draws.shape, dtype=np.int64)
        out[0] = outputs_for_draws(self.first.cumulative, self.K, x.reshape(-1).astype(np.int64), draws[0],
                                   self.first.guide)
        for k, (cumulative, guide) in enumerate(self._tables):
            out[k + 1] = outputs_for_draws(cumulative, self.K, out[k], draws[k + 1], guide)
        return out.reshape(w.shape)

    def digest(self) -> str:
        """SHA-256 (hex) of what is sampled: the mechanism, n, K, the alphas and every weight (little-endian int64)."""
        h = hashlib.sha256()
        alphas = ",".join(map(alpha_text, self.alphas))
        h.update(f"countdp-levels mechanism={self.mechanism} n={self.n} K={self.K} alphas={alphas}\n".encode())
        for W in (self.first.weights, *self.transitions):
            h.update(np.ascontiguousarray(W, dtype="<i8").tobytes())
        return h.hexdigest()


def _first_level(n: int, alpha: Fraction, K: int, lam: Fraction) -> IntegerMechanism:
    """GM(n, alpha) rounded exactly (mixing weight ``lam``); raises ``ValueError`` if the exact test fails."""
    table = gm_table(n, alpha)
    W = round_table(table, lam, K)
    costs = {"rounding_lambda": float(lam), "max_abs_error": float(np.max(np.abs(W / 2.0**K - table.floats())))}
    return IntegerMechanism(alpha, K, W, costs)


def _initial_mixing(n: int, alphas: Sequence[Fraction], K: int, plan: LevelPlan, margin: float) -> list[Fraction]:
    """Per level, the UM weight covering ``margin`` times its worst-case accumulated error.

    Level 0 rounded here (GM) is off by under one unit per entry; given release weights (EM,
    WM, WH), by what they measure against their reference plus the float error of that measure.
    Level ``k+1`` is off by under ``1 + rowsum(T_k) * error_k`` (a column-stochastic factor
    cannot spread an error further than its largest row sum).  For an LP's transitions the
    level is also propagated in floats, and its DP deficit before mixing is covered too.
    """
    D = 2.0**K
    if plan.released is None:
        error, level = 1.0, None
        out = [mixing_weight(n, alphas[0], error, K, margin)]
    else:
        level = plan.released.weights / D
        error = D * float(np.max(np.abs(level - plan.reference[0]))) + 1024.0  # W / D is within 2^-53 of exact
        out = [Fraction(plan.released.rounding.get("rounding_lambda", 0.0))]
    for alpha, table in zip(alphas[1:], plan.transitions, strict=True):
        T = table.floats()
        error = 1.0 + float(T.sum(axis=1).max()) * (1 + 1e-9) * error
        deficit = 0.0
        if not plan.exact:
            level = T @ level
            deficit = dp_deficit(level, float(alpha))
        lam = mixing_weight(n, alpha, error, K, margin, deficit)
        out.append(lam)
        if not plan.exact:
            level = (1 - float(lam)) * level + float(lam) / (n + 1)
    return out


def _check_size(n: int, K: int, mechanism: str, settings: ChainSettings) -> int:
    """n as an int within the family's limit, and K within the release's range; else one-line ``ValueError``."""
    n = check_n(n)
    if n > settings.matrix_limit(mechanism):
        raise ValueError(f"multi-level release of {mechanism} supports n <= {settings.matrix_limit(mechanism)}, "
                         f"got n = {n}")
    if not MIN_RELEASE_K <= K <= 62:
        raise ValueError(f"a released mechanism needs {MIN_RELEASE_K} <= K <= 62, got K = {K}")
    return n


def build_level_chain(n: int, alphas: Sequence[Fraction | str | float], K: int | None = None,
                      settings: ChainSettings | None = None,
                      mechanism: str = "GM") -> LevelChain | StructuralLevelChain:
    """The certified chain releasing ``M(n, alpha_0)`` (``M = mechanism``), then each level from the one before.

    ``mechanism``: GM, EM, WM or WH.  GM beyond ``settings.matrix_limit("GM")`` is released by the structural
    chain (:func:`~countdp.multilevel.structural_chain.build_structural_chain`, any n; ``K``
    defaults there to 62 up to n = 2048 and 124 beyond); everything else is a matrix chain over
    ``2**K`` (``K`` default 62).  A pair of levels that is not derivable (EM's exact ``T``
    has a negative entry; WM/WH's LP finds no ``T``) is refused with a one-line ``ValueError``
    naming n and the pair, and so is a chain the mixing cannot certify within
    ``settings.max_doublings`` doublings.
    """
    settings = settings or ChainSettings()
    m = check_mechanism(mechanism)
    if m == "GM" and check_n(n) > settings.matrix_limit("GM"):
        return build_structural_chain(n, alphas, K, settings)
    K = RELEASE_K if K is None else K
    n = _check_size(n, K, m, settings)
    levels = parse_levels(alphas)
    for a in levels:
        check_release_alpha(a, K)
    plan = level_plan(m, n, levels, K, settings.derivability, settings.exact_em_n)
    lams = _initial_mixing(n, levels, K, plan, settings.lambda_margin)
    for _ in range(settings.max_doublings):
        try:
            first = plan.released if plan.released is not None else _first_level(n, levels[0], K, lams[0])
        except ValueError:
            lams[0] = _doubled(lams[0], m, n, levels[0])
            continue
        transitions = tuple(round_table(t, lam, K) for t, lam in zip(plan.transitions, lams[1:], strict=True))
        chain = LevelChain(n, levels, first, transitions, K, tuple(lams), settings, m, plan.reference)
        certificate = chain.certify()
        if certificate.holds:
            return chain
        failing = [v.level for v in certificate.levels if not v.holds]
        if not failing:  # cannot happen: a colluding set is as private as its least private level
            raise ValueError(f"collusion check failed although every level holds: {certificate.collusion}")
        lams[failing[0]] = _doubled(lams[failing[0]], m, n, levels[failing[0]])
    raise ValueError(f"no certified {m} multi-level release found for n = {n} at levels "
                     f"{','.join(map(alpha_text, levels))} after {settings.max_doublings} doublings of the mixing "
                     "weight")


def _doubled(lam: Fraction, mechanism: str, n: int, alpha: Fraction) -> Fraction:
    if lam >= 1:
        raise ValueError(f"no certified {mechanism} multi-level release for n = {n}: level alpha = {alpha_text(alpha)} "
                         "fails even as UM")
    return min(Fraction(1), max(2 * lam, Fraction(1, 2**60)))


__all__ = ["ChainSettings", "LevelChain", "build_level_chain", "parse_levels"]
