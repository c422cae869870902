"""The experiment's order: measure the profile, freeze it, then run the held-out tasks
(``phases``), and the ledger of held-out tasks already seen and of infrastructure failures
(``ledger``)."""

from pyapp.experiment.ledger import (
    ENTRY_FIELDS,
    OPTIONAL_FIELDS,
    LedgerEntry,
    LedgerError,
    ledger_schema,
    ledger_task_ids,
    observed_for,
    read_ledger,
    record_trace,
    seen_in,
    upgraded,
)
from pyapp.experiment.phases import (
    PAUSE_AFTER,
    Phase,
    Sweep,
    awaiting_study_seal,
    draw,
    freeze,
    plan,
    record_interruption,
    run_phase,
)

__all__ = [
    "ENTRY_FIELDS",
    "OPTIONAL_FIELDS",
    "PAUSE_AFTER",
    "LedgerEntry",
    "LedgerError",
    "Phase",
    "Sweep",
    "awaiting_study_seal",
    "draw",
    "freeze",
    "ledger_schema",
    "ledger_task_ids",
    "observed_for",
    "plan",
    "read_ledger",
    "record_interruption",
    "record_trace",
    "run_phase",
    "seen_in",
    "upgraded",
]
