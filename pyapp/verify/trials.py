"""Re-deriving one trial from its task and its raw observations (`pyapp.verify.reproduce`
checks a whole trace with it).

`check_trial` regenerates what a trial's verdict, outcome, result, failure, program, steps,
token counts and route must be — re-executing its program text, re-judging its replies
with the judges that made them (`judge_whole_task`, `judge_call`) — and checks its budgets,
timestamps and labels; `rederive` returns a trace document with every trial's derivable
fields as re-derived and the recorded values that differed (`Correction`), which is what a
report shows; `regenerated_records` is the task set of a seed's parameters, generated once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache

import interpreter
from pyapp.conditions import (
    Reservation,
    call_step,
    chain_result,
    judge_call,
    judge_whole_task,
    plan_route,
    route_call_refusal,
    unsupported_failure,
    verify_route,
    whole_task_prompt,
)
from pyapp.conditions.interpret import interpret
from pyapp.records import (
    CHAIN_CALL_CAPS,
    DEFAULT_CHAIN_PROTOCOL,
    EVIDENCE_NOTES,
    JSON,
    LEGACY_EVIDENCE_NOTES,
    LEGACY_SCHEMA_VERSIONS,
    REFERENCE,
    WHOLE_TASK_CAPS,
    ChainProtocol,
    Failure,
    Mismatch,
    ModelProvenance,
    RenderedPrompt,
    TaskRecord,
    Trace,
    Trial,
    budget_of,
    identity_sha256,
    input_hash_matches,
    outcome_of,
    prompts,
    protocol_of,
    read_trace,
    subject_of,
    summarise,
    to_json,
    upgrade,
)
from pyapp.tasks import GENERATOR_VERSION, TaskParams, generate
from pyapp.verify.consistency import completion_mismatches

CONTROL_CONDITIONS = {"supplied-program": "control"}
PROTOCOL_BUDGET = budget_of(interpreter.DEFAULT_LIMITS)


@dataclass(frozen=True)
class TrialContext:
    """What every trial check needs besides the trial."""

    tasks: dict[str, TaskRecord]
    model: ModelProvenance | None
    legacy: bool
    """The trial (or the whole document) was recorded under trace/1: fields it did not
    record are not checked."""
    protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL
    """The run's chain protocol (`run.terms`; the design's before trace/4): which families
    are routed and the limits of every route."""


def unstamped(trial: Trial) -> bool:
    """Recorded under trace/1 and upgraded: only such a trial has no timestamps."""
    return trial.started_at is None and trial.ended_at is None


def upgraded_trials(trace: Trace, legacy: bool) -> int:
    """How many leading trials were recorded under trace/1: all of a trace/1 document; in a
    trace/2 document, those of a trace/1 sweep that was resumed and continued (they come
    first, without timestamps). A later trial without timestamps is a mismatch."""
    if legacy:
        return len(trace.trials)
    count = 0
    while count < len(trace.trials) and unstamped(trace.trials[count]):
        count += 1
    return count


def check_trial(
    trial: Trial, where: str, ctx: TrialContext, changed: dict[str, JSON] | None = None
) -> list[Mismatch]:
    """The trial's mismatches; `changed` is given each field re-derivation contradicts."""
    found: list[Mismatch] = []
    task = ctx.tasks.get(trial.task_id)
    if task is None:
        return [Mismatch(where, f"task {trial.task_id!r} is not in the regenerated task set")]
    if trial.trial_id != f"{trial.condition}/{trial.task_id}":
        found.append(Mismatch(where, f"trial_id {trial.trial_id!r} does not name its task"))
    if trial.expected != task.answer:
        found.append(
            Mismatch(where, f"expected {trial.expected} but the task's answer is {task.answer}")
        )
    required = CONTROL_CONDITIONS.get(trial.condition)
    if required is not None and trial.evidence != required:
        found.append(
            Mismatch(
                where,
                f"a {trial.condition} trial must be labelled {required!r}, not {trial.evidence!r}",
            )
        )
    if trial.evidence_note != EVIDENCE_NOTES[trial.evidence] and not _legacy_note(trial, ctx):
        found.append(Mismatch(where, "evidence_note does not match the evidence label"))
    _check_budgets(trial, where, ctx, found)
    _check_timestamps(trial, where, ctx, found)

    if trial.condition == "supplied-program":
        reference = interpreter.canonical_program_text(interpreter.program_from_json(task.program))
        if trial.program_text != reference:
            found.append(Mismatch(where, "program_text is not the task's reference program"))
        derived = _rederive_program(trial, task, trial.program_text)
    elif trial.condition in ("model-only", "model-program"):
        derived = _rederive_whole_task(trial, task, where, found, ctx.legacy)
    else:
        derived = _rederive_chain(trial, task, where, found, ctx)
    for key, value in derived.items():
        recorded = to_json(getattr(trial, key))
        if recorded != value:
            if changed is not None:
                changed[key] = value
            found.append(
                Mismatch(
                    f"{where}.{key}",
                    f"recorded {json.dumps(recorded)}, re-derived {json.dumps(value)}",
                )
            )
    return found


