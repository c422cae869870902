"""Every failure code the code base produces, classified once: what a trial carrying it is.

| kind             | a trial with this code is ...                                             |
|------------------|---------------------------------------------------------------------------|
| `outcome`        | an observation: the model's own output or its budgets (the 60 s / 15 s /  |
|                  | 90 s deadlines, token and byte caps), or the control's interpreter verdict|
|                  | — scored                                                                  |
| `infrastructure` | NOT an observation: the machinery failed (worker crash or error, load or  |
|                  | reload failure, busy, bad reply, bridge error, ...) — kept raw under      |
|                  | `interruptions`, never scored, attempted again                            |
| `cancelled`      | NOT an observation: the user's Cancel — an interruption, attempted again  |
| `not_attempted`  | recorded with zero model calls (an unsupported chain route), never scored |
| `refusal`        | never on a trial: a request refused before any trial ran (protocol,       |
|                  | session, bridge, CLI)                                                     |

`docs/specification.md` §6 carries the same table (a test compares them and walks every
code the Python and JavaScript sources can produce).
"""

from __future__ import annotations

from typing import Literal

import interpreter

FailureKind = Literal["outcome", "infrastructure", "cancelled", "not_attempted", "refusal"]

_INTERPRETER_BROKEN = ("invalid_limits", "internal_error")
"""Interpreter codes that say the instrument is broken, not what a program does."""

_OUTCOME = (
    # the interpreter's verdict on a program text (the model's program, or the control's)
    *(code for code in interpreter.ERROR_CODES if code not in _INTERPRETER_BROKEN),
    # the model's reply and its budgets
    "invalid_integer",
    "integer_out_of_range",
    "input_budget",
    "timeout",
    "route_call_budget",
    "route_input_budget",
    "route_output_budget",
    "route_timeout",
)
_INFRASTRUCTURE = (
    *_INTERPRETER_BROKEN,
    "error",
    "busy",
    "terminated",
    "worker_error",
    "stalled",
    "device_lost",
    "out_of_memory",
    "bad_reply",
    "bridge_error",
    "not_loaded",
    "backend_unavailable",
    "dtype_unsupported",
    "architecture_unsupported",
    "download_failed",
    "load_failed",
    "load_timeout",
    "bad_request",
    "unknown_type",
    "runtime_load_failed",
    "oracle_disagreement",
    "schema_type",
    "not_json_number",
)
_REFUSAL = (
    "not_frozen",
    "already_observed",
    "no_model",
    "no_sweep",
    "model_changed",
    "not_measured",
    "already_frozen",
    "awaiting_study_seal",
    "bad_study_seal",
    "page_refused",
    "bad_params",
    "bad_synthetic_spec",
    "unreadable_program_file",
    "unreadable_registers_file",
    # a file, document or argument refused before any work (pyapp.errors, documents, cli)
    "unreadable_file",
    "lone_surrogate",
    "bad_run_folder",
    "bad_run_file",
    "bad_ledger",
    "input_too_large",
    "input_too_deep",
    "number_out_of_range",
    "bad_trace",
    "bad_predictions",
    "bad_receipt",
    "wrong_kind",
    "bad_record",
    "unwritable_file",
    "cannot_bind",
    "usage",
    "no_site",
    "unreadable_sweep_file",
    "bad_plan",
    "bad_matrix",
    "bad_study_folder",
    "no_study_data",
    "no_study_receipt",
    "wrong_study_receipt",
    "receipt_exists",
    "cells_started",
    "receipt_edited",
    "bad_output_folder",
    "folder_in_use",
    "no_expectations",
)

FAILURE_KINDS: dict[str, FailureKind] = {
    **dict.fromkeys(_OUTCOME, "outcome"),
    **dict.fromkeys(_INFRASTRUCTURE, "infrastructure"),
    "cancelled": "cancelled",
    "unsupported": "not_attempted",
    **dict.fromkeys(_REFUSAL, "refusal"),
}
"""Failure code -> kind. A code missing here is treated as infrastructure (never scored)."""


def kind_of(code: str) -> FailureKind:
    """The kind of a failure code; an unknown code is infrastructure (never scored)."""
    return FAILURE_KINDS.get(code, "infrastructure")


def is_interruption(code: str | None) -> bool:
    """A trial failing with `code` is not an observation: it is kept and attempted again."""
    return code is not None and kind_of(code) in ("infrastructure", "cancelled")
