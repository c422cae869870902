"""Trace records: every raw observation of a run, as frozen dataclasses.

`schema_version` comes first in the document; each record is a frozen dataclass whose
fields carry a docstring; `exports/trace.schema.json` is generated from these classes
(`python -m pyapp schema`) and a test fails when the committed file drifts.

Evidence labels: every trial says what it is evidence of. `control` (the supplied-program
condition: tests the interpreter), `fixture` (a test fixture model or a scripted
adapter) and `synthetic` (a synthetic validation model of known error structure,
`pyapp.synthetic`) are never model evidence; only `model` trials are.
"""

from __future__ import annotations

import json
import platform
import sys
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Literal

import interpreter
from pyapp import __version__
from pyapp.records.base import JSON, ProgramJSON, RecordError, from_json, json_schema, to_json
from pyapp.records.clock import ClockInfo, measure_clock
from pyapp.records.frozen import StateAwareModel, TaskSetIdentity
from pyapp.records.model import (
    GENERATION_SETTINGS,
    Caps,
    Completion,
    GenerationSettings,
    HardStop,
    ModelProvenance,
    RouteLimits,
    revision_note,
)
from pyapp.records.prompts import RenderedPrompt, template_hashes
from pyapp.tasks.taskset import GENERATOR_VERSION, Task, TaskLike, TaskParams

SCHEMA_VERSION = "trace/3"
LEGACY_SCHEMA_VERSIONS = ("trace/1", "trace/2")
"""Older trace versions `upgrade` can still read (their new fields filled as unknown)."""
SCHEMA_ID = "https://composition-lab.invalid/exports/trace.schema.json"

Condition = Literal["supplied-program", "model-only", "model-program", "controlled-chain"]
Evidence = Literal["control", "fixture", "synthetic", "model", "reference-subject"]
Stage = Literal["construction", "generation", "parse", "execution", "verification", "route"]

ADDED_IN_TRACE_3 = {"optional_on_read": True}
"""Fields trace/3 added: absent from older documents (read as null); `reproduce` requires
them in a trace/3 document."""

EVIDENCE_NOTES: dict[Evidence, str] = {
    "control": (
        "Supplied-program control: the task's reference program is executed; this tests "
        "the interpreter and is not model evidence."
    ),
    "fixture": "Test fixture: scripted or fixture-model output; not model evidence.",
    "synthetic": (
        "Synthetic validation model: output drawn from a documented error specification "
        "(pyapp.synthetic); it validates the instrument and is not model evidence."
    ),
    "model": "Model evidence: output of the loaded model under this condition.",
    "reference-subject": (
        "Locally trained reference subject: output of the small model scripts/"
        "train_subject.py trained on single primitives only (pyapp.records.subject); "
        "evidence about this subject, never about a pretrained LLM."
    ),
}


@dataclass(frozen=True)
class TaskRecord:
    """One task of the run, exactly as generated from the seed."""

    id: str
    """Stable task id, e.g. `add-1`, `recurrence-2`, `probe-3-prose`."""
    family: Literal[
        "add", "sub", "mul", "affine_recurrence", "triangle_determinant", "cubic_derivative"
    ]
    """What the task computes."""
    split: Literal["profile", "heldout"]
    """`profile`: single-primitive probe; `heldout`: composition predicted before observed."""
    group: Literal["primitive", "composition", "encoding_probe"]
    """Isolated primitive, held-out composition, or one half of a paired encoding probe."""
    encoding: Literal["json", "prose"]
    """How the registers are rendered in prompts."""
    pair: str | None
    """For encoding probes, the id the two encodings of the same state share."""
    registers: dict[str, int]
    """The task's whole mathematical state: named exact integers."""
    question: str
    """What is asked, in words (goes into the prompt)."""
    steps: int | None
    """Number of updates of an affine recurrence; null for other families."""
    program: ProgramJSON
    """The reference program (a register tree)."""
    answer: int
    """The exact expected answer, confirmed by the oracle."""
    oracle: str
    """The independent route that confirmed the answer (e.g. `shoelace`)."""
    generator_version: str
    """Version of the task generator that made this task."""

    @classmethod
    def of(cls, task: Task) -> TaskRecord:
        record: TaskRecord = from_json(cls, task.to_json())
        return record