def _legacy_note(trial: Trial, ctx: TrialContext) -> bool:
    """The first subject's trial written with the note of the time (`LEGACY_EVIDENCE_NOTES`:
    "trained on single primitives only"), never another subject's."""
    legacy = LEGACY_EVIDENCE_NOTES.get(trial.evidence)
    if legacy is None or trial.evidence_note != legacy or ctx.model is None:
        return False
    return subject_of(ctx.model.model_id, ctx.model.config_sha256) is REFERENCE


def _check_budgets(trial: Trial, where: str, ctx: TrialContext, found: list[Mismatch]) -> None:
    """Recorded budgets are the protocol's, never taken on trust; a control carries no model
    fields at all."""
    chain = trial.condition == "controlled-chain"
    if trial.condition == "supplied-program":
        carried = [
            name
            for name in ("prompt", "caps", "completion", "chain", "input_tokens", "output_tokens")
            if getattr(trial, name) is not None
        ]
        if carried:
            found.append(Mismatch(where, f"a control trial carries {', '.join(carried)}"))
    elif not chain and trial.caps != WHOLE_TASK_CAPS:
        found.append(Mismatch(f"{where}.caps", "are not the protocol's whole-task caps"))
    if chain and not ctx.legacy:
        if trial.budget is not None:
            found.append(Mismatch(f"{where}.budget", "a chain calls no interpreter: must be null"))
        if trial.route_limits != ctx.protocol.limits:
            found.append(
                Mismatch(
                    f"{where}.route_limits",
                    f"are not the route limits of the run's chain protocol "
                    f"({ctx.protocol.version})",
                )
            )
    elif not chain and trial.budget != PROTOCOL_BUDGET:
        found.append(Mismatch(f"{where}.budget", "is not the protocol's interpreter budget"))
    if not chain and trial.route_limits is not None:
        found.append(Mismatch(f"{where}.route_limits", "only a chain trial has route limits"))


def _check_timestamps(trial: Trial, where: str, ctx: TrialContext, found: list[Mismatch]) -> None:
    if ctx.legacy:
        return
    if trial.started_at is None or trial.ended_at is None:
        found.append(Mismatch(where, "a trace/2 trial needs started_at and ended_at"))
    elif trial.ended_at < trial.started_at:
        found.append(Mismatch(where, "ended_at is before started_at"))


def _verdict(result: int | None, failure: Failure | None, answer: int) -> dict[str, JSON]:
    correct = result is not None and result == answer
    return {
        "result": result,
        "failure": to_json(failure),
        "correct": correct,
        "outcome": outcome_of(correct, failure),
    }


