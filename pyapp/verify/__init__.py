"""Re-deriving a record offline, above the runners and the predictors it re-runs:
``reproduce`` (regenerates the tasks, re-runs the interpreter and the judges on the recorded
completions, re-derives the profile, predictions and scores; one trial at a time through
``trials``, which also gives a report the trace as re-derived), ``consistency`` (the rules by
which a trace's fields must agree with each other), ``receipt`` (freeze receipts: made
at the freeze, checked against a trace later), ``completeness`` (every held-out task a
freeze listed against the trials present: a run that ended early says so) and ``rerun``
(audit by re-execution: each recorded completion generated again and compared)."""

from pyapp.verify.completeness import incomplete
from pyapp.verify.receipt import (
    Receipt,
    make_receipt,
    read_receipt,
    receipt_lines,
    receipt_mismatches,
    receipt_schema,
)
from pyapp.verify.reproduce import limitations, reproduce_predictions
from pyapp.verify.rerun import Explain, Generate, Rerun
from pyapp.verify.trials import Correction, rederive, regenerated_records

__all__ = [
    "Correction",
    "Explain",
    "Generate",
    "Receipt",
    "Rerun",
    "incomplete",
    "limitations",
    "make_receipt",
    "read_receipt",
    "receipt_lines",
    "receipt_mismatches",
    "receipt_schema",
    "rederive",
    "regenerated_records",
    "reproduce_predictions",
]
