"""The privacy of the release conditioned on its total (:mod:`~countdp.invariants.group_total`), computed.

**Neighbours once the total is public.**  Gong and Meng measure distance in records (Section 1.1,
bounded DP).  A record is a person of a group (public size ``n_g``) with or without the counted
attribute; the invariant space is ``X* = {x : 0 <= x_g <= n_g, sum x = T}``.  One changed record
changes one count and the total, leaving ``X*``; the nearest pairs inside it are ``x' = x - e_a + e_b``
(``a != b``): a count moves between groups, two records apart (``k = 2`` in their Theorem 2.1, as
in their fixed-sum Example 4.1).  These ordered pairs are the neighbours here.

**The ratio.**  For such a pair and an output ``y``, ``P*(y|x) / P*(y|x') = rho_a(y_a) rho_b(y_b)
Z(x') / Z(x)`` with ``rho_a = W_a[y_a, x_a] / W_a[y_a, x_a - 1]``, ``rho_b = W_b[y_b, x_b] /
W_b[y_b, x_b + 1]``, ``Z(x) = P(sum Y = T | x)``; the release is ``1/R``-DP, ``R`` the worst ratio.

* :func:`exact_worst_ratio`: ``R`` by enumerating every dataset, pair and output (Python ints; small
  cases, refused beyond ``GuaranteeSettings.max_enumeration``).
* :func:`proven_bound`: an upper bound for every dataset with these groups (and total, if given).
  ``Z(x) = sum_s q(s) A(T - s)``, ``q`` the unknown law of the other groups' sum, ``A`` (``A'``) the
  law of ``Y_a + Y_b`` under ``(x_a, x_b)`` (``(x_a - 1, x_b + 1)``); a ratio of mixtures with the same
  weights is at most the largest ratio of their parts, so ``R <= max over (a, b, x_a, x_b) of
  max rho_a * max rho_b * max_t A'(t) / A(t)``, returned exactly.  Floats (non-negative terms: relative
  error at most ``(m + 3) 2**-53`` per sum of ``m`` products) only discard cells estimated below the
  best by more than ``pruning_slack`` (at least four times that error); the rest are evaluated in
  Fractions, up to ``max_exact_cells``; beyond that (near ties: EM has many) by their estimate rounded
  up by the error bound, so the result may exceed the exact maximum by that much (about ``2**-44``).

Their Theorem 2.1 gives ``R <= exp((1 + gamma) k epsilon)`` with ``gamma <= 1`` and ``epsilon =
ln(1 / alpha)`` of the unconstrained histogram (its least private group), so ``R <= alpha**-4``;
:class:`InvariantGuarantee` reports ``gamma = ln R / (k epsilon) - 1`` and checks the theorem exactly.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from countdp.mechanisms.closed_forms import CLOSED_FORMS
from countdp.privacy.exact import IntegerMechanism
from countdp.privacy.rounding import round_to_release
from countdp.values.alpha import alpha_text, epsilon_upper_bound, exact_alpha
from countdp.values.mechanism import Mechanism, integer_weights, narrow_mechanisms

K_NEIGHBOURS = 2
"""Records between invariant neighbours (Gong and Meng's ``k``): one count leaves a group, one arrives."""


@dataclass(frozen=True)
class GuaranteeSettings:
    """Limits and tolerances: ``max_enumeration`` (``|X*| * |outputs|``) of :func:`exact_worst_ratio`;
    ``pruning_slack`` and ``max_exact_cells`` of :func:`proven_bound`; halvings in :func:`target_alpha`."""

    max_enumeration: int = 2_000_000
    pruning_slack: float = 2.0**-30
    max_exact_cells: int = 2_000
    bisection_steps: int = 12


@dataclass(frozen=True)
class InvariantGuarantee:
    """The worst ratio ``R`` of the conditioned release over invariant neighbours, and what it means.

    ``kind`` is ``"exact"`` (``R`` itself) or ``"bound"`` (a proven upper bound).  ``normaliser_ratio``
    is the largest ``Z(x') / Z(x)`` (``"exact"``) or its bound ``max_t A'(t) / A(t)`` (``"bound"``);
    ``mechanism_alpha`` the smallest alpha of the groups' mechanisms; ``witness`` the worst case.
    """

    ratio: Fraction
    kind: str
    mechanism_alpha: Fraction
    normaliser_ratio: Fraction
    witness: dict
    k: int = K_NEIGHBOURS

    @property
    def alpha(self) -> Fraction:
        """The release is ``alpha``-DP for the invariant neighbours (``alpha * P*(y|x) <= P*(y|x')``)."""
        return 1 / self.ratio

    @property
    def epsilon_bound(self) -> Fraction:
        """A rational ``>= ln R`` (at most ``10**-30`` above it)."""
        return Fraction(0) if self.ratio == 1 else epsilon_upper_bound(self.alpha)

    @property
    def gamma(self) -> float:
        """Gong and Meng's ``gamma``: ``R = exp((1 + gamma) k epsilon)`` (for reports; not decided on)."""
        return math.log(self.ratio) / (self.k * -math.log(self.mechanism_alpha)) - 1

    @property
    def gamma_star(self) -> float:
        """Their equation (2.5) from ``normaliser_ratio``: ``ln max Z(x')/Z(x) / (k epsilon)`` (for reports)."""
        return math.log(self.normaliser_ratio) / (self.k * -math.log(self.mechanism_alpha))

    def consistent_with_gong_meng(self) -> bool:
        """Exactly: ``R <= alpha**-(2k)`` (Theorem 2.1, ``gamma <= 1``) and, for the exact ratio, their proof's
        ``R <= alpha**-k max Z(x') / Z(x)`` (a bound's two maxima may be rounded up separately)."""
        a = self.mechanism_alpha
        return self.ratio * a ** (2 * self.k) <= 1 and (self.kind != "exact" or self.ratio * a**self.k
                                                         <= self.normaliser_ratio)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "ratio": str(self.ratio), "alpha": alpha_text(self.alpha) if self.ratio > 1
                else "1", "epsilon_bound": str(self.epsilon_bound), "gamma": self.gamma, "k": self.k,
                "mechanism_alpha": alpha_text(self.mechanism_alpha), "witness": self.witness}


