"""The exact error a release will have, computed from the integer weights before any noise is drawn.

A release of true count ``j`` outputs ``i`` with probability exactly ``W[i, j] / D``
(:mod:`countdp.privacy.sampling`), so the expected error of the object that is sampled is a
rational number with denominator ``D`` (or ``(n+1) D`` averaged over inputs).
:func:`release_errors` computes, in integer arithmetic only:

* ``L0``: ``Pr[output != input]``;
* ``L0,1``: ``Pr[|output - input| > 1]``;
* ``MSE``: ``E[(output - input)**2]`` (RMSE is its square root);

each under a uniform prior on the true count and for the worst true count.  These are the
expectations of the empirical measures on released counts (no ``(n+1)/n`` rescaling: the design
objective ``L0`` of :func:`countdp.values.objectives.objective_value` is ``(n+1)/n`` times ``l0_uniform``).

``sum_i (i - j)**2 W[i, j]`` reaches ``n**2 * 2**62`` and would wrap around in int64, so ``W`` is
split into limbs narrow enough that every column sum of ``(i - j)**2 * limb`` fits int64; the limb
sums are then recombined as Python integers, one per input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from countdp.values.mechanism import integer_weights, narrow_mechanisms


@dataclass(frozen=True)
class ReleaseErrors:
    """Exact expected errors of a released mechanism.

    ``*_uniform``: averaged over true counts ``0..n`` with equal weight; ``*_worst``: the largest
    over true counts, attained first at ``*_worst_input``.
    """

    n: int
    l0_uniform: Fraction
    l0_worst: Fraction
    l0_worst_input: int
    l01_uniform: Fraction
    l01_worst: Fraction
    l01_worst_input: int
    mse_uniform: Fraction
    mse_worst: Fraction
    mse_worst_input: int

    @property
    def rmse_uniform(self) -> float:
        """``sqrt(mse_uniform)``: the root of the expected squared error (not the mean of per-input roots)."""
        return math.sqrt(self.mse_uniform)

    @property
    def rmse_worst(self) -> float:
        return math.sqrt(self.mse_worst)

    def to_dict(self) -> dict:
        """Floats for display, with each exact value as a ``"p/q"`` string beside it."""
        out: dict = {"n": self.n}
        for name in ("l0", "l01", "mse"):
            for case in ("uniform", "worst"):
                value = getattr(self, f"{name}_{case}")
                out[f"{name}_{case}"] = float(value)
                out[f"{name}_{case}_exact"] = str(value)
            out[f"{name}_worst_input"] = getattr(self, f"{name}_worst_input")
        out["rmse_uniform"], out["rmse_worst"] = self.rmse_uniform, self.rmse_worst
        return out


def _limb_bits(n: int) -> int:
    """Width of the limbs of ``W`` such that ``sum_i (i - j)**2 * limb`` stays below ``2**63``.

    Each column sum is below ``(n + 1) * n**2 * 2**bits``.
    """
    return max(1, 62 - ((n + 1) * n * n).bit_length())


def squared_error_sums(W: np.ndarray) -> np.ndarray:
    """``sum_i (i - j)**2 * W[i, j]`` per input ``j``, exactly, as an object array of Python ints.

    ``W``: non-negative int64 (entries below ``2**63``).  Vectorised over the matrix, one pass per limb.
    """
    N = W.shape[0]
    i = np.arange(N, dtype=np.int64)
    squared = (i[:, None] - i[None, :]) ** 2
    bits = _limb_bits(N - 1)
    mask = (1 << bits) - 1
    total = np.zeros(N, dtype=object)
    for k in range(-(-63 // bits)):  # enough limbs for 63-bit weights
        limb = (W >> (k * bits)) & mask
        total += (squared * limb).sum(axis=0).astype(object) * (1 << (k * bits))
    return total


def _off_by_more_than_one(W: np.ndarray, D: int) -> np.ndarray:
    """``D - W[j - 1, j] - W[j, j] - W[j + 1, j]`` per input ``j``: the weight more than one step off (int64)."""
    near = W.diagonal().copy()
    near[:-1] += W.diagonal(-1)  # W[j + 1, j]
    near[1:] += W.diagonal(1)  # W[j - 1, j]
    return D - near


def _uniform_and_worst(numerators: np.ndarray, D: int) -> tuple[Fraction, Fraction, int]:
    """``(mean_j numerators[j] / D, max_j numerators[j] / D, smallest argmax)`` in exact arithmetic."""
    values = numerators.astype(object)
    worst = int(np.argmax(values))
    return Fraction(int(values.sum()), len(values) * D), Fraction(int(values[worst]), D), worst


def release_errors(mechanism: object) -> ReleaseErrors:
    """The exact L0, L0,1 and MSE of releasing from ``mechanism`` (a Design, or any representation with one
    value per count and weights over at most ``2**62``).

    Computed on its integer weights ``W`` (its columns, summing to ``D = 2**K``): the distribution
    that :func:`countdp.privacy.sampling.release` samples, so no rounding lies between these
    numbers and the noise that will be drawn.
    """
    released = narrow_mechanisms([mechanism], "release_errors")[0]
    W, D = integer_weights(released), released.denominator
    l0 = _uniform_and_worst(D - W.diagonal(), D)
    l01 = _uniform_and_worst(_off_by_more_than_one(W, D), D)
    mse = _uniform_and_worst(squared_error_sums(W), D)
    return ReleaseErrors(released.n, *l0, *l01, *mse)


__all__ = ["ReleaseErrors", "release_errors", "squared_error_sums"]
