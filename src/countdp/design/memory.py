"""The memory a design's general path needs, by its estimate, and the bound the settings put on it.

The general path solves an LP of the full size (the reduced model of :mod:`countdp.design.reduce`,
about ``(n + 1)^2 / 2`` columns and three times as many rows with S folded).  Its peak is
Clarabel's factorisation of that model's KKT system (or of the guide template's, ``0.6 n`` wide)
and HiGHS's copies of the model, and grows faster than the matrix: measured peak resident growth
(a fresh process per design) 52 MB at n = 200 (1,290 B an entry of the ``(n + 1)^2`` matrix), 504 MB
at n = 512 (1,917 B an entry, L1, WH+S), and at n = 1024 on the general path of WM, L1 (the
engine before the bound) 1.4 GB after 5 minutes in Clarabel on the guide template and 5.5 GB at
alpha 0.91 (up to 5,200 B an entry).  :func:`general_path_bytes` is
:data:`LP_BYTES_PER_ENTRY` an entry up to n = :data:`GROWTH_FROM_N` and grows as ``sqrt(n)`` an entry
beyond (2,830 B an entry at n = 1024), plus the process and the path's overhead.  A general
strategy whose estimate is above :attr:`~countdp.design.settings.SolverTuning.memory_bound` (2 GiB by
default: the general path up to about n = 840) is not run (:func:`memory_refusal`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from countdp.design.settings import SolverSettings
from countdp.validation import available_memory

MIB = 2**20
GIB = 2**30
PROCESS_BYTES = 256 * MIB
"""A design job's process before it designs: Python, numpy, scipy and the solvers (measured 122 MB)."""
PATH_OVERHEAD_BYTES = 64 * MIB
"""What every matrix path holds beyond its per-entry cost (the small designs above measured 18-52 MB)."""
LP_BYTES_PER_ENTRY = 2_000
"""Peak memory of an LP design per matrix entry up to n = :data:`GROWTH_FROM_N` (module docstring)."""
GROWTH_FROM_N = 512
"""Beyond this ``n`` the general path's bytes an entry grow as ``sqrt(n / GROWTH_FROM_N)``."""


class MemoryBoundError(ValueError):
    """A design whose general path would need more memory than the settings' bound allows (one line).

    ``label``: the request's parameters, ``n`` its group size; ``reason``: why the general path was not run
    (:func:`memory_refusal`'s line); ``failed``: the fast paths that were tried and did not answer,
    each ``"name: why"``.  The message adds what a caller of the library can do about it (its options);
    a caller that sets the engine's options some other way (a workflow's config) words its own from
    these parts."""

    def __init__(self, message: str, label: str = "", reason: str = "", failed: tuple[str, ...] = (), n: int = 0):
        super().__init__(message)
        self.label, self.reason, self.failed, self.n = label, reason, tuple(failed), n

    def __reduce__(self):  # the parts survive a process pool
        return type(self), (str(self), self.label, self.reason, self.failed, self.n)


@dataclass(frozen=True)
class MemoryRefusal:
    """Why the general path is not run (:func:`memory_refusal`): ``reason``, one line, and whether the
    estimate is above the memory this machine has available (``past_machine``), where raising the
    bound would not let it run; else it is above the settings' bound alone, which may be raised."""

    reason: str
    past_machine: bool = False

    def __str__(self) -> str:
        return self.reason


def lp_bytes(n: int) -> int:
    """The general path's peak resident growth at ``n`` (module docstring), without the process."""
    entries = (n + 1) ** 2
    return PATH_OVERHEAD_BYTES + int(LP_BYTES_PER_ENTRY * entries * max(1.0, math.sqrt(n / GROWTH_FROM_N)))


def general_path_bytes(n: int) -> int:
    """What a process running the general path at ``n`` needs: :func:`lp_bytes` and the process."""
    return PROCESS_BYTES + lp_bytes(n)


def memory_refusal(n: int, settings: SolverSettings) -> MemoryRefusal | None:
    """Why the general path is not run at ``n`` under ``settings`` (its estimate above
    :attr:`~countdp.design.settings.SolverTuning.memory_bound`, or above the memory this machine has
    available, however high the bound was raised: ``past_machine``), or ``None`` when it fits."""
    need, bound, have = general_path_bytes(n), settings.solver.memory_bound, available_memory()
    past_machine = have is not None and need > have
    if need > bound:
        return MemoryRefusal(f"the general LP at n = {n} needs about {need / GIB:,.2f} GiB, above the memory bound "
                             f"of {bound / GIB:,.2f} GiB (settings.solver.memory_bound)", past_machine)
    if past_machine:
        return MemoryRefusal(f"the general LP at n = {n} needs about {need / GIB:,.2f} GiB, more than the "
                             f"{have / GIB:,.2f} GiB this machine has available", past_machine)
    return None
