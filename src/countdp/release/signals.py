"""Interrupts held while a release is being published: once named, a release reports itself published."""

from __future__ import annotations

import signal
import threading


class HeldSignals:
    """SIGINT, SIGTERM and SIGHUP held from just before a release names its output to the end of the block.

    Once the output is named the release is published; an interrupt arriving then must not make the
    command say otherwise (a traceback, the ledger entry marked failed, a failing status).
    ``with HeldSignals() as held:`` pass ``held.hold`` to :func:`write_release`, which calls it just
    before the first name changes; from then on each of these signals is only recorded in
    :attr:`received`, and the handlers in place come back when the block ends.  A Python handler
    holds them, not a blocked signal mask: the kernel may deliver a signal to any thread that does
    not block it (the writer's, pyarrow's), while Python handlers always run in the main thread.
    Off the main thread nothing is held.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.received: list[str] = []
        self.saved: dict = {}

    def __enter__(self) -> HeldSignals:
        return self

    def hold(self) -> None:
        if self.saved or threading.current_thread() is not threading.main_thread():
            return
        self.saved = {number: signal.signal(number, self.record) for number in self.SIGNALS}

    def record(self, number: int, frame) -> None:
        self.received.append(signal.Signals(number).name)

    def __exit__(self, *exc) -> None:
        for number, handler in self.saved.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)
        self.saved = {}


__all__ = ["HeldSignals"]
