"""Every message between the page and the Python worker, written once.

One envelope, one tag key (`type`) both ways, an `id` pairing each reply with its request::

    request  {"type": T, "id": N, ...the fields of T's request record}
    reply    {"type": T, "id": N, "ok": true,  "result": T's result record}
           | {"type": T, "id": N, "ok": false, "error": {"code": C, "message": str}}
    event    {"type": E, ...the fields of E's event record}   (Python → page, during sweep_run)

A request record is a frozen dataclass; a field with a default may be left out. `parse_request`
validates what arrives (unknown type, missing or ill-typed field: `bad_request` /
`unknown_type`) before any handler runs. `pyapp.browser.bridge.HANDLERS` is the one handler table.
Documents whose number types matter (a trial, a trace, a predictions document) travel as
Python's own JSON text in `*_json` fields, which JavaScript never re-writes.

From these records `python -m pyapp schema` generates `exports/messages.schema.json` and the
page's `site/lab_protocol.js` (message names, conditions, ops, caps, default seed, labels,
failure codes); a test fails when either drifts.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pyapp.conditions.run import ALL_CONDITIONS, MODEL_CONDITIONS
from pyapp.errors import LabError
from pyapp.predict.predictor import FrozenProfile, Prediction
from pyapp.records.base import JSON, RecordError, from_json, json_schema, to_json
from pyapp.records.evidence import EVIDENCE_LABELS, EVIDENCE_MEANINGS
from pyapp.records.model import CHAIN_CALL_CAPS, WHOLE_TASK_CAPS, Completion, ModelProvenance
from pyapp.records.trace import JournalEntry, Summary, TaskRecord, Trace
from pyapp.synthetic.language import structure_notes
from pyapp.tasks.taskset import DEFAULT_SEED, GENERATOR_VERSION, PRESETS, PRIMITIVE_OPS

SCHEMA_ID = "https://composition-lab.invalid/schemas/messages.schema.json"
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


ADDED = {"optional_on_read": True}
"""A field added to a message after it was first written: a sender that does not know it
may leave it out (it reads as its default)."""


class Message:
    """Base of every request and event record: `TYPE` is its tag."""

    TYPE: ClassVar[str]


class Request(Message):
    """Base of every request record: `RESULT` is the record its reply's `result` holds (the
    handler returns one, `pyapp.browser.bridge` checks it, the schema describes it)."""

    RESULT: ClassVar[type]


# ---- results: what a reply's `result` holds, one record per request (its `RESULT`) ---------


@dataclass(frozen=True)
class Versions:
    """`hello`: the versions the page reports (and the sweep CLI records in run.json)."""

    python: str
    """Python's `sys.version` (Pyodide's CPython in the page)."""
    pyapp_version: str
    """The pyapp package's version."""
    generator_version: str
    """The task generator's version (`tasks/1`)."""


@dataclass(frozen=True)
class TaskSet:
    """`tasks`: a seed's task set."""

    seed: int
    """The seed the tasks were generated from."""
    tasks: tuple[TaskRecord, ...]
    """Every task, in the generator's order (the trace's task records)."""


@dataclass(frozen=True)
class SuppliedRun:
    """`run_supplied`: the supplied-program control's trace (not model evidence)."""

    trace: Trace
    """The whole trace (exports/trace.schema.json)."""


@dataclass(frozen=True)
class SympyLoaded:
    """`sympy_load`: the wheels loaded and how long that took."""

    packages: tuple[str, ...]
    """The packages loaded (mpmath, sympy)."""
    load_ms: float
    """Milliseconds spent loading (about 0 once loaded)."""


@dataclass(frozen=True)
class SympyMismatch:
    """A task whose answer sympy derives differently (a generator bug)."""

    task_id: str
    """The task."""
    answer: int
    """The generator's answer."""
    sympy: int
    """sympy's answer."""


@dataclass(frozen=True)
class SympyChecked:
    """`sympy_check`: every answer of a task set re-derived by sympy."""

    sympy_version: str
    """sympy's version."""
    checked: int
    """Tasks checked."""
    agreements: int
    """Tasks whose answer sympy derives the same."""
    mismatches: tuple[SympyMismatch, ...]
    """The others."""


