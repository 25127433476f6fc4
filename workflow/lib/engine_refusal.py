"""A design the engine refuses, in the config's words: the one line a job that designs fails with.

The engine's own refusal (:class:`countdp.design.memory.MemoryBoundError`: no fast path answered, and
the general LP is above ``settings.solver.memory_bound``) tells a caller of the library to give a time
limit or raise the bound (``--time-limit``, ``time_limit=``, ``--memory-bound``).  The workflow gives
the engine neither, and a config has no key for them: each design it saves is a proven optimum.  So
every job that designs through the engine (the design sweeps, :mod:`jobs_design`; the objectives,
derivability and prior studies, :mod:`jobs_extensions`) runs its designs inside
:func:`in_config_words`, which turns that refusal into :class:`DesignRefused`: one line naming the
design, why it was refused, the config keys that ask for it and what they allow (:func:`refusal`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from config_fit import asks_for

from countdp.design.memory import MemoryBoundError

__all__ = ["DesignRefused", "in_config_words", "refusal"]


class DesignRefused(RuntimeError):
    """A design the engine refused, in the config's words (module docstring)."""


def refusal(refused: MemoryBoundError, design: str, keys: Sequence[tuple[str, object]],
            choices: str = "an alpha or objective") -> str:
    """The one line of a design the engine refused: the ``design`` (as the job names it), why, the keys
    asking for it (``keys``: ``(key, n spec)`` pairs, such as :func:`config_fit.sweep_keys` gives) and
    what they allow: a lower largest n, or ``choices`` (what else of the design the config sets) that
    a fast path answers."""
    named = [f"'{key}'" for key, spec in keys if asks_for(spec, refused.n)]
    tried = f"its fast paths did not answer ({'; '.join(refused.failed)})" if refused.failed else "no fast path answers"
    asked = (f"config key {', '.join(named)} asks for it" if named
             else "no study key of the config names this n for it (the claims' designs?)")
    return (f"design {design} is refused by the design engine: {tried}, and {refused.reason}; {asked}; allowed: "
            f"that key's largest n lowered, or {choices} a fast path answers (docs/design.md); the workflow gives "
            f"the engine no time limit and keeps its memory bound (each design it saves is a proven optimum)")


@contextmanager
def in_config_words(keys: Sequence[tuple[str, object]], design: Callable[[MemoryBoundError], str],
                    choices: str = "an alpha or objective",
                    error: type[DesignRefused] = DesignRefused) -> Iterator[None]:
    """Run the block; a :class:`MemoryBoundError` in it becomes ``error`` with :func:`refusal`'s line
    (``design``: how the job names the refused design, from the refusal)."""
    try:
        yield
    except MemoryBoundError as refused:
        raise error(refusal(refused, design(refused), keys, choices)) from None
