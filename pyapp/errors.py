"""Every typed error of Composition Lab, drawn as one tree.

One base, :class:`LabError` (``interpreter.lab_error``, so that the interpreter, which
imports nothing from ``pyapp``, shares it): a stable ``code``, a ``message``, an optional
``path`` (where), and for any budget or limit failure the same ``limit`` / ``maximum`` /
``value`` fields. The classes shared across rooms are defined here; a room's own boundary
error lives in the room (marked with its module) and derives from the same base.

Hierarchy::

    Exception
    └── LabError(code, message, path=None, limit=None, maximum=None, value=None)
        ├── ProgramError                interpreter.errors: parse, limits, execution
        ├── ParamsError                 task parameters refused (bad_params)
        ├── InputError                  a file or document refused: too big, too deep,
        │                               not JSON, NaN/Infinity, over a count (exit 1)
        ├── UsageError                  bad command-line usage (exit 2)
        ├── RecordError                 JSON that does not fit a record type (a ValueError)
        ├── PhaseError                  pyapp.experiment.phases: measure -> freeze -> held-out
        │                               refused a step (already_observed, not_frozen, ...)
        ├── ReplyError                  a model-worker reply off the protocol (bad_reply)
        ├── Cancelled                   the user's Cancel, inside the controller
        ├── OracleDisagreement          generation: program and oracle differ (a bug guard)
        ├── SiteMissingError            `serve`: no built site (a FileNotFoundError)
        ├── RequestError                pyapp.protocol.messages: a page request refused
        │                               (bad_request, unknown_type, bad_params, no_sweep, ...)
        ├── FilesError                  pyapp.sweep.files: a file in --out is not a sweep's
        ├── SpecError                   pyapp.records.synthetic_spec: a synthetic model
        │                               specification refused (bad_synthetic_spec)
        ├── RunInputError               pyapp.report.run_folder: a run folder or document
        │                               that cannot be read as a run (bad_run_folder)
        ├── LedgerError                 pyapp.experiment.ledger: a ledger file that is not a
        │                               ledger (bad_ledger)
        ├── SchemaTypeError             pyapp.protocol.jsdoc: a schema the generated JSDoc
        │                               types cannot say (a generator bug guard)
        ├── NotJSONNumber               pyapp.records.writer: NaN or ±Infinity in a document
        │                               being written (a ValueError)
        ├── NativeModelError            pyapp.native.folder: a model the native backend
        │                               cannot run as the page would (unverified_template, ...)
        └── SweepError                  pyapp.sweep.errors: `sweep` failed (exit 1)
            ├── SetupError              nothing ran (exit 2)
            ├── Paused                  three infrastructure failures in a row (exit 3)
            └── Interrupted             Ctrl-C / SIGTERM (130) or --timeout (1)

``tests/test_error_tree.py`` walks every exception class defined in ``interpreter`` and
``pyapp`` and checks that it derives from ``LabError``, sits in this drawing under its
real parent, and sets a ``code``.

Only the ``code`` is stable; messages are for people.
"""

from __future__ import annotations

from interpreter import LabError, ProgramError

__all__ = [
    "Cancelled",
    "InputError",
    "LabError",
    "OracleDisagreement",
    "ParamsError",
    "PhaseError",
    "ProgramError",
    "RecordError",
    "ReplyError",
    "SiteMissingError",
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


class PhaseError(LabError):
    """A step the phases refuse (`pyapp.experiment.phases`: held-out before freeze, a second
    observation, ...); the codes are the phases' (`already_observed`, `not_frozen`, ...)."""


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
