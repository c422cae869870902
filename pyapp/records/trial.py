"""Trial records: one attempted trial of one task under one condition, as a frozen
dataclass with every part it holds (the task, the interpreter's steps, the failure, the
budgets, the timings, a controlled chain's calls and route), and `new_trial`, the one place
a `Trial` is built.

Evidence labels: every trial says what it is evidence of. `control` (the supplied-program
condition: tests the interpreter), `fixture` (a test fixture model or a scripted
adapter) and `synthetic` (a synthetic validation model of known error structure,
`pyapp.synthetic`) are never model evidence; only `model` trials are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, get_args

import interpreter
from pyapp.records.base import ProgramJSON, from_json
from pyapp.records.model import Caps, Completion, RouteLimits
from pyapp.records.prompts import RenderedPrompt
from pyapp.records.trace_versions import ADDED_IN_TRACE_3
from pyapp.tasks import Task, TaskLike

Condition = Literal["supplied-program", "model-only", "model-program", "controlled-chain"]
"""A condition's name, as a type (the names of `CONDITIONS`; an import-time check keeps the
two equal, since a type cannot be computed from a table)."""


@dataclass(frozen=True)
class ConditionRow:
    """One experimental condition: everything the code says about it, written once."""

    name: Condition
    label: str
    """The page's checkbox label (`site/index.html`, generated)."""
    short: str
    """Its abbreviation in a matrix cell's folder name (`pyapp.matrix.cells`)."""
    colour: str
    """Its series colour in every plot (`pyapp.report.plots.COLOURS`)."""
    model: bool
    """A model condition: its profile is frozen, predicted and scored; the control is not."""
    answer: Literal["integer", "program", "none"]
    """What the model writes in it (an integer, a program, nothing: the control)."""


CONDITIONS: tuple[ConditionRow, ...] = (
    ConditionRow("model-only", "Model only", "mo", "#1a73e8", True, "integer"),
    ConditionRow(
        "supplied-program",
        "Supplied program (the control: tests the interpreter — not model evidence)",
        "sp",
        "#444",
        False,
        "none",
    ),
    ConditionRow("model-program", "Model program", "mp", "#b3261e", True, "program"),
    ConditionRow("controlled-chain", "Controlled chain", "cc", "#137333", True, "integer"),
)
"""The conditions, in the page's order: the one table the condition type, the runners'
lists (`pyapp.conditions.run`), the page's checkboxes, the plots' colours, the matrix's
folder names and the page's ETA (what each writes) are read from."""
if {row.name for row in CONDITIONS} != set(get_args(Condition)) or len(CONDITIONS) != len(
    get_args(Condition)
):
    raise AssertionError("CONDITIONS and the Condition type name different conditions")
Evidence = Literal["control", "fixture", "synthetic", "model", "reference-subject"]
Stage = Literal["construction", "generation", "parse", "execution", "verification", "route"]

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
        "Locally trained reference subject: output of a small model trained by scripts/"
        "train_subject.py under the curriculum its provenance names (pyapp.records.subject"
        ".SUBJECTS); evidence about this subject, never about a pretrained LLM."
    ),
}

LEGACY_EVIDENCE_NOTES: dict[Evidence, str] = {
    "reference-subject": (
        "Locally trained reference subject: output of the small model scripts/"
        "train_subject.py trained on single primitives only (pyapp.records.subject); "
        "evidence about this subject, never about a pretrained LLM."
    ),
}
"""Notes written before there was more than one subject: a trial of the first subject
(subject/reference-2, primitives only) may carry it (`pyapp.verify.trials`)."""


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
    """Controlled chains: the route's limits, those of the run's chain protocol
    (`chain-design/1`: 6 calls, 3,072 input / 256 output tokens, 90 s; `chain-extended/1`:
    7 calls, 3,584 / 256 tokens, 105 s; the per-call caps the same); null for whole-task
    conditions."""
    timings: Timings
    """Per-phase wall times."""
    prev_sha256: str | None = field(default=None, metadata=ADDED_IN_TRACE_3)
    """The hash chain (`pyapp.records.chain`): SHA-256 of the canonical JSON of the record
    just before this one in the timeline (or of the chain's genesis); null only in documents
    older than trace/3."""


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
