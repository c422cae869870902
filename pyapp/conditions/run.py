"""The whole-task model conditions and the controlled primitive chain.

| condition         | prompt                         | what the model must produce             |
|-------------------|--------------------------------|-----------------------------------------|
| model-only        | integer-answer/1               | exactly one decimal integer             |
| model-program     | register-program-examples/2    | one register tree, parsed and run once  |
| controlled-chain  | chain-step/2, one per primitive| one integer per call, routed onward     |

Whole-task conditions start a fresh transcript per task; the chain starts one per call.
Nothing is ever sent back to the model: no feedback, continuation, repair or retry. The
exact expected answer is compared only after the attempt has stopped.

`judge_whole_task` and `judge_call` turn a completion into a verdict; `reproduce` calls the
same two functions, so a recorded verdict is re-derived by the code that made it.

This module holds the whole-task conditions and `run_trial`, which dispatches; the
controlled chain is `pyapp.conditions.route`, and what every model condition does with one
call and its reply (the Cancel token, the timed call, parsing one integer) is
`pyapp.conditions.replies`. Their names stay importable from here (`__all__`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import interpreter
from pyapp.conditions.interpret import interpret, judged_timings
from pyapp.conditions.replies import _MAX_DIGITS as _MAX_DIGITS
from pyapp.conditions.replies import (
    CancelToken,
    generation_failure,
    parse_integer,
    timed_generate,
)
from pyapp.conditions.route import (
    Reservation,
    call_step,
    chain_capacity_problem,
    chain_result,
    exact_op,
    judge_call,
    plan_route,
    resolve_operand,
    route_call_refusal,
    route_of,
    run_chain,
    unsupported_failure,
    verify_route,
)
from pyapp.records import (
    CHAIN_CALL_CAPS,
    CONDITIONS,
    DEFAULT_CHAIN_PROTOCOL,
    DEFAULT_ROUTE_LIMITS,
    WHOLE_TASK_CAPS,
    Caps,
    ChainProtocol,
    Completion,
    Condition,
    Failure,
    ModelAdapter,
    ProgramJSON,
    RenderedPrompt,
    RouteLimits,
    StepRecord,
    Trial,
    budget_of,
    elapsed_ms,
    new_trial,
    now_ns,
    prompts,
    utc_now,
)
from pyapp.tasks import Task, TaskLike

MODEL_CONDITIONS: tuple[Condition, ...] = tuple(c.name for c in CONDITIONS if c.model)
"""The model conditions, in `CONDITIONS`' order (model-only, model-program, chain)."""
ALL_CONDITIONS: tuple[Condition, ...] = (
    *(c.name for c in CONDITIONS if not c.model),
    *MODEL_CONDITIONS,
)
"""Every condition, the control first (the order runs and traces list them)."""


# ---- whole-task conditions ------------------------------------------------------------


def whole_task_prompt(task: TaskLike, condition: Condition) -> RenderedPrompt:
    template = prompts.INTEGER_ANSWER if condition == "model-only" else prompts.REGISTER_PROGRAM
    return prompts.render_task_prompt(template, task.registers, task.question, task.encoding)


@dataclass(frozen=True)
class WholeTaskVerdict:
    """What one whole-task completion gives: the judge's result, shared with `reproduce`."""

    result: int | None
    failure: Failure | None
    program_text: str | None
    program: ProgramJSON | None
    steps: tuple[StepRecord, ...]
    parse_ms: float | None
    execution_ms: float | None


def judge_whole_task(
    condition: Condition,
    registers: Mapping[str, int],
    completion: Completion,
    limits: interpreter.Limits = interpreter.DEFAULT_LIMITS,
) -> WholeTaskVerdict:
    """Model only: parse one integer. Model program: parse and run the tree once. Nothing
    is parsed when the generation itself failed."""
    problem = generation_failure(completion)
    if problem is not None:
        return WholeTaskVerdict(None, problem, None, None, (), None, None)
    if condition == "model-only":
        start = now_ns()
        result, problem = parse_integer(completion.text)
        return WholeTaskVerdict(result, problem, None, None, (), elapsed_ms(start, now_ns()), None)
    outcome = interpret(completion.text, registers, limits)
    return WholeTaskVerdict(
        outcome.result,
        outcome.failure,
        completion.text,
        outcome.program,
        outcome.steps,
        outcome.parse_ms,
        outcome.execution_ms,
    )


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
    started_at = utc_now()
    start = now_ns()
    prompt = whole_task_prompt(task, condition)
    built = now_ns()
    completion, generation_ms, _ = await timed_generate(adapter, prompt.text, caps, cancel)
    verdict = judge_whole_task(condition, task.registers, completion, limits)
    timings = judged_timings(start, built, generation_ms, verdict.parse_ms, verdict.execution_ms)
    return new_trial(
        task,
        condition,
        adapter.provenance.evidence,
        result=verdict.result,
        failure=verdict.failure,
        started_at=started_at,
        prompt=prompt,
        caps=caps,
        completion=completion,
        program_text=verdict.program_text,
        program=verdict.program,
        steps=verdict.steps,
        input_tokens=completion.input_tokens,
        output_tokens=completion.output_tokens,
        budget=budget_of(limits),
        timings=timings,
    )


async def run_trial(
    task: Task,
    condition: Condition,
    adapter: ModelAdapter,
    cancel: CancelToken | None = None,
    protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL,
) -> Trial:
    """One trial of `condition`; a chain runs under the run's chain `protocol`."""
    if condition == "controlled-chain":
        return await run_chain(task, adapter, protocol=protocol, cancel=cancel)
    return await run_whole_task(task, condition, adapter, cancel=cancel)


__all__ = [  # the runners here, and what other modules import from here under the old path
    "ALL_CONDITIONS",
    "CHAIN_CALL_CAPS",
    "DEFAULT_ROUTE_LIMITS",
    "MODEL_CONDITIONS",
    "CancelToken",
    "Reservation",
    "RouteLimits",
    "call_step",
    "chain_capacity_problem",
    "chain_result",
    "exact_op",
    "generation_failure",
    "judge_call",
    "judge_whole_task",
    "parse_integer",
    "plan_route",
    "resolve_operand",
    "route_call_refusal",
    "route_of",
    "run_chain",
    "run_trial",
    "run_whole_task",
    "unsupported_failure",
    "verify_route",
    "whole_task_prompt",
]
