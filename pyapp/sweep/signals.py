"""Ctrl-C and SIGTERM during a sweep: the first stops between trials, the second at once."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
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

    @contextmanager
    def installed(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {s: signal.signal(s, self.handler) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for signum, old in previous.items():
                signal.signal(signum, old)