@dataclass(frozen=True)
class WorkerMemory:
    """`memory`: the Python worker's memory (bench/scale.py samples it)."""

    wasm_heap_bytes: int | None
    """Pyodide's WebAssembly heap (it grows, never shrinks); null natively."""
    python_objects: int
    """Objects Python's collector tracks after a collection."""


@dataclass(frozen=True)
class GenerationTiming:
    """Where the time of one model call went (milliseconds)."""

    round_trip_ms: float
    """Python's wall time for the whole call (out to the model worker and back)."""
    worker_ms: float | None
    """The model worker's own time, when it reported one."""
    client_ms: float | None
    """The main thread's time, when it reported one."""
    bridge_overhead_ms: float | None
    """Round trip minus the worker's time: what the bridge costs per call."""


@dataclass(frozen=True)
class Generated:
    """`model_generate`: one generation through Python's model adapter (kept in the journal)."""

    completion: Completion
    """What the model answered (the trace's completion record)."""
    provenance: ModelProvenance
    """The loaded model's provenance."""
    timing: GenerationTiming | None
    """Where the time went; null when the call never reached the worker."""


@dataclass(frozen=True)
class SyntheticChosen:
    """`synthetic_select`: the synthetic model sweeps now use (all null: the loaded model)."""

    spec: str | None
    """The spec as `pyapp.records.synthetic_spec` writes it (`NAME` or `NAME:key=value,...`)."""
    provenance: ModelProvenance | None
    """Its provenance (source, backend and evidence `synthetic`)."""
    note: str | None
    """What it is in words (the trace's evidence note for `synthetic`)."""


Stage = Literal["idle", "measured", "frozen", "done"]


@dataclass(frozen=True)
class PauseCause:
    """The interruption that paused a sweep (the last of three in a row)."""

    code: str | None
    """Its failure code (of kind `infrastructure`)."""
    message: str | None
    """That failure in words."""
    trial_id: str
    """The trial it interrupted (attempted again on resume)."""
    in_a_row: int
    """How many infrastructure interruptions came in a row (the pause threshold)."""


@dataclass(frozen=True)
class PlanLeft:
    """Trials not observed yet of one phase and condition (the page's ETA estimates each
    group from its own measured trials: site/eta.js)."""

    phase: Literal["measure", "heldout"]
    """The phase."""
    condition: str
    """The condition."""
    trials: int
    """Trials of that phase and condition not observed yet."""


@dataclass(frozen=True)
class SweepState:
    """`sweep_start`, `sweep_resume`, `sweep_state`: a sweep's state as Python decides it; the
    page draws it as it is."""

    seed: int
    """The sweep's seed."""
    conditions: tuple[str, ...]
    """Its conditions, in order."""
    model_id: str
    """The model it belongs to."""
    evidence: str
    """`model`, `fixture` or `synthetic`."""
    trials: int
    """Trials observed."""
    measure_left: int
    """Profile trials not observed yet."""
    heldout_left: int
    """Held-out trials not observed yet."""
    frozen: tuple[str, ...]
    """Conditions frozen."""
    can_freeze: bool
    """Whether `sweep_freeze` is allowed now."""
    can_run_heldout: bool
    """Whether held-out trials may run now."""
    stage: Stage
    """Where the protocol stands: `idle` (profile trials left), `measured`, `frozen` (every
    model condition), `done` (nothing left); the page shows it as #experiment's data-state."""
    interruptions: int
    """Interrupted trials recorded."""
    paused: PauseCause | None
    """Why the sweep paused (three infrastructure interruptions in a row); null when not
    paused. Another `sweep_run` resumes."""
    unpinned: bool
    """The model is a hub model asked for by a branch, not a commit (shown as UNPINNED)."""
    journal: int
    """Journal entries."""
    run_id: str
    """The run's id."""
    summary: Summary
    """Counts over the trials observed (the page's caption shows them as they are)."""
    left: tuple[PlanLeft, ...] = ()
    """What `measure_left` and `heldout_left` hold, per phase and condition (non-zero
    groups only, in plan order)."""


