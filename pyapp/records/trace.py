"""Trace records: every raw observation of a run, as frozen dataclasses.

`schema_version` comes first in the document; each record is a frozen dataclass whose
fields carry a docstring; `exports/trace.schema.json` is generated from these classes
(`python -m pyapp schema`) and a test fails when the committed file drifts.

This module holds the document around the trials: the run, the environment, freezes,
interruptions, the journal, the summary and the `Trace` itself, building one
(`make_trace`, `with_trials`) and reading one (`read_trace`, `loads`). A trial and its
parts, with the one trial builder `new_trial`, are `pyapp.records.trial`; the schema
versions and the upgrade of older documents are `pyapp.records.trace_versions`. Both are
re-exported here under their old names.
"""

from __future__ import annotations

import json
import platform
import sys
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Literal

from pyapp import __version__
from pyapp.errors import RecordError
from pyapp.records.base import JSON, from_json, json_schema
from pyapp.records.clock import ClockInfo, measure_clock
from pyapp.records.frozen import StateAwareModel, TaskSetIdentity
from pyapp.records.model import (
    Caps,
    Completion,
    GenerationSettings,
    HardStop,
    ModelProvenance,
    generation_of,
    revision_note,
)
from pyapp.records.prompts import template_hashes
from pyapp.records.terms import DEFAULT_CHAIN_PROTOCOL, RunTerms, terms_for
from pyapp.records.trace_versions import (
    ADDED_IN_TRACE_3,
    ADDED_IN_TRACE_4,
    upgrade,
    version_problem,
)
from pyapp.records.trace_versions import CHAINED_VERSIONS as CHAINED_VERSIONS
from pyapp.records.trace_versions import LEGACY_SCHEMA_VERSIONS as LEGACY_SCHEMA_VERSIONS
from pyapp.records.trace_versions import SCHEMA_VERSION as SCHEMA_VERSION
from pyapp.records.trace_versions import TRACE_2_FIELDS as TRACE_2_FIELDS
from pyapp.records.trial import EVIDENCE_NOTES as EVIDENCE_NOTES
from pyapp.records.trial import ChainCall as ChainCall
from pyapp.records.trial import ChainRoute as ChainRoute
from pyapp.records.trial import Condition, TaskRecord, Trial
from pyapp.records.trial import Evidence as Evidence
from pyapp.records.trial import Failure as Failure
from pyapp.records.trial import InterpreterBudget as InterpreterBudget
from pyapp.records.trial import Outcome as Outcome
from pyapp.records.trial import Stage as Stage
from pyapp.records.trial import StepRecord as StepRecord
from pyapp.records.trial import Timings as Timings
from pyapp.records.trial import budget_of as budget_of
from pyapp.records.trial import new_trial as new_trial
from pyapp.records.trial import outcome_of as outcome_of
from pyapp.records.trial import utc_now as utc_now
from pyapp.tasks import GENERATOR_VERSION, SEALED_GENERATOR_VERSION, Task, TaskParams

__all__ = [  # what other modules import from here (some of it re-exported)
    "ADDED_IN_TRACE_3",
    "ADDED_IN_TRACE_4",
    "CHAINED_VERSIONS",
    "COMPILER_LIMIT",
    "EVIDENCE_NOTES",
    "LEGACY_SCHEMA_VERSIONS",
    "NO_TRIALS",
    "SCHEMA_ID",
    "SCHEMA_VERSION",
    "TRACE_2_FIELDS",
    "VOLATILE_RUN_KEYS",
    "VOLATILE_TRIAL_KEYS",
    "BrowserInfo",
    "ChainCall",
    "ChainRoute",
    "Condition",
    "DrawCheck",
    "Environment",
    "Evidence",
    "Failure",
    "FreezeRecord",
    "HeldoutDraw",
    "InterpreterBudget",
    "Interruption",
    "JournalEntry",
    "Outcome",
    "RunInfo",
    "RunTerms",
    "Stage",
    "StepRecord",
    "Summary",
    "TaskRecord",
    "Timings",
    "Trace",
    "Trial",
    "budget_of",
    "counted",
    "environment",
    "loads",
    "make_trace",
    "new_run_info",
    "new_trial",
    "outcome_of",
    "python_description",
    "read_trace",
    "strip_volatile",
    "summarise",
    "trace_schema",
    "upgrade",
    "utc_now",
    "version_problem",
    "with_trials",
]

