"""Every message between the page and the Python worker, written once.

One envelope, one tag key (`type`) both ways, an `id` pairing each reply with its request::

    request  {"type": T, "id": N, ...the fields of T's request record}
    reply    {"type": T, "id": N, "ok": true,  "result": T's result record}
           | {"type": T, "id": N, "ok": false, "error": {"code": C, "message": str}}
    event    {"type": E, ...the fields of E's event record}   (Python → page, during sweep_run)

The envelope is built and read by `pyapp.protocol.envelope` (the same for the model channel).
A request record is a frozen dataclass; a field with a default may be left out. `parse_request`
validates what arrives (unknown type, missing or ill-typed field: `bad_request` /
`unknown_type`) before any handler runs. `pyapp.browser.bridge.HANDLERS` is the one handler table.
Documents whose number types matter (a trial, a trace, a predictions document) travel as
Python's own JSON text in a request's or result's `*_json` fields, which JavaScript never
re-writes. An event carries no document inside it: what it brings (a trial, the records
that joined the header, a freeze receipt) travels beside it, as Python's text
(`EventTexts`): posted, `{lab_event: {...event}, texts: {...}, seq}`; told,
`session_event(eventJson, posted, trial, change, receipt)` (site/python_worker/lab_worker.py).

This module holds the request and event records, the failure codes and the envelope; the
requests the page answers itself are in `pyapp.protocol.page_messages` (re-exported here), the
result records in `pyapp.protocol.results` (those a request names as its `RESULT`
are imported here as well).
From these records `python -m pyapp schema` generates `exports/messages.schema.json` and the
page's `site/lab_protocol.js` (message names, conditions, ops, caps, default seed, labels,
failure codes) through the one generator (`pyapp.protocol.generate`, fed by
`pyapp.protocol.exports.CHANNEL`); a test fails when either drifts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from interpreter import LabError
from pyapp.errors import RecordError
from pyapp.protocol import envelope
from pyapp.protocol.envelope import Message as Message
from pyapp.protocol.envelope import Request as Request
from pyapp.protocol.page_messages import PAGE_REQUESTS as PAGE_REQUESTS
from pyapp.protocol.page_messages import ModelChoose as ModelChoose
from pyapp.protocol.page_messages import ModelDirect as ModelDirect
from pyapp.protocol.page_messages import ModelSynthetic as ModelSynthetic
from pyapp.protocol.page_messages import PageStateRequest as PageStateRequest
from pyapp.protocol.page_messages import PageStoredRequest as PageStoredRequest
from pyapp.protocol.page_messages import SweepStop as SweepStop
from pyapp.protocol.results import (
    ADDED,
    ComparedRuns,
    FreezeDone,
    Generated,
    HeaderText,
    HeldoutPredictions,
    JournalKept,
    LedgerEntry,
    OpenedTrace,
    PredictionsText,
    RemadeReceipt,
    ReportHtml,
    RunEnded,
    StudyOpened,
    SuppliedRun,
    SweepState,
    SympyChecked,
    SympyLoaded,
    SyntheticChosen,
    TaskSet,
    TraceText,
    Versions,
    WorkerMemory,
)
from pyapp.records import EVIDENCE_LABELS, JSON, StudySeal, Summary, from_json, to_json

FIXTURE_LABEL = EVIDENCE_LABELS["fixture"]
"""Shown beside every number that came from a test fixture (`EVIDENCE_LABELS`)."""
CONTROL_LABEL = EVIDENCE_LABELS["control"]
"""Shown beside every supplied-program (control) row (`EVIDENCE_LABELS`)."""
REQUEST_TIMEOUT_MS = 120_000
"""How long the page waits for Python's reply to one request by default (site/app.js); a sweep
run or a generation passes its own, longer deadline."""

FAILURE_CODES: dict[str, str] = {
    "bad_request": "not JSON, a missing or ill-typed field",
    "unknown_type": "no such request type",
    "bad_params": "task parameters refused",
    "bad_synthetic_spec": "a synthetic model specification that cannot be used",
    "internal_error": "a bug: please report it",
    "runtime_load_failed": "loading a runtime package (sympy) failed",
    "no_sweep": "start a sweep first",
    "not_loaded": "load a model (with consent) first",
    "model_changed": "the sweep belongs to another model",
    "no_model": "the persisted trace has no model session",
    "not_measured": "measure every profile task before freezing",
    "already_frozen": "every model condition is frozen already",
    "not_frozen": "held-out trials (or predictions) before the freeze",
    "already_observed": "a held-out task observed twice under one frozen profile",
    "page_refused": "the page refused a driver's request (window.lab.send): a precondition of"
    " its buttons, said in the message",
}
"""Error codes a reply can carry (`error.code`), each with what it means."""


# ---- requests ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hello(Request):
    """Say hello: versions of Python, pyapp and the task generator."""

    TYPE: ClassVar[str] = "hello"
    RESULT: ClassVar[type] = Versions


@dataclass(frozen=True)
class TasksRequest(Request):
    """The task set of a seed."""

    TYPE: ClassVar[str] = "tasks"
    RESULT: ClassVar[type] = TaskSet
    seed: int | None = None
    """The seed (default 1729)."""
    params: dict[str, JSON] | None = None
    """TaskParams overrides (JSON object)."""


@dataclass(frozen=True)
class RunSupplied(Request):
    """Run the supplied-program control (no model) over a seed's tasks."""

    TYPE: ClassVar[str] = "run_supplied"
    RESULT: ClassVar[type] = SuppliedRun
    seed: int | None = None
    """The seed (default 1729)."""
    params: dict[str, JSON] | None = None
    """TaskParams overrides."""
    environment: dict[str, JSON] | None = None
    """The browser (BrowserInfo JSON), recorded in the trace."""