@dataclass(frozen=True)
class RunEnded:
    """`sweep_run`: how the run ended, and the state after it."""

    state: SweepState
    """The sweep's state now (`state.paused` names the cause of a pause)."""
    cancelled: bool
    """Whether the page's Cancel ended it (a pause is not a cancel)."""
    notice: str | None
    """Why the run made no trial although some were asked for, in words (a held-out run
    once every held-out task was observed under the frozen profile); null otherwise. The
    page shows it as it is."""


@dataclass(frozen=True)
class HeldoutPredictions:
    """What one frozen profile predicts for each held-out task of its condition."""

    condition: str
    """The profile's condition."""
    predictions: tuple[Prediction, ...]
    """One prediction per held-out task (exports/predictions.schema.json's Prediction)."""
    state_aware: tuple[Prediction, ...] = field(default=(), metadata=ADDED)
    """The frozen state-aware predictor's prediction for the same tasks, in the same order."""


@dataclass(frozen=True)
class FreezeDone:
    """`sweep_freeze`: the profiles frozen now and what they predict."""

    frozen: tuple[FrozenProfile, ...]
    """Each profile frozen by this request, with its hash and provenance."""
    predictions: tuple[HeldoutPredictions, ...]
    """What each predicts, before any held-out observation."""
    header_json: str
    """The sweep's header now (it records the freezes), as Python wrote it."""
    state: SweepState
    """The sweep's state now."""
    receipt_json: str | None = field(default=None, metadata=ADDED)
    """The freeze receipt (`pyapp.verify.receipt`) as Python's JSON text, shown and offered
    for download before any held-out trial runs."""


@dataclass(frozen=True)
class HeaderText:
    """`sweep_header`: the sweep's header (the trace without its trials)."""

    header_json: str
    """As Python wrote it (compact JSON text)."""


@dataclass(frozen=True)
class TraceText:
    """`sweep_trace`: the whole trace, assembled now — one text, or (`split`) as the page
    stores it."""

    trace_json: str | None
    """As Python wrote it (indented JSON text, saved as it is); null when split."""
    header_json: str | None
    """Split: the header (the trace without its trials) as Python wrote it; else null."""
    trials_json: tuple[str, ...] | None
    """Split: one text per trial, as Python wrote it; else null."""


@dataclass(frozen=True)
class PredictionsText:
    """`sweep_predictions`: the predictions document of the sweep's trace."""

    predictions_json: str
    """As Python wrote it (indented JSON text, saved as it is)."""


@dataclass(frozen=True)
class JournalKept:
    """`journal_generate`: the journal entry kept (exploration, never scored)."""

    entry: JournalEntry
    """The entry (prompt, caps, completion)."""
    journal: int
    """Journal entries now."""


@dataclass(frozen=True)
class CorrectedField:
    """A recorded trial field that re-derivation contradicts: the page shows the re-derived
    value, with the recorded one beside it."""

    trial_id: str
    """The trial (`model-only/recurrence-1`)."""
    field: str
    """The trial's field (`correct`, `outcome`, ...)."""
    recorded_json: str
    """The recorded value, as JSON text."""
    rederived_json: str
    """The re-derived value, as JSON text."""


@dataclass(frozen=True)
class OpenedTrace:
    """`trace_open`: what `reproduce` and `score` say of a trace opened from disk, and the
    texts the page draws it from."""

    evidence: str
    """The run's label: `fixture`, `control` or `model`."""
    ok: bool
    """Whether everything re-derived exactly."""
    trace_mismatches: tuple[str, ...]
    """Everything in the trace that does not re-derive from its seed and raw trials."""
    predictions_mismatches: tuple[str, ...] | None
    """The opened predictions document against the derived one; null without one."""
    derive_error: str | None
    """Why the predictions could not be derived, when a frozen profile exists."""
    predictions_json: str | None
    """The derived predictions document as Python's JSON text; null when none derives."""
    summary: str
    """One line, as the CLI prints it."""
    header_json: str
    """The trace without its trials, as Python's text."""
    trials_json: tuple[str, ...]
    """Each trial as Python's text, every derivable field as re-derived (never a recorded
    verdict that re-derivation contradicts)."""
    corrections: tuple[CorrectedField, ...] = ()
    """Each recorded trial field that differs from its re-derived value."""
    predictions_other_run: str | None = None
    """One plain line when the opened predictions document is of another run (run ids or
    models differ); its numbers are then not compared one by one."""


