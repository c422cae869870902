"""Ctrl-C and SIGTERM during a sweep: the first stops between trials, the second at once."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from pyapp.sweep.progress import say


class StopFlag:
    """Ctrl-C / SIGTERM once: ask the page to stop after its current trial. Twice: stop now."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def handler(self, signum: int, frame: FrameType | None) -> None:
        if self.reason is not None:
            raise KeyboardInterrupt
        self.reason = signal.Signals(signum).name
        say(
            f"{self.reason}: stopping when the current trial is done (Ctrl-C again: stop now;"
            " that trial is then recorded as interrupted); continue later with --resume"
        )

    def installed(self) -> contextlib.AbstractContextManager[None]:
        return handling_stops(self.handler)


@contextmanager
def handling_stops(handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    """`handler` for SIGINT and SIGTERM while inside (the main thread only; elsewhere a
    no-op), the previous handlers restored after. Shared by the sweep and the matrix."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
