"""Every typed error of Composition Lab, drawn as one tree.

One base, :class:`LabError` (``interpreter.lab_error``, so that the interpreter, which
imports nothing from ``pyapp``, shares it): a stable ``code``, a ``message``, and for any
budget or limit failure the same ``limit`` / ``maximum`` / ``value`` fields.

Hierarchy::

    Exception
    └── LabError(code, message, path=None, limit=None, maximum=None, value=None)
        ├── ProgramError                interpreter: parse, limits, execution
        ├── ParamsError                 task parameters refused (bad_params)
        ├── InputError                  a file or document refused: too big, too deep,
        │                               not JSON, NaN/Infinity, over a count (exit 1)
        ├── UsageError                  bad command-line usage (exit 2)
        ├── RecordError                 JSON that does not fit a record type (a ValueError)
        ├── BridgeError                 the page bridge: bad_request, unknown_type, bad_params
        ├── SessionError                the page's experiment session
        ├── ProtocolError               measure -> freeze -> held-out refused a step
        ├── ReplyError                  a model-worker reply off the protocol (bad_reply)
        ├── Cancelled                   the user's Cancel, inside the controller
        ├── OracleDisagreement          generation: program and oracle differ (a bug guard)
        ├── SiteMissingError            `serve`: no built site (a FileNotFoundError)
        └── SweepError                  `sweep` failed (exit 1)
            ├── SetupError              nothing ran (exit 2)
            └── Interrupted             Ctrl-C / SIGTERM (130) or --timeout (1)

Only the ``code`` is stable; messages are for people.
"""

from __future__ import annotations

from interpreter.errors import ProgramError
from interpreter.lab_error import LabError

__all__ = [
    "BridgeError",
    "Cancelled",
    "InputError",
    "Interrupted",
    "LabError",
    "OracleDisagreement",
    "ParamsError",
    "ProgramError",
    "ProtocolError",
    "RecordError",
    "ReplyError",
    "SessionError",
    "SetupError",
    "SiteMissingError",
    "SweepError",
    "UsageError",
]


class ParamsError(LabError, ValueError):
    """Task parameters refused (``bad_params``), naming the parameter as ``limit``."""

    def __init__(
        self,
        message: str,
        *,
        limit: str | None = None,
        maximum: int | None = None,
        value: int | str | None = None,
    ) -> None:
        super().__init__("bad_params", message, limit=limit, maximum=maximum, value=value)


class InputError(LabError):
    """A file or document refused before (or while) reading it; ``path`` names the file."""


class UsageError(LabError):
    """Bad arguments: reported on stderr with exit status 2, never as a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__("usage", message)


class RecordError(LabError, ValueError):
    """A JSON value does not fit the record type expected at `path`."""

    path: str
    """Where in the JSON value (`$.trials[0].budget`)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__("bad_record", message, path=path)


class BridgeError(LabError):
    """A request the page bridge refuses (``bad_request``, ``unknown_type``, ``bad_params``)."""


class SessionError(LabError):
    """A request the page's experiment session refuses (``no_sweep``, ``not_loaded``, ...)."""


class ProtocolError(LabError):
    """A step the protocol refuses (held-out before freeze, a second observation, ...)."""


class ReplyError(LabError, ValueError):
    """A reply that does not fit the protocol (wrong shape, id or type)."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_reply", message)


class Cancelled(LabError):
    """Raised inside the controller when the user cancels a sweep."""

    def __init__(self, message: str = "cancelled by the user") -> None:
        super().__init__("cancelled", message)


class OracleDisagreement(LabError, AssertionError):
    """The reference program and the independent oracle gave different answers."""

    def __init__(self, message: str) -> None:
        super().__init__("oracle_disagreement", message)


class SiteMissingError(LabError, FileNotFoundError):
    """The build folder does not exist or has no index.html."""

    def __init__(self, message: str) -> None:
        super().__init__("no_site", message)


class SweepError(LabError):
    """The sweep failed; `code` is stable and machine-readable, `status` the exit status."""

    status = 1


class SetupError(SweepError):
    """Nothing ran: bad options, no consent, something missing (exit status 2)."""

    status = 2


class Interrupted(SweepError):
    """Stopped by Ctrl-C / SIGTERM (exit 130) or --timeout (exit 1); files consistent."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(code, message)
        self.status = status