@dataclass(frozen=True)
class ReportHtml:
    """`run_report`: a run's report, as `python -m pyapp report` writes it."""

    html: str
    """The report: one HTML document (no script, nothing loaded)."""
    name: str
    """The file name to save it under (`report-<evidence>-<run id>.html`)."""


@dataclass(frozen=True)
class ComparedRuns:
    """`compare_runs`: the table of `python -m pyapp compare` (descriptive, not a ranking)."""

    disclaimer: str
    """What the table does and does not say."""
    problems: tuple[str, ...]
    """Why some runs are not comparable (different seeds, prompts, ...)."""
    names: tuple[str, ...]
    """The runs' names as shown (made unique)."""
    header: tuple[str, ...]
    """The table's column names."""
    rows: tuple[tuple[str, ...], ...]
    """Its rows, as text cells."""
    markdown: str
    """The table as Markdown."""
    csv: str
    """The table as CSV."""
    summary_header: tuple[str, ...] = ()
    """The compact summary's columns (`pyapp.predict.compare.SUMMARY_HEADER`)."""
    summary_rows: tuple[tuple[str, ...], ...] = ()
    """One row per run and condition (both predictors' Brier with intervals and skill, their
    paired difference, cost error), then the difference across runs per condition."""
    summary_note: str = ""
    """What the `across runs (seeds)` rows are (`pyapp.predict.compare.ACROSS_RUNS_DEFINITION`,
    as the matrix and validation reports say it); empty when the summary has none."""


@dataclass(frozen=True)
class ErrorBody:
    """Why a request failed."""

    code: str
    """A stable code (FAILURE_CODES)."""
    message: str
    """One line for a person."""


RESULTS: tuple[type, ...] = (
    Versions,
    TaskSet,
    SuppliedRun,
    SympyLoaded,
    SympyChecked,
    WorkerMemory,
    Generated,
    SyntheticChosen,
    SweepState,
    RunEnded,
    FreezeDone,
    HeaderText,
    TraceText,
    PredictionsText,
    JournalKept,
    CorrectedField,
    OpenedTrace,
    ReportHtml,
    ComparedRuns,
)
"""Every result record (each request names its own as `RESULT`)."""

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
    """What the ledgers (the page's, the sweep CLI's) hold for this model id and revision,
    per condition: held-out task content keys (`TrialDone.heldout_content`), or task ids
    recorded before content keys. Python keeps those that name this sweep's held-out tasks
    (`pyapp.predict.exploratory.previously_seen`): they make the profile exploratory."""
    faults: tuple[str, ...] | None = None
    """Fault-injection hooks the page runs with (`worker_crash@N`, ...; workers/faults.js):
    recorded in the trace's `run.faults`."""


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
    in_flight: str | None = None
    """The trial that was in flight when the page closed (recorded as interrupted)."""
    previously_observed: dict[str, tuple[str, ...]] | None = None
    """What the ledgers (the page's, the sweep CLI's) hold for this model id and revision,
    per condition: held-out task content keys (`TrialDone.heldout_content`), or task ids
    recorded before content keys. Python keeps those that name this sweep's held-out tasks
    (`pyapp.predict.exploratory.previously_seen`): they make the profile exploratory."""


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
class OpenedRun:
    """One finished run to compare: its predictions document as read from disk."""

    name: str
    """What the reader calls it (the file's name)."""
    predictions_json: str
    """The predictions document's text."""


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
    CompareRuns,
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


