"""The controlled primitive chain: the external computation route of a task and its
verdicts.

A task's route is its reference program in the interpreter's evaluation order (post-order,
left argument first: `route_of`): one primitive call per operation, each operand a
register or the *actual parsed* output of an earlier call. The run's chain protocol
(`pyapp.records.terms.ChainProtocol`) decides which families are routed and the one set
of limits of every route: the design's (the default) routes isolated add/sub/mul, the
encoding probes and affine recurrences (one mul then one add per update), and records
determinants and derivatives as `unsupported` with zero model calls; the extended
protocol routes those too (seven calls each, the constants 3 and 2 read from the `three`
and `two` registers by model calls like any other). A wrong but valid integer continues;
an invalid reply, a budget limit, a timeout or a cancellation halts the route, and the
calls after a halt are unobserved. Before each call its caps are reserved against the
route's budgets; a call that could exceed them is not made and halts the route; a route
whose plan is over its limits is refused when the sweep starts
(`chain_capacity_problem`). No interpreter is called during a route.

`judge_call` turns one call's completion into a verdict; `reproduce` calls the same
function (and `call_step`, `verify_route`, `chain_result`), so a recorded verdict is
re-derived by the code that made it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import interpreter
from pyapp.conditions.replies import (
    CancelToken,
    failure,
    generation_failure,
    parse_integer,
    timed_generate,
)
from pyapp.errors import Cancelled, ParamsError
from pyapp.records import (
    DEFAULT_CHAIN_PROTOCOL,
    Caps,
    ChainCall,
    ChainProtocol,
    ChainRoute,
    Completion,
    Failure,
    ModelAdapter,
    RenderedPrompt,
    RouteLimits,
    Timings,
    Trial,
    elapsed_ms,
    new_trial,
    now_ns,
    prompts,
    utc_now,
)
from pyapp.tasks import PROGRAMS, Task, TaskLike, TaskParams


@dataclass(frozen=True)
class PlannedCall:
    """One primitive of a route: the op and where each operand comes from."""

    op: str
    left: str  # "register:NAME" or "call:K"
    right: str


def route_of_program(program: interpreter.Node) -> tuple[PlannedCall, ...]:
    """One call per operation of `program`, in the interpreter's evaluation order (its
    code: post-order, left argument first); an operand is the register the program reads or
    the output of the call that computed it."""
    code = interpreter.program_from_json(program).code
    calls: list[PlannedCall] = []
    sources: list[str] = []
    for entry in code:
        if isinstance(entry, str):  # a register read
            sources.append(f"register:{entry}")
            continue
        right = sources.pop()
        calls.append(PlannedCall(entry.name, sources.pop(), right))
        sources.append(f"call:{len(calls) - 1}")
    return tuple(calls)


@lru_cache(maxsize=64)
def _family_route(family: str, steps: int | None) -> tuple[PlannedCall, ...]:
    return route_of_program(PROGRAMS[family](steps))


def route_of(task: TaskLike) -> tuple[PlannedCall, ...]:
    """The route of a task's reference program, whatever the protocol: isolated primitives
    one call; a recurrence one mul and one add per update; a determinant x2−x1, y3−y1, ×,
    x3−x1, y2−y1, ×, −; a derivative three·c3, x0·x0, ×, two·c2, ×x0, +, +c1."""
    return _family_route(task.family, task.steps)


def plan_route(
    task: TaskLike, protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL
) -> tuple[PlannedCall, ...] | None:
    """The route of a task under `protocol`, or None when the protocol does not route its
    family (the design's protocol: determinants and derivatives)."""
    if task.family not in protocol.families:
        return None
    if task.family == "affine_recurrence" and task.steps is None:
        return None
    return route_of(task)


def exact_op(op: str, left: int, right: int) -> int:
    return {"add": left + right, "sub": left - right, "mul": left * right}[op]


def resolve_operand(source: str, registers: Mapping[str, int], outputs: Sequence[int]) -> int:
    kind, _, name = source.partition(":")
    return registers[name] if kind == "register" else outputs[int(name)]


def unsupported_failure(task: TaskLike) -> Failure:
    return failure(
        "unsupported", "route", f"no controlled route for {task.family}: no model call made"
    )


def route_call_refusal(plan: Sequence[PlannedCall], limits: RouteLimits) -> Failure | None:
    """Why a route has more calls than a route allows (None: it does not); checked as the
    route starts, before any call."""
    if len(plan) > limits.max_calls:
        return failure(
            "route_call_budget",
            "route",
            f"the route needs {len(plan)} calls, over the limit of {limits.max_calls}",
            limit="route_calls",
            maximum=limits.max_calls,
            value=len(plan),
        )
    return None


def plan_refusal(plan: Sequence[PlannedCall], limits: RouteLimits) -> Failure | None:
    """Why a route's plan is over its limits as a whole (None: it fits): more calls than a
    route allows, more tokens than its budgets once every call's caps are reserved, or
    more wall time than the route has once every call's deadline is counted. What a sweep
    refuses at its start (`chain_capacity_problem`)."""
    refusal = route_call_refusal(plan, limits)
    reservation = Reservation(limits)
    for _ in plan:
        refusal = refusal or reservation.refusal(limits.call)
        reservation.reserve(limits.call)
    wall_ms = len(plan) * limits.call.timeout_ms
    if refusal is None and wall_ms > limits.timeout_ms:
        refusal = failure(
            "route_timeout",
            "route",
            f"the route's calls may take {wall_ms} ms, over its {limits.timeout_ms} ms",
            limit="route_timeout_ms",
            maximum=limits.timeout_ms,
            value=wall_ms,
        )
    return refusal


def chain_capacity_problem(
    params: TaskParams, protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL
) -> ParamsError | None:
    """Why the controlled chain cannot run these task parameters under `protocol` (a route
    whose plan is over the protocol's limits: a recurrence of too many updates), naming the
    parameter; None when it can. Protocol capacity is never the model's failure: a sweep
    with the chain refuses such parameters at its start (`pyapp.experiment.phases.Sweep`)."""
    limits = protocol.limits
    for family, steps, name in _routed_shapes(params, protocol):
        plan = _family_route(family, steps)
        refusal = plan_refusal(plan, limits)
        if refusal is None:
            continue
        if family == "affine_recurrence":
            worst = max(params.recurrence_steps)
            most = max(
                (
                    n
                    for n in range(1, worst + 1)
                    if plan_refusal(_family_route(family, n), limits) is None
                ),
                default=0,
            )
            return ParamsError(
                f"recurrence_steps: a recurrence of {worst} updates needs {2 * worst} chain "
                f"calls, over the {protocol.name} protocol's route limits "
                f"({refusal.message}); the controlled chain runs at most {most} updates "
                "(leave out controlled-chain, or use fewer steps)",
                limit="recurrence_steps",
                maximum=most,
                value=worst,
            )
        return ParamsError(
            f"{name}: a {family} route is over the {protocol.name} protocol's route limits "
            f"({refusal.message}); leave out controlled-chain",
            limit=name,
            maximum=0,
            value=getattr(params, name),
        )
    return None


def _routed_shapes(
    params: TaskParams, protocol: ChainProtocol
) -> list[tuple[str, int | None, str]]:
    """(family, steps, parameter) of each held-out route shape the parameters generate and
    the protocol routes, the longest recurrence first."""
    shapes: list[tuple[str, int | None, str]] = []
    if "affine_recurrence" in protocol.families and params.recurrence_steps:
        shapes.append(("affine_recurrence", max(params.recurrence_steps), "recurrence_steps"))
    for family, name in (
        ("triangle_determinant", "determinants"),
        ("cubic_derivative", "derivatives"),
    ):
        if family in protocol.families and getattr(params, name) > 0:
            shapes.append((family, None, name))
    return shapes


def route_timeout(stage: str, limits: RouteLimits, deadline_ns: int) -> Failure:
    """The route's wall time ran out: `value` is the milliseconds it has taken."""
    taken_ms = limits.timeout_ms + (now_ns() - deadline_ns) / 1e6
    return failure(
        "route_timeout",
        stage,
        f"the route's {limits.timeout_ms} ms ran out",
        limit="route_timeout_ms",
        maximum=limits.timeout_ms,
        value=math.ceil(taken_ms),
    )


@dataclass
class Reservation:
    """Token caps reserved against a route's budgets before each call."""

    limits: RouteLimits
    input_tokens: int = 0
    output_tokens: int = 0

    def refusal(self, caps: Caps) -> Failure | None:
        """Why reserving `caps` now would pass the route's budgets (None: it fits)."""
        if self.input_tokens + caps.max_input_tokens > self.limits.max_input_tokens:
            return failure(
                "route_input_budget",
                "route",
                "reserving this call's input cap "
                f"would pass the route's {self.limits.max_input_tokens} tokens",
                limit="route_input_tokens",
                maximum=self.limits.max_input_tokens,
                value=self.input_tokens + caps.max_input_tokens,
            )
        if self.output_tokens + caps.max_new_tokens > self.limits.max_output_tokens:
            return failure(
                "route_output_budget",
                "route",
                "reserving this call's output cap "
                f"would pass the route's {self.limits.max_output_tokens} tokens",
                limit="route_output_tokens",
                maximum=self.limits.max_output_tokens,
                value=self.output_tokens + caps.max_new_tokens,
            )
        return None

    def reserve(self, caps: Caps, sign: int = 1) -> None:
        self.input_tokens += sign * caps.max_input_tokens
        self.output_tokens += sign * caps.max_new_tokens


@dataclass(frozen=True)
class CallStep:
    """One call of a route before it is made: its operands and its prompt."""

    left: int
    right: int
    prompt: RenderedPrompt


def call_step(
    planned: PlannedCall,
    registers: Mapping[str, int],
    outputs: Sequence[int],
    encoding: str,
    template_id: str = prompts.CHAIN_STEP,
) -> CallStep:
    """The operands actually routed to a call and the prompt that sends them."""
    left = resolve_operand(planned.left, registers, outputs)
    right = resolve_operand(planned.right, registers, outputs)
    prompt = prompts.render_chain_step(planned.op, left, right, encoding, template_id)
    return CallStep(left, right, prompt)


@dataclass(frozen=True)
class CallVerdict:
    """What one chain call's completion gives (shared by running and reproducing)."""

    parsed: int | None
    failure: Failure | None
    local_expected: int

    @property
    def local_correct(self) -> bool | None:
        return None if self.parsed is None else self.parsed == self.local_expected


def judge_call(op: str, left: int, right: int, completion: Completion) -> CallVerdict:
    """The judge of one chain call: a failed generation, else exactly one integer; the
    exact value of `op` on the operands actually sent, never shown to the model."""
    problem = generation_failure(completion)
    parsed: int | None = None
    if problem is None:
        parsed, problem = parse_integer(completion.text)
    return CallVerdict(parsed, problem, exact_op(op, left, right))


def _sum_or_none(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


@dataclass
class _RouteRun:
    """The mutable state of one route while it runs."""

    calls: list[ChainCall]
    outputs: list[int]
    halt: Failure | None = None
    construction_ns: int = 0
    generation_ns: int = 0
    parse_ns: int = 0


async def _run_route(
    task: Task,
    plan: tuple[PlannedCall, ...],
    adapter: ModelAdapter,
    limits: RouteLimits,
    cancel: CancelToken | None,
    reservation: Reservation,
    deadline_ns: int,
) -> _RouteRun:
    state = _RouteRun(calls=[], outputs=[], halt=route_call_refusal(plan, limits))
    for index, planned in enumerate(plan if state.halt is None else ()):
        if cancel is not None and cancel.cancelled:
            state.halt = failure("cancelled", "route", "cancelled before this call")
            break
        caps = limits.call
        state.halt = reservation.refusal(caps)
        remaining_ms = (deadline_ns - now_ns()) / 1e6
        if state.halt is None and remaining_ms <= 0:
            state.halt = route_timeout("route", limits, deadline_ns)
        if state.halt is not None:
            break
        if remaining_ms < caps.timeout_ms:
            caps = replace(caps, timeout_ms=max(1, int(remaining_ms)))
        reservation.reserve(caps)
        built_start = now_ns()
        step = call_step(planned, task.registers, state.outputs, task.encoding)
        state.construction_ns += now_ns() - built_start
        try:
            completion, call_ms, wait_ns = await timed_generate(
                adapter, step.prompt.text, caps, cancel
            )
        except Cancelled:
            reservation.reserve(caps, sign=-1)
            state.halt = failure("cancelled", "route", "cancelled before this call")
            break
        state.generation_ns += int(call_ms * 1e6)
        # a wait for a (re)load is not the route's: its budget is the model's time alone
        deadline_ns += wait_ns
        parse_start = now_ns()
        verdict = judge_call(planned.op, step.left, step.right, completion)
        state.parse_ns += now_ns() - parse_start
        problem = verdict.failure
        if problem is not None and problem.code == "timeout" and now_ns() >= deadline_ns:
            problem = route_timeout("generation", limits, deadline_ns)
        state.calls.append(
            ChainCall(
                index=index,
                op=planned.op,  # type: ignore[arg-type]
                left=step.left,
                right=step.right,
                left_source=planned.left,
                right_source=planned.right,
                prompt=step.prompt,
                caps=caps,
                reserved_input_tokens=reservation.input_tokens,
                reserved_output_tokens=reservation.output_tokens,
                completion=completion,
                parsed=verdict.parsed,
                local_expected=verdict.local_expected,
                local_correct=verdict.local_correct,
                generation_ms=call_ms,
            )
        )
        if problem is not None:
            state.halt = problem
            break
        assert verdict.parsed is not None
        state.outputs.append(verdict.parsed)
    return state


async def run_chain(
    task: Task,
    adapter: ModelAdapter,
    *,
    protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL,
    limits: RouteLimits | None = None,
    cancel: CancelToken | None = None,
) -> Trial:
    """The controlled primitive chain for one task under `protocol` (see the module
    docstring); `limits`: the protocol's unless given (tests of the budgets)."""
    started_at = utc_now()
    start = now_ns()
    limits = protocol.limits if limits is None else limits
    plan = plan_route(task, protocol)
    reservation = Reservation(limits)
    state = await _run_route(
        task,
        plan or (),
        adapter,
        limits,
        cancel,
        reservation,
        start + limits.timeout_ms * 1_000_000,
    )
    verify_start = now_ns()
    calls = tuple(state.calls)
    route = verify_route(
        task, plan, calls, state.halt, reservation.input_tokens, reservation.output_tokens
    )
    end = now_ns()
    return new_trial(
        task,
        "controlled-chain",
        adapter.provenance.evidence,
        result=chain_result(plan, state.outputs, state.halt),
        failure=unsupported_failure(task) if plan is None else state.halt,
        started_at=started_at,
        caps=limits.call if plan is not None else None,
        chain=route,
        input_tokens=route.used_input_tokens,
        output_tokens=route.used_output_tokens,
        route_limits=limits,
        timings=Timings(
            construction_ms=state.construction_ns / 1e6,
            generation_ms=state.generation_ns / 1e6 if calls else None,
            parse_ms=state.parse_ns / 1e6 if calls else None,
            execution_ms=None,
            verification_ms=elapsed_ms(verify_start, end),
            total_ms=elapsed_ms(start, end),
        ),
    )


def chain_result(
    plan: Sequence[PlannedCall] | None, outputs: Sequence[int], halt: Failure | None
) -> int | None:
    """The route's final output: the last call's, once every planned call was made."""
    if plan is None or halt is not None or len(outputs) != len(plan):
        return None
    return outputs[-1]


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
