"""GM's transition between two levels without its matrix: keep the value, or re-noise it, from one integer table.

For ``alpha < beta`` the exact ``T`` with ``GM(n, beta) = T GM(n, alpha)`` is
``T[:, r] = w_r e_r + (1 - w_r) GM(n, beta)[:, r]`` (:mod:`countdp.multilevel.transitions`): keep
the previous level's value ``r`` with probability ``w_r`` (``w_in`` inside, ``w_edge`` at ``r = 0``
or ``n``), otherwise release ``clamp(r + Z, 0, n)`` with ``Z`` two-sided geometric of ratio beta.
The structure does not depend on n: a column is a stay mass plus the same clamped noise.

:class:`StructuralKernel` is one column type of that rule over ``D = 2**K``, as a
:class:`~countdp.structural.form.StructuralMechanism` (so it is sampled exactly from one draw per
value, a 62-bit word and, for ``K = 124``, rarely a second): categories ``[keep, Z = -L..L]`` and a
floor.  With ``S = D - R`` (``R`` the reserve, the same for both column types, a multiple of
``n + 1``): ``keep = round(S w)``, ``M = S - keep``, tails ``t(m) = round(M beta^m / (1 + beta))``
(the draws with ``Z >= m``, as many with ``Z <= -m``) while positive, and ``Z = 0`` takes
``M - 2 t(1)``.  :func:`kernel_deviation` measures, exactly, how far every entry of a column type is
from ``S T[:, r]``: the number the chain's certificate (:mod:`countdp.multilevel.structural_chain`)
propagates.  A kernel is not DP and need not be; it must be a valid sampling table (non-negative
masses totalling ``2**K``), which :meth:`StructuralKernel.certify` decides.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from countdp.multilevel.transitions import stay_weights
from countdp.structural.chain import MAX_CHAIN, chain_length, integer_table
from countdp.structural.form import COARSE_BITS, StructuralMechanism

ARGUMENT = ("a transition, not DP itself: its categories (stay, clamped noise Z = -L..L) and its floor are "
            "non-negative and total 2^K, so the inverse CDF samples exactly these weights")


def nearest(numerator: int, denominator: int) -> int:
    """``round(numerator / denominator)`` (halves up), in integers: the rounding of every kernel mass."""
    return (2 * numerator + denominator) // (2 * denominator)


class StructuralKernel(StructuralMechanism):
    """One column type (interior or edge) of GM's level transition over ``2**K``: a stay mass ``keep``
    at the input, the tail table ``tail[m-1] = t(m)`` and centre mass of the re-noising, and the floor."""

    mechanism = "GM transition"
    argument = ARGUMENT

    def __init__(self, n: int, beta: Fraction, K: int, reserve: int, keep: int, tail: np.ndarray, centre: int,
                 edge: bool, coarse_bits: int = COARSE_BITS) -> None:
        self.keep, self.edge = int(keep), bool(edge)
        self.tail, self.centre = integer_table(tail), int(centre)
        super().__init__(n, beta, K, reserve, None, coarse_bits)

    def tail_at(self, m: np.ndarray) -> np.ndarray:
        """``t(m)`` for ``m >= 1`` (0 past the table), as Python integers."""
        values = [0, *self.tail.tolist()]
        return np.array([values[k] if k < len(values) else 0 for k in np.asarray(m).tolist()], dtype=object)

    def noise_masses(self) -> list[int]:
        """``nu(0), nu(1), ...``: the draws re-noised to ``Z = +-m`` (``t(m) - t(m+1)``; ``nu(0)`` the centre)."""
        t = [*self.tail.tolist(), 0]
        return [self.centre, *(t[m] - t[m + 1] for m in range(len(t) - 1))]

    def structured_column(self, j: int) -> np.ndarray:
        n, masses = self.n, self.noise_masses()
        d = np.abs(np.arange(n + 1) - j).tolist()
        s = np.array([masses[k] if k < len(masses) else 0 for k in d], dtype=object)
        s[0] = self.centre + self.first if j == 0 else int(self.tail_at([j])[0])
        s[n] = self.centre + self.first if j == n else int(self.tail_at([n - j])[0])
        s[j] += self.keep
        return s if self.wide else s.astype(np.int64)

    @property
    def first(self) -> int:
        return int(self.tail[0]) if self.tail.size else 0

    def category_masses(self) -> np.ndarray:
        nu = self.noise_masses()
        return np.array([self.keep, *nu[:0:-1], *nu], dtype=object)

    def category_outputs(self, columns: np.ndarray, category: np.ndarray, n: np.ndarray) -> np.ndarray:
        moved = np.clip(columns + category - 1 - self.tail.size, 0, n)
        return np.where(category == 0, columns, moved)

    def structure_checks(self) -> list[tuple[str, np.ndarray]]:
        T = self.tail
        return [("the tail table is positive and non-increasing", np.append(T > 0, T[1:] <= T[:-1])),
                ("the stay and centre masses are non-negative", np.array([self.keep >= 0, self.centre >= 0]))]

    def parameters(self) -> dict:
        return {"keep": self.keep, "centre": self.centre, "edge": self.edge, "tail_entries": int(self.tail.size)}

    def tables(self) -> list[np.ndarray]:
        return [self.tail]


def _tails(M: int, beta: Fraction) -> list[int]:
    """``round(M beta^m / (1 + beta))`` for ``m = 1, 2, ...`` while positive (Python integers, exact)."""
    p, q = beta.numerator, beta.denominator
    if chain_length(M, beta) > MAX_CHAIN:
        raise ValueError(f"beta = {float(beta):.10g} is too close to 1 for a structural transition")
    out, num, den = [], M * p * q, q * (p + q)  # M beta / (1 + beta) = M p q / (q (p + q))
    while (value := nearest(num, den)) > 0:
        out.append(value)
        num, den = num * p, den * q
    return out


def kernel(n: int, alpha: Fraction, beta: Fraction, K: int, reserve: int, edge: bool,
           coarse_bits: int = COARSE_BITS) -> StructuralKernel:
    """The interior (``edge=False``) or edge column type of the alpha -> beta transition (module docstring)."""
    w = stay_weights(alpha, beta)[1 if edge else 0]
    S = (1 << K) - reserve
    keep = nearest(S * w.numerator, w.denominator)
    tails = _tails(S - keep, beta)
    centre = S - keep - 2 * (tails[0] if tails else 0)
    return StructuralKernel(n, beta, K, reserve, keep, np.array(tails, dtype=object), centre, edge, coarse_bits)


def kernel_deviation(k: StructuralKernel, alpha: Fraction, beta: Fraction) -> Fraction:
    """``eta``: the largest ``|S_nonfloor[i, r] - S T[i, r]|`` over the columns ``r`` of this type, in draws.

    Exact, from the tables sampled (``S = 2**K - reserve``, ``T`` the exact transition).  An entry is
    the stay error plus one of: the re-noising error at one distance (interior rows), a tail sum's
    error (rows 0 and n, clamped), or the centre-plus-tail error (the corner holding the input).  The
    exact masses past the table decrease, so the first distance past it bounds them all.
    """
    w = stay_weights(alpha, beta)[1 if k.edge else 0]
    S = k.denominator - k.reserve
    X = S * (1 - w)  # the exact re-noised draws
    c = (1 - beta) / (1 + beta)
    L = int(k.tail.size)
    nu = [*k.noise_masses(), 0]
    tails = [*k.tail.tolist(), 0]
    power, worst = beta, abs(nu[0] - X * c)
    for m in range(1, L + 2):
        worst = max(worst, abs(nu[m] - X * c * power), abs(tails[m - 1] - X * power / (1 + beta)))
        power *= beta
    worst = max(worst, abs(k.centre + k.first - X / (1 + beta)))
    return abs(k.keep - S * w) + worst


def transition_bound(alpha: Fraction, beta: Fraction) -> Fraction:
    """An exact upper bound on every row sum of the exact ``T``: how much it can amplify an error per entry.

    Row ``i`` of ``T`` sums to ``w_i + sum_r (1 - w_r) GM_beta[i, r]``; ``w_in <= w_edge``, an interior
    row of GM sums to at most 1 and a clamped row to at most ``1 / (1 - beta^2)``.
    """
    w_in, w_edge = stay_weights(alpha, beta)
    low = min(w_in, w_edge)
    return max(Fraction(1), max(w_in, w_edge) + (1 - low) / (1 - beta * beta))


__all__ = ["StructuralKernel", "kernel", "kernel_deviation", "nearest", "transition_bound"]
