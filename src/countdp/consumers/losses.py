"""A consumer's loss matrix and side information, and the parsing of their command-line specs.

A loss is an ``(n+1) x (n+1)`` matrix ``loss[i, r]``: what the consumer loses by answering ``r``
when the true count is ``i`` (note the order: *input first*, unlike a mechanism ``P[output,
input]``).  The named losses are G-S's examples (Section 2.3) and the project's thresholded one:

* ``L0``: ``1`` if ``r != i`` else ``0`` (the frequency of error; no ``(n+1)/n`` rescaling, unlike
  the design objective of :mod:`countdp.evaluate.metrics`: a consumer's loss is G-S's, and a
  positive factor changes no remap anyway);
* ``L0d:D``: ``1`` if ``|i - r| > D`` else ``0`` (``L0d:0`` is ``L0``);
* ``L1``: ``|i - r|``;  ``L2``: ``(i - r)**2``.

All four are *monotone* in G-S's sense (:func:`is_monotone`), the hypothesis of their Theorem 1.

Side information ``S`` is the set of inputs the consumer considers possible; its minimax loss
is the worst over ``i`` in ``S``.  On the command line: ``3..7`` (inclusive), ``1,4,5``, or a mix
``0,3..5``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from countdp.validation import check_n

_THRESHOLD = re.compile(r"L0D:(\d+)")


@dataclass(frozen=True)
class LossSpec:
    """A named loss: ``name`` in {L0, L1, L2, L0d} and, for L0d, the threshold ``d``."""

    name: str
    d: int = 0

    def __str__(self) -> str:
        return f"L0d:{self.d}" if self.name == "L0d" else self.name


def parse_loss(spec: object) -> LossSpec:
    """``L0``, ``L1``, ``L2`` or ``L0d:D`` (``D`` an integer >= 0; case-insensitive), or a one-line
    ``ValueError`` naming the spec."""
    if isinstance(spec, LossSpec):
        return spec
    text = str(spec).strip().upper()
    if text in ("L0", "L1", "L2"):
        return LossSpec(text)
    match = _THRESHOLD.fullmatch(text)
    if match:
        return LossSpec("L0d", int(match.group(1)))
    raise ValueError(f"unknown loss {spec!r}; allowed: L0, L1, L2, L0d:D (D an integer >= 0)")


def loss_matrix(spec: object, n: int) -> np.ndarray:
    """The float matrix ``loss[i, r]`` (true count ``i``, answer ``r``) of a named loss."""
    loss, n = parse_loss(spec), check_n(n)
    i = np.arange(n + 1)
    distance = np.abs(i[:, None] - i[None, :])
    if loss.name == "L1":
        return distance.astype(float)
    if loss.name == "L2":
        return (distance**2).astype(float)
    return (distance > loss.d).astype(float)  # L0 is L0d:0


def is_monotone(loss: np.ndarray, tol: float = 0.0) -> bool:
    """G-S's hypothesis: for every ``i``, ``loss[i, r]`` is non-decreasing in ``|i - r|``.

    That is ``loss[i, r] <= loss[i, r'] + tol`` whenever ``|i - r| <= |i - r'|``; in particular
    the two answers at the same distance on either side of ``i`` cost the same.  (Losses that
    only grow moving away from ``i`` on each side, at different rates, are *not* monotone: the
    proof of G-S's Lemma 5 compares answers on opposite sides of ``i``.)
    """
    L = np.asarray(loss, dtype=float)
    if L.ndim != 2 or L.shape[0] != L.shape[1]:
        raise ValueError(f"a loss must be a square (n+1)x(n+1) matrix, got shape {L.shape}")
    i = np.arange(L.shape[0])
    distance = np.abs(i[:, None] - i[None, :])
    closer = distance[:, :, None] <= distance[:, None, :]  # [i, r, r']: r at most as far from i as r'
    return bool(not np.any(closer & (L[:, :, None] > L[:, None, :] + tol)))


def check_side(side: object, n: int) -> np.ndarray:
    """``side`` as a sorted array of distinct inputs in ``0..n``, or a ``ValueError`` if it is
    empty, not integers, or leaves that range."""
    n = check_n(n)
    values = np.asarray(side).ravel()
    if values.size == 0:
        raise ValueError("side information must name at least one input")
    if values.dtype.kind not in "iu":
        raise ValueError(f"side information must be integer inputs in 0..{n}, got {values.dtype} values")
    if values.min() < 0 or values.max() > n:
        raise ValueError(f"side information must lie in 0..{n}, got {int(values.min())}..{int(values.max())}")
    return np.unique(values).astype(np.int64)


def _side_item(item: str, n: int, spec: str) -> range:
    """One comma-separated item of a side-information spec: ``k`` or ``a..b``."""
    low, dots, high = item.partition("..")
    try:
        a = int(low.strip())
        b = int(high.strip()) if dots else a
    except ValueError:
        raise ValueError(f"side information {spec!r}: {item.strip()!r} is not an input k or a range a..b") from None
    if dots and b < a:
        raise ValueError(f"side information {spec!r}: the range {a}..{b} is reversed (write {b}..{a})")
    if a < 0 or b > n:
        raise ValueError(f"side information {spec!r}: {item.strip()} leaves the inputs 0..{n}")
    return range(a, b + 1)


def parse_side_info(spec: str, n: int) -> np.ndarray:
    """Parse ``3..7`` (inclusive), ``1,4,5`` or a mix (``0,3..5``) into a sorted array of inputs,
    or raise a one-line ``ValueError`` (empty, outside ``0..n``, reversed range, not a number)."""
    n = check_n(n)
    text = str(spec).strip()
    if not text:
        raise ValueError("side information is empty; give inputs like 3..7 or 1,4,5")
    items = text.split(",")
    if any(not item.strip() for item in items):
        raise ValueError(f"side information {spec!r}: an empty item between commas")
    inputs = [k for item in items for k in _side_item(item, n, text)]
    return check_side(np.array(inputs, dtype=np.int64), n)


def side_info_text(side: object) -> str:
    """Side information as :func:`parse_side_info` reads it, runs of consecutive inputs as ranges:
    ``[0, 1, 2, 5]`` -> ``"0..2,5"``."""
    values = np.unique(np.asarray(side, dtype=np.int64))
    breaks = np.flatnonzero(np.diff(values) != 1)
    starts, ends = values[np.r_[0, breaks + 1]], values[np.r_[breaks, values.size - 1]]
    return ",".join(f"{a}..{b}" if b > a else f"{a}" for a, b in zip(starts.tolist(), ends.tolist(), strict=True))


__all__ = ["LossSpec", "check_side", "is_monotone", "loss_matrix", "parse_loss", "parse_side_info", "side_info_text"]
