"""The matrix's progress view: one line — cells done, running, failed, pending — and an ETA.

On a terminal the line is redrawn in place; otherwise (a log file, CI) a line is printed
whenever the counts change. The ETA is the cells left times the wall seconds per cell this
invocation has finished so far (so it already accounts for the cells running at once).
"""

from __future__ import annotations

import sys
import time


def eta_text(seconds: float | None) -> str:
    if seconds is None:
        return "ETA —"
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"ETA {hours}h{minutes:02d}m" if hours else f"ETA {minutes}m{secs:02d}s"


class Progress:
    """Counts in, one line out (stderr)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.start = time.monotonic()
        self.finished_here = 0
        self.last = ""
        self.tty = sys.stderr.isatty()

    def line(self, counts: dict[str, int]) -> str:
        done = counts.get("done", 0)
        running = counts.get("running", 0)
        failed = counts.get("failed", 0)
        waiting = self.total - done - running - failed
        elapsed = time.monotonic() - self.start
        left = self.total - done
        eta = elapsed / self.finished_here * left if self.finished_here else None
        rate = f"{self.finished_here / elapsed * 60:.1f} cells/min" if elapsed > 0 else ""
        return (
            f"matrix: {done}/{self.total} done, {running} running, {failed} failed, "
            f"{waiting} waiting; {rate}; {eta_text(eta if left else 0)}"
        )

    def show(self, counts: dict[str, int]) -> None:
        text = self.line(counts)
        if text.split(";")[0] == self.last.split(";")[0] and not self.tty:
            return
        self.last = text
        if self.tty:
            print(f"\r{text}\x1b[K", end="", file=sys.stderr, flush=True)
        else:
            print(text, file=sys.stderr, flush=True)

    def end(self) -> None:
        if self.tty:
            print(file=sys.stderr)