SCHEMA_ID = "https://composition-lab.invalid/exports/trace.schema.json"


@dataclass(frozen=True)
class BrowserInfo:
    """What the page reports about the browser it runs in."""

    user_agent: str
    """`navigator.userAgent`."""
    cross_origin_isolated: bool
    """`self.crossOriginIsolated`: SharedArrayBuffer and threads available."""
    hardware_concurrency: int | None
    """`navigator.hardwareConcurrency`."""


@dataclass(frozen=True)
class Environment:
    """Where the run executed."""

    runtime: Literal["cpython", "pyodide"]
    """Native CPython or Pyodide in a browser worker."""
    python: str
    """`sys.version` of the Python that ran the harness."""
    platform: str
    """`platform.platform()` (`emscripten` in the browser)."""
    pyapp_version: str
    """Version of the Composition Lab Python package."""
    clock: ClockInfo
    """The clock behind every timing."""
    browser: BrowserInfo | None
    """The browser, when run in the page; null natively."""


@dataclass(frozen=True)
class RunInfo:
    """What was run: seed, task parameters, conditions, prompt versions."""

    run_id: str
    """Random identifier of this run."""
    created_at: str
    """UTC time the run started, ISO 8601."""
    seed: int
    """The seed (also inside `task_params`)."""
    task_params: TaskParams
    """Counts and operand ranges that, with the seed, regenerate the tasks."""
    generator_version: str
    """Task generator version."""
    conditions: tuple[Condition, ...]
    """The conditions this run measured."""
    prompt_templates: dict[str, str]
    """Prompt template id → SHA-256 of the template file."""
    generation: GenerationSettings | None
    """How every generation decodes (greedy, stop tokens, chat template); null only in
    traces upgraded from trace/1."""
    faults: tuple[str, ...]
    """Fault-injection hooks the page ran with (`worker_crash@N`, ...); empty for a normal
    run. A run with faults injected is a test of the instrument."""
    terms: RunTerms | None
    """The terms the run was measured under that trace/4 added (`pyapp.records.terms`: the
    chain protocol, and any term added to trace/4 later); null only in documents older
    than trace/4, which were measured under the design's chain protocol."""


@dataclass(frozen=True)
class FreezeRecord:
    """The moment a profile was frozen: everything needed to recompute it from the trials."""

    condition: Condition
    """The condition whose profile was frozen."""
    sequence: int
    """Position in the run's timeline (shared with trials and interruptions)."""
    after_trials: int
    """How many of `trials` preceded the freeze; the profile is computed from those."""
    frozen_at: str
    """UTC time of freezing, ISO 8601."""
    previously_observed: tuple[str, ...]
    """Held-out task ids the browser's ledger had seen observed for this model and
    condition in earlier sessions (these make the profile exploratory)."""
    profile_sha256: str
    """SHA-256 of the frozen profile (see `pyapp.predict.predictor.freeze_profile`)."""
    prev_sha256: str | None = field(default=None, metadata=ADDED_IN_TRACE_3)
    """The chain head at the moment of freezing: SHA-256 of the canonical record before this
    one (the profile hash covers it too); null only in documents older than trace/3."""
    task_set: TaskSetIdentity | None = field(default=None, metadata=ADDED_IN_TRACE_3)
    """The task set frozen with the profile (seed, canonical parameters, generator
    version); null only in documents older than trace/3."""
    state_aware: StateAwareModel | None = field(default=None, metadata=ADDED_IN_TRACE_3)
    """The state-aware predictor's fit as frozen (coefficients, prior, clamp ranges,
    version): `score` uses it, `reproduce` re-fits and compares; null only in documents
    older than trace/3."""
    reference_probability: float | None = field(default=None, metadata=ADDED_IN_TRACE_3)
    """The reference forecast of every Brier skill score: the frozen profile's pooled success
    rate (its ops' successes / trials, `pyapp.predict.skill.pooled_rate`), one probability
    for every held-out task. `score` uses it, `reproduce` re-derives it from the trials
    before the freeze and names a difference; the profile hash and the receipt cover it.
    Null in documents written before it was frozen (then derived from the profile) and when
    the profile has no trials."""
    terms: RunTerms | None = field(default=None, metadata=ADDED_IN_TRACE_4)
    """The run's terms as frozen (the chain protocol decides which held-out tasks the
    profile predicts; the chain and the profile hash cover it); null only in documents
    older than trace/4."""


