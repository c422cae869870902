"""Re-derive everything in a trace from its seed and its raw observations.

`reproduce` trusts nothing it can recompute: it regenerates the task set from the seed,
task parameters and generator version, re-executes every program text, re-judges every
reply with the judges that made the verdicts (`judge_whole_task`, `judge_call`), checks
every recorded budget against the protocol's, every evidence label against the model's
source, every trial's load against the model's loads and the sweep's one identity, the
timeline (held-out trials after their condition's freeze, a freeze naming only earlier
trials), every interruption, the consistency of each completion and of the model's loads
with what their writer guarantees (`pyapp.verify.consistency`), and recounts the summary.
Each disagreement is reported as a `Mismatch`; an empty list means every derivable number in
the trace was re-derived exactly.

A trace/3 document's hash chain is re-walked (`pyapp.records.chain`): the first broken link
(a record deleted, inserted, reordered or edited) and every sequence gap is a mismatch; each
freeze's task set and state-aware fit are compared with the ones the trials give.

An older document is upgraded first (`pyapp.records.trace.upgrade`); what its version did
not record is not checked, and `limitations` says so in a line per check (trace/1: no
timestamps, loads, identities, route limits; trace/1 and trace/2: no chain, no frozen task
set or state-aware fit).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache

import interpreter
from pyapp.conditions.failures import kind_of
from pyapp.conditions.interpret import interpret
from pyapp.conditions.run import (
    MODEL_CONDITIONS,
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
from pyapp.predict.predictor import (
    as_version,
    heldout_tasks,
    rederive_reference,
    refit_state_aware,
    score_trace,
    tasks_of,
    without_absent_fields,
)
from pyapp.records import prompts
from pyapp.records.base import JSON, RecordError, to_json
from pyapp.records.chain import chain_mismatches
from pyapp.records.evidence import FIXTURE_SOURCES, subject_mismatches
from pyapp.records.frozen import task_set_identity
from pyapp.records.model import (
    CHAIN_CALL_CAPS,
    DEFAULT_ROUTE_LIMITS,
    TEST_FIXTURE_CONFIGS,
    WHOLE_TASK_CAPS,
    ModelProvenance,
    identity_sha256,
    input_hash_matches,
    revision_note,
)
from pyapp.records.prompts import RenderedPrompt
from pyapp.records.trace import (
    EVIDENCE_NOTES,
    LEGACY_SCHEMA_VERSIONS,
    SCHEMA_VERSION,
    Failure,
    TaskRecord,
    Trace,
    Trial,
    budget_of,
    outcome_of,
    read_trace,
    summarise,
    upgrade,
)
from pyapp.tasks.taskset import GENERATOR_VERSION, TaskParams, generate
from pyapp.verify.consistency import Mismatch, completion_mismatches, model_mismatches

CONTROL_CONDITIONS = {"supplied-program": "control"}
PROTOCOL_BUDGET = budget_of(interpreter.DEFAULT_LIMITS)


@dataclass(frozen=True)
class _Context:
    """What every trial check needs besides the trial."""

    tasks: dict[str, TaskRecord]
    model: ModelProvenance | None
    legacy: bool
    """The trial (or the whole document) was recorded under trace/1: fields it did not
    record are not checked."""


def _unstamped(trial: Trial) -> bool:
    """Recorded under trace/1 and upgraded: only such a trial has no timestamps."""
    return trial.started_at is None and trial.ended_at is None


def _upgraded_trials(trace: Trace, legacy: bool) -> int:
    """How many leading trials were recorded under trace/1: all of a trace/1 document; in a
    trace/2 document, those of a trace/1 sweep that was resumed and continued (they come
    first, without timestamps). A later trial without timestamps is a mismatch."""
    if legacy:
        return len(trace.trials)
    count = 0
    while count < len(trace.trials) and _unstamped(trace.trials[count]):
        count += 1
    return count


def _check_trial(
    trial: Trial, where: str, ctx: _Context, changed: dict[str, JSON] | None = None
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
    if trial.evidence_note != EVIDENCE_NOTES[trial.evidence]:
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
        derived = _rederive_chain(trial, task, where, found, ctx.legacy)
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


def _check_budgets(trial: Trial, where: str, ctx: _Context, found: list[Mismatch]) -> None:
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
        if trial.route_limits != DEFAULT_ROUTE_LIMITS:
            found.append(Mismatch(f"{where}.route_limits", "are not the protocol's route limits"))
    elif not chain and trial.budget != PROTOCOL_BUDGET:
        found.append(Mismatch(f"{where}.budget", "is not the protocol's interpreter budget"))
    if not chain and trial.route_limits is not None:
        found.append(Mismatch(f"{where}.route_limits", "only a chain trial has route limits"))


def _check_timestamps(trial: Trial, where: str, ctx: _Context, found: list[Mismatch]) -> None:
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
    trial: Trial, task: TaskRecord, where: str, found: list[Mismatch], legacy: bool
) -> dict[str, JSON]:
    route = trial.chain
    if route is None:
        found.append(Mismatch(where, "a controlled-chain trial without its route"))
        return {}
    _check_call_caps(trial, where, found)
    plan = plan_route(task)
    if plan is None:
        if route.calls:
            found.append(Mismatch(f"{where}.chain", "an unsupported route made model calls"))
        derived_route = verify_route(task, None, (), None, 0, 0)
        return {
            "chain": to_json(derived_route),
            **_verdict(None, unsupported_failure(task), task.answer),
        }
    outputs: list[int] = []
    reservation = Reservation(DEFAULT_ROUTE_LIMITS)
    halt = route.halt
    refused = route_call_refusal(plan, DEFAULT_ROUTE_LIMITS)
    if refused is not None and (route.calls or halt != refused):
        found.append(Mismatch(f"{where}.chain", "the route is over the call budget"))
    for position, call in enumerate(route.calls):
        at = f"{where}.chain.calls[{position}]"
        planned = plan[position] if position < len(plan) else None
        if planned is None or (planned.op, planned.left, planned.right) != (
            call.op,
            call.left_source,
            call.right_source,
        ):
            found.append(Mismatch(at, "does not follow the task's route"))
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


def limitations(document: JSON) -> list[str]:
    """One line per check an older document cannot support (empty for a whole trace/3)."""
    try:
        trace = read_trace(document)
    except RecordError:
        return []
    version = document.get("schema_version") if isinstance(document, dict) else None
    lines = []
    if version == "trace/1":
        lines.append(
            "trace/1: timestamps, model loads, identities and route limits were not recorded: "
            "not checked"
        )
    _, note = chain_mismatches(trace, required=version == SCHEMA_VERSION)
    if note is not None:
        lines.append(note)
    if any(f.state_aware is None for f in trace.freezes):
        lines.append(
            "frozen state-aware fit and task set absent (recorded before trace/3): the "
            "state-aware predictor is fitted at scoring time, not frozen"
        )
    elif any(f.reference_probability is None for f in trace.freezes):
        lines.append(
            "reference forecast not frozen (recorded before it was): the skill scores derive "
            "it from the frozen profile (its pooled success rate)"
        )
    return lines


def reproduce(
    document: JSON,
    *,
    read: Trace | None = None,
    changed: dict[int, dict[str, JSON]] | None = None,
) -> list[Mismatch]:
    """Every mismatch between a trace document and what its seed and observations give.
    `read`: the document's records when the caller has read them already (`read_trace`),
    so a large trace is not held twice. `changed`: filled, by trial index, with each trial
    field re-derivation contradicts — what `rederive` needs, so a caller that wants both
    re-derives every trial once."""
    version = document.get("schema_version") if isinstance(document, dict) else None
    legacy = version == "trace/1"
    try:
        trace = read_trace(document) if read is None else read
    except RecordError as error:
        return [Mismatch(error.path, f"not a valid trace: {error.message}")]

    run = trace.run
    if run.generator_version != GENERATOR_VERSION:
        return [
            Mismatch(
                "$.run.generator_version",
                f"{run.generator_version!r} cannot be regenerated by {GENERATOR_VERSION!r}",
            )
        ]
    found: list[Mismatch] = []
    if run.seed != run.task_params.seed:
        found.append(Mismatch("$.run.seed", "differs from task_params.seed"))
    if run.generation is None and not legacy:
        message = "is null, but a trace/2 records how generations decode (null only in trace/1)"
        found.append(Mismatch("$.run.generation", message))
    _check_templates(trace, found)
    tasks = _check_tasks(trace, found)
    _check_model(trace, legacy, found)
    ctx = _Context(tasks=tasks, model=trace.model, legacy=legacy)
    upgraded = _upgraded_trials(trace, legacy)

    seen: set[str] = set()
    for i, trial in enumerate(trace.trials):
        where = f"$.trials[{i}]"
        trial_ctx = replace(ctx, legacy=True) if i < upgraded else ctx
        if trial.trial_id in seen:
            found.append(Mismatch(where, f"duplicate trial {trial.trial_id!r}"))
        seen.add(trial.trial_id)
        if trial.condition not in run.conditions:
            found.append(Mismatch(where, f"condition {trial.condition!r} not listed in the run"))
        fields: dict[str, JSON] = {}
        found.extend(_check_trial(trial, where, trial_ctx, fields))
        if fields and changed is not None:
            changed[i] = fields
        if trial.condition in MODEL_CONDITIONS:
            _check_model_trial(trial, where, trial_ctx, found)

    _check_interruptions(trace, ctx, upgraded, found)
    found.extend(chain_mismatches(trace, required=version == SCHEMA_VERSION)[0])
    _check_frozen_fits(trace, found)
    if not legacy:
        for i, entry in enumerate(trace.journal):
            found.extend(
                completion_mismatches(entry.completion, entry.caps, f"$.journal[{i}].completion")
            )
    if not _check_timeline(trace, legacy, found):
        return found
    if trace.freezes:
        try:
            score_trace(trace)
        except ValueError as error:
            found.append(Mismatch("$.freezes", str(error)))

    summary = summarise(trace.trials)
    if summary != trace.summary:
        found.append(
            Mismatch(
                "$.summary", f"recorded {to_json(trace.summary)}, re-derived {to_json(summary)}"
            )
        )
    return found


def _check_frozen_fits(trace: Trace, found: list[Mismatch]) -> None:
    """Each freeze's task set is the run's, and its state-aware fit and reference forecast
    are what the trials before it give (re-derived here); a chained (trace/3) freeze records
    the task set and the fit (the reference forecast since it was frozen)."""

    identity = task_set_identity(trace.run.task_params, trace.run.generator_version)
    for i, record in enumerate(trace.freezes):
        where = f"$.freezes[{i}]"
        if not 0 <= record.after_trials <= len(trace.trials):
            continue  # named by the timeline check
        if record.state_aware is None or record.task_set is None:
            if record.prev_sha256 is not None:
                found.append(
                    Mismatch(where, "a trace/3 freeze records its task set and state-aware fit")
                )
            continue
        if record.task_set != identity:
            found.append(Mismatch(f"{where}.task_set", "is not the run's task set"))
        try:
            refit = refit_state_aware(trace, record)
            reference = rederive_reference(trace, record)
        except (KeyError, ValueError, OverflowError, ZeroDivisionError):
            continue  # a trial naming no task, or numbers out of range: named elsewhere
        if record.reference_probability is not None and record.reference_probability != reference:
            found.append(
                Mismatch(
                    f"{where}.reference_probability",
                    f"the frozen reference forecast {record.reference_probability!r} is not the "
                    f"frozen profile's pooled success rate, re-derived {reference!r}",
                )
            )
        if refit != record.state_aware:
            found.append(
                Mismatch(
                    f"{where}.state_aware",
                    f"the frozen fit ({record.state_aware.sha256[:12]}…, "
                    f"{record.state_aware.version}) differs from the re-fit "
                    f"({refit.sha256[:12]}…, {refit.version})",
                )
            )


def _check_templates(trace: Trace, found: list[Mismatch]) -> None:
    """Every template a prompt used is listed with the checkout's hash; none is missing."""
    current = prompts.template_hashes()
    listed = trace.run.prompt_templates
    for template_id, digest in listed.items():
        if current.get(template_id) != digest:
            found.append(
                Mismatch(
                    f"$.run.prompt_templates.{template_id}",
                    "template hash differs from this version's template file",
                )
            )
    used: set[str] = set()
    for trial in trace.trials:
        if trial.prompt is not None:
            used.add(trial.prompt.template_id)
        if trial.chain is not None:
            used |= {call.prompt.template_id for call in trial.chain.calls}
    needed = {
        "model-only": prompts.INTEGER_ANSWER,
        "model-program": prompts.REGISTER_PROGRAM,
    }
    used |= {needed[c] for c in trace.run.conditions if c in needed}
    for template_id in sorted(used - set(listed)):
        found.append(Mismatch("$.run.prompt_templates", f"the hash of {template_id!r} is missing"))


