"""The result records of the page ⇄ Python messages: what a reply's `result` holds.

One frozen record per request (each request record of `pyapp.protocol.messages` names its own
as `RESULT`), the records they are made of (`SweepState`, `PauseCause`, `PlanLeft`,
`HeldoutPredictions`, `CorrectedField`, ...), `ErrorBody` (a refused reply's `error`) and
`ADDED`, the metadata of a field added to a message after it was first written. Every field
has a docstring: `python -m pyapp schema` writes them into `exports/messages.schema.json`
(`pyapp.protocol.exports`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pyapp.predict import FrozenProfile, Prediction
from pyapp.records import Completion, JournalEntry, ModelProvenance, Summary, TaskRecord, Trace

ADDED = {"optional_on_read": True}
"""A field added to a message after it was first written: a sender that does not know it
may leave it out (it reads as its default)."""

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
    calls: int | None = field(default=None, metadata=ADDED)
    """The model calls those trials will make (a chain: its route's calls, none for an
    unsupported route; one per whole-task model trial; none for the control): what the ETA
    scales a measured per-call time by."""
    answer: Literal["integer", "program", "none"] | None = field(default=None, metadata=ADDED)
    """What the condition's model writes (`none`: the control makes no call): the ETA's kin
    for a group not timed yet."""
    work: int | None = field(default=None, metadata=ADDED)
    """The answer tokens those trials' model calls are to write, known before they run (the
    exact answers' characters: a model-only answer, a chain's every planned step; none where
    the length is not known in advance, a program, or no call is made; null for held-out
    groups: a held-out answer's length stays out of the page until it is observed): the ETA
    moves a group's estimate by its measured time per answer token
    (`TrialStart.answer_tokens`)."""


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
    chain_protocol: str = "chain-design/1"
    """The controlled chain's protocol version the sweep runs under (`chain-design/1` or
    `chain-extended/1`); the page's step 2 shows it."""
    sealed: bool = False
    """Whether the sweep is sealed (held-out tasks drawn after the freeze from the seed the
    freezes seal); the page's step 2 shows it."""
    draw_seed: str | None = None
    """A sealed sweep's held-out draw seed, once drawn; null otherwise."""
    awaiting_study_seal: str | None = field(default=None, metadata=ADDED)
    """A sealed sweep stopped at its freeze until the study's seal of its task seed is made:
    its own seal (`pyapp.predict.sealing.heldout_draw_seed`), which that seal must list;
    null otherwise."""


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
class VerdictRow:
    """One condition's verdict in words: each predictor against climatology."""

    condition: str
    """The condition."""
    product: str
    """The product predictor: `beats climatology`, `fails against climatology` or `cannot
    say`."""
    product_reason: str | None
    """Why it cannot say; null otherwise."""
    state_aware: str | None
    """The state-aware predictor's verdict; null where the document has none."""
    state_aware_reason: str | None
    """Why it cannot say; null otherwise."""


@dataclass(frozen=True)
class RunVerdict:
    """What step 4 leads with: the run's verdict in words and one picture
    (`pyapp.browser.verdict.run_verdict`; the flags and words are
    `pyapp.predict.flags`')."""

    headline: str
    """The first line a reader sees: a degenerate run says so here."""
    flags: tuple[str, ...]
    """Every degenerate-score flag, in words."""
    rows: tuple[VerdictRow, ...]
    """Per condition, each predictor's verdict."""
    sentences: tuple[str, ...]
    """The answer in full sentences, its label first."""
    skill_svg: str
    """Per condition, each predictor against its frozen reference and against climatology
    (`pyapp.report.skill_plot`)."""


@dataclass(frozen=True)
class RunPlots:
    """A run's two plots as SVG text, drawn by `pyapp.report.plots` (the report's own
    drawing; the page inserts this text as it is, only from its own worker's reply)."""

    calibration_svg: str
    """Both predictors' predicted probability against observed rate per non-empty
    calibration cell."""
    cost_svg: str
    """Predicted against observed cost per held-out task."""
    flags: tuple[str, ...] = ()
    """What the run's scores may not be read as, first line first (`pyapp.predict.flags`:
    a run whose held-out outcomes are all 0 says so in the first); drawn above the scores."""
    answers: tuple[str, ...] = ()
    """The run's descriptive answer per condition and predictor (`pyapp.predict.flags`
    templates: beats climatology, fails, cannot say), its label first."""
    verdict: RunVerdict | None = field(default=None, metadata=ADDED)
    """The run's verdict in words and its skill picture; null where none can be said."""