def _checked(mechanisms: Sequence[Mechanism], total: int | None) -> tuple[list, np.ndarray]:
    mechanisms = narrow_mechanisms(mechanisms, "the guarantee")  # and their sizes, or a one-line ValueError
    sizes = np.array([m.n for m in mechanisms], dtype=np.int64)
    if total is not None and not (isinstance(total, int | np.integer) and 0 <= total <= sizes.sum()):
        raise ValueError(f"the total must be an integer in 0..{int(sizes.sum())} (the sum of the group sizes)")
    return mechanisms, sizes


def _vectors(sizes: Sequence[int], total: int) -> list[tuple[int, ...]]:
    """Every integer vector ``v`` with ``0 <= v_g <= sizes[g]`` and ``sum v = total``."""
    if len(sizes) == 1:
        return [(total,)] if 0 <= total <= sizes[0] else []
    rest = int(sum(sizes[1:]))
    return [(v, *tail) for v in range(max(0, total - rest), min(sizes[0], total) + 1)
            for tail in _vectors(sizes[1:], total - v)]


def exact_worst_ratio(mechanisms: Sequence[Mechanism], sizes: Sequence[int], total: int,
                      settings: GuaranteeSettings = GuaranteeSettings()) -> InvariantGuarantee:
    """``R`` by enumeration: every ``x`` in ``X*``, every neighbour ``x'``, every output ``y`` (Python ints)."""
    mechanisms, own = _checked(mechanisms, total)
    if [int(s) for s in sizes] != own.tolist():
        raise ValueError(f"sizes {list(sizes)} do not match the mechanisms' sizes {own.tolist()}")
    points = _vectors(own.tolist(), int(total))
    if len(points) ** 2 > settings.max_enumeration:
        raise ValueError(f"{len(points)} datasets and outputs are too many to enumerate "
                         f"(limit {settings.max_enumeration} pairs); use proven_bound")
    columns = [integer_weights(m).T.tolist() for m in mechanisms]  # columns[g][x][y] = W_g[y, x]
    numerators = {x: [math.prod(columns[g][x[g]][y[g]] for g in range(len(x))) for y in points] for x in points}
    normaliser = {x: sum(values) for x, values in numerators.items()}
    worst, worst_z, witness = Fraction(1), Fraction(1), {}
    for x in points:
        for a, b in itertools.permutations(range(len(x)), 2):
            if x[a] == 0 or x[b] == own[b]:
                continue
            other = tuple(v - (g == a) + (g == b) for g, v in enumerate(x))
            z = Fraction(normaliser[other], normaliser[x])
            worst_z, top, at = max(worst_z, z), (0, 1), None
            for y, p, q in zip(points, numerators[x], numerators[other], strict=True):
                if q == 0 and p > 0:
                    raise ValueError(f"output {y} is possible from {x} but not from its neighbour {other}")
                if q and p * top[1] > top[0] * q:
                    top, at = (p, q), y
            if Fraction(*top) * z > worst:
                worst, witness = Fraction(*top) * z, {"x": list(x), "x_prime": list(other), "y": list(at)}
    return InvariantGuarantee(worst, "exact", min(m.alpha for m in mechanisms), worst_z, witness)