@dataclass(frozen=True)
class SympyLoad(Request):
    """Load the local sympy and mpmath wheels (first call only)."""

    TYPE: ClassVar[str] = "sympy_load"
    RESULT: ClassVar[type] = SympyLoaded


@dataclass(frozen=True)
class SympyCheck(Request):
    """Check every answer of a seed's tasks with sympy (loads it first)."""

    TYPE: ClassVar[str] = "sympy_check"
    RESULT: ClassVar[type] = SympyChecked
    seed: int | None = None
    """The seed (default 1729)."""
    params: dict[str, JSON] | None = None
    """TaskParams overrides."""


@dataclass(frozen=True)
class Memory(Request):
    """The worker's memory (bench/scale.py)."""

    TYPE: ClassVar[str] = "memory"
    RESULT: ClassVar[type] = WorkerMemory


@dataclass(frozen=True)
class ModelGenerate(Request):
    """One generation through Python's model adapter (the Models panel's "try a prompt")."""

    TYPE: ClassVar[str] = "model_generate"
    RESULT: ClassVar[type] = Generated
    prompt: str
    """The prompt, as typed."""
    caps: dict[str, JSON] | None = None
    """Budgets (Caps JSON); default: the whole-task caps."""


@dataclass(frozen=True)
class SyntheticSelect(Request):
    """Run sweeps with a synthetic validation model (`pyapp.synthetic`) executed in this
    worker instead of the loaded model, or stop (`spec` null). No download; the model is of
    known error structure: it validates the instrument and is never model evidence."""

    TYPE: ClassVar[str] = "synthetic_select"
    RESULT: ClassVar[type] = SyntheticChosen
    spec: str | None
    """`NAME` or `NAME:key=value,...` (e.g. `size-dependent:slope=1.2`); null: the loaded
    model again."""


@dataclass(frozen=True)
class StudySealChoice:
    """A sweep under a study-level seal (`pyapp.predict.sealing.study_draw_seed`)."""

    seal: StudySeal | None = None
    """The study's seal of this task seed, once made (it must list this sweep's own); null
    until then: the sweep stops at its freeze (`SweepState.awaiting_study_seal`)."""


