"""The supplied-program condition: each task's correct reference program is executed.

This is a CONTROL. It tests the interpreter and the harness end to end (render → parse
→ execute → verify), it involves no model, and every trial it produces is labelled
`evidence: "control"` so that nothing downstream can count it as model evidence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import interpreter
from pyapp.records import (
    BrowserInfo,
    Condition,
    Failure,
    ProgramJSON,
    StepRecord,
    Timings,
    Trace,
    Trial,
    budget_of,
    elapsed_ms,
    genesis,
    make_trace,
    new_trial,
    now_ns,
    sha256_of,
    utc_now,
    with_trials,
)
from pyapp.tasks import Task, TaskParams, generate

CONDITION: Condition = "supplied-program"


def failure_of(error: interpreter.ProgramError, stage: str) -> Failure:
    return Failure(
        code=error.code,
        stage=stage,  # type: ignore[arg-type]
        message=error.message,
        path=error.path,
        limit=error.limit,
        maximum=error.maximum,
        value=error.value,
    )


def steps_of(execution: interpreter.Execution) -> tuple[StepRecord, ...]:
    return tuple(
        StepRecord(path=s.path, op=s.op, operands=s.operands, result=s.result)  # type: ignore[arg-type]
        for s in execution.steps
    )


@dataclass(frozen=True)
class Interpretation:
    """What parsing and executing one program text gave, with the phase boundaries."""

    program: ProgramJSON | None
    steps: tuple[StepRecord, ...]
    result: int | None
    failure: Failure | None
    parse_ms: float | None
    execution_ms: float | None


def interpret(
    text: str, registers: Mapping[str, int], limits: interpreter.Limits
) -> Interpretation:
    """Parse `text` strictly and execute it once. Shared by every condition that runs a
    program and by `reproduce`, so a recorded verdict is re-derived by the same code."""
    start = now_ns()
    node = None
    try:
        node = interpreter.parse_program(text, limits)
    except interpreter.ProgramError as error:
        return Interpretation(
            None, (), None, failure_of(error, "parse"), elapsed_ms(start, now_ns()), None
        )
    parsed = now_ns()
    program = interpreter.program_to_json(node)
    try:
        execution = interpreter.execute(node, registers, limits)
    except interpreter.ProgramError as error:
        failure = failure_of(error, "execution")
        return Interpretation(
            program, (), None, failure, elapsed_ms(start, parsed), elapsed_ms(parsed, now_ns())
        )
    executed = now_ns()
    return Interpretation(
        program,
        steps_of(execution),
        execution.value,
        None,
        elapsed_ms(start, parsed),
        elapsed_ms(parsed, executed),
    )


def judged_timings(
    start: int,
    built: int,
    generation_ms: float | None,
    parse_ms: float | None,
    execution_ms: float | None,
) -> Timings:
    """A whole-task trial's phases, taken right after its verdict: construction from
    `start` to `built` (clock.now_ns values), the measured generation, parse and execution,
    total from `start`. Verification is null: for a whole-task trial it is one integer
    equality (`new_trial`), not a phase the clock can time (trace/3; before, two
    back-to-back clock reads were recorded here)."""
    end = now_ns()
    return Timings(
        construction_ms=elapsed_ms(start, built),
        generation_ms=generation_ms,
        parse_ms=parse_ms,
        execution_ms=execution_ms,
        verification_ms=None,
        total_ms=elapsed_ms(start, end),
    )


def run_control_trial(task: Task, limits: interpreter.Limits = interpreter.DEFAULT_LIMITS) -> Trial:
    """The supplied-program control trial of `task` (never model evidence): render the
    reference program as text, parse it, execute it once, verify it. (`run.run_trial` runs
    a model condition.)"""
    started_at = utc_now()
    start = now_ns()
    text = interpreter.canonical_program_text(task.program)
    built = now_ns()
    outcome = interpret(text, task.registers, limits)
    timings = judged_timings(start, built, None, outcome.parse_ms, outcome.execution_ms)
    return new_trial(
        task,
        CONDITION,
        "control",
        result=outcome.result,
        failure=outcome.failure,
        started_at=started_at,
        program_text=text,
        program=outcome.program,
        steps=outcome.steps,
        budget=budget_of(limits),
        timings=timings,
    )


def run_supplied(params: TaskParams | None = None, browser: BrowserInfo | None = None) -> Trace:
    """Run the supplied-program control over the whole task set of `params`."""
    p = params or TaskParams()
    tasks = generate(p)
    trace = make_trace(p, tasks, (), (CONDITION,), None, browser)
    head = genesis(trace.run.run_id, trace.run.created_at)
    trials = []
    for sequence, task in enumerate(tasks, start=1):  # one hash chain (trace/3)
        trials.append(replace(run_control_trial(task), sequence=sequence, prev_sha256=head))
        head = sha256_of(trials[-1])
    return with_trials(trace, tuple(trials))