def _largest_ratio(nums: Sequence[int], dens: Sequence[int]) -> Fraction:
    """``max num / den`` over the pairs with ``den > 0``, exactly; a positive ``num`` over a zero ``den`` (an
    output possible under one dataset and not under its neighbour: not DP) is refused."""
    top = (0, 1)
    for num, den in zip(nums, dens, strict=True):
        if den == 0 and num > 0:
            raise ValueError("an output is possible under one dataset and not under its neighbour: not DP")
        if den and num * top[1] > top[0] * den:
            top = (num, den)
    return Fraction(*top)


def _ratio_maxima(W: list[list[int]]) -> tuple[list, list]:
    """``down[i] = max_y W[y][i] / W[y][i-1]`` (i >= 1) and ``up[j] = max_y W[y][j] / W[y][j+1]`` (j < n)."""
    columns = list(zip(*W, strict=True))
    return ([None] + [_largest_ratio(columns[i], columns[i - 1]) for i in range(1, len(W))],
            [_largest_ratio(columns[j], columns[j + 1]) for j in range(len(W) - 1)] + [None])


def _pair_laws(Wc: np.ndarray, Wd: np.ndarray) -> np.ndarray:
    """Float ``A[i, j, t] = sum_y Wc[y, i] Wd[t - y, j]``: the law of ``Y_c + Y_d`` (times ``2**(Kc+Kd)``)
    under ``(x_c, x_d) = (i, j)``, as one matrix product over ``y`` (non-negative terms: relative error
    below ``(nc + 3) 2**-53`` whatever the order of summation)."""
    nc, nd = Wc.shape[0] - 1, Wd.shape[0] - 1
    padded = np.zeros((nd + 1, 2 * nc + nd + 1))
    padded[:, nc:nc + nd + 1] = Wd.T  # padded[j, nc + s] = Wd[s, j]
    shifted = np.lib.stride_tricks.sliding_window_view(padded, nc + nd + 1, axis=1)[:, ::-1, :]  # [j, y, t]
    return np.tensordot(Wc, shifted, axes=([0], [1]))


def _max_ratio(num: np.ndarray, den: np.ndarray, t_mask: np.ndarray) -> np.ndarray:
    """``max_t num / den`` over the ``t`` in ``t_mask`` with ``den > 0`` (``inf`` where ``num > 0 = den``),
    one row of cells at a time (the temporaries stay two-dimensional)."""
    out = np.empty(num.shape[:2])
    with np.errstate(divide="ignore", invalid="ignore"):
        for p in range(num.shape[0]):
            r = np.where(den[p] > 0, num[p] / den[p], np.where(num[p] > 0, np.inf, -np.inf))
            out[p] = np.where(t_mask, r, -np.inf).max(axis=1)
    return out