@dataclass(frozen=True)
class SweepStart(Request):
    """Start a sweep with the loaded model."""

    TYPE: ClassVar[str] = "sweep_start"
    RESULT: ClassVar[type] = SweepState
    seed: int | None = None
    """The seed (default 1729)."""
    params: dict[str, JSON] | None = None
    """TaskParams overrides."""
    conditions: tuple[str, ...] | None = None
    """Conditions to run (default: all four)."""
    environment: dict[str, JSON] | None = None
    """The browser (BrowserInfo JSON)."""
    previously_observed: dict[str, tuple[str, ...]] | None = None
    """What another ledger (the sweep CLI's file) holds for this model, per condition:
    held-out task content keys (`TrialDone.heldout_content`), or task ids recorded before
    content keys. Python keeps those that name this sweep's held-out tasks
    (`pyapp.predict.exploratory.previously_seen`): they make the profile exploratory."""
    ledger: tuple[LedgerEntry, ...] | None = field(default=None, metadata=ADDED)
    """Every entry of the page's own ledger ({model_id, revision, revision_served, condition,
    task_ids}): Python keeps those of this sweep's model, however spelled (ids case-folded, a
    branch and the commit it resolved to alike: `pyapp.predict.exploratory.same_model`), and
    joins them to `previously_observed`."""
    faults: tuple[str, ...] | None = None
    """Fault-injection hooks the page runs with (`worker_crash@N`, ...; site/faults.js):
    recorded in the trace's `run.faults`."""
    chain_protocol: str | None = None
    """The controlled chain's protocol, chosen explicitly (`design` or `extended`,
    `pyapp.records.terms`); null: the design's. Recorded in the trace's `run.terms`."""
    sealed: bool | None = field(default=None, metadata=ADDED)
    """A sealed sweep (`pyapp.predict.sealing`): its held-out tasks are drawn after every
    profile is frozen, from the seed the freezes seal; null or false: unsealed (held-out
    tasks from the task seed). Recorded in the trace's `run.terms.sealed`."""
    study_seal: StudySealChoice | None = field(default=None, metadata=ADDED)
    """A sealed sweep whose held-out draw uses a study-level seal (`matrix` with a plan's
    `sealed = "study"`): null: its own seal."""


@dataclass(frozen=True)
class SweepResume(Request):
    """Continue a stored sweep: its header and one JSON text per trial, or one trace text."""

    TYPE: ClassVar[str] = "sweep_resume"
    RESULT: ClassVar[type] = SweepState
    header_json: str | None = None
    """The header (the trace without its trials) as Python wrote it."""
    trials_json: tuple[str, ...] | None = None
    """One trial per entry, as Python wrote it."""
    trace_json: str | None = None
    """A whole trace, instead of header_json + trials_json."""
    changes_json: tuple[str, ...] | None = field(default=None, metadata=ADDED)
    """The records that joined the header after it was stored, one `HeaderChange` text per
    event that brought any (`EventTexts.change`), in order (`pyapp.records.stored`)."""
    in_flight: str | None = None
    """The trial that was in flight when the page closed (recorded as interrupted)."""
    previously_observed: dict[str, tuple[str, ...]] | None = None
    """What another ledger (the sweep CLI's file) holds for this model, per condition:
    held-out task content keys (`TrialDone.heldout_content`), or task ids recorded before
    content keys. Python keeps those that name this sweep's held-out tasks
    (`pyapp.predict.exploratory.previously_seen`): they make the profile exploratory."""
    ledger: tuple[LedgerEntry, ...] | None = field(default=None, metadata=ADDED)
    """Every entry of the page's own ledger ({model_id, revision, revision_served, condition,
    task_ids}): Python keeps those of this sweep's model, however spelled (ids case-folded, a
    branch and the commit it resolved to alike: `pyapp.predict.exploratory.same_model`), and
    joins them to `previously_observed`."""
    study_seal: StudySealChoice | None = field(default=None, metadata=ADDED)
    """A sealed sweep whose held-out draw uses a study-level seal (`matrix` with a plan's
    `sealed = "study"`): null: its own seal."""


@dataclass(frozen=True)
class SweepRun(Request):
    """Run a phase; Python orders measure → freeze → held-out."""

    TYPE: ClassVar[str] = "sweep_run"
    RESULT: ClassVar[type] = RunEnded
    phase: Literal["measure", "heldout", "all"]
    """Which trials to run."""


@dataclass(frozen=True)
class SweepFreeze(Request):
    """Freeze every model condition's profile (after the measure phase)."""

    TYPE: ClassVar[str] = "sweep_freeze"
    RESULT: ClassVar[type] = FreezeDone


@dataclass(frozen=True)
class SweepStateRequest(Request):
    """The sweep's state, ready to draw."""

    TYPE: ClassVar[str] = "sweep_state"
    RESULT: ClassVar[type] = SweepState