@dataclass(frozen=True)
class PredictionsText:
    """`sweep_predictions`: the predictions document of the sweep's trace."""

    predictions_json: str
    """As Python wrote it (indented JSON text, saved as it is)."""
    plots: RunPlots | None = None
    """Its plots; null while no condition has held-out observations."""


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
    """Whether everything re-derived exactly and the run is complete."""
    trace_mismatches: tuple[str, ...]
    """Everything in the trace that does not re-derive from its seed and raw trials (and,
    for a synthetic trace, each completion its re-execution does not give again): the
    mismatches `reproduce` prints, named by trial."""
    predictions_mismatches: tuple[str, ...] | None
    """The opened predictions document against the derived one; null without one."""
    derive_error: str | None
    """Why the predictions could not be derived, when a frozen profile exists."""
    predictions_json: str | None
    """The derived predictions document as Python's JSON text; null when none derives."""
    summary: str
    """The verdict lines `reproduce` prints, joined by `; ` (`pyapp.audit.verdict`)."""
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
    plots: RunPlots | None = None
    """The derived predictions' plots, as the report draws them; null while no condition has
    held-out observations."""
    incomplete: tuple[str, ...] = ()
    """How the run is not complete, one line each (held-out tasks of a frozen profile with
    no trial, a model condition never frozen, how it ended): `reproduce`'s INCOMPLETE lines;
    empty when it is complete."""


@dataclass(frozen=True)
class ReportHtml:
    """`run_report`: a run's report, as `python -m pyapp report` writes it."""

    html: str
    """The report: one HTML document (no script, nothing loaded)."""
    name: str
    """The file name to save it under (`report-<evidence>-<run id>.html`)."""


@dataclass(frozen=True)
class StudyConditionView:
    """One condition of a study group in the Study view."""

    verdict: VerdictRow
    """Each predictor's verdict against climatology, as the study's answers say it."""
    scope: str | None
    """The slice the answer comes from (pooled over a ladder, or one preset); null when the
    study gives no answer for it."""
    reliability_svg: str | None
    """Both predictors' reliability diagram of that slice (`pyapp.report.plots`); null
    without the slice."""


@dataclass(frozen=True)
class StudyGroupView:
    """A group of pooled cells in the Study view."""

    title: str
    """The group in words (model, backend, task sets, seeds, conditions, evidence)."""
    evidence: str
    """The cells' evidence label."""
    answers: tuple[str, ...]
    """Each condition's and predictor's answer in a sentence."""
    differences: tuple[str, ...]
    """Per condition, which predictor's Brier score is lower (as far as the interval says)."""
    flags: tuple[str, ...]
    """Every slice's degenerate-score flags."""
    conditions: tuple[StudyConditionView, ...]
    """Per condition: the verdicts and the reliability diagram."""


@dataclass(frozen=True)
class StudyOpened:
    """`study_open`: a study.json (`python -m pyapp study`'s) as the Study view draws it,
    the answer first (`pyapp.browser.study_view.open_study`)."""

    name: str | None
    """The plan's name."""
    answer: tuple[str, ...]
    """The study's plain-language answer, first line first."""
    flags: tuple[str, ...]
    """Degenerate scores and incomplete data, in words."""
    cells_done: int
    """Cells of the plan that are done."""
    cells_planned: int
    """Cells of the plan."""
    groups: tuple[StudyGroupView, ...]
    """The groups of pooled cells."""
    receipt: str | None = field(default=None, metadata=ADDED)
    """The study receipt its hypotheses were frozen in, in words (study/2); null without."""
    hypotheses: tuple[str, ...] = field(default=(), metadata=ADDED)
    """Each hypothesis and its verdict in a line, preregistered first (study/2): what the
    view shows before the descriptive answer."""