def _rederive_program(trial: Trial, task: TaskRecord, text: str | None) -> dict[str, JSON]:
    if text is None:
        return {"program": None, "steps": [], **_verdict(None, trial.failure, task.answer)}
    outcome = interpret(text, task.registers, interpreter.DEFAULT_LIMITS)
    return {
        "program": outcome.program,
        "steps": to_json(outcome.steps),
        **_verdict(outcome.result, outcome.failure, task.answer),
    }


def _check_prompt(
    recorded: RenderedPrompt | None, expected: RenderedPrompt, where: str, found: list[Mismatch]
) -> None:
    if recorded != expected:
        found.append(Mismatch(f"{where}.prompt", "is not what the versioned template renders"))


def _rederive_whole_task(
    trial: Trial, task: TaskRecord, where: str, found: list[Mismatch], legacy: bool
) -> dict[str, JSON]:
    _check_prompt(trial.prompt, whole_task_prompt(task, trial.condition), where, found)
    completion = trial.completion
    if completion is None:
        found.append(Mismatch(where, "a model trial without its completion"))
        return {}
    if not input_hash_matches(completion):
        found.append(Mismatch(f"{where}.completion", "input_sha256 is not the input's hash"))
    if not legacy:
        found.extend(completion_mismatches(completion, trial.caps, f"{where}.completion"))
    verdict = judge_whole_task(trial.condition, task.registers, completion)
    return {
        "program_text": verdict.program_text,
        "program": verdict.program,
        "steps": to_json(verdict.steps),
        "input_tokens": completion.input_tokens,
        "output_tokens": completion.output_tokens,
        **_verdict(verdict.result, verdict.failure, task.answer),
    }


def _check_call_caps(trial: Trial, where: str, found: list[Mismatch]) -> None:
    route = trial.chain
    if route is None:
        return
    if route.status != "unsupported" and trial.caps != CHAIN_CALL_CAPS:
        found.append(Mismatch(f"{where}.caps", "are not the protocol's chain-call caps"))
    for position, call in enumerate(route.calls):
        at = f"{where}.chain.calls[{position}]"
        if call.index != position:
            found.append(Mismatch(at, f"index {call.index} is not its position {position}"))
        shortened = replace(CHAIN_CALL_CAPS, timeout_ms=call.caps.timeout_ms)
        if call.caps != shortened or not 0 < call.caps.timeout_ms <= CHAIN_CALL_CAPS.timeout_ms:
            found.append(Mismatch(f"{at}.caps", "are not the protocol's chain-call caps"))