@dataclass(frozen=True)
class SweepHeader(Request):
    """The sweep's header: the trace without its trials."""

    TYPE: ClassVar[str] = "sweep_header"
    RESULT: ClassVar[type] = HeaderText


@dataclass(frozen=True)
class SweepTrace(Request):
    """The whole trace, assembled now."""

    TYPE: ClassVar[str] = "sweep_trace"
    RESULT: ClassVar[type] = TraceText
    split: bool = False
    """Answer it as the page stores it, the header and one text per trial (`header_json`,
    `trials_json`: after a resume upgraded an older trace), instead of `trace_json`."""


@dataclass(frozen=True)
class SweepPredictions(Request):
    """The predictions document (after a freeze)."""

    TYPE: ClassVar[str] = "sweep_predictions"
    RESULT: ClassVar[type] = PredictionsText


@dataclass(frozen=True)
class JournalGenerate(Request):
    """Free exploration with the loaded model: kept in the trace, never scored."""

    TYPE: ClassVar[str] = "journal_generate"
    RESULT: ClassVar[type] = JournalKept
    prompt: str
    """The free prompt."""


@dataclass(frozen=True)
class TraceOpen(Request):
    """Open a finished run read from the reader's disk: re-derive it (`reproduce`) and derive
    its profiles, predictions and scores (`score`), in the page's own Python."""

    TYPE: ClassVar[str] = "trace_open"
    RESULT: ClassVar[type] = OpenedTrace
    trace_json: str
    """The trace file's text."""
    predictions_json: str | None = None
    """Its predictions document's text, when one was opened with it (compared number for
    number with what the trace gives)."""


@dataclass(frozen=True)
class RunReport(Request):
    """The report of a run the page holds (a sweep stored in this browser), written by the
    page's own Python with the code of `python -m pyapp report`."""

    TYPE: ClassVar[str] = "run_report"
    RESULT: ClassVar[type] = ReportHtml
    trace_json: str
    """The run's trace as text."""


@dataclass(frozen=True)
class ReceiptRemake(Request):
    """The freeze receipt of a run the page holds, made again from its trace (the runs
    list's "Download receipt" where the one made at the freeze was not kept)."""

    TYPE: ClassVar[str] = "receipt_remake"
    RESULT: ClassVar[type] = RemadeReceipt
    trace_json: str
    """The run's trace as text."""


@dataclass(frozen=True)
class StudyOpen(Request):
    """A study folder's study.json, opened in the page's Study view (read there, never
    uploaded): the answer first, each condition's verdicts and both predictors' reliability."""

    TYPE: ClassVar[str] = "study_open"
    RESULT: ClassVar[type] = StudyOpened
    study_json: str
    """The study.json's text."""


@dataclass(frozen=True)
class StoredTraceRequest(Request):
    """The trace of a sweep this browser stores (the runs panel's Show, Download and Report),
    assembled by Python from the stored texts (`pyapp.records.stored.stored_trace`, the one
    assembly: the page assembles none)."""

    TYPE: ClassVar[str] = "stored_trace"
    RESULT: ClassVar[type] = TraceText
    header_json: str
    """The stored header, as Python wrote it."""
    trials_json: tuple[str, ...]
    """One stored trial per entry, as Python wrote it."""
    changes_json: tuple[str, ...] = ()
    """The header changes stored since the header (`EventTexts.change`), in order."""


@dataclass(frozen=True)
class OpenedRun:
    """One finished run to compare: its predictions document as read from disk, and its
    trace when the reader gave it."""

    name: str
    """What the reader calls it (the file's name)."""
    predictions_json: str
    """The predictions document's text."""
    trace_json: str | None = field(default=None, metadata=ADDED)
    """Its trace's text (paired by run id): the predictions' `task_set` is checked against
    it (`pyapp.predict.compare.trace_problem`, refused when it differs); null: the task set
    is said to be unverified."""


@dataclass(frozen=True)
class CompareRuns(Request):
    """Finished runs side by side: the table of `python -m pyapp compare` (descriptive)."""

    TYPE: ClassVar[str] = "compare_runs"
    RESULT: ClassVar[type] = ComparedRuns
    runs: tuple[OpenedRun, ...]
    """The runs, in the order to show them."""


