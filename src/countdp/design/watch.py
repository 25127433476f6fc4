"""The run control of one design request: the caller's time limit and the solvers' progress lines.

The caller's time limit (``design_lp(..., time_limit=...)``, ``countdp design --time-limit``) is
the engine's only wall-clock limit: :func:`watching` sets it for the request, at the top, and no
strategy or proof has one of its own (their limits count iterations, :mod:`countdp.design.settings`).
Without it nothing here stops on time, so the path and the answer do not depend on the machine.

The request's :class:`Watch` is found by the solvers through :func:`current` (a context variable:
each thread, and so each design of the pipeline's threads, has its own).  Every HiGHS model
(:func:`Watch.attach_highs`) says its progress from its own log (the simplex's iteration and
objective, which for the dual simplex is a lower bound on the optimum while rows are still broken)
and is interrupted once the limit has passed; Clarabel (:meth:`Watch.clarabel_callback`) says its
primal and dual objectives and their gap, and stops at the limit too.  A solve's lines go through its
:class:`ProgressLines`: at most one every
:attr:`~countdp.design.settings.SolverTuning.progress_seconds` (an interior point may log many
iterations a second), and the last one held back said when the solve ends, so its final state shows.
Between solves the planner and the general path check :meth:`Watch.check`.  A stopped solve raises
:class:`TimeLimitReached`, carrying the point (with its duals) it had reached, from which
:mod:`countdp.design.anytime` makes the best design it can prove feasible, with its gap.
"""

from __future__ import annotations

import logging
import math
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from countdp.design.settings import DEFAULT_SETTINGS

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

HIGHS_ITERATION = re.compile(r"^\s*(\d+)\*?\s+([-+0-9.eE]+|[-+]?inf)\s*(Pr:\s*(\d+)\(([^)]*)\))?;?\s*(Du:\s*(\d+))?")
"""A line of HiGHS's simplex or interior point log (its last iteration starred): iteration, objective,
then the primal (``Pr``) and dual (``Du``) infeasibilities when there are any."""
IPX_ITERATION = re.compile(r"^\s*\d+\*?(\s+[-+]?[0-9.]+e[-+]\d+){5}\s+[0-9.]+\s*$")
"""A line of HiGHS's interior point (IPX) log: iteration, primal and dual objectives, primal and dual
infeasibilities, gap, time.  Its objectives are the model IPX solves: where it dualized the model
(``Dualized model: yes``, earlier in the log), they are the design's with the sign turned."""
DUALIZED = re.compile(r"Dualized model:\s*(\w+)")
"""Where IPX's log says whether it solves the dual model (within a message of several lines)."""


@dataclass
class ProgressLines:
    """One solve's progress lines (INFO on this module's logger), at most one every ``interval`` seconds
    of ``clock``: a line due sooner is held back in place of the one held before, and :meth:`close` (or
    the end of a ``with`` block) says the one held at the end, the solve's final state.  Which lines are
    said depends on the clock; what the solver does never does."""

    interval: float
    clock: Callable[[], float] = time.perf_counter
    said_at: float = -math.inf
    held: tuple | None = None

    def say(self, message: str, *args) -> None:
        """Say ``message % args`` now if ``interval`` has passed since the last line said, else hold it."""
        now = self.clock()
        if now - self.said_at >= self.interval:
            self.said_at, self.held = now, None
            LOG.info(message, *args)
        else:
            self.held = (message, *args)

    def close(self) -> None:
        """Say the line held back, if any (the latest state the solver reported)."""
        if self.held is not None:
            held, self.held = self.held, None
            self.said_at = self.clock()
            LOG.info(*held)

    def __enter__(self) -> ProgressLines:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class TimeLimitReached(Exception):
    """The caller's time limit passed during ``what``.  ``lp``, ``run``: the reduced model solved
    and the point it had reached (a :class:`countdp.design.solvers.solved.Solved`, its duals with
    it), when the solver had one; else ``None``.  Not a ``RuntimeError``: no fallback of the
    engine takes it for a solver's failure, it goes up to the planner."""

    def __init__(self, what: str, lp=None, run=None):
        super().__init__(f"the time limit was reached during {what}")
        self.what, self.lp, self.run = what, lp, run

    def mapped(self, lp, convert: Callable) -> TimeLimitReached:
        """The same stop with its point carried to ``lp`` by ``convert`` (e.g. out of scaled units)."""
        return TimeLimitReached(self.what, lp, None if self.run is None else convert(self.run))