@lru_cache(maxsize=1)
def regenerated_records(params: TaskParams) -> tuple[TaskRecord, ...]:
    """The records of the task set of `params`, generated once for the checks of one trace
    (a 100,000-task set takes seconds, and a reader that keeps a recorded task equal to its
    regenerated one holds it once: `pyapp.report.run_folder`)."""
    return tuple(TaskRecord.of(t) for t in generate(params))


def _check_tasks(trace: Trace, found: list[Mismatch]) -> dict[str, TaskRecord]:
    regenerated = regenerated_records(trace.run.task_params)
    if len(regenerated) != len(trace.tasks):
        found.append(
            Mismatch(
                "$.tasks", f"{len(trace.tasks)} tasks recorded, the seed gives {len(regenerated)}"
            )
        )
    for i, (recorded, derived) in enumerate(zip(trace.tasks, regenerated, strict=False)):
        if recorded != derived:
            diff = sorted(k for k, v in to_json(derived).items() if to_json(recorded)[k] != v)
            found.append(
                Mismatch(
                    f"$.tasks[{i}]",
                    f"{recorded.id} differs from the regenerated task in {', '.join(diff)}",
                )
            )
    return {task.id: task for task in regenerated}


def _check_model(trace: Trace, legacy: bool, found: list[Mismatch]) -> None:
    """A fixture (or a synthetic model) is never relabelled model evidence."""
    model = trace.model
    expected_note = None if model is None or legacy else revision_note(model)
    if trace.revision_note != expected_note:
        found.append(
            Mismatch("$.revision_note", _note_mismatch(trace.revision_note, expected_note))
        )
    if model is None:
        return
    if not legacy:
        found.extend(model_mismatches(model))
    found.extend(subject_mismatches(model))
    if model.source in FIXTURE_SOURCES and model.evidence != "fixture":
        found.append(
            Mismatch(
                "$.model.evidence",
                f"source {model.source!r} is a fixture, never {model.evidence!r} evidence",
            )
        )
    if model.source == "synthetic" and model.evidence != "synthetic":
        found.append(
            Mismatch(
                "$.model.evidence",
                f"source 'synthetic' is a synthetic model, never {model.evidence!r} evidence",
            )
        )
    if model.config_sha256 in TEST_FIXTURE_CONFIGS and model.evidence != "fixture":
        found.append(
            Mismatch(
                "$.model.evidence",
                f"config.json {model.config_sha256[:12]}… is a test fixture's, never "
                f"{model.evidence!r} evidence",
            )
        )


