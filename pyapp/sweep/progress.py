"""The sweep's progress on stderr: a bar on a terminal, one line per trial otherwise."""

from __future__ import annotations

import shutil
import sys
import time
from typing import Any, TextIO


def clock_text(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Progress:
    """Trials done/total, the current condition and task, elapsed and ETA, on stderr: a bar
    redrawn in place on a terminal, one plain line per finished trial otherwise."""

    def __init__(self, stream: TextIO, done: int, total: int) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.done = done
        self.total = total
        self.first_done = done
        self.started = time.monotonic()
        self.current = ""
        self.phase = ""

    def eta(self) -> float | None:
        finished = self.done - self.first_done
        if finished <= 0:
            return None
        return (time.monotonic() - self.started) / finished * max(0, self.total - self.done)

    def line(self) -> str:
        elapsed = clock_text(time.monotonic() - self.started)
        where = f"{self.phase} {self.current}".strip()
        return f"{self.done}/{self.total}  {where}  elapsed {elapsed}  ETA {clock_text(self.eta())}"

    def draw(self) -> None:
        if not self.tty:
            return
        width = shutil.get_terminal_size((100, 20)).columns
        filled = int(20 * self.done / self.total) if self.total else 20
        bar = "[" + "#" * filled + "." * (20 - filled) + "] "
        self.stream.write("\r\x1b[2K" + (bar + self.line())[: width - 1])
        self.stream.flush()

    def trial_start(self, event: dict[str, Any]) -> None:
        self.current = str(event.get("trial_id") or "")
        self.phase = str(event.get("phase") or "")
        self.draw()

    def trial_done(self, event: dict[str, Any]) -> None:
        self.done += 1
        trial = event.get("trial") or {}
        self.current = str(trial.get("trial_id") or self.current)
        if self.tty:
            self.draw()
        else:
            outcome = trial.get("outcome", "?")
            self.stream.write(f"[sweep] {self.line()}  -> {outcome}\n")
            self.stream.flush()

    def note(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r\x1b[2K")
        self.stream.write(f"[sweep] {text}\n")
        self.stream.flush()
        self.draw()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def say(text: str) -> None:
    print(f"[sweep] {text}", file=sys.stderr, flush=True)