@dataclass
class Watch:
    """One request's time limit (``None``: none) and progress reporting (module docstring)."""

    time_limit: float | None = None
    progress_seconds: float = DEFAULT_SETTINGS.solver.progress_seconds
    clock: Callable[[], float] = time.perf_counter  # of the progress lines only (tests give their own)
    start: float = field(default_factory=time.perf_counter)
    upper: float | None = None  # the best design's objective known so far (for the gap in progress lines)
    interruptible: bool = False  # SIGINT sets ``interrupted`` (:func:`watching`, in the main thread)
    interrupted: bool = False

    def expired(self) -> bool:
        """Whether the solvers must stop: the time limit has passed (never, without one), or the user
        interrupted the request."""
        return self.interrupted or (self.time_limit is not None
                                    and time.perf_counter() - self.start >= self.time_limit)

    def remaining(self) -> float:
        """Seconds left (infinite without a limit)."""
        return math.inf if self.time_limit is None else max(0.0, self.time_limit - (time.perf_counter() - self.start))

    def check(self, what: str) -> None:
        """Raise ``KeyboardInterrupt`` if the request was interrupted, :class:`TimeLimitReached` if the
        limit has passed, before ``what`` starts."""
        if self.interrupted:
            raise KeyboardInterrupt
        if self.expired():
            raise TimeLimitReached(what)

    def gap_text(self, lower: float) -> str:
        """``", gap to the best design so far ..."`` for a lower bound, when a design is known."""
        if self.upper is None or not math.isfinite(lower):
            return ""
        return f"; best design so far {self.upper:.10g}, gap {self.upper - lower:.3g}"

    def progress_lines(self) -> ProgressLines:
        """A new solve's :class:`ProgressLines`, one every :attr:`progress_seconds` at most."""
        return ProgressLines(self.progress_seconds, self.clock)

    def highs_line(self, what: str, message: str, lines: ProgressLines | None = None, dualized: bool = False) -> None:
        """Say a line of HiGHS's simplex or interior point log as progress, through ``lines`` (now, without
        them); other log lines are not said.  ``dualized``: the interior point solves the dual model, whose
        objective is the design's negated (:data:`IPX_ITERATION`)."""
        found = HIGHS_ITERATION.match(message)
        if found is None or not message.strip()[0].isdigit():
            return
        iteration, objective = int(found.group(1)), float(found.group(2))
        if dualized and IPX_ITERATION.match(message):
            objective = -objective
        broken = found.group(3) is not None
        dual_feasible = found.group(6) is None or int(found.group(7)) == 0
        bound = " (a lower bound: rows still broken)" if broken and dual_feasible else ""
        say = LOG.info if lines is None else lines.say
        say("%s: iteration %s, objective %.10g%s%s", what, f"{iteration:,}", objective, bound,
            self.gap_text(objective) if bound else "")

    def attach_highs(self, h, what: str, verbose: bool, lines: ProgressLines) -> None:
        """Progress lines from ``h``'s log, through ``lines``, and its interruption once the limit has
        passed.  HiGHS then logs to this callback alone (to the console too when ``verbose``)."""
        h.setOptionValue("output_flag", True)
        h.setOptionValue("log_to_console", bool(verbose))
        dualized = [False]  # this solve's interior point runs on the dual model (its log says so first)

        def log_line(event) -> None:
            said = DUALIZED.search(event.message)
            if said is not None:
                dualized[0] = said.group(1) == "yes"
            self.highs_line(what, event.message, lines, dualized[0])

        h.cbLogging.subscribe(log_line)
        if self.time_limit is not None or self.interruptible:
            def stop_highs(event) -> None:
                if self.expired():
                    event.interrupt()
            h.cbSimplexInterrupt.subscribe(stop_highs)
            h.cbIpmInterrupt.subscribe(stop_highs)

    def clarabel_callback(self, what: str, lines: ProgressLines,
                          cost_scale: float = 1.0) -> Callable[[object], bool]:
        """Clarabel's termination callback: each iteration's progress through ``lines`` (its objectives
        times ``cost_scale``, in the model's units), and ``True`` (stop) once the limit has passed."""
        def clarabel_progress(info) -> bool:
            if info.iterations:
                lines.say("%s: iteration %d, primal %.10g, dual %.10g, relative gap %.2g", what, info.iterations,
                          info.cost_primal * cost_scale, info.cost_dual * cost_scale, info.gap_rel)
            return self.expired()
        return clarabel_progress


WATCH: ContextVar[Watch | None] = ContextVar("countdp_design_watch", default=None)
"""The watch of the request under way in this thread (:func:`watching`)."""

IDLE = Watch()
"""The watch of work outside any request: no time limit, progress said."""


def current() -> Watch:
    """The watch of the request under way (:data:`IDLE` outside one)."""
    return WATCH.get() or IDLE


@contextmanager
def watching(time_limit: float | None, progress_seconds: float) -> Iterator[Watch]:
    """The request's :class:`Watch` for the block, its clock started now (``progress_seconds``:
    :attr:`~countdp.design.settings.SolverTuning.progress_seconds` of its settings)."""
    watch = Watch(time_limit, progress_seconds)
    token = WATCH.set(watch)
    previous = _interrupts(watch)
    try:
        yield watch
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        WATCH.reset(token)


SOLVER_CALLBACKS = frozenset({"log_line", "highs_line", "stop_highs", "clarabel_progress"})
"""This module's functions that a solver calls back: an interrupt found in one only marks the watch (the
solver would swallow the exception, and Clarabel print it), and the solver stops at its next callback."""


HIGHSPY = f"{os.sep}highspy{os.sep}"


def _in_solver(frame) -> bool:
    """Whether ``frame`` (where a signal found Python) is inside a solver's callback of this module."""
    while frame is not None:
        code = frame.f_code
        if (code.co_filename == __file__ and code.co_name in SOLVER_CALLBACKS) or HIGHSPY in code.co_filename:
            return True  # highspy calls its subscribers through Python of its own
        frame = frame.f_back
    return False


def _interrupts(watch: Watch):
    """Make SIGINT (Ctrl-C) mark ``watch`` interrupted as well as raise ``KeyboardInterrupt``; the handler
    it replaces, or ``None`` where nothing changed (off the main thread, or a handler of the caller's own).
    Inside a solver's callback it only marks the watch (:func:`_in_solver`): raised there, the solver
    would swallow it and end as a failure, and the next strategy would run.  The mark makes every solver
    stop at its next callback and the planner's next check raise it, so a design asked to stop writes
    nothing."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return None

    def interrupt(signum, frame) -> None:
        watch.interrupted = True
        if not _in_solver(frame):
            raise KeyboardInterrupt

    watch.interruptible = True
    return signal.signal(signal.SIGINT, interrupt)