@dataclass(frozen=True)
class TrialDone(Message):
    """A trial finished: that trial only, as Python's JSON text."""

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
    trial_json: str
    """The Trial record (exports/trace.schema.json) as Python wrote it, one line."""
    heldout_observed: bool
    """Whether it observes a held-out task its condition's profile predicts: a ledger of
    observed held-out tasks records it (`pyapp.experiment.ledger.ledger_task_ids`)."""
    summary: Summary
    """The sweep's counts with this trial (the page's caption shows them as they are)."""
    heldout_content: str | None = field(default=None, metadata=ADDED)
    """When `heldout_observed`: the held-out task's content key (SHA-256 of its registers and
    question, `pyapp.predict.exploratory.content_sha256`), which the page's ledger records
    under the model id, revision and condition; null otherwise."""
    header_json: str | None = field(default=None, metadata=ADDED)
    """The sweep's header when it changed with this trial (a reload's load record joined the
    hash chain before it), as Python wrote it; null otherwise. Stored with the trial, so a
    resumed sweep has every record the trial's chain link names."""


@dataclass(frozen=True)
class TrialInterrupted(Message):
    """The user's Cancel or an infrastructure failure cut a trial short: kept under
    `interruptions`, never scored, attempted again."""

    TYPE: ClassVar[str] = "trial_interrupted"
    trial_id: str
    """The interrupted trial."""
    code: str | None
    """Its failure code (`cancelled`, or one of kind `infrastructure`)."""
    header_json: str
    """The sweep's header now (it records the interruption)."""


@dataclass(frozen=True)
class Frozen(Message):
    """Python froze the profiles inside `sweep_run` (phase `all`)."""

    TYPE: ClassVar[str] = "frozen"
    header_json: str
    """The sweep's header now (it records the freezes)."""
    predictions: tuple[HeldoutPredictions, ...] = ()
    """Per frozen condition, what the profile predicts for each held-out task (as
    `sweep_freeze` answers), so the page shows them before the first held-out result."""
    receipt_json: str | None = field(default=None, metadata=ADDED)
    """The freeze receipt (`pyapp.verify.receipt`) as Python's JSON text: the page renders
    it before the first held-out trial starts; the sweep CLI writes it to receipt.json."""


EVENTS: tuple[type[Message], ...] = (TrialStart, TrialDone, TrialInterrupted, Frozen)
"""Every event Python sends the page during a run."""


# ---- validation and the envelope --------------------------------------------------------------


class RequestError(LabError):
    """A request refused at the boundary: `code` is one of FAILURE_CODES, `message` one line.
    Every handler raises this one class; the reply carries both (a `pyapp.errors.LabError`)."""


def parse_request(data: JSON) -> Request:
    """The request record of a decoded request; refuses an unknown type or a bad field."""
    if not isinstance(data, dict):
        raise RequestError("bad_request", "request must be a JSON object")
    kind = data.get("type")
    if not isinstance(kind, str):
        raise RequestError("bad_request", "request needs a string 'type'")
    record = REQUEST_TYPES.get(kind)
    if record is None:
        raise RequestError("unknown_type", f"unknown request type {kind!r}")
    fields = {k: v for k, v in data.items() if k not in ("type", "id")}
    for f in dataclasses.fields(record):  # type: ignore[arg-type]
        if f.name not in fields and f.default is not dataclasses.MISSING:
            fields[f.name] = to_json(f.default)
    try:
        parsed: Request = from_json(record, fields, f"${kind}")
    except RecordError as error:
        raise RequestError("bad_request", f"{kind}: {error}") from None
    return parsed


EVENT_TYPES: dict[str, type[Message]] = {e.TYPE: e for e in EVENTS}


def parse_event(data: JSON) -> Message:
    """The event record of a decoded event (the sweep CLI checks what the page relays)."""
    if not isinstance(data, dict) or data.get("type") not in EVENT_TYPES:
        raise RequestError("bad_request", f"not an event: {str(data)[:80]}")
    record = EVENT_TYPES[data["type"]]
    fields = {k: v for k, v in data.items() if k != "type"}
    try:
        parsed: Message = from_json(record, fields, f"${record.TYPE}")
    except RecordError as error:
        raise RequestError("bad_request", f"{record.TYPE}: {error}") from None
    return parsed