def _rederive_chain(
    trial: Trial, task: TaskRecord, where: str, found: list[Mismatch], ctx: TrialContext
) -> dict[str, JSON]:
    """The route re-derived by the code that made it: planned under the run's chain
    protocol, each call's operands routed from the recorded replies, each reply re-judged."""
    route = trial.chain
    if route is None:
        found.append(Mismatch(where, "a controlled-chain trial without its route"))
        return {}
    legacy, limits = ctx.legacy, ctx.protocol.limits
    _check_call_caps(trial, where, found)
    plan = plan_route(task, ctx.protocol)
    if plan is None:
        if route.calls:
            found.append(Mismatch(f"{where}.chain", "an unsupported route made model calls"))
        derived_route = verify_route(task, None, (), None, 0, 0)
        return {
            "chain": to_json(derived_route),
            **_verdict(None, unsupported_failure(task), task.answer),
        }
    outputs: list[int] = []
    reservation = Reservation(limits)
    halt = route.halt
    refused = route_call_refusal(plan, limits)
    if refused is not None and (route.calls or halt != refused):
        found.append(Mismatch(f"{where}.chain", "the route is over its budgets"))
    for position, call in enumerate(route.calls):
        at = f"{where}.chain.calls[{position}]"
        planned = plan[position] if position < len(plan) else None
        if planned is None or (planned.op, planned.left, planned.right) != (
            call.op,
            call.left_source,
            call.right_source,
        ):
            found.append(Mismatch(at, "does not follow the task's route"))
            if call.parsed is None:
                break
            outputs.append(call.parsed)  # later calls still read their routed operands
            continue
        template = call.prompt.template_id
        if template not in (prompts.CHAIN_STEP, prompts.CHAIN_STEP_V1):
            template = prompts.CHAIN_STEP
        step = call_step(planned, task.registers, outputs, task.encoding, template)
        if (call.left, call.right) != (step.left, step.right):
            found.append(
                Mismatch(
                    at,
                    f"operands ({call.left}, {call.right}) are not the routed "
                    f"values ({step.left}, {step.right})",
                )
            )
        _check_prompt(call.prompt, step.prompt, at, found)
        if reservation.refusal(call.caps) is not None:
            found.append(Mismatch(at, "the call was made past the route's token budgets"))
        reservation.reserve(call.caps)
        if (call.reserved_input_tokens, call.reserved_output_tokens) != (
            reservation.input_tokens,
            reservation.output_tokens,
        ):
            found.append(Mismatch(at, "token reservations do not add up"))
        if not input_hash_matches(call.completion):
            found.append(Mismatch(f"{at}.completion", "input_sha256 is not the input's hash"))
        if not legacy:
            found.extend(completion_mismatches(call.completion, call.caps, f"{at}.completion"))
        verdict = judge_call(call.op, step.left, step.right, call.completion)
        derived_call = (verdict.parsed, verdict.local_expected, verdict.local_correct)
        if (call.parsed, call.local_expected, call.local_correct) != derived_call:
            found.append(
                Mismatch(
                    at,
                    f"recorded parsed/expected/correct "
                    f"{(call.parsed, call.local_expected, call.local_correct)}, "
                    f"re-derived {derived_call}",
                )
            )
        problem = verdict.failure
        if problem is not None:
            if halt is None or (halt.code != problem.code and halt.code != "route_timeout"):
                found.append(
                    Mismatch(
                        at, f"the reply fails ({problem.code}) but the route did not halt on it"
                    )
                )
            break
        if verdict.parsed is not None:
            outputs.append(verdict.parsed)
    derived_route = verify_route(
        task, plan, route.calls, halt, reservation.input_tokens, reservation.output_tokens
    )
    return {
        "chain": to_json(derived_route),
        "input_tokens": derived_route.used_input_tokens,
        "output_tokens": derived_route.used_output_tokens,
        **_verdict(chain_result(plan, outputs, halt), halt, task.answer),
    }


@lru_cache(maxsize=1)
def regenerated_records(params: TaskParams) -> tuple[TaskRecord, ...]:
    """The records of the task set of `params`, generated once for the checks of one trace
    (a 100,000-task set takes seconds, and a reader that keeps a recorded task equal to its
    regenerated one holds it once: `pyapp.report.run_folder`)."""
    return tuple(TaskRecord.of(t) for t in generate(params))


def note_mismatch(recorded: str | None, expected: str | None) -> str:
    """What is wrong with a recorded `revision_note`, in the document's own JSON terms."""
    if expected is None:
        return f"is {json.dumps(recorded)}, but a trace without a model (or a trace/1 one) has null"
    if recorded is None:
        return (
            "is null, but a trace/2 with a model records its revision in words "
            f"(null only without a model or in trace/1): expected {json.dumps(expected)}"
        )
    return f"is {json.dumps(recorded)}, but the model's provenance gives {json.dumps(expected)}"


def check_model_trial(trial: Trial, where: str, ctx: TrialContext, found: list[Mismatch]) -> None:
    """Its evidence is the session's; it ran under a successful load of the one identity."""
    model = ctx.model
    if model is None:
        found.append(Mismatch(where, "a model-condition trial in a trace without a model"))
        return
    if trial.evidence != model.evidence:
        found.append(
            Mismatch(
                where,
                f"labelled {trial.evidence!r} but the session's model is "
                f"{model.evidence!r} evidence",
            )
        )
    if ctx.legacy:
        return
    ok_loads = {load.load_id for load in model.loads if load.ok}
    if trial.load_id not in ok_loads:
        found.append(
            Mismatch(f"{where}.load_id", f"{trial.load_id} names no successful model load")
        )
    if trial.model_identity != identity_sha256(model):
        found.append(
            Mismatch(
                f"{where}.model_identity",
                "ran under another model identity than the sweep's (mixed identities)",
            )
        )