REQUESTS: tuple[type[Request], ...] = (
    Hello,
    TasksRequest,
    RunSupplied,
    SympyLoad,
    SympyCheck,
    Memory,
    ModelGenerate,
    SyntheticSelect,
    SweepStart,
    SweepResume,
    SweepRun,
    SweepFreeze,
    SweepStateRequest,
    SweepHeader,
    SweepTrace,
    SweepPredictions,
    JournalGenerate,
    TraceOpen,
    RunReport,
    ReceiptRemake,
    StudyOpen,
    StoredTraceRequest,
    CompareRuns,
    *PAGE_REQUESTS,
)
"""Every request the page may send, in the order the docs list them."""
REQUEST_TYPES: dict[str, type[Request]] = {r.TYPE: r for r in REQUESTS}

# ---- events -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrialStart(Message):
    """A trial is about to run (the page stores it as in flight)."""

    TYPE: ClassVar[str] = "trial_start"
    trial_id: str
    """`condition/task_id`."""
    condition: str
    """The trial's condition."""
    task_id: str
    """The trial's task."""
    index: int
    """0-based position in this run's plan."""
    total: int
    """Trials in this run's plan."""
    phase: Literal["measure", "heldout"]
    """The phase."""
    answer_tokens: int | None = field(default=None, metadata=ADDED)
    """The answer tokens the trial's model calls are to write, known before it runs (as
    `PlanLeft.work` counts them; profile trials only, null for a held-out one): the page's
    ETA times the trial per answer token."""
    calls: int | None = field(default=None, metadata=ADDED)
    """The model calls the trial is planned to make (as `PlanLeft.calls` counts them: a
    chain's route length, none for a family without a route, one for a whole-task model
    condition, none for the control): the page's ETA counts a group's trials left by them."""


@dataclass(frozen=True)
class TrialDone(Message):
    """A trial finished: that trial only, its text beside the event (`EventTexts.trial`;
    with `EventTexts.change` when a reload's load record joined the chain before it)."""

    TYPE: ClassVar[str] = "trial_done"
    trial_id: str
    """`condition/task_id`."""
    condition: str
    """The trial's condition."""
    task_id: str
    """The trial's task."""
    index: int
    """Trials done in this run's plan."""
    total: int
    """Trials in this run's plan."""
    phase: Literal["measure", "heldout"]
    """The phase."""
    heldout_observed: bool
    """Whether it observes a held-out task its condition's profile predicts: a ledger of
    observed held-out tasks records it (`pyapp.experiment.ledger.ledger_task_ids`)."""
    summary: Summary
    """The sweep's counts with this trial (the page's caption shows them as they are)."""
    heldout_content: str | None = field(default=None, metadata=ADDED)
    """When `heldout_observed`: the held-out task's content key (SHA-256 of its registers and
    question, `pyapp.predict.exploratory.content_sha256`), which the page's ledger records
    under the model id, revision and condition; null otherwise."""


@dataclass(frozen=True)
class TrialInterrupted(Message):
    """The user's Cancel or an infrastructure failure cut a trial short: kept under
    `interruptions`, never scored, attempted again. The interruption record travels beside
    it (`EventTexts.change`), never the whole header."""

    TYPE: ClassVar[str] = "trial_interrupted"
    trial_id: str
    """The interrupted trial."""
    code: str | None
    """Its failure code (`cancelled`, or one of kind `infrastructure`)."""


@dataclass(frozen=True)
class Frozen(Message):
    """Python froze the profiles inside `sweep_run` (phase `all`); the freeze records travel
    beside it (`EventTexts.change`), and so does the receipt (`EventTexts.receipt`)."""

    TYPE: ClassVar[str] = "frozen"
    conditions: tuple[str, ...]
    """The conditions frozen now."""
    predictions: tuple[HeldoutPredictions, ...] = ()
    """Per frozen condition, what the profile predicts for each held-out task (as
    `sweep_freeze` answers), so the page shows them before the first held-out result."""


EVENTS: tuple[type[Message], ...] = (TrialStart, TrialDone, TrialInterrupted, Frozen)
"""Every event Python sends the page during a run."""