@dataclass(frozen=True)
class StepRecord:
    """One interpreter operation: where it is in the tree, its operands and result."""

    path: str
    """JSONPath-like location of the node in the program (`$`, `$.args[0]`, ...)."""
    op: Literal["add", "sub", "mul"]
    """The operation."""
    operands: tuple[int, int]
    """The two operand values, left then right."""
    result: int
    """The node's value (binary64, within the safe-integer domain)."""


@dataclass(frozen=True)
class Failure:
    """Why a trial failed; `code` is stable and machine-readable."""

    code: str
    """Stable failure code (see the interpreter's error table)."""
    stage: Stage
    """The phase in which the failure happened."""
    message: str
    """Human-readable explanation."""
    path: str | None
    """Where in the program (or registers) the failure is, when it has a place."""
    limit: str | None
    """For `limit_exceeded`: which limit (`output_bytes`, `nodes`, `depth`, ...)."""
    maximum: int | None
    """For `limit_exceeded`: the limit's value."""
    value: int | str | None
    """The offending value, when there is one."""


@dataclass(frozen=True)
class InterpreterBudget:
    """The register-tree language limits in force for a trial."""

    max_output_bytes: int
    """Largest program text, in UTF-8 bytes."""
    max_nodes: int
    """Most tree nodes."""
    max_depth: int
    """Deepest tree (a lone leaf has depth 1)."""
    max_operations: int
    """Most operation nodes."""
    max_registers: int
    """Most supplied registers."""
    tool_calls: int
    """Tool calls allowed per trial (one program, executed once)."""
    retries: int
    """Retries allowed (none)."""

    def __post_init__(self) -> None:
        """A budget the interpreter cannot run under is refused when the record is read."""
        try:
            interpreter.Limits(
                max_output_bytes=self.max_output_bytes,
                max_nodes=self.max_nodes,
                max_depth=self.max_depth,
                max_operations=self.max_operations,
                max_registers=self.max_registers,
            )
        except interpreter.ProgramError as error:
            raise ValueError(f"invalid budget: {error.message}") from None
        if self.tool_calls < 0 or self.retries < 0:
            raise ValueError("invalid budget: tool_calls and retries must be >= 0")


@dataclass(frozen=True)
class Timings:
    """Per-phase wall times of one trial, in milliseconds (see the clock record)."""

    construction_ms: float
    """Building the prompt or the program input."""
    generation_ms: float | None
    """Model generation wall time; null when no model was called. A wait for a pending
    load or reload is not in it (each call's `completion.load_wait_ms` records it)."""
    parse_ms: float | None
    """Parsing the program or answer text; null when nothing was parsed."""
    execution_ms: float | None
    """Interpreter execution; null when nothing was executed."""
    verification_ms: float | None
    """Controlled chains: the route's verification (each call's local check on its actual
    operands, the final check). Null for whole-task and control trials, whose verification
    is one integer equality, not timed (documents older than trace/3 recorded two
    back-to-back clock reads there)."""
    total_ms: float
    """Whole trial, end to end (not the sum of the phases: it includes the glue)."""


Outcome = str
"""`correct`, `wrong_answer`, or the failure code (e.g. `invalid_integer`, `not_json`)."""