@dataclass(frozen=True)
class DrawCheck:
    """The checks of one frozen condition that need the held-out tasks' contents, made
    after a sealed run's draw (before it the tasks did not exist)."""

    condition: Condition
    """The frozen condition."""
    previously_observed: tuple[str, ...]
    """Drawn held-out task ids the ledger (`--ledger`, a plan's `options.ledger`, the
    page's IndexedDB) records as observed with this model and condition in earlier runs,
    matched by content."""
    exploratory_reason: str | None
    """Why the drawn tasks make this profile's predictions exploratory (observed in an
    earlier session; shown in a journal prompt before the draw); null when none does."""


@dataclass(frozen=True)
class SealMember:
    """One run a study-level seal combines: its cell and its own held-out draw seed (the
    seed its freezes alone would seal: `pyapp.predict.sealing.heldout_draw_seed`)."""

    cell: str
    """The matrix cell the run is (`pyapp.matrix.cells.Cell.name`)."""
    seal: str
    """That run's own held-out draw seed (SHA-256, hex)."""


@dataclass(frozen=True)
class StudySeal:
    """A study-level seal: one held-out draw seed shared by every run of one task seed in a
    study (a comparison's subjects draw the same held-out tasks), made once all their
    profiles are frozen (`pyapp.predict.sealing.study_draw_seed`)."""

    derivation: str
    """Version of `study_draw_seed` (`study-draw/1`)."""
    members: tuple[SealMember, ...]
    """Every run it combines, ordered by cell (this run among them)."""


@dataclass(frozen=True)
class HeldoutDraw:
    """A sealed run's draw of its held-out tasks: made once every profile of the run is
    frozen, from the held-out draw seed those freezes seal (`pyapp.predict.sealing`)."""

    sequence: int
    """Position in the run's timeline (after every freeze)."""
    prev_sha256: str
    """The chain head at the draw: SHA-256 of the canonical record before it."""
    draw_seed: str
    """The held-out draw seed (SHA-256, hex) derived from the task seed, the model
    identity and every frozen profile; `reproduce` derives it again."""
    generator_version: str
    """The generator of the drawn held-out tasks (`tasks/2`)."""
    drawn_at: str
    """UTC time of the draw, ISO 8601."""
    checks: tuple[DrawCheck, ...]
    """Per frozen condition, in freeze order: the checks that needed the drawn tasks."""
    study_seal: StudySeal | None = field(default=None, metadata=ADDED_IN_TRACE_4)
    """A run under a study-level seal: the seal its draw seed comes from (then the draw
    seed is the study's, made from every member's own seal); null: the run's own seal."""


@dataclass(frozen=True)
class Interruption:
    """A trial that did not finish as an observation: the page closed or crashed while it was
    in flight, the user cancelled it mid-generation, or the infrastructure failed under it.
    It is attempted again, so neither a Cancel nor a broken worker is ever scored as the
    model's failure; what it produced is kept."""

    trial_id: str
    """The trial that was interrupted (re-attempted on resume)."""
    sequence: int
    """Position in the run's timeline (shared with trials and freezes)."""
    at: str
    """When the interruption was recorded, UTC ISO 8601."""
    reason: Literal["page-closed", "cancelled", "infrastructure"]
    """`page-closed`: noticed on resume (nothing of it survived); `cancelled`: the user's
    Cancel cut its generation short; `infrastructure`: the machinery failed (a failure code
    of kind `infrastructure`: worker error, failed reload, busy, bad reply, ...)."""
    code: str | None
    """The failure code that made it an interruption; null for `page-closed`."""
    message: str | None
    """That failure in words; null for `page-closed`."""
    partial: Trial | None
    """What the interrupted attempt produced (raw, never scored); null when nothing survived."""
    prev_sha256: str | None = field(default=None, metadata=ADDED_IN_TRACE_3)
    """The hash chain: SHA-256 of the canonical record before this one; null only in
    documents older than trace/3."""
    hard_stop: HardStop | None = field(default=None, metadata=ADDED_IN_TRACE_3)
    """For code `stalled`: the client's judgement of the hard stop that ended the attempt —
    the stall window, how it was derived (the load's warm-up step time, factor, floor) and
    the time since the worker's last token (the same record as the partial's completion);
    null otherwise."""


