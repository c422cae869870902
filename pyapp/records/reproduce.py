"""Re-derive everything in a trace from its seed and its raw observations.

`reproduce` trusts nothing it can recompute: it regenerates the task set from the seed,
task parameters and generator version, re-executes every program text, re-verifies every
verdict and recounts the summary. Each disagreement is reported as a `Mismatch`; an empty
list means every derivable number in the trace was re-derived exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import interpreter
from pyapp.conditions import prompts
from pyapp.conditions.interpret import interpret, outcome_of
from pyapp.conditions.prompts import RenderedPrompt
from pyapp.conditions.run import (
    MODEL_CONDITIONS,
    exact_op,
    failure,
    generation_failure,
    parse_integer,
    plan_route,
    resolve_operand,
    verify_route,
)
from pyapp.records.base import JSON, RecordError, from_json, to_json
from pyapp.records.trace import EVIDENCE_NOTES, Failure, TaskRecord, Trace, Trial, summarise
from pyapp.tasks.taskset import GENERATOR_VERSION, generate

CONTROL_CONDITIONS = {"supplied-program": "control"}


@dataclass(frozen=True)
class Mismatch:
    """One thing in the trace that does not re-derive."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def _limits_of(trial: Trial) -> interpreter.Limits:
    b = trial.budget
    return interpreter.Limits(
        max_output_bytes=b.max_output_bytes,
        max_nodes=b.max_nodes,
        max_depth=b.max_depth,
        max_operations=b.max_operations,
        max_registers=b.max_registers,
    )


def _check_trial(trial: Trial, where: str, tasks: dict[str, TaskRecord]) -> list[Mismatch]:
    found: list[Mismatch] = []
    task = tasks.get(trial.task_id)
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

    if trial.condition == "supplied-program":
        reference = interpreter.canonical_program_text(interpreter.program_from_json(task.program))
        if trial.program_text != reference:
            found.append(Mismatch(where, "program_text is not the task's reference program"))
        derived = _rederive_program(trial, task, trial.program_text)
    elif trial.condition in ("model-only", "model-program"):
        derived = _rederive_whole_task(trial, task, where, found)
    else:
        derived = _rederive_chain(trial, task, where, found)
    for key, value in derived.items():
        recorded = to_json(getattr(trial, key))
        if recorded != value:
            found.append(
                Mismatch(
                    f"{where}.{key}",
                    f"recorded {json.dumps(recorded)}, re-derived {json.dumps(value)}",
                )
            )
    return found


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
    outcome = interpret(text, task.registers, _limits_of(trial))
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
    trial: Trial, task: TaskRecord, where: str, found: list[Mismatch]
) -> dict[str, JSON]:
    template = (
        prompts.INTEGER_ANSWER if trial.condition == "model-only" else prompts.REGISTER_PROGRAM
    )
    expected_prompt = prompts.render_task_prompt(
        template, task.registers, task.question, task.encoding
    )
    _check_prompt(trial.prompt, expected_prompt, where, found)
    completion = trial.completion
    if completion is None:
        found.append(Mismatch(where, "a model trial without its completion"))
        return {}
    tokens = {"input_tokens": completion.input_tokens, "output_tokens": completion.output_tokens}
    problem = generation_failure(completion)
    if trial.condition == "model-only":
        result = None
        if problem is None:
            result, problem = parse_integer(completion.text)
        return {
            "program_text": None,
            "program": None,
            **tokens,
            **_verdict(result, problem, task.answer),
        }
    if problem is not None:
        return {
            "program_text": None,
            "program": None,
            "steps": [],
            **tokens,
            **_verdict(None, problem, task.answer),
        }
    return {
        "program_text": completion.text,
        **tokens,
        **_rederive_program(trial, task, completion.text),
    }