@dataclass(frozen=True)
class ChainCall:
    """One primitive call of a controlled chain, on the operands actually routed to it."""

    index: int
    """Position in the route, from 0."""
    op: Literal["add", "sub", "mul"]
    """The primitive asked for."""
    left: int
    """Left operand as sent (a register value or an earlier call's parsed output)."""
    right: int
    """Right operand as sent."""
    left_source: str
    """Where `left` came from: `register:NAME` or `call:K`."""
    right_source: str
    """Where `right` came from: `register:NAME` or `call:K`."""
    prompt: RenderedPrompt
    """The primitive prompt as sent (fresh transcript per call)."""
    caps: Caps
    """Per-call budgets in force (the timeout may be shortened to the route's remaining time)."""
    reserved_input_tokens: int
    """Route input-token reservation after this call's cap was reserved."""
    reserved_output_tokens: int
    """Route output-token reservation after this call's cap was reserved."""
    completion: Completion
    """The raw completion."""
    parsed: int | None
    """The parsed integer; null when the reply was not exactly one integer."""
    local_expected: int
    """The exact value of `op` on the actual operands `left`, `right`."""
    local_correct: bool | None
    """`parsed == local_expected`; null when nothing was parsed."""
    generation_ms: float
    """Wall time of the call seen from the controller (bridge included), less any wait for
    a pending load or reload (`completion.load_wait_ms`, recorded apart since trace/3)."""


@dataclass(frozen=True)
class ChainRoute:
    """A controlled primitive chain: the external computation route and its verdicts."""

    status: Literal["completed", "halted", "unsupported"]
    """`unsupported` routes make no model call."""
    planned_calls: int
    """Calls the route needs (one per primitive; 4 or 6 for the default recurrences)."""
    calls: tuple[ChainCall, ...]
    """Calls actually made, in order."""
    unobserved_calls: int
    """Planned calls never made because the route halted (unobserved, not wrong)."""
    halt: Failure | None
    """Why the route halted; null when it completed or is unsupported."""
    first_local_error: int | None
    """Index of the first call whose parsed output is wrong on its actual operands."""
    all_steps_correct: bool | None
    """Every planned call made and locally correct; null for unsupported routes."""
    final_correct: bool | None
    """The route's final output equals the task's answer; null for unsupported routes."""
    reserved_input_tokens: int
    """Sum of per-call input caps reserved before the calls (route cap: 3,072)."""
    reserved_output_tokens: int
    """Sum of per-call output caps reserved before the calls (route cap: 256)."""
    used_input_tokens: int | None
    """Actual prompt tokens over the calls; null if any call could not report them."""
    used_output_tokens: int | None
    """Actual generated tokens over the calls; null if any call could not report them."""


@dataclass(frozen=True)
class Trial:
    """One attempted trial of one task under one condition: the raw observation."""

    trial_id: str
    """Unique within the trace: `<condition>/<task id>`."""
    sequence: int
    """Position in the run's timeline: trials, interruptions and freezes share one counter,
    from 1, in the order they happened."""
    started_at: str | None
    """When the trial started, UTC ISO 8601 (null only in traces upgraded from trace/1)."""
    ended_at: str | None
    """When the trial ended, UTC ISO 8601 (null only in traces upgraded from trace/1)."""
    load_id: int | None
    """The model load it ran under (`model.loads[].load_id`); null when no model was called
    (the control, an unsupported route) or in traces upgraded from trace/1."""
    model_identity: str | None
    """SHA-256 of the model load identity it ran under (`pyapp.records.model.identity_sha256`);
    null when no model was involved or in traces upgraded from trace/1."""
    task_id: str
    """The task this trial attempted."""
    condition: Condition
    """The measurement condition."""
    evidence: Evidence
    """`control`, `fixture`, `synthetic` or `model`: only `model` trials are model evidence."""
    evidence_note: str
    """The evidence label in words."""
    prompt: RenderedPrompt | None
    """The prompt as sent, with template id and hash; null when no model was prompted."""
    caps: Caps | None
    """Generation budgets in force (per call for chains); null when no model was called."""
    completion: Completion | None
    """The raw completion of a whole-task condition; null for the control and for chains."""
    program_text: str | None
    """Exactly the text handed to the program parser; null when none was parsed."""
    program: ProgramJSON | None
    """The parsed program; null when parsing failed or no program was involved."""
    steps: tuple[StepRecord, ...]
    """Every interpreter operation, in evaluation order."""
    chain: ChainRoute | None
    """The controlled-chain route; null for whole-task conditions."""
    result: int | None
    """The trial's answer; null when the trial failed before producing one."""
    expected: int
    """The task's exact answer (computed after the attempt stopped)."""
    correct: bool
    """Whether `result` equals `expected` exactly (tolerance zero)."""
    outcome: Outcome
    """`correct`, `wrong_answer`, or the failure code."""
    failure: Failure | None
    """Why no result was produced; null when there is a result (correct or not)."""
    input_tokens: int | None
    """Actual prompt tokens (summed over calls for chains); null when unavailable."""
    output_tokens: int | None
    """Actual generated tokens (summed over calls for chains); null when unavailable."""
    budget: InterpreterBudget | None
    """The register-tree language limits in force; null for controlled chains, which call
    no interpreter."""
    route_limits: RouteLimits | None
    """Controlled chains: the route's limits (6 calls, 3,072 input / 256 output tokens,
    90 s, the per-call caps); null for whole-task conditions."""
    timings: Timings
    """Per-phase wall times."""
    prev_sha256: str | None = field(default=None, metadata=ADDED_IN_TRACE_3)
    """The hash chain (`pyapp.records.chain`): SHA-256 of the canonical JSON of the record
    just before this one in the timeline (or of the chain's genesis); null only in documents
    older than trace/3."""


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

    schema_version: Literal["trace/3"]
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