@dataclass(frozen=True)
class RemadeReceipt:
    """`receipt_remake`: the freeze receipt of a stored run, made again from its trace (the
    receipt made at the freeze was not kept)."""

    receipt_json: str
    """The receipt (`pyapp.verify.receipt.make_receipt` of the trace), as Python wrote it."""
    after_heldout: bool
    """Made after held-out trials were observed: its chain head is the trace's last record,
    not the freeze's, so it proves nothing about what was fixed before the held-out results."""
    name: str
    """The file name to save it under: `receipt-<evidence>-<run id>.json`, or
    `receipt-remade-after-heldout-<evidence>-<run id>.json`."""


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
    plots: tuple[RunPlots, ...] = ()
    """Each run's plots, in the runs' order, every run on the same axes."""
    flags: tuple[str, ...] = ()
    """Each run's degenerate-score flags, named by run (`pyapp.predict.compare.flags`),
    shown before everything else."""
    refusal: str | None = field(default=None, metadata=ADDED)
    """What `python -m pyapp compare` says when it refuses these runs (their task sets
    differ; `pyapp.predict.compare.refusal`), shown first; null when it does not refuse."""
    lines: tuple[str, ...] = field(default=(), metadata=ADDED)
    """The lines `compare --describe-anyway` prints before its tables
    (`pyapp.predict.compare.lead_lines`: what the comparison is, the flags, the
    disclaimer, the warnings, why nothing is pooled), shown after the refusal."""


@dataclass(frozen=True)
class ErrorBody:
    """Why a request failed."""

    code: str
    """A stable code (FAILURE_CODES)."""
    message: str
    """One line for a person."""


# ---- what the page answers itself (site/entry.js): its state, the Models panel ------------

AppState = Literal["booting", "ready", "running", "done", "error"]
ModelsPanelState = Literal["idle", "loading", "loaded", "failed", "unloaded", "generating"]
ExperimentState = Literal[
    "idle", "running", "measured", "frozen", "done", "cancelled", "paused", "error", "viewing"
]


@dataclass(frozen=True)
class ModelsState:
    """The Models panel as a person sees it (`page_state`)."""

    state: ModelsPanelState
    """`#models`' state: idle, loading, loaded, failed, unloaded or generating."""
    catalogue_ready: bool
    """The catalogue fills the model choice."""
    backend_checked: bool
    """The WebGPU check has answered (`backend_status` says what it found)."""
    backend_status: str
    """The backend line the panel shows."""
    choice: str
    """The catalogue key chosen (`other`: a typed model id; `synthetic:NAME`); empty before
    the catalogue."""
    backend: Literal["webgpu", "wasm"] | None
    """The backend chosen; null where none is (the page preselects none without WebGPU)."""
    dtypes: tuple[str, ...]
    """The dtypes the panel offers for the chosen model and backend."""
    dtype: str | None
    """The dtype chosen; null when none is offered."""
    consent_open: bool
    """The consent dialog is open (its "Download and load" is the consent: a click)."""
    consent_details: str
    """What the consent dialog said last (`term: value` lines); empty when none was shown."""
    status: str
    """The panel's status line (`#model-status`): how a load went, or why it failed."""
    provenance: ModelProvenance
    """The loaded model's provenance, as the panel's "Download load diagnostics JSON" gives
    it (model id `none` before any load; `loads` lists every load of the session)."""
    synthetic: str | None
    """The synthetic model's spec in use (`NAME:key=value,...`); null when none is."""


@dataclass(frozen=True)
class BootTimings:
    """When the page got there, in ms since navigation started (bench/boot.py)."""

    python_ready_ms: float | None
    """Python answered its first request; null before."""
    first_table_ms: float | None
    """The first task table was drawn; null before."""


@dataclass(frozen=True)
class PageState:
    """`page_state`: where the page stands, read by the page itself (no Python involved)."""

    app: AppState
    """`#app`'s state: booting until Python is up (ready), running while the page works,
    done after a control run, error when the boot failed."""
    status: str
    """The page's status line (`#status`): why the boot failed, on error."""
    models: ModelsState
    """The Models panel."""
    experiment: ExperimentState
    """The Experiment section's state (`#experiment`)."""
    sweep_running: bool
    """A sweep request is being answered (start, resume, run, freeze)."""
    trials: int
    """Trials the page holds of the sweep it shows."""
    timings: BootTimings
    """When the boot's steps ended."""


