"""The whole-task model conditions and the controlled primitive chain.

| condition         | prompt                         | what the model must produce             |
|-------------------|--------------------------------|-----------------------------------------|
| model-only        | integer-answer/1               | exactly one decimal integer             |
| model-program     | register-program-examples/2    | one register tree, parsed and run once  |
| controlled-chain  | chain-step/1, one per primitive| one integer per call, routed onward     |

Whole-task conditions start a fresh transcript per task; the chain starts one per call.
Nothing is ever sent back to the model: no feedback, continuation, repair or retry. The
exact expected answer is compared only after the attempt has stopped.

Chain routes exist for isolated add/sub/mul, the encoding probes and affine recurrences
(one mul then one add per update). Determinants and derivatives have no route: they are
recorded as `unsupported` with zero model calls. A wrong but valid integer continues; an
invalid reply, a budget limit, a timeout or a cancellation halts the route, and the calls
after a halt are unobserved. Before each call its caps are reserved against the route's
budgets; a call that could exceed them is not made and halts the route. No interpreter is
called during a route.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import interpreter
from pyapp.conditions import prompts
from pyapp.conditions.clock import elapsed_ms, now_ns
from pyapp.conditions.interpret import interpret, outcome_of
from pyapp.conditions.model import CHAIN_CALL_CAPS, WHOLE_TASK_CAPS, Caps, Completion, ModelAdapter
from pyapp.records.trace import (
    EVIDENCE_NOTES,
    ChainCall,
    ChainRoute,
    Condition,
    Evidence,
    Failure,
    StepRecord,
    Timings,
    Trial,
    budget_of,
)
from pyapp.tasks.taskset import Task, TaskLike

MODEL_CONDITIONS: tuple[Condition, ...] = ("model-only", "model-program", "controlled-chain")


@dataclass(frozen=True)
class RouteLimits:
    """Budgets of one controlled-chain route (the design's numbers are the defaults)."""

    max_calls: int = 6
    """Most primitive calls in a route."""
    retries: int = 0
    """Retries per call (none)."""
    max_input_tokens: int = 3072
    """Input tokens the route may reserve in all."""
    max_output_tokens: int = 256
    """Output tokens the route may reserve in all."""
    timeout_ms: int = 90_000
    """Wall time of the whole route."""
    call: Caps = CHAIN_CALL_CAPS
    """Caps of each call (512 input, 32 output tokens, 1,024 bytes, 15 s)."""


DEFAULT_ROUTE_LIMITS = RouteLimits()

_INTEGER = re.compile(r"\s*([+-]?[0-9]+)\s*", re.ASCII)
_MAX_DIGITS = 20  # more digits than any safe integer has: refused before int() is called


class Cancelled(Exception):
    """Raised inside the controller when the user cancels a sweep."""


class CancelToken:
    """Set by the page's Cancel button (or a test); checked before every model call.

    `poll`, when given, is asked too (the browser passes a function that reads the main
    thread's Cancel flag, so a cancel reaches a controller that is busy awaiting calls)."""

    def __init__(self, poll: Callable[[], bool] | None = None) -> None:
        self._cancelled = False
        self._poll = poll

    def cancel(self) -> None:
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        if not self._cancelled and self._poll is not None and self._poll():
            self._cancelled = True
        return self._cancelled


def parse_integer(text: str) -> tuple[int | None, Failure | None]:
    """Exactly one decimal integer (optional sign, surrounding whitespace), nothing else."""
    match = _INTEGER.fullmatch(text)
    if match is None:
        shown = text if len(text) <= 80 else text[:77] + "..."
        return None, failure(
            "invalid_integer", "parse", f"the reply is not exactly one decimal integer: {shown!r}"
        )
    digits = match.group(1).lstrip("+-")
    if len(digits.lstrip("0")) > _MAX_DIGITS:
        return None, failure(
            "integer_out_of_range", "parse", f"{len(digits)} digits: beyond any safe integer"
        )
    return int(match.group(1)), None


def failure(code: str, stage: str, message: str) -> Failure:
    return Failure(
        code=code,
        stage=stage,  # type: ignore[arg-type]
        message=message,
        path=None,
        limit=None,
        maximum=None,
        value=None,
    )


def generation_failure(completion: Completion) -> Failure | None:
    """The failure a completion carries before any parsing: no generation, or it broke."""
    if completion.failure is not None:
        return failure(completion.failure.code, "generation", completion.failure.message)
    if completion.finish_reason in ("timeout", "cancelled", "error"):
        return failure(
            completion.finish_reason, "generation", f"generation ended: {completion.finish_reason}"
        )
    return None


def _evidence(adapter: ModelAdapter) -> Evidence:
    return adapter.provenance.evidence


async def _timed_generate(
    adapter: ModelAdapter, text: str, caps: Caps, cancel: CancelToken | None
) -> tuple[Completion, float]:
    if cancel is not None and cancel.cancelled:
        raise Cancelled
    start = now_ns()
    completion = await adapter.generate(text, caps)
    return completion, elapsed_ms(start, now_ns())


async def run_whole_task(
    task: Task,
    condition: Condition,
    adapter: ModelAdapter,
    *,
    caps: Caps = WHOLE_TASK_CAPS,
    limits: interpreter.Limits = interpreter.DEFAULT_LIMITS,
    cancel: CancelToken | None = None,
) -> Trial:
    """Model only or model program: one fresh transcript, one generation, no repair."""
    if condition not in ("model-only", "model-program"):
        raise ValueError(f"not a whole-task model condition: {condition}")
    start = now_ns()
    template = prompts.INTEGER_ANSWER if condition == "model-only" else prompts.REGISTER_PROGRAM
    prompt = prompts.render_task_prompt(template, task.registers, task.question, task.encoding)
    built = now_ns()
    completion, generation_ms = await _timed_generate(adapter, prompt.text, caps, cancel)

    result: int | None = None
    parse_ms = execution_ms = None
    program = program_text = None
    steps: tuple[StepRecord, ...] = ()
    problem = generation_failure(completion)
    if problem is None and condition == "model-only":
        parse_start = now_ns()
        result, problem = parse_integer(completion.text)
        parse_ms = elapsed_ms(parse_start, now_ns())
    elif problem is None:
        program_text = completion.text
        outcome = interpret(program_text, task.registers, limits)
        program, steps, result, problem = (
            outcome.program,
            outcome.steps,
            outcome.result,
            outcome.failure,
        )
        parse_ms, execution_ms = outcome.parse_ms, outcome.execution_ms

    verify_start = now_ns()
    correct = result is not None and result == task.answer
    end = now_ns()
    evidence = _evidence(adapter)
    return Trial(
        trial_id=f"{condition}/{task.id}",
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
        chain=None,
        result=result,
        expected=task.answer,
        correct=correct,
        outcome=outcome_of(correct, problem),
        failure=problem,
        input_tokens=completion.input_tokens,
        output_tokens=completion.output_tokens,
        budget=budget_of(limits),
        timings=Timings(
            construction_ms=elapsed_ms(start, built),
            generation_ms=generation_ms,
            parse_ms=parse_ms,
            execution_ms=execution_ms,
            verification_ms=elapsed_ms(verify_start, end),
            total_ms=elapsed_ms(start, end),
        ),
    )


# ---- controlled chains ----------------------------------------------------------------


@dataclass(frozen=True)
class PlannedCall:
    """One primitive of a route: the op and where each operand comes from."""

    op: str
    left: str  # "register:NAME" or "call:K"
    right: str


def plan_route(task: TaskLike) -> tuple[PlannedCall, ...] | None:
    """The route of a task, or None when the family has no controlled route."""
    if task.family in ("add", "sub", "mul"):
        return (PlannedCall(task.family, "register:a", "register:b"),)
    if task.family == "affine_recurrence" and task.steps is not None:
        calls: list[PlannedCall] = []
        current = "register:x0"
        for _ in range(task.steps):
            calls.append(PlannedCall("mul", "register:a", current))
            calls.append(PlannedCall("add", f"call:{len(calls) - 1}", "register:b"))
            current = f"call:{len(calls) - 1}"
        return tuple(calls)
    return None


def exact_op(op: str, left: int, right: int) -> int:
    return {"add": left + right, "sub": left - right, "mul": left * right}[op]


def resolve_operand(source: str, registers: Mapping[str, int], outputs: Sequence[int]) -> int:
    kind, _, name = source.partition(":")
    return registers[name] if kind == "register" else outputs[int(name)]


def _sum_or_none(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


async def run_chain(
    task: Task,
    adapter: ModelAdapter,
    *,
    limits: RouteLimits = DEFAULT_ROUTE_LIMITS,
    cancel: CancelToken | None = None,
) -> Trial:
    """The controlled primitive chain for one task (see the module docstring)."""
    start = now_ns()
    plan = plan_route(task)
    evidence = _evidence(adapter)
    calls: list[ChainCall] = []
    outputs: list[int] = []
    halt: Failure | None = None
    reserved_in = reserved_out = 0
    construction_ns = generation_ns = parse_ns = 0
    route_deadline = start + limits.timeout_ms * 1_000_000

    if plan is not None and len(plan) > limits.max_calls:
        halt = failure(
            "route_call_budget",
            "route",
            f"the route needs {len(plan)} calls, over the limit of {limits.max_calls}",
        )
    for index, planned in enumerate(plan or ()):
        if halt is not None:
            break
        if cancel is not None and cancel.cancelled:
            halt = failure("cancelled", "route", "cancelled before this call")
            break
        caps = limits.call
        if reserved_in + caps.max_input_tokens > limits.max_input_tokens:
            halt = failure(
                "route_input_budget",
                "route",
                "reserving this call's input cap "
                f"would pass the route's {limits.max_input_tokens} tokens",
            )
            break
        if reserved_out + caps.max_new_tokens > limits.max_output_tokens:
            halt = failure(
                "route_output_budget",
                "route",
                "reserving this call's output cap "
                f"would pass the route's {limits.max_output_tokens} tokens",
            )
            break
        remaining_ms = (route_deadline - now_ns()) / 1e6
        if remaining_ms <= 0:
            halt = failure("route_timeout", "route", f"the route's {limits.timeout_ms} ms ran out")
            break
        if remaining_ms < caps.timeout_ms:
            caps = replace(caps, timeout_ms=max(1, int(remaining_ms)))
        reserved_in += caps.max_input_tokens
        reserved_out += caps.max_new_tokens

        built_start = now_ns()
        left = resolve_operand(planned.left, task.registers, outputs)
        right = resolve_operand(planned.right, task.registers, outputs)
        prompt = prompts.render_chain_step(planned.op, left, right)
        construction_ns += now_ns() - built_start
        try:
            completion, call_ms = await _timed_generate(adapter, prompt.text, caps, cancel)
        except Cancelled:
            reserved_in -= caps.max_input_tokens
            reserved_out -= caps.max_new_tokens
            halt = failure("cancelled", "route", "cancelled before this call")
            break
        generation_ns += int(call_ms * 1e6)

        parse_start = now_ns()
        problem = generation_failure(completion)
        parsed: int | None = None
        if problem is None:
            parsed, problem = parse_integer(completion.text)
        parse_ns += now_ns() - parse_start
        if problem is not None and problem.code == "timeout" and now_ns() >= route_deadline:
            problem = failure("route_timeout", "generation", "the route's time ran out")
        local_expected = exact_op(planned.op, left, right)
        calls.append(
            ChainCall(
                index=index,
                op=planned.op,  # type: ignore[arg-type]
                left=left,
                right=right,
                left_source=planned.left,
                right_source=planned.right,
                prompt=prompt,
                caps=caps,
                reserved_input_tokens=reserved_in,
                reserved_output_tokens=reserved_out,
                completion=completion,
                parsed=parsed,
                local_expected=local_expected,
                local_correct=None if parsed is None else parsed == local_expected,
                generation_ms=call_ms,
            )
        )
        if problem is not None:
            halt = problem
            break
        assert parsed is not None
        outputs.append(parsed)

    verify_start = now_ns()
    route = verify_route(task, plan, tuple(calls), halt, reserved_in, reserved_out)
    result = outputs[-1] if plan is not None and len(outputs) == len(plan) else None
    correct = result is not None and result == task.answer
    if plan is None:
        problem_out: Failure | None = failure(
            "unsupported", "route", f"no controlled route for {task.family}: no model call made"
        )
    else:
        problem_out = halt
    end = now_ns()
    return Trial(
        trial_id=f"controlled-chain/{task.id}",
        task_id=task.id,
        condition="controlled-chain",
        evidence=evidence,
        evidence_note=EVIDENCE_NOTES[evidence],
        prompt=None,
        caps=limits.call if plan is not None else None,
        completion=None,
        program_text=None,
        program=None,
        steps=(),
        chain=route,
        result=result,
        expected=task.answer,
        correct=correct,
        outcome=outcome_of(correct, problem_out),
        failure=problem_out,
        input_tokens=route.used_input_tokens,
        output_tokens=route.used_output_tokens,
        budget=budget_of(interpreter.DEFAULT_LIMITS),
        timings=Timings(
            construction_ms=construction_ns / 1e6,
            generation_ms=generation_ns / 1e6 if calls else None,
            parse_ms=parse_ns / 1e6 if calls else None,
            execution_ms=None,
            verification_ms=elapsed_ms(verify_start, end),
            total_ms=elapsed_ms(start, end),
        ),
    )


def verify_route(
    task: TaskLike,
    plan: tuple[PlannedCall, ...] | None,
    calls: tuple[ChainCall, ...],
    halt: Failure | None,
    reserved_in: int,
    reserved_out: int,
) -> ChainRoute:
    """After completion or halt: local and final correctness, never sent to the model."""
    if plan is None:
        return ChainRoute(
            status="unsupported",
            planned_calls=0,
            calls=(),
            unobserved_calls=0,
            halt=None,
            first_local_error=None,
            all_steps_correct=None,
            final_correct=None,
            reserved_input_tokens=0,
            reserved_output_tokens=0,
            used_input_tokens=None,
            used_output_tokens=None,
        )
    first_error = next((c.index for c in calls if c.local_correct is False), None)
    completed = halt is None and len(calls) == len(plan)
    final = calls[-1].parsed if completed else None
    return ChainRoute(
        status="completed" if completed else "halted",
        planned_calls=len(plan),
        calls=calls,
        unobserved_calls=len(plan) - len(calls),
        halt=halt,
        first_local_error=first_error,
        all_steps_correct=completed and all(c.local_correct for c in calls),
        final_correct=final is not None and final == task.answer,
        reserved_input_tokens=reserved_in,
        reserved_output_tokens=reserved_out,
        used_input_tokens=_sum_or_none([c.completion.input_tokens for c in calls]),
        used_output_tokens=_sum_or_none([c.completion.output_tokens for c in calls]),
    )


Progress = Callable[[dict[str, object]], Awaitable[None] | None]


async def run_trial(
    task: Task,
    condition: Condition,
    adapter: ModelAdapter,
    cancel: CancelToken | None = None,
) -> Trial:
    if condition == "controlled-chain":
        return await run_chain(task, adapter, cancel=cancel)
    return await run_whole_task(task, condition, adapter, cancel=cancel)


async def run_sweep(
    tasks: Sequence[Task],
    conditions: Sequence[Condition],
    adapter: ModelAdapter,
    *,
    cancel: CancelToken | None = None,
    progress: Progress | None = None,
) -> tuple[list[Trial], bool]:
    """Every (condition, task) pair in order. Returns the trials and whether it was
    cancelled; a cancelled sweep keeps every trial finished before the cancel."""
    from pyapp.conditions.interpret import run_trial as run_control

    trials: list[Trial] = []
    total = len(tasks) * len(conditions)
    for condition in conditions:
        for task in tasks:
            if cancel is not None and cancel.cancelled:
                return trials, True
            if progress is not None:
                maybe = progress(
                    {"done": len(trials), "total": total, "condition": condition, "task": task.id}
                )
                if asyncio.iscoroutine(maybe):
                    await maybe
            if condition == "supplied-program":
                trials.append(run_control(task))
                continue
            try:
                trials.append(await run_trial(task, condition, adapter, cancel))
            except Cancelled:
                return trials, True
    if progress is not None:
        maybe = progress({"done": len(trials), "total": total, "condition": None, "task": None})
        if asyncio.iscoroutine(maybe):
            await maybe
    return trials, False


__all__ = [
    "DEFAULT_ROUTE_LIMITS",
    "MODEL_CONDITIONS",
    "CancelToken",
    "RouteLimits",
    "parse_integer",
    "plan_route",
    "run_chain",
    "run_sweep",
    "run_whole_task",
]