def _rederive_chain(
    trial: Trial, task: TaskRecord, where: str, found: list[Mismatch]
) -> dict[str, JSON]:
    route = trial.chain
    if route is None:
        found.append(Mismatch(where, "a controlled-chain trial without its route"))
        return {}
    plan = plan_route(task)
    if plan is None:
        if route.calls:
            found.append(Mismatch(f"{where}.chain", "an unsupported route made model calls"))
        problem: Failure | None = failure(
            "unsupported", "route", f"no controlled route for {task.family}: no model call made"
        )
        derived_route = verify_route(task, None, (), None, 0, 0)
        return {"chain": to_json(derived_route), **_verdict(None, problem, task.answer)}
    outputs: list[int] = []
    reserved_in = reserved_out = 0
    halt = route.halt
    for call in route.calls:
        at = f"{where}.chain.calls[{call.index}]"
        planned = plan[call.index] if call.index < len(plan) else None
        if planned is None or (planned.op, planned.left, planned.right) != (
            call.op,
            call.left_source,
            call.right_source,
        ):
            found.append(Mismatch(at, "does not follow the task's route"))
            continue
        left = resolve_operand(planned.left, task.registers, outputs)
        right = resolve_operand(planned.right, task.registers, outputs)
        if (call.left, call.right) != (left, right):
            found.append(
                Mismatch(
                    at,
                    f"operands ({call.left}, {call.right}) are not the routed "
                    f"values ({left}, {right})",
                )
            )
        _check_prompt(call.prompt, prompts.render_chain_step(call.op, left, right), at, found)
        reserved_in += call.caps.max_input_tokens
        reserved_out += call.caps.max_new_tokens
        if (call.reserved_input_tokens, call.reserved_output_tokens) != (reserved_in, reserved_out):
            found.append(Mismatch(at, "token reservations do not add up"))
        problem = generation_failure(call.completion)
        parsed = None
        if problem is None:
            parsed, problem = parse_integer(call.completion.text)
        local_expected = exact_op(call.op, left, right)
        derived_call = (
            parsed,
            local_expected,
            None if parsed is None else parsed == local_expected,
        )
        if (call.parsed, call.local_expected, call.local_correct) != derived_call:
            found.append(
                Mismatch(
                    at,
                    f"recorded parsed/expected/correct "
                    f"{(call.parsed, call.local_expected, call.local_correct)}, "
                    f"re-derived {derived_call}",
                )
            )
        if problem is not None:
            if halt is None or (halt.code != problem.code and halt.code != "route_timeout"):
                found.append(
                    Mismatch(
                        at, f"the reply fails ({problem.code}) but the route did not halt on it"
                    )
                )
            break
        if parsed is not None:
            outputs.append(parsed)
    derived_route = verify_route(task, plan, route.calls, halt, reserved_in, reserved_out)
    result = outputs[-1] if len(outputs) == len(plan) and halt is None else None
    return {
        "chain": to_json(derived_route),
        "input_tokens": derived_route.used_input_tokens,
        "output_tokens": derived_route.used_output_tokens,
        **_verdict(result, halt, task.answer),
    }


def reproduce(document: JSON) -> list[Mismatch]:
    """Every mismatch between a trace document and what its seed and observations give."""
    try:
        trace: Trace = from_json(Trace, document)
    except RecordError as error:
        return [Mismatch(error.path, f"not a valid trace: {error.message}")]

    found: list[Mismatch] = []
    run = trace.run
    if run.generator_version != GENERATOR_VERSION:
        return [
            Mismatch(
                "$.run.generator_version",
                f"{run.generator_version!r} cannot be regenerated by {GENERATOR_VERSION!r}",
            )
        ]
    if run.seed != run.task_params.seed:
        found.append(Mismatch("$.run.seed", "differs from task_params.seed"))
    current = prompts.template_hashes()
    for template_id, digest in run.prompt_templates.items():
        if current.get(template_id) != digest:
            found.append(
                Mismatch(
                    f"$.run.prompt_templates.{template_id}",
                    "template hash differs from this version's template file",
                )
            )

    regenerated = tuple(TaskRecord.of(t) for t in generate(run.task_params))
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
    tasks = {task.id: task for task in regenerated}

    seen: set[str] = set()
    for i, trial in enumerate(trace.trials):
        where = f"$.trials[{i}]"
        if trial.trial_id in seen:
            found.append(Mismatch(where, f"duplicate trial {trial.trial_id!r}"))
        seen.add(trial.trial_id)
        if trial.condition not in run.conditions:
            found.append(Mismatch(where, f"condition {trial.condition!r} not listed in the run"))
        found.extend(_check_trial(trial, where, tasks))
        if trial.condition in MODEL_CONDITIONS:
            if trace.model is None:
                found.append(Mismatch(where, "a model-condition trial in a trace without a model"))
            elif trial.evidence != trace.model.evidence:
                found.append(
                    Mismatch(
                        where,
                        f"labelled {trial.evidence!r} but the session's model is "
                        f"{trace.model.evidence!r} evidence",
                    )
                )

    for i, interruption in enumerate(trace.interruptions):
        if interruption.partial is not None:
            where = f"$.interruptions[{i}].partial"
            if interruption.partial.trial_id != interruption.trial_id:
                found.append(Mismatch(where, "is not the interrupted trial"))
            found.extend(_check_trial(interruption.partial, where, tasks))

    for i, record in enumerate(trace.freezes):
        if record.condition not in run.conditions:
            found.append(Mismatch(f"$.freezes[{i}]", "freezes a condition the run did not list"))
        if not 0 <= record.after_trials <= len(trace.trials):
            found.append(Mismatch(f"$.freezes[{i}].after_trials", "outside the trial list"))
            return found
    if trace.freezes:
        from pyapp.predict.predictor import score_trace

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


def reproduce_predictions(trace_document: JSON, predictions_document: JSON) -> list[Mismatch]:
    """Every number of a predictions document that the trace does not re-derive."""
    from pyapp.predict.predictor import score_trace

    try:
        trace: Trace = from_json(Trace, trace_document)
        derived = to_json(score_trace(trace))
    except (RecordError, ValueError) as error:
        return [Mismatch("trace", f"cannot score the trace: {error}")]
    found: list[Mismatch] = []
    _differences(predictions_document, derived, "$", found)
    return found