def request_message(request: Request, request_id: JSON) -> dict[str, JSON]:
    """A request record as sent: `{"type": T, "id": N, ...fields}` (the sweep CLI's)."""
    fields = to_json(request)
    assert isinstance(fields, dict)
    return {"type": request.TYPE, "id": request_id, **fields}


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
    """An event record as sent: `{"type": E, ...fields}`."""
    fields = to_json(message)
    assert isinstance(fields, dict)
    return {"type": message.TYPE, **fields}


def ok(kind: JSON, request_id: JSON, result: object) -> str:
    """The reply to a request that succeeded: `result` is its request's `RESULT` record."""
    return json.dumps({"type": kind, "id": request_id, "ok": True, "result": to_json(result)})


def failed(kind: JSON, request_id: JSON, code: str, message: str) -> str:
    """The reply to a request that was refused (`code`: one of FAILURE_CODES)."""
    error = to_json(ErrorBody(code=code, message=message))
    return json.dumps({"type": kind, "id": request_id, "ok": False, "error": error})


# ---- generated exports ------------------------------------------------------------------------


def _tagged(record: type[Message], schema: dict[str, Any]) -> dict[str, Any]:
    """A record's schema with its tag (and, for requests, an optional `id`) added."""
    entry = dict(schema["$defs"][record.__name__])
    properties = {"type": {"const": record.TYPE}, **entry["properties"]}
    required = ["type"]
    for f in dataclasses.fields(record):  # type: ignore[arg-type]
        if f.default is dataclasses.MISSING:
            required.append(f.name)
    if record in REQUESTS:
        properties = {**properties, "id": {"description": "Repeated by the reply."}}
    return {**entry, "properties": properties, "required": required}


def reply_name(request: type[Request]) -> str:
    """The schema's name for the reply to a request: `sweep_run` → `SweepRunReply`."""
    return "".join(part.title() for part in request.TYPE.split("_")) + "Reply"


def _reply(request: type[Request]) -> dict[str, Any]:
    """The reply envelope of one request, its `result` that request's `RESULT` record."""
    return {
        "description": f"The reply to `{request.TYPE}`.",
        "type": "object",
        "properties": {
            "type": {"const": request.TYPE},
            "id": {"description": "The request's id."},
            "ok": {"const": True},
            "result": {"$ref": f"#/$defs/{request.RESULT.__name__}"},
        },
        "required": ["type", "id", "ok", "result"],
        "additionalProperties": False,
    }


_FAILED_REPLY: dict[str, Any] = {
    "description": "The reply to a refused request (null type and id: not even those read).",
    "type": "object",
    "properties": {
        "type": {"type": ["string", "null"]},
        "id": {"description": "The request's id."},
        "ok": {"const": False},
        "error": {"$ref": "#/$defs/ErrorBody"},
    },
    "required": ["type", "id", "ok", "error"],
    "additionalProperties": False,
}


def _merge(defs: dict[str, Any], more: dict[str, Any]) -> None:
    """Add schema definitions; two different records of one name would silently clash."""
    for name, entry in more.items():
        if name in defs and defs[name] != entry:
            raise ValueError(f"two different records are named {name}")
        defs[name] = entry


def messages_schema() -> dict[str, JSON]:
    """exports/messages.schema.json: every request, every reply (each with its result record)
    and every event."""
    defs: dict[str, Any] = {}
    tagged: dict[str, Any] = {}
    for record in (*REQUESTS, *EVENTS):
        schema = json_schema(record, schema_id=SCHEMA_ID, title=record.__name__)
        _merge(defs, {k: v for k, v in schema["$defs"].items() if k != record.__name__})
        tagged[record.__name__] = _tagged(record, schema)
    for record_type in (*RESULTS, ErrorBody):
        _merge(defs, json_schema(record_type, schema_id=SCHEMA_ID, title="")["$defs"])
    _merge(defs, tagged)
    _merge(defs, {reply_name(r): _reply(r) for r in REQUESTS})
    _merge(defs, {"FailedReply": _FAILED_REPLY})
    replies = [{"$ref": f"#/$defs/{reply_name(r)}"} for r in REQUESTS]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "Composition Lab messages (page ⇄ Python worker)",
        "oneOf": [
            {"$ref": "#/$defs/Request"},
            {"$ref": "#/$defs/Reply"},
            {"$ref": "#/$defs/Event"},
        ],
        "$defs": {
            **dict(sorted(defs.items())),
            "Request": {"oneOf": [{"$ref": f"#/$defs/{r.__name__}"} for r in REQUESTS]},
            "Reply": {"oneOf": [*replies, {"$ref": "#/$defs/FailedReply"}]},
            "Event": {"oneOf": [{"$ref": f"#/$defs/{e.__name__}"} for e in EVENTS]},
            "FailureCode": {"enum": list(FAILURE_CODES)},
        },
    }


