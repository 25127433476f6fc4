"""The mechanism protocol: what every representation of a released mechanism offers.

A mechanism is released in one of three representations, each implementing :class:`Mechanism`:

* ``"matrix"``: :class:`countdp.privacy.exact.IntegerMechanism`, the ``(n+1) x (n+1)`` integer weights;
* ``"structural"``: :class:`countdp.structural.form.StructuralMechanism`, a short table and a rule
  for each weight, serving a range of group sizes without the matrix;
* ``"levels"``: :class:`countdp.multilevel.chain.LevelChain`, one count released at several
  privacy levels, level 0 from integer weights and each later level through an integer transition.

What they share, and what every consumer (the sampler, the table release, ``interpret``, the
levels, the invariants) reads:

* ``n``, the group size; ``alpha``, the exact alpha (a :class:`~fractions.Fraction`) of
  everything it releases for one count; ``representation``, its name;
* ``K`` and ``denominator``: its weights are integers over ``denominator``; one released value
  reads ``K`` random bits (``denominator = 2**(K * values_per_count)``);
* ``column(j)``: the exact integer weights of what input ``j`` releases, summing to
  ``denominator`` (for an array of inputs, one column each, side by side).  A chain's column is
  the joint distribution of its levels, an array with one axis a level;
* ``sample(counts, words, sizes=None, second=None)``: the exact release of each count (an array,
  or one Python integer with its word) from uniform 64-bit ``words`` (one per count, or one per
  count and level, levels first): the top
  ``K`` bits of a word are a uniform draw over the weights (a form over more than 62 bits takes
  the rest from ``second(rows)``, a word for each of the given rows);
* ``certify()``: its certificate, decided in exact arithmetic on the object that is sampled
  (``holds`` and ``to_dict()``).

The designs and the table release's group mechanisms are not representations: they *hold* one,
in ``released``, with how it was made.  :func:`mechanism_of` takes either.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from fractions import Fraction
from typing import Protocol, runtime_checkable

import numpy as np

REPRESENTATIONS = ("matrix", "structural", "levels")
"""The representations' names, as the sidecars and caches write them."""


@runtime_checkable
class Verdict(Protocol):
    """A certificate: whether the exact check holds, and what it says, as JSON-ready data."""

    holds: bool

    def to_dict(self) -> dict: ...


@runtime_checkable
class Mechanism(Protocol):
    """A released mechanism in any representation (see the module docstring).

        >>> gm = countdp.design_named("GM", 4, "1/2").released
        >>> isinstance(gm, countdp.Mechanism), gm.representation, gm.n, gm.alpha
        (True, 'matrix', 4, Alpha(1, 2))
        >>> int(gm.column(2).sum()) == gm.denominator, gm.certify().holds
        (True, True)
    """

    representation: str
    n: int
    alpha: Fraction
    K: int
    values_per_count: int

    @property
    def denominator(self) -> int: ...

    def column(self, j: int | np.ndarray) -> np.ndarray: ...

    def sample(self, counts: np.ndarray, words: np.ndarray, sizes: np.ndarray | None = None,
               second: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray: ...

    def certify(self) -> Verdict: ...


_CONFORMING: set[type] = set()
"""Classes whose instances were found to implement :class:`Mechanism` (a class that answers any name
through ``__getattr__`` is checked every time)."""

_CERTIFIED: dict[int, weakref.ref] = {}
"""Instances whose :meth:`~Mechanism.certify` was found to hold, by ``id`` (a weak reference each, so a
freed object's ``id`` reused by another is not taken for it)."""


def _certified(released: object) -> bool:
    """Whether ``released``'s certificate holds: decided once per instance (a structural form's exact
    check takes up to a fraction of a second; integer weights return the verdict of the exact test
    they passed when built), and never assumed for an object that cannot be weakly referenced
    (checked every time)."""
    held = _CERTIFIED.get(id(released))
    if held is not None and held() is released:
        return True
    verdict = released.certify()
    if getattr(verdict, "holds", False) is not True:
        return False
    key = id(released)
    try:
        _CERTIFIED[key] = weakref.ref(released, lambda _: _CERTIFIED.pop(key, None))
    except TypeError:  # no weak references (``__slots__``): checked on every call
        pass
    return True


def mechanism_of(value: object, needed_by: str = "release") -> Mechanism:
    """The mechanism ``value`` is (a representation) or holds (in ``released``: a design, a group's mechanism).

    Raises a one-line ``ValueError`` naming ``needed_by`` for anything else, such as a bare
    float matrix, which carries no certified weights, or an object that has the protocol's
    attributes but whose certificate does not hold.
    """
    released = getattr(value, "released", value)
    if type(released) not in _CONFORMING:  # a Protocol's isinstance costs microseconds: once per class
        if isinstance(released, Mechanism) and not hasattr(type(released), "__getattr__"):
            _CONFORMING.add(type(released))
        if not isinstance(released, Mechanism):
            raise ValueError(f"{needed_by} needs a certified mechanism (countdp.design_named(...), "
                             "countdp.services.artifact.load_design(...), an IntegerMechanism, a structural form "
                             f"or a level chain), got {type(value).__name__}")
    if not _certified(released):
        raise ValueError(f"{needed_by} needs a certified mechanism: the certificate of this "
                         f"{type(released).__name__} does not hold")
    return released


def narrow_mechanisms(mechanisms: object, needed_by: str) -> list[Mechanism]:
    """``mechanisms`` as a list of mechanisms releasing one value per count with weights over at most
    ``2**62`` (their columns fit int64), at least one; else a one-line ``ValueError`` naming ``needed_by``."""
    out = [getattr(m, "released", m) for m in mechanisms]
    distinct = list({id(m): m for m in out}.values())  # (groups of one size share one object: checked once)
    if not out or not all(isinstance(m, Mechanism) and m.values_per_count == 1 and m.K <= 62 for m in distinct):
        raise ValueError(f"{needed_by} needs one certified mechanism per group (at least one group), each releasing "
                         "one value per count with weights over at most 2^62")
    if not all(_certified(m) for m in distinct):
        raise ValueError(f"{needed_by} needs one certified mechanism per group: a group's certificate does not hold")
    return out


def integer_weights(mechanism: Mechanism) -> np.ndarray:
    """Every column of a narrow mechanism (:func:`narrow_mechanisms`) side by side: ``W[i, j]``, int64."""
    return np.asarray(mechanism.column(np.arange(mechanism.n + 1)), dtype=np.int64)


__all__ = ["REPRESENTATIONS", "Mechanism", "Verdict", "integer_weights", "mechanism_of", "narrow_mechanisms"]