def budget_of(limits: interpreter.Limits) -> InterpreterBudget:
    return InterpreterBudget(
        max_output_bytes=limits.max_output_bytes,
        max_nodes=limits.max_nodes,
        max_depth=limits.max_depth,
        max_operations=limits.max_operations,
        max_registers=limits.max_registers,
        tool_calls=1,
        retries=0,
    )


def new_run_info(
    params: TaskParams,
    conditions: tuple[Condition, ...],
    templates: dict[str, str],
    faults: tuple[str, ...] = (),
) -> RunInfo:
    return RunInfo(
        run_id=uuid.uuid4().hex,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        seed=params.seed,
        task_params=params,
        generator_version=GENERATOR_VERSION,
        conditions=conditions,
        prompt_templates=templates,
        generation=GENERATION_SETTINGS,
        faults=faults,
    )


def outcome_of(correct: bool, failure: Failure | None) -> str:
    """`correct`, `wrong_answer`, or the failure's code."""
    if failure is not None:
        return failure.code
    return "correct" if correct else "wrong_answer"


def utc_now() -> str:
    """Now, UTC ISO 8601 with milliseconds (the timeline's timestamps)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def new_trial(
    task: TaskLike,
    condition: Condition,
    evidence: Evidence,
    *,
    result: int | None,
    failure: Failure | None,
    timings: Timings,
    started_at: str,
    prompt: RenderedPrompt | None = None,
    caps: Caps | None = None,
    completion: Completion | None = None,
    program_text: str | None = None,
    program: ProgramJSON | None = None,
    steps: tuple[StepRecord, ...] = (),
    chain: ChainRoute | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    budget: InterpreterBudget | None = None,
    route_limits: RouteLimits | None = None,
) -> Trial:
    """The one place a Trial is built: id, evidence note, verdict and outcome follow from
    the arguments; the sweep stamps `sequence`, `load_id` and `model_identity` later."""
    correct = result is not None and result == task.answer
    return Trial(
        trial_id=f"{condition}/{task.id}",
        sequence=0,
        started_at=started_at,
        ended_at=utc_now(),
        load_id=None,
        model_identity=None,
        task_id=task.id,
        condition=condition,
        evidence=evidence,
        evidence_note=EVIDENCE_NOTES[evidence],
        prompt=prompt,
        caps=caps,
        completion=completion,
        program_text=program_text,
        program=program,
        steps=steps,
        chain=chain,
        result=result,
        expected=task.answer,
        correct=correct,
        outcome=outcome_of(correct, failure),
        failure=failure,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        budget=budget,
        route_limits=route_limits,
        timings=timings,
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
) -> Trace:
    """A trace document from a run's trials (the clock is measured now unless given)."""

    return Trace(
        schema_version="trace/3",
        kind="composition-lab-trace",
        run=new_run_info(params, conditions, template_hashes(), faults),
        environment=environment(clock or measure_clock(), browser),
        model=model,
        revision_note=None if model is None else revision_note(model),
        tasks=tuple(TaskRecord.of(task) for task in tasks),
        trials=trials,
        freezes=freezes,
        interruptions=interruptions,
        journal=journal,
        summary=summarise(trials),
    )