@dataclass(frozen=True)
class ModelChosen:
    """`model_choose`: what pressing "Load model…" did."""

    outcome: Literal["consent", "reload", "synthetic", "refused", "not_offered"]
    """The consent dialog opened (consent: click "Download and load"), a model consented to
    in this session is reloading, a synthetic model is used (no download, no consent), the
    panel refused before any download (`models.status` says why), or the panel offers no
    such model, backend or dtype and nothing was pressed (`why`)."""
    why: str | None
    """`not_offered`: what the panel lacks and what it offers; null otherwise."""
    models: ModelsState
    """The Models panel right after."""


@dataclass(frozen=True)
class StopAsked:
    """`sweep_stop`: the sweep stops right after the trial in flight (the ask lasts until a
    `sweep_run` has ended, so a run that starts after it stops after its first trial)."""

    running: bool
    """A sweep request was being answered when the stop was asked."""


@dataclass(frozen=True)
class DirectGenerated:
    """`model_direct`: one generation in the model worker, Python not involved."""

    completion: Completion | None
    """What the model answered; null when the call failed (`error`)."""
    worker_ms: float | None
    """The model worker's own time; null when it did not answer."""
    client_ms: float
    """The page's time for the whole call (the worker's included)."""
    error: ErrorBody | None
    """Why it failed (the model channel's code and message); null when it did not."""


@dataclass(frozen=True)
class StoredSweep:
    """A sweep as IndexedDB holds it (site/store.js): its status record and its texts as
    Python wrote them, from which Python assembles the trace
    (`pyapp.records.stored.stored_trace`; the page assembles none)."""

    run_id: str
    """The sweep's run id (the store's key)."""
    in_flight: str | None
    """The trial whose `trial_start` was stored without its `trial_done`; null when none."""
    phase: str | None
    """The phase that was running; null once a run returned."""
    finished: bool
    """The sweep ended (every phase run)."""
    updated_at: str | None
    """When its status was last written (ISO 8601, UTC)."""
    summary: Summary | None
    """Python's last counts over its trials, kept with the status; null when none were."""
    header_json: str
    """The stored header (the trace without its trials)."""
    changes_json: tuple[str, ...]
    """The records that joined the header since it was stored, one `HeaderChange` text
    per event that brought any, in order."""
    trials_json: tuple[str, ...]
    """One text per stored trial, in order."""


@dataclass(frozen=True)
class LedgerEntry:
    """The held-out tasks this browser observed for one model, revision and condition."""

    key: str
    """`MODEL_ID@REVISION|REVISION_SERVED|CONDITION` (the commit empty when unknown)."""
    model_id: str
    revision: str
    condition: str
    task_ids: tuple[str, ...]
    """The held-out tasks (as Python named them in `trial_done.heldout_content`), sorted."""
    revision_served: str | None = field(default=None, metadata=ADDED)
    """The commit the hub served for `revision` when the sweep recorded it; null when
    unknown or recorded before it was kept (a branch and its commit are then one model for
    the exploratory rule: `pyapp.predict.exploratory.same_model`)."""


@dataclass(frozen=True)
class PageStored:
    """`page_stored`: what this browser's IndexedDB holds, read by the page (no Python)."""

    sweep: StoredSweep | None
    """The current sweep as stored (else the latest stored one); null when none is."""
    ledger: tuple[LedgerEntry, ...]
    """The ledger, one entry per model, revision and condition."""


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
    RunPlots,
    PredictionsText,
    JournalKept,
    CorrectedField,
    OpenedTrace,
    ReportHtml,
    RemadeReceipt,
    StudyOpened,
    ComparedRuns,
    PageState,
    ModelChosen,
    StopAsked,
    DirectGenerated,
    PageStored,
)
"""Every result record (each request names its own as `RESULT`)."""
