"""The one shape of a reduction, and a chain of them.

A :class:`Reduction` maps a problem to an easier one (``apply``) and returns with it an inverse
that turns the easier problem's answers back into the original's: a point (``invert_primal``) and
a dual (``invert_dual``, ``None`` when it cannot be mapped).  :meth:`Reduction.accepts` says
whether it applies to a problem.  A :class:`Chain` applies its reductions in order, each to the
problem the one before made, and collects their inverses; its inverse undoes them in reverse
order, as cvxpy's ``Chain`` does with a solution.  A strategy declares the reductions it solves
through and builds its chain from them (:meth:`Chain.accepted`), instead of composing by hand.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class Inverse(Protocol):
    """The way back from a reduced problem to the one it was made from."""

    def invert_primal(self, point: Any) -> Any:
        """A point of the reduced problem as one of the original."""

    def invert_dual(self, u: Any, v: Any) -> tuple | None:
        """A dual of the reduced problem as one of the original (``None``: it cannot be mapped)."""


class Unchanged:
    """The inverse of a reduction that left its problem as it was: every answer maps to itself."""

    def invert_primal(self, point: Any) -> Any:
        return point

    def invert_dual(self, u: Any, v: Any) -> tuple:
        return u, v


class Reduction(ABC):
    """Maps a problem to an easier one and answers back (module docstring)."""

    refusal: str = "the reduction does not apply"
    """Why not, when :meth:`accepts` refuses a problem."""

    def accepts(self, problem: Any) -> bool:
        """Whether the reduction applies to ``problem`` (every problem, unless a reduction says otherwise)."""
        return True

    @abstractmethod
    def apply(self, problem: Any) -> tuple[Any, Inverse]:
        """``(reduced, inverse)``: the easier problem and the way back from its answers."""


@dataclass(frozen=True)
class ChainInverse:
    """The inverses of a chain's reductions, in the order they were applied, undone in reverse."""

    inverses: tuple[Inverse, ...]

    def invert_primal(self, point: Any) -> Any:
        for inverse in reversed(self.inverses):
            point = inverse.invert_primal(point)
        return point

    def invert_dual(self, u: Any, v: Any) -> tuple | None:
        dual = (u, v)
        for inverse in reversed(self.inverses):
            dual = inverse.invert_dual(*dual)
            if dual is None:
                return None
        return dual


class Chain(Reduction):
    """Reductions applied in order; the inverse undoes them in reverse order (module docstring)."""

    def __init__(self, reductions: Sequence[Reduction] = ()):
        self.reductions = tuple(reductions)

    @classmethod
    def accepted(cls, reductions: Sequence[Reduction], problem: Any) -> Chain:
        """The chain of those ``reductions`` that accept the problem the earlier ones made of ``problem``."""
        kept = []
        for reduction in reductions:
            if reduction.accepts(problem):
                problem, _ = reduction.apply(problem)
                kept.append(reduction)
        return cls(kept)

    def accepts(self, problem: Any) -> bool:
        """Whether every reduction accepts the problem the ones before it made."""
        return self.refused(problem) is None

    def refused(self, problem: Any) -> str | None:
        """The :attr:`~Reduction.refusal` of the first reduction that does not accept the problem
        the ones before it made, or ``None`` when every one does."""
        for reduction in self.reductions:
            if not reduction.accepts(problem):
                return reduction.refusal
            problem, _ = reduction.apply(problem)
        return None

    def apply(self, problem: Any) -> tuple[Any, ChainInverse]:
        """The problem after every reduction, and the inverse that undoes them all.

        Raises ``ValueError`` when a reduction does not accept the problem it is given."""
        inverses = []
        for reduction in self.reductions:
            if not reduction.accepts(problem):
                raise ValueError(f"{type(reduction).__name__} does not accept the problem it is given")
            problem, inverse = reduction.apply(problem)
            inverses.append(inverse)
        return problem, ChainInverse(tuple(inverses))