def _note_mismatch(recorded: str | None, expected: str | None) -> str:
    """What is wrong with a recorded `revision_note`, in the document's own JSON terms."""
    if expected is None:
        return f"is {json.dumps(recorded)}, but a trace without a model (or a trace/1 one) has null"
    if recorded is None:
        return (
            "is null, but a trace/2 with a model records its revision in words "
            f"(null only without a model or in trace/1): expected {json.dumps(expected)}"
        )
    return f"is {json.dumps(recorded)}, but the model's provenance gives {json.dumps(expected)}"


def _check_model_trial(trial: Trial, where: str, ctx: _Context, found: list[Mismatch]) -> None:
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


def _check_interruptions(trace: Trace, ctx: _Context, upgraded: int, found: list[Mismatch]) -> None:
    """Each interruption names a trial of this run, came before that trial was observed, and
    its `partial` trial re-derives. trace/1 did not record when an interruption happened (the
    upgrade numbers them last): against a trial recorded under trace/1 the order is unknown,
    so it is not checked (the trial was attempted again after it, as trace/1 did)."""
    observed = {t.trial_id: t.sequence for t in trace.trials[upgraded:]}
    for i, interruption in enumerate(trace.interruptions):
        where = f"$.interruptions[{i}]"
        condition, _, task_id = interruption.trial_id.partition("/")
        if condition not in trace.run.conditions or task_id not in ctx.tasks:
            found.append(Mismatch(where, f"{interruption.trial_id!r} is no trial of this run"))
            continue
        earlier = observed.get(interruption.trial_id)
        if earlier is not None and earlier < interruption.sequence:
            found.append(Mismatch(where, "interrupts a trial that was already observed"))
        code = interruption.code
        expected_kind = {"cancelled": "cancelled", "infrastructure": "infrastructure"}.get(
            interruption.reason
        )
        if expected_kind is not None and (code is None or kind_of(code) != expected_kind):
            found.append(
                Mismatch(f"{where}.code", f"{code!r} is not a {interruption.reason} failure")
            )
        partial = interruption.partial
        if partial is None:
            continue
        at = f"{where}.partial"
        if partial.trial_id != interruption.trial_id:
            found.append(Mismatch(at, "is not the interrupted trial"))
        if partial.failure is None or partial.failure.code != code:
            found.append(Mismatch(at, f"does not fail with the interruption's code {code!r}"))
        legacy = ctx.legacy or _unstamped(partial)
        found.extend(_check_trial(partial, at, replace(ctx, legacy=legacy)))


