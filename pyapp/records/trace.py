"""Trace records: every raw observation of a run, as frozen dataclasses.

`schema_version` comes first in the document; each record is a frozen dataclass whose
fields carry a docstring; `exports/trace.schema.json` is generated from these classes
(`python -m pyapp schema`) and a test fails when the committed file drifts.

Evidence labels: every trial says what it is evidence of. `control` (the supplied-program
condition: tests the interpreter) and `fixture` (a test fixture model or a scripted
adapter) are never model evidence; only `model` trials may enter a profile or a score.
"""

from __future__ import annotations

import json
import platform
import sys
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal

import interpreter
from pyapp import __version__
from pyapp.conditions.clock import ClockInfo
from pyapp.conditions.model import Caps, Completion, ModelProvenance
from pyapp.conditions.prompts import RenderedPrompt
from pyapp.records.base import JSON, ProgramJSON, from_json, json_schema, to_json
from pyapp.tasks.taskset import Task, TaskParams

SCHEMA_VERSION = "trace/1"
SCHEMA_ID = "https://composition-lab.invalid/exports/trace.schema.json"

Condition = Literal["supplied-program", "model-only", "model-program", "controlled-chain"]
Evidence = Literal["control", "fixture", "model"]
Stage = Literal["construction", "generation", "parse", "execution", "verification", "route"]

EVIDENCE_NOTES: dict[Evidence, str] = {
    "control": (
        "Supplied-program control: the task's reference program is executed; this tests "
        "the interpreter and is not model evidence."
    ),
    "fixture": "Test fixture: scripted or fixture-model output; not model evidence.",
    "model": "Model evidence: output of the loaded model under this condition.",
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


@dataclass(frozen=True)
class Timings:
    """Per-phase wall times of one trial, in milliseconds (see the clock record)."""

    construction_ms: float
    """Building the prompt or the program input."""
    generation_ms: float | None
    """Model generation wall time; null when no model was called."""
    parse_ms: float | None
    """Parsing the program or answer text; null when nothing was parsed."""
    execution_ms: float | None
    """Interpreter execution; null when nothing was executed."""
    verification_ms: float
    """Comparing the result with the exact expected answer."""
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
    """Wall time of the call seen from the controller (bridge included)."""


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
    task_id: str
    """The task this trial attempted."""
    condition: Condition
    """The measurement condition."""
    evidence: Evidence
    """`control`, `fixture` or `model`: only `model` trials are model evidence."""
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
    budget: InterpreterBudget
    """The register-tree language limits in force."""
    timings: Timings
    """Per-phase wall times."""


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


@dataclass(frozen=True)
class FreezeRecord:
    """The moment a profile was frozen: everything needed to recompute it from the trials."""

    condition: Condition
    """The condition whose profile was frozen."""
    after_trials: int
    """How many of `trials` preceded the freeze; the profile is computed from those."""
    frozen_at: str
    """UTC time of freezing, ISO 8601."""
    previously_observed: tuple[str, ...]
    """Held-out task ids the browser's ledger had seen observed for this model and
    condition in earlier sessions (these make the profile exploratory)."""
    profile_sha256: str
    """SHA-256 of the frozen profile (see `pyapp.predict.predictor.freeze_profile`)."""


@dataclass(frozen=True)
class Interruption:
    """A trial that did not finish as an observation: the page closed or crashed while it was
    in flight, or the user cancelled it mid-generation. It is re-attempted later, so a
    user's Cancel is never scored as the model's failure; what it produced is kept."""

    trial_id: str
    """The trial that was interrupted (re-attempted on resume)."""
    at: str
    """When the interruption was recorded, UTC ISO 8601."""
    reason: Literal["page-closed", "cancelled"]
    """`page-closed`: noticed on resume (nothing of it survived); `cancelled`: the user's
    Cancel cut its generation short."""
    partial: Trial | None
    """What the cancelled attempt produced (raw, never scored); null when nothing survived."""


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

    schema_version: Literal["trace/1"]
    """Version of this schema."""
    kind: Literal["composition-lab-trace"]
    """Document kind."""
    run: RunInfo
    """What was run."""
    environment: Environment
    """Where it ran."""
    model: ModelProvenance | None
    """Model provenance; null when no model was loaded (e.g. the supplied-program control)."""
    tasks: tuple[TaskRecord, ...]
    """The full task set generated from the seed."""
    trials: tuple[Trial, ...]
    """Every attempted trial."""
    freezes: tuple[FreezeRecord, ...]
    """Profiles frozen during the run, in order (empty when none was frozen)."""
    interruptions: tuple[Interruption, ...]
    """Trials in flight when the page was closed or crashed (then re-attempted)."""
    journal: tuple[JournalEntry, ...]
    """Manual exploration: never part of a profile, a prediction or a score."""
    summary: Summary
    """Counts over the trials."""


def summarise(trials: tuple[Trial, ...]) -> Summary:
    correct = sum(1 for t in trials if t.correct)
    failed = sum(1 for t in trials if t.failure is not None)
    return Summary(
        trials=len(trials),
        correct=correct,
        incorrect=len(trials) - correct - failed,
        failed=failed,
        model_evidence_trials=sum(1 for t in trials if t.evidence == "model"),
    )


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
    params: TaskParams, conditions: tuple[Condition, ...], templates: dict[str, str]
) -> RunInfo:
    from pyapp.tasks.taskset import GENERATOR_VERSION

    return RunInfo(
        run_id=uuid.uuid4().hex,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        seed=params.seed,
        task_params=params,
        generator_version=GENERATOR_VERSION,
        conditions=conditions,
        prompt_templates=templates,
    )


def environment(clock: ClockInfo, browser: BrowserInfo | None = None) -> Environment:
    runtime: Literal["cpython", "pyodide"] = (
        "pyodide" if sys.platform == "emscripten" else "cpython"
    )
    return Environment(
        runtime=runtime,
        python=sys.version,
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
) -> Trace:
    """A trace document from a run's trials (the clock is measured now unless given)."""
    from pyapp.conditions.clock import measure_clock
    from pyapp.conditions.prompts import template_hashes

    return Trace(
        schema_version="trace/1",
        kind="composition-lab-trace",
        run=new_run_info(params, conditions, template_hashes()),
        environment=environment(clock or measure_clock(), browser),
        model=model,
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
    trace: Trace = from_json(Trace, json.loads(text))
    return trace


VOLATILE_RUN_KEYS = ("run_id", "created_at")


def strip_volatile(trace: dict[str, JSON]) -> dict[str, JSON]:
    """The trace without what legitimately differs between two runs of the same seed:
    timings, environment, run id and start time. Used for browser ⇄ CPython parity."""
    stripped = json.loads(json.dumps(trace))
    stripped.pop("environment", None)
    for key in VOLATILE_RUN_KEYS:
        stripped["run"].pop(key, None)
    for trial in stripped["trials"]:
        trial.pop("timings", None)
    return dict(stripped)