def with_trials(header: Trace, trials: tuple[Trial, ...]) -> Trace:
    """A trace assembled from its header (a trace without trials, as the page and the sweep
    CLI store it) and its trials, one record each; the summary is counted again."""
    return replace(header, trials=trials, summary=summarise(trials))


def trace_schema() -> dict[str, JSON]:
    return json_schema(Trace, schema_id=SCHEMA_ID, title="Composition Lab trace")


def dumps(trace: Trace) -> str:
    return json.dumps(to_json(trace), indent=2, ensure_ascii=False) + "\n"


def loads(text: str) -> Trace:
    return read_trace(json.loads(text))


def read_trace(document: JSON) -> Trace:
    """A trace from its JSON document, upgrading a trace/1 document first; a `RecordError`
    names what does not fit (a `schema_version` its body contradicts: `$.schema_version`)."""
    problem = version_problem(document)
    if problem is not None:
        raise RecordError("$.schema_version", problem)
    trace: Trace = from_json(Trace, upgrade(document))
    return trace


TRACE_2_FIELDS = ("revision_note", "run.generation", "run.faults")
"""Fields at the top of a document that only trace/2 writes (trace/1 never recorded them):
how `version_problem` tells a hand-edited `schema_version` from the document's body."""


def version_problem(document: JSON) -> str | None:
    """Why a document's `schema_version` does not fit its body: `trace/1` on a document that
    records trace/2's fields (a value other than the null or `[]` the upgrade fills in),
    `trace/2` or `trace/3` on one that has none of them, or `trace/2` on one whose records
    carry trace/3's hash chain. None when they agree, or when the document is not a trace at
    all (that is reported where it does not fit the records)."""
    if not isinstance(document, dict) or not isinstance(document.get("run"), dict):
        return None
    found = {name: value for name in TRACE_2_FIELDS for value in _field(document, name)}
    present = [name for name in TRACE_2_FIELDS if name in found]
    recorded = [name for name in present if found[name] not in (None, [])]
    version = document.get("schema_version")
    if version == "trace/1" and recorded:
        return (
            f"says {version!r}, but the document records trace/2's {', '.join(recorded)} "
            f"({version} never recorded them): a newer document says its own version"
        )
    if version in ("trace/2", SCHEMA_VERSION) and not present:
        return (
            f"says {version!r}, but the document has none of trace/2's fields "
            f"({', '.join(TRACE_2_FIELDS)}): a trace/1 document says 'trace/1'"
        )
    if version == "trace/2" and _chained(document):
        return (
            "says 'trace/2', but its records carry trace/3's hash chain (prev_sha256): "
            f"a trace/3 document says {SCHEMA_VERSION!r}"
        )
    return None


def _chained(document: dict[str, JSON]) -> bool:
    """Whether any trial, freeze or interruption of a document carries a chain link."""
    for name in ("trials", "freezes", "interruptions", "journal"):
        for record in _as_list(document.get(name)):
            if isinstance(record, dict) and record.get("prev_sha256") is not None:
                return True
    return False


def _completions_of_trace_1(node: JSON) -> None:
    """Every completion in a trace/1 document: the model's input was not recorded."""
    if isinstance(node, dict):
        if "finish_reason" in node and "output_token_ids" in node:
            node.setdefault("input_text", None)
            node.setdefault("input_sha256", None)
        for value in node.values():
            _completions_of_trace_1(value)
    elif isinstance(node, list):
        for value in node:
            _completions_of_trace_1(value)