@dataclass(frozen=True)
class JournalEntry:
    """Free exploration with the loaded model: kept, but never in a profile, prediction or
    score."""

    at: str
    """When the prompt was sent, UTC ISO 8601."""
    prompt: str
    """The free prompt, as typed."""
    caps: Caps
    """Budgets of the generation."""
    completion: Completion
    """What the model answered."""
    sequence: int | None = field(default=None, metadata=ADDED_IN_TRACE_3)
    """Position in the run's timeline (shared with trials, freezes, interruptions and loads);
    null only in documents older than trace/3."""
    prev_sha256: str | None = field(default=None, metadata=ADDED_IN_TRACE_3)
    """The hash chain: SHA-256 of the canonical record before this one; null only in
    documents older than trace/3."""


@dataclass(frozen=True)
class Summary:
    """Counts over the trials, re-derivable from them."""

    trials: int
    """Attempted trials."""
    correct: int
    """Trials whose result equals the expected answer."""
    incorrect: int
    """Trials with a result that is wrong."""
    failed: int
    """Trials that produced no result (a typed failure)."""
    model_evidence_trials: int
    """Trials labelled `model` (the only ones that are model evidence)."""


@dataclass(frozen=True)
class Trace:
    """A Composition Lab trace: the raw observations of one run."""

    schema_version: Literal["trace/4"]
    """Version of this schema."""
    kind: Literal["composition-lab-trace"]
    """Document kind."""
    run: RunInfo
    """What was run."""
    environment: Environment
    """Where it ran."""
    model: ModelProvenance | None
    """Model provenance; null when no model was loaded (e.g. the supplied-program control)."""
    revision_note: str | None
    """The model's revision in words: `pinned: <commit>`, or `UNPINNED: …` for a hub model
    asked for by a branch (with the commit served, or why it is unknown); null without a
    model, or in traces upgraded from trace/1."""
    tasks: tuple[TaskRecord, ...]
    """The full task set generated from the seed."""
    trials: tuple[Trial, ...]
    """Every attempted trial."""
    freezes: tuple[FreezeRecord, ...]
    """Profiles frozen during the run, in order (empty when none was frozen)."""
    interruptions: tuple[Interruption, ...]
    """Attempts that were not observations (page closed, Cancel, infrastructure failure),
    each attempted again."""
    journal: tuple[JournalEntry, ...]
    """Manual exploration: never part of a profile, a prediction or a score."""
    summary: Summary
    """Counts over the trials."""
    draw: HeldoutDraw | None = field(default=None, metadata=ADDED_IN_TRACE_4)
    """A sealed run's held-out draw (its tasks then follow from it); null for an unsealed
    run, and for a sealed one until every profile is frozen."""


NO_TRIALS = Summary(trials=0, correct=0, incorrect=0, failed=0, model_evidence_trials=0)


def counted(summary: Summary, trial: Trial) -> Summary:
    """The counts with one more trial (a sweep keeps them as its trials arrive)."""
    correct = summary.correct + (1 if trial.correct else 0)
    failed = summary.failed + (1 if trial.failure is not None else 0)
    return Summary(
        trials=summary.trials + 1,
        correct=correct,
        incorrect=summary.trials + 1 - correct - failed,
        failed=failed,
        model_evidence_trials=summary.model_evidence_trials + (trial.evidence == "model"),
    )


def summarise(trials: tuple[Trial, ...]) -> Summary:
    summary = NO_TRIALS
    for trial in trials:
        summary = counted(summary, trial)
    return summary


def new_run_info(
    params: TaskParams,
    conditions: tuple[Condition, ...],
    templates: dict[str, str],
    faults: tuple[str, ...] = (),
    generation: GenerationSettings | None = None,
    terms: RunTerms | None = None,
) -> RunInfo:
    terms = terms or terms_for(DEFAULT_CHAIN_PROTOCOL)
    return RunInfo(
        run_id=uuid.uuid4().hex,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        seed=params.seed,
        task_params=params,
        generator_version=SEALED_GENERATOR_VERSION if terms.sealed else GENERATOR_VERSION,
        conditions=conditions,
        prompt_templates=templates,
        generation=generation or generation_of(None),
        faults=faults,
        terms=terms,
    )


COMPILER_LIMIT = 80
"""CPython's `Py_GetVersion` keeps at most this many characters of the compiler string."""