def _check_timeline(trace: Trace, legacy: bool, found: list[Mismatch]) -> bool:
    """Sequence numbers in order; each freeze names only earlier trials; every held-out
    trial of a model condition comes after its condition's freeze. False when a freeze
    names trials that do not exist (nothing can be scored then)."""

    sequences = [t.sequence for t in trace.trials]
    if sequences != sorted(sequences):
        found.append(Mismatch("$.trials", "sequence numbers are not in the recorded order"))
    everything = sequences + [f.sequence for f in trace.freezes]
    everything += [i.sequence for i in trace.interruptions]
    if len(set(everything)) != len(everything):
        found.append(Mismatch("$", "two events share a sequence number"))
    for i, record in enumerate(trace.freezes):
        where = f"$.freezes[{i}]"
        if record.condition not in trace.run.conditions:
            found.append(Mismatch(where, "freezes a condition the run did not list"))
        if not 0 <= record.after_trials <= len(trace.trials):
            found.append(Mismatch(f"{where}.after_trials", "outside the trial list"))
            return False
        before, after = trace.trials[: record.after_trials], trace.trials[record.after_trials :]
        if any(t.sequence > record.sequence for t in before) or any(
            t.sequence < record.sequence for t in after
        ):
            found.append(Mismatch(where, "names trials that came after it"))
        ended = [t.ended_at for t in before if t.ended_at is not None]
        if not legacy and ended and max(ended) > record.frozen_at:
            found.append(Mismatch(f"{where}.frozen_at", "is before a trial it names ended"))
    for condition in trace.run.conditions:
        if condition not in MODEL_CONDITIONS:
            continue
        tasks = tasks_of(trace.run.task_params)
        heldout = {t.id for t in heldout_tasks(tasks, condition)}
        freezes = [f for f in trace.freezes if f.condition == condition]
        for i, trial in enumerate(trace.trials):
            if trial.condition != condition or trial.task_id not in heldout:
                continue
            earlier = [f for f in freezes if f.after_trials <= i]
            if not earlier:
                found.append(
                    Mismatch(f"$.trials[{i}]", "a held-out trial with no freeze before it")
                )
            elif trial.started_at is not None and trial.started_at < earlier[0].frozen_at:
                found.append(
                    Mismatch(f"$.trials[{i}].started_at", "is before its condition's freeze")
                )
    return True