def constants() -> dict[str, JSON]:
    """The names and constants the page shares with Python (site/lab_protocol.js)."""

    return {
        "REQUEST_TYPES": [r.TYPE for r in REQUESTS],
        "EVENT_TYPES": [e.TYPE for e in EVENTS],
        "ALL_CONDITIONS": list(ALL_CONDITIONS),
        "MODEL_CONDITIONS": list(MODEL_CONDITIONS),
        "CONTROL_CONDITION": "supplied-program",
        "OPS": list(PRIMITIVE_OPS),
        "WHOLE_TASK_CAPS": to_json(WHOLE_TASK_CAPS),
        "CHAIN_CALL_CAPS": to_json(CHAIN_CALL_CAPS),
        "DEFAULT_SEED": DEFAULT_SEED,
        "GENERATOR_VERSION": GENERATOR_VERSION,
        "FIXTURE_LABEL": FIXTURE_LABEL,
        "CONTROL_LABEL": CONTROL_LABEL,
        "REQUEST_TIMEOUT_MS": REQUEST_TIMEOUT_MS,
        "EVIDENCE_LABELS": dict(EVIDENCE_LABELS),
        "EVIDENCE_MEANINGS": dict(EVIDENCE_MEANINGS),
        "SYNTHETIC_MODELS": structure_notes(),
        "FAILURE_CODES": dict(FAILURE_CODES),
        "PRESETS": {name: dict(overrides) for name, overrides in PRESETS.items()},
    }


def markdown_tables() -> str:
    """The message tables the docs show (docs/hosting.md), generated from the records."""

    def fields(record: type) -> str:
        names = [
            f.name + ("" if f.default is dataclasses.MISSING else "?")
            for f in dataclasses.fields(record)
        ]
        return ", ".join(names) or "—"

    lines = [
        "| request `type` | fields (`?`: optional) | reply `result` | what it does |",
        "|---|---|---|---|",
    ]
    for r in REQUESTS:
        result = f"`{r.RESULT.__name__}`: {fields(r.RESULT)}"
        doc = " ".join((r.__doc__ or "").split())
        lines.append(f"| `{r.TYPE}` | {fields(r)} | {result} | {doc} |")
    lines += ["", "| event `type` | fields | when |", "|---|---|---|"]
    for e in EVENTS:
        lines.append(f"| `{e.TYPE}` | {fields(e)} | {' '.join((e.__doc__ or '').split())} |")
    lines += ["", "| error `code` | meaning |", "|---|---|"]
    lines += [f"| `{code}` | {meaning} |" for code, meaning in FAILURE_CODES.items()]
    return "\n".join(lines) + "\n"


def js_module() -> str:
    """site/lab_protocol.js: the constants as frozen JavaScript exports."""
    lines = [
        "// GENERATED by `python -m pyapp schema` from pyapp/browser/messages.py: do not edit.",
        "// The message names and shared constants of the page ⇄ Python protocol;",
        "// exports/messages.schema.json describes every message. A test fails on drift.",
        "",
    ]
    for name, value in constants().items():
        text = json.dumps(value, ensure_ascii=False)
        frozen = f"Object.freeze({text})" if isinstance(value, (dict, list)) else text
        lines.append(f"export const {name} = {frozen};")
    return "\n".join(lines) + "\n"