def upgrade(document: JSON) -> JSON:
    """An older document as trace/3. trace/2: only the version changes (what trace/3 added,
    the hash chain, the frozen task set and state-aware fit, reads as null: `reproduce` says
    the chain is absent). trace/1: what it did not record is filled as unknown
    (timestamps, load ids, identities, generation settings: null; no faults); sequence
    numbers follow the recorded order: trials in order, each freeze after the trials it
    names, interruptions last (trace/1 did not record when they happened). Anything else
    is returned unchanged (and refused later if it is not a trace/3 document)."""
    if not isinstance(document, dict) or document.get("schema_version") not in (
        LEGACY_SCHEMA_VERSIONS
    ):
        return document
    if document.get("schema_version") == "trace/2":
        return _without_output_shown({**document, "schema_version": SCHEMA_VERSION})
    doc = json.loads(json.dumps(document))
    doc["schema_version"] = SCHEMA_VERSION
    if isinstance(doc.get("run"), dict):
        doc["run"].setdefault("generation", None)
        doc["run"].setdefault("faults", [])
    doc.setdefault("revision_note", None)
    if isinstance(doc.get("model"), dict):
        doc["model"].setdefault("revision_served_note", None)
        doc["model"].setdefault("wasm", None)
        doc["model"].setdefault("chat_template_options", {})  # trace/1 passed none
    counter = 0
    # anything that is not a list of objects is left as it is, and refused when read
    trials = _as_list(doc.get("trials"))
    freezes = [f for f in _as_list(doc.get("freezes")) if isinstance(f, dict)]

    def next_sequence() -> int:
        nonlocal counter
        counter += 1
        return counter

    def upgrade_trial(trial: JSON, sequence: int) -> None:
        if not isinstance(trial, dict):
            return
        trial.setdefault("sequence", sequence)
        for key in ("started_at", "ended_at", "load_id", "model_identity"):
            trial.setdefault(key, None)
        trial.setdefault("route_limits", None)

    for index in range(len(trials) + 1):
        for record in freezes:
            if _freeze_position(record, len(trials)) == index:
                record.setdefault("sequence", next_sequence())
        if index < len(trials):
            upgrade_trial(trials[index], next_sequence())
    _completions_of_trace_1(doc)
    for interruption in _as_list(doc.get("interruptions")):
        if isinstance(interruption, dict):
            sequence = next_sequence()
            cancelled = interruption.get("reason") == "cancelled"
            interruption.setdefault("sequence", sequence)
            interruption.setdefault("code", "cancelled" if cancelled else None)
            interruption.setdefault("message", None)
            upgrade_trial(interruption.get("partial"), sequence)
    return _without_output_shown(doc)


def _without_output_shown(document: dict[str, JSON]) -> dict[str, JSON]:
    """trace/1–2 interruptions said `output_shown: false` (never shown); trace/3 drops it."""
    interruptions = document.get("interruptions")
    if isinstance(interruptions, list):
        document["interruptions"] = [
            {k: v for k, v in i.items() if k != "output_shown"} if isinstance(i, dict) else i
            for i in interruptions
        ]
    return document


def _field(document: dict[str, JSON], name: str) -> list[JSON]:
    """The value of a dotted field (`run.faults`), as a list of one; `[]` when it is absent."""
    *parents, key = name.split(".")
    node: JSON = document
    for parent in parents:
        node = node.get(parent) if isinstance(node, dict) else None
    return [node[key]] if isinstance(node, dict) and key in node else []


def _as_list(value: JSON) -> list[JSON]:
    """A list as it is; anything else as no items (`from_json` refuses it later, by name)."""
    return value if isinstance(value, list) else []


def _freeze_position(record: dict[str, JSON], trials: int) -> int:
    """How many trials a trace/1 freeze came after: its `after_trials`, or after every trial
    when that is not a count within the list (so it still gets a sequence number, and
    `reproduce` names the bad `after_trials` instead of a missing `sequence`)."""
    after = record.get("after_trials")
    if isinstance(after, int) and not isinstance(after, bool) and 0 <= after <= trials:
        return after
    return trials


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