def exact_law(u: Sequence[int], v: Sequence[int]) -> list[int]:
    """The convolution of two lists of integers in ``[0, 2**63)``, exactly: one product of Python ints
    packed in byte slots wide enough for every coefficient (Kronecker substitution)."""
    width = (126 + min(len(u), len(v)).bit_length()) // 8 + 1
    U, V = (int.from_bytes(b"".join(x.to_bytes(width, "little") for x in w), "little") for w in (u, v))
    count = len(u) + len(v) - 1
    packed = (U * V).to_bytes(width * count, "little")
    return [int.from_bytes(packed[k * width:(k + 1) * width], "little") for k in range(count)]


def _exact_normaliser_bound(A: Sequence[int], B: Sequence[int], ts: range) -> Fraction:
    """Exactly ``max_t B(t) / A(t)`` over ``ts``, for the exact laws ``A`` (before the move) and ``B`` (after).

    The ``t`` whose float ratio is below the best float ratio by more than ``2**-40`` (far above the
    ``2**-51`` error of two conversions and a division) cannot attain it and are not compared exactly.
    """
    estimate = {t: float(B[t]) / float(A[t]) if A[t] else (math.inf if B[t] else -math.inf) for t in ts}
    floor = max(estimate.values(), default=-math.inf) * (1 - 2.0**-40)
    chosen = [t for t, value in estimate.items() if value >= floor]
    return _largest_ratio([B[t] for t in chosen], [A[t] for t in chosen])


@dataclass(frozen=True)
class _Cells:
    """Float estimates over the cells of one ordered pair of mechanisms: ``loser`` gives up a count
    (``x_a -> x_a - 1``), ``gainer`` takes it; ``before[p, q]``/``after[p, q]``: the two datasets' counts."""

    pair: tuple[int, int]
    flip: bool
    ratio: np.ndarray
    normaliser: np.ndarray


def _classes(mechanisms: Sequence[Mechanism]) -> list[tuple[Mechanism, list[int]]]:
    """Groups sharing one mechanism (same ``K`` and weights): a representative and the groups' indices."""
    seen: dict[tuple, tuple[Mechanism, list[int]]] = {}
    keys = {id(m): (m.K, m.n, integer_weights(m).tobytes()) for m in {id(m): m for m in mechanisms}.values()}
    for g, m in enumerate(mechanisms):
        seen.setdefault(keys[id(m)], (m, []))[1].append(g)
    return list(seen.values())