def python_description(version: str | None = None) -> str:
    """`sys.version`, never silently cut: CPython's own string keeps only 80 characters of
    the compiler (`[Clang 23.0.0git (https:/github.com/llvm/llvm-project e5927f…` in
    Pyodide, brackets left open, the single slash CPython's own); such a string is closed and
    said to be cut, and the version numbers come whole from `sys.version_info`."""
    text = sys.version if version is None else version
    head, bracket, compiler = text.partition("[")
    if bracket and not compiler.endswith("]"):
        opened = compiler.count("(") - compiler.count(")")
        note = f"(compiler name cut by CPython at {COMPILER_LIMIT} characters)"
        compiler = f"{compiler}…{')' * max(opened, 0)}] {note}"
        text = f"{head}{bracket}{compiler}"
    info = sys.version_info
    exact = f"{info.major}.{info.minor}.{info.micro}"
    return text if text.startswith(exact) else f"{exact}: {text}"


def environment(clock: ClockInfo, browser: BrowserInfo | None = None) -> Environment:
    runtime: Literal["cpython", "pyodide"] = (
        "pyodide" if sys.platform == "emscripten" else "cpython"
    )
    return Environment(
        runtime=runtime,
        python=python_description(),
        platform=platform.platform(),
        pyapp_version=__version__,
        clock=clock,
        browser=browser,
    )


def make_trace(
    params: TaskParams,
    tasks: tuple[Task, ...],
    trials: tuple[Trial, ...],
    conditions: tuple[Condition, ...],
    model: ModelProvenance | None = None,
    browser: BrowserInfo | None = None,
    freezes: tuple[FreezeRecord, ...] = (),
    interruptions: tuple[Interruption, ...] = (),
    journal: tuple[JournalEntry, ...] = (),
    clock: ClockInfo | None = None,
    faults: tuple[str, ...] = (),
    terms: RunTerms | None = None,
    draw: HeldoutDraw | None = None,
) -> Trace:
    """A trace document from a run's trials (the clock is measured now unless given; the
    terms are the design's chain protocol unless given)."""

    return Trace(
        schema_version="trace/4",
        kind="composition-lab-trace",
        run=new_run_info(
            params, conditions, template_hashes(), faults, generation_of(model), terms
        ),
        environment=environment(clock or measure_clock(), browser),
        model=model,
        revision_note=None if model is None else revision_note(model),
        tasks=tuple(TaskRecord.of(task) for task in tasks),
        trials=trials,
        freezes=freezes,
        interruptions=interruptions,
        journal=journal,
        summary=summarise(trials),
        draw=draw,
    )


def with_trials(header: Trace, trials: tuple[Trial, ...]) -> Trace:
    """A trace assembled from its header (a trace without trials, as the page and the sweep
    CLI store it) and its trials, one record each; the summary is counted again."""
    return replace(header, trials=trials, summary=summarise(trials))


def trace_schema() -> dict[str, JSON]:
    return json_schema(Trace, schema_id=SCHEMA_ID, title="Composition Lab trace")


def loads(text: str) -> Trace:
    return read_trace(json.loads(text))


def read_trace(document: JSON) -> Trace:
    """A trace from its JSON document, upgrading an older document first; a `RecordError`
    names what does not fit (a `schema_version` its body contradicts: `$.schema_version`)."""
    problem = version_problem(document)
    if problem is not None:
        raise RecordError("$.schema_version", problem)
    trace: Trace = from_json(Trace, upgrade(document))
    return trace


VOLATILE_RUN_KEYS = ("run_id", "created_at")
VOLATILE_TRIAL_KEYS = ("timings", "started_at", "ended_at", "prev_sha256")
"""`prev_sha256` hashes the record before, timings included."""


def strip_volatile(trace: dict[str, JSON]) -> dict[str, JSON]:
    """The trace without what legitimately differs between two runs of the same seed:
    timings, timestamps, environment, run id and start time. Used for browser ⇄ CPython parity."""
    stripped = json.loads(json.dumps(trace))
    stripped.pop("environment", None)
    for key in VOLATILE_RUN_KEYS:
        stripped["run"].pop(key, None)
    for trial in stripped["trials"]:
        for key in VOLATILE_TRIAL_KEYS:
            trial.pop(key, None)
    return dict(stripped)
