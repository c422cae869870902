"""The sweep's errors: one boundary, one small tree; each carries the exit status it maps to::

SweepError                 status 1: the sweep failed (page, model, checks)
├── SetupError             status 2: bad options, no consent, no Chromium, no site,
│                                    an --out folder already in use, nothing to resume
├── Paused                 status 3: three infrastructure failures in a row paused the
│                                    sweep; nothing scored, files consistent, --resume
└── Interrupted            status 130 (Ctrl-C / SIGTERM) or 1 (--timeout): files consistent,
                                     continue with --resume
"""

from __future__ import annotations

from interpreter import LabError


class SweepError(LabError):
    """The sweep failed; `code` is stable and machine-readable, `status` the exit status."""

    status = 1


class SetupError(SweepError):
    """Nothing ran: bad options, no consent, something missing (exit status 2)."""

    status = 2


class Paused(SweepError):
    """The page paused the sweep after three infrastructure failures in a row (exit 3);
    nothing was scored, the files are consistent, `--resume` continues."""

    status = 3


class Interrupted(SweepError):
    """Stopped by Ctrl-C / SIGTERM (exit 130) or --timeout (exit 1); files consistent."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(code, message)
        self.status = status