def _differences(recorded: JSON, derived: JSON, path: str, out: list[Mismatch]) -> None:
    if isinstance(recorded, dict) and isinstance(derived, dict):
        for key in sorted(set(recorded) | set(derived)):
            if key not in recorded or key not in derived:
                out.append(Mismatch(f"{path}.{key}", "present on one side only"))
            else:
                _differences(recorded[key], derived[key], f"{path}.{key}", out)
    elif isinstance(recorded, list) and isinstance(derived, list):
        if len(recorded) != len(derived):
            out.append(Mismatch(path, f"{len(recorded)} items recorded, {len(derived)} derived"))
        for i, (a, b) in enumerate(zip(recorded, derived, strict=False)):
            _differences(a, b, f"{path}[{i}]", out)
    elif recorded != derived or type(recorded) is not type(derived):
        out.append(
            Mismatch(path, f"recorded {json.dumps(recorded)}, re-derived {json.dumps(derived)}")
        )


def reproduce_predictions(
    trace_document: JSON, predictions_document: JSON, *, read: Trace | None = None
) -> list[Mismatch]:
    """Every number of a predictions document that the trace does not re-derive (`read`:
    the trace's records, when the caller has them already)."""

    try:
        trace = read_trace(trace_document) if read is None else read
        derived = to_json(score_trace(trace))
        if isinstance(predictions_document, dict):  # an older document: its version's fields
            derived = as_version(derived, str(predictions_document.get("schema_version")))
            derived = without_absent_fields(derived, predictions_document)
    except (RecordError, ValueError) as error:
        return [Mismatch("trace", f"cannot score the trace: {error}")]
    found: list[Mismatch] = []
    _differences(predictions_document, derived, "$", found)
    return found


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
    if not corrections:  # an older document is still returned as trace/3
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
    upgraded_count = _upgraded_trials(trace, legacy)
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
            derived = _rederive_chain(trial, task, where, ignored, old)
        for key, value in derived.items():
            if to_json(getattr(trial, key)) != value:
                changed.setdefault(i, {})[key] = value
    return changed