@dataclass(frozen=True)
class EventTexts:
    """The documents an event brings, beside it and never inside it: each Python's own JSON
    text, serialised once, which the page stores as it is (IndexedDB) and relays as it is
    (the sweep CLI writes it: a trial is one line of trials.jsonl)."""

    trial: str | None = None
    """`trial_done`: the Trial record (exports/trace.schema.json), one line."""
    change: str | None = None
    """The records that joined the sweep's header with this event (a `HeaderChange` of
    `pyapp.records.stored`: a reload's load records, an interruption, the freezes), which
    the page stores beside its header until it next has the header whole."""
    receipt: str | None = None
    """`frozen`: the freeze receipt (`pyapp.verify.receipt`): the page renders it before the
    first held-out trial starts; the sweep CLI writes it to receipt.json."""


@dataclass(frozen=True)
class EventAnswer:
    """The page's answer to each event (`xworker.sync.session_event`), given at once, as JSON
    text: what Python's next checks read instead of asking the page again."""

    cancel: bool
    """The page's Cancel flag as it stands: Python's next Cancel check reads it."""
    model_version: int | None
    """How many times the page's model client has changed state (a load begun, ended or
    refused, a crash, a termination: whatever its provenance reports changes only with
    one); null without a model client. While it stays the same, Python's adapter keeps the
    provenance it read (`pyapp.browser.model.BrowserModelAdapter.provenance`)."""


# ---- validation and the envelope --------------------------------------------------------------


class RequestError(LabError):
    """A request refused at the boundary: `code` is one of FAILURE_CODES, `message` one line.
    Every handler raises this one class; the reply carries both (a `pyapp.errors.LabError`)."""


def parse_request(data: JSON) -> Request:
    """The request record of a decoded request; refuses an unknown type or a bad field."""
    try:
        kind = envelope.tag_of(data, "request")
    except RecordError as error:
        raise RequestError("bad_request", error.message) from None
    record = REQUEST_TYPES.get(kind)
    if record is None:
        raise RequestError("unknown_type", f"unknown request type {kind!r}")
    assert isinstance(data, dict)
    try:
        parsed: Request = envelope.read_record(record, data, request=True)
    except RecordError as error:
        raise RequestError("bad_request", f"{kind}: {error}") from None
    return parsed


EVENT_TYPES: dict[str, type[Message]] = {e.TYPE: e for e in EVENTS}


def parse_event(data: JSON) -> Message:
    """The event record of a decoded event (the sweep CLI checks what the page relays)."""
    if not isinstance(data, dict) or data.get("type") not in EVENT_TYPES:
        raise RequestError("bad_request", f"not an event: {str(data)[:80]}")
    record = EVENT_TYPES[data["type"]]
    try:
        parsed: Message = envelope.read_record(record, data, request=False)
    except RecordError as error:
        raise RequestError("bad_request", f"{record.TYPE}: {error}") from None
    return parsed


def request_message(request: Request, request_id: JSON) -> dict[str, JSON]:
    """A request record as sent: `{"type": T, "id": N, ...fields}` (the sweep CLI's)."""
    return envelope.outgoing(request, request_id)


def parse_result(kind: str, result: JSON) -> object:
    """The `RESULT` record of a successful reply to a request of type `kind` (the sweep CLI
    checks what the page answers); `bad_request` when the result does not fit it."""
    record = REQUEST_TYPES.get(kind)
    if record is None:
        raise RequestError("unknown_type", f"unknown request type {kind!r}")
    try:
        parsed: object = from_json(record.RESULT, result, f"${kind}.result")
    except RecordError as error:
        raise RequestError("bad_request", f"the reply to {kind}: {error}") from None
    return parsed


def event(message: Message) -> dict[str, JSON]:
    """An event record as sent: `{"type": E, ...fields}` (every field: what
    `envelope.outgoing(message, request=False)` gives, without its per-field walk, as an
    event is sent twice per trial)."""
    fields = to_json(message)
    assert isinstance(fields, dict)
    return {envelope.TAG: message.TYPE, **fields}


def ok(kind: JSON, request_id: JSON, result: object) -> str:
    """The reply to a request that succeeded: `result` is its request's `RESULT` record."""
    return json.dumps(envelope.ok_reply(kind, request_id, result))


def failed(kind: JSON, request_id: JSON, code: str, message: str) -> str:
    """The reply to a request that was refused (`code`: one of FAILURE_CODES)."""
    return json.dumps(envelope.failed_reply(kind, request_id, code, message))