@dataclass(frozen=True)
class Correction:
    """A recorded field of a trial that re-derivation contradicts: what a reader is shown
    beside the re-derived value, and what no score is ever computed from."""

    trial_id: str
    """The trial, as a person looks for it (`model-only/recurrence-1`)."""
    field: str
    """The trial's field (`correct`, `outcome`, `result`, ...)."""
    recorded: JSON
    """What the trace records."""
    rederived: JSON
    """What the seed and the raw observations give."""


def rederive(
    document: JSON,
    *,
    read: Trace | None = None,
    changed: dict[int, dict[str, JSON]] | None = None,
) -> tuple[JSON, list[Correction]]:
    """The trace document with every trial's derivable fields (verdict, outcome, result,
    failure, program, steps, token counts, route) as re-derived and its summary recounted,
    and each recorded value that differed. A trace whose tasks cannot be regenerated, or
    whose every field re-derives, is returned upgraded but otherwise as it is (no copy of a
    current document; `reproduce`'s mismatches say why). `read`: the document's records
    when the caller has them already (the document may then omit its trials and tasks, as a
    large report holds it). `changed`: what `reproduce` found re-deriving the same records
    (its `changed`), used instead of re-deriving every trial again. `RecordError` when it is
    not a trace."""
    trace = read_trace(document) if read is None else read
    if trace.run.generator_version != GENERATOR_VERSION:
        return upgrade(document), []
    legacy = isinstance(document, dict) and document.get("schema_version") in (
        LEGACY_SCHEMA_VERSIONS
    )
    if changed is None:
        changed = _changed_fields(trace, legacy)
    corrections = [
        Correction(trace.trials[i].trial_id, key, to_json(getattr(trace.trials[i], key)), value)
        for i, fields in sorted(changed.items())
        for key, value in fields.items()
    ]
    if not corrections:  # an older document is still returned as trace/4
        return (upgrade(document) if "trials" in document else document), []
    upgraded = json.loads(json.dumps(upgrade(document)))
    if "trials" not in upgraded:
        upgraded["trials"] = [to_json(t) for t in trace.trials]
    if "tasks" not in upgraded:
        upgraded["tasks"] = [to_json(t) for t in trace.tasks]
    for i, fields in changed.items():
        upgraded["trials"][i].update(fields)
    upgraded["summary"] = to_json(summarise(read_trace(upgraded).trials))
    return upgraded, corrections


def _changed_fields(trace: Trace, legacy: bool) -> dict[int, dict[str, JSON]]:
    """Each trial's derivable fields that re-derivation contradicts, by trial index."""
    tasks = {task.id: task for task in regenerated_records(trace.run.task_params)}
    upgraded_count = upgraded_trials(trace, legacy)
    ctx = TrialContext(tasks, trace.model, legacy, protocol_of(trace.run.terms))
    changed: dict[int, dict[str, JSON]] = {}
    for i, trial in enumerate(trace.trials):
        task = tasks.get(trial.task_id)
        if task is None:
            continue
        ignored: list[Mismatch] = []
        where, old = f"$.trials[{i}]", legacy or i < upgraded_count
        if trial.condition == "supplied-program":
            derived = _rederive_program(trial, task, trial.program_text)
        elif trial.condition in ("model-only", "model-program"):
            derived = _rederive_whole_task(trial, task, where, ignored, old)
        else:
            derived = _rederive_chain(trial, task, where, ignored, replace(ctx, legacy=old))
        for key, value in derived.items():
            if to_json(getattr(trial, key)) != value:
                changed.setdefault(i, {})[key] = value
    return changed