def _cell_counts(flip: bool, p: int, q: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """``(x_c, x_d)`` before and after the move, for cell ``(p, q)`` (``A[p+1, q]`` and ``A[p, q+1]``)."""
    return ((p, q + 1), (p + 1, q)) if flip else ((p + 1, q), (p, q + 1))


def _estimates(classes: list, rho: list, total: int | None, N: int) -> tuple[list[_Cells], int]:
    """Float estimates of ``max rho_a max rho_b max_t A'/A`` and of ``max_t A'/A`` for every cell of every
    ordered pair of mechanisms (two distinct groups), and the largest number of terms in a sum."""
    out, terms = [], 1
    for c, d in itertools.combinations_with_replacement(range(len(classes)), 2):
        if c == d and len(classes[c][1]) < 2:
            continue
        Wc, Wd = (integer_weights(classes[i][0]).astype(float) for i in (c, d))
        nc, nd = Wc.shape[0] - 1, Wd.shape[0] - 1
        terms, other = max(terms, nc + 1), N - nc - nd
        t = np.arange(nc + nd + 1)
        moved = np.arange(nc)[:, None] + np.arange(nd)[None, :] + 1  # x_c + x_d in every cell
        t_ok = np.ones(t.shape, bool) if total is None else (t >= total - other) & (t <= total)
        cell_ok = np.ones(moved.shape, bool) if total is None else (moved >= total - other) & (moved <= total)
        A = _pair_laws(Wc, Wd)
        down_c, up_c = (np.array([float(r) for r in part], dtype=float) for part in (rho[c][0][1:], rho[c][1][:-1]))
        down_d, up_d = (np.array([float(r) for r in part], dtype=float) for part in (rho[d][0][1:], rho[d][1][:-1]))
        for flip, (num, den), factor in ((False, (A[:-1, 1:], A[1:, :-1]), down_c[:, None] * up_d[None, :]),
                                         (True, (A[1:, :-1], A[:-1, 1:]), up_c[:, None] * down_d[None, :])):
            q = np.where(cell_ok, _max_ratio(num, den, t_ok[None, :]), -np.inf)
            out.append(_Cells((c, d), flip, factor * q, q))
    return out, terms


def _exact_maximum(cells: list[_Cells], field: str, settings: GuaranteeSettings, error: float,
                   exact: Callable) -> tuple[Fraction, tuple, int]:
    """A proven upper bound on the maximum of ``exact(cell, p, q)``, the cell attaining it, and how many cells
    were bounded by their estimate: the cells whose estimate (``field``, relative error at most ``error``)
    is within ``pruning_slack`` of the best are candidates (the others are provably below the best one);
    the ``max_exact_cells`` highest are evaluated exactly, any others bounded by ``estimate / (1 - error)``."""
    best = max((float(getattr(c, field).max()) for c in cells), default=-math.inf)
    if best == -math.inf:
        return Fraction(1), (), 0
    if not math.isfinite(best):
        raise ValueError("a neighbour's output has probability zero where the dataset's does not")
    found = sorted(((float(getattr(cell, field)[p, q]), k, p, q) for k, cell in enumerate(cells)
                    for p, q in np.argwhere(getattr(cell, field) >= best * (1 - settings.pruning_slack)).tolist()),
                   reverse=True)
    top, where = max(((exact(cells[k], p, q), (cells[k], p, q)) for _, k, p, q in found[:settings.max_exact_cells]),
                     key=lambda item: item[0], default=(Fraction(0), ()))
    rest = found[settings.max_exact_cells:]
    if rest and Fraction(rest[0][0]) / (1 - Fraction(error)) > top:
        top, where = Fraction(rest[0][0]) / (1 - Fraction(error)), (cells[rest[0][1]], *rest[0][2:])
    return top, where, len(rest)


def proven_bound(mechanisms: Sequence[Mechanism], total: int | None = None,
                 settings: GuaranteeSettings = GuaranteeSettings()) -> InvariantGuarantee:
    """A proven upper bound on ``R`` for every dataset with these groups (and ``total``, if given)."""
    mechanisms, sizes = _checked(mechanisms, total)
    classes = _classes(mechanisms)
    ints = [integer_weights(m).tolist() for m, _ in classes]
    columns = [[list(column) for column in zip(*W, strict=True)] for W in ints]  # columns[c][x] = W_c[:, x]
    rho = [_ratio_maxima(W) for W in ints]
    N = int(sizes.sum())
    cells, terms = _estimates(classes, rho, total, N)
    error = (2 * (terms + 3) + 6) * 2.0**-53 * 1.02  # relative error of an estimate
    if settings.pruning_slack < 4 * error:
        raise ValueError(f"pruning_slack {settings.pruning_slack} is below four times the float error {error:.2g}")

    @functools.cache
    def law(c: int, d: int, counts: tuple[int, int]) -> list[int]:
        return exact_law(columns[c][counts[0]], columns[d][counts[1]])

    @functools.cache
    def normaliser_of(pair: tuple[int, int], flip: bool, p: int, q: int) -> Fraction:
        (before, after), stop = _cell_counts(flip, p, q), classes[pair[0]][0].n + classes[pair[1]][0].n + 1
        other = N - stop + 1
        ts = range(stop) if total is None else range(max(0, total - other), min(stop - 1, total) + 1)
        return _exact_normaliser_bound(law(*pair, before), law(*pair, after), ts)

    def normaliser(cell: _Cells, p: int, q: int) -> Fraction:
        return normaliser_of(cell.pair, cell.flip, p, q)

    def ratio(cell: _Cells, p: int, q: int) -> Fraction:
        c, d = cell.pair
        factor = rho[d][0][q + 1] * rho[c][1][p] if cell.flip else rho[c][0][p + 1] * rho[d][1][q]
        return factor * normaliser(cell, p, q)

    worst, where, rounded = _exact_maximum(cells, "ratio", settings, error, ratio)
    worst_z, _, rounded_z = _exact_maximum(cells, "normaliser", settings, error, normaliser)
    witness = {"cells_bounded_by_estimate": rounded + rounded_z}
    if where:
        cell, p, q = where
        (before, after), groups = _cell_counts(cell.flip, p, q), [classes[i][1][0] for i in cell.pair]
        witness.update(groups=groups[::-1] if cell.flip else groups, counts=list(before[::-1] if cell.flip
                       else before), to=list(after[::-1] if cell.flip else after))
    return InvariantGuarantee(max(worst, Fraction(1)), "bound", min(m.alpha for m in mechanisms), worst_z, witness)


@dataclass(frozen=True)
class TargetChoice:
    """The per-group alpha chosen by :func:`target_alpha`, its mechanisms (by group size) and guarantee."""

    alpha: Fraction
    mechanisms: dict
    guarantee: InvariantGuarantee


def _family(mechanism_family: str | Callable, K: int) -> Callable[[int, Fraction], IntegerMechanism]:
    if callable(mechanism_family):
        return mechanism_family
    if mechanism_family not in CLOSED_FORMS:
        raise ValueError(f"mechanism family must be one of {sorted(CLOSED_FORMS)} or a callable, "
                         f"got {mechanism_family!r}")
    return lambda n, alpha: round_to_release(CLOSED_FORMS[mechanism_family](n, float(alpha)), alpha, K)


def _fourth_root_above(value: Fraction, bits: int = 64) -> Fraction:
    """The smallest multiple of ``2**-bits`` whose fourth power is at least ``value`` (exact integers)."""
    scaled = value * 2 ** (4 * bits)
    root = math.isqrt(math.isqrt(math.ceil(scaled)))
    while Fraction(root) ** 4 < scaled:
        root += 1
    return Fraction(root, 2**bits)


def target_alpha(sizes: Sequence[int], mechanism_family: str | Callable, target: object, total: int | None = None,
                 K: int = 62, settings: GuaranteeSettings = GuaranteeSettings()) -> TargetChoice:
    """A per-group alpha (the same for every group) whose conditioned release has a proven guarantee
    ``alpha_release >= target``, by bisection between ``target`` and ``target**(1/4)``.

    ``mechanism_family``: ``"GM"``, ``"EM"`` (closed forms rounded by
    :func:`~countdp.privacy.rounding.round_to_release` at the exact alpha) or a callable
    ``(n, alpha) -> IntegerMechanism``.  Theorem 2.1 with ``gamma <= 1`` makes ``target**(1/4)``
    (rounded up) feasible, and :func:`proven_bound` is at most ``alpha**-4`` for DP weights, so the
    bisection starts from a feasible point; the alpha returned was checked, not assumed.  It is the
    least feasible alpha to within the last bisection interval when the guarantee is monotone in alpha.
    """
    goal, build = exact_alpha(target), _family(mechanism_family, K)
    sizes = [int(n) for n in sizes]
    if not sizes or min(sizes) < 1:
        raise ValueError("target_alpha needs at least one group, each of size >= 1")

    def attempt(alpha: Fraction) -> TargetChoice:
        by_size = {n: build(n, alpha) for n in sorted(set(sizes))}
        return TargetChoice(alpha, by_size, proven_bound([by_size[n] for n in sizes], total, settings))

    best = attempt(goal)
    if best.guarantee.alpha >= goal:
        return best
    low, best = goal, attempt(_fourth_root_above(goal))
    if best.guarantee.alpha < goal:
        raise ValueError(f"no per-group alpha up to {float(best.alpha):.6g} meets the target (Theorem 2.1 says one "
                         "does: the mechanisms are not alpha-DP)")
    for _ in range(settings.bisection_steps):
        trial = attempt((low + best.alpha) / 2)
        low, best = (low, trial) if trial.guarantee.alpha >= goal else (trial.alpha, best)
    return best


__all__ = ["K_NEIGHBOURS", "GuaranteeSettings", "InvariantGuarantee", "TargetChoice", "exact_law",
           "exact_worst_ratio", "proven_bound", "target_alpha"]
