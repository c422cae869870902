"""What a frozen profile forecasts for one held-out task, before it is observed: the
product predictor (`predict_product`: the product of the rates of the task's operations,
the sum of their mean costs) and the state-aware predictor (`predict_state_aware`: per step, from
its exact operands, along the reference program or the chain's route, `task_steps`)."""

from __future__ import annotations

import math

from pyapp.conditions import exact_op, plan_route, resolve_operand
from pyapp.predict import state_aware
from pyapp.predict.predictions import FrozenProfile, OpProfile, Prediction
from pyapp.records import (
    DEFAULT_CHAIN_PROTOCOL,
    ChainProtocol,
    Condition,
    StateAwareModel,
    protocol_of,
)
from pyapp.tasks import Task


def predict_product(frozen: FrozenProfile, task: Task) -> Prediction:
    """The product predictor: a chain route's planned calls under the frozen chain protocol
    (`frozen.terms`), the reference program's operations otherwise."""
    if frozen.profile.condition == "controlled-chain":
        route = plan_route(task, protocol_of(frozen.terms))
        ops = tuple(c.op for c in route) if route is not None else ()
    else:
        ops = task.operations
    by_op: dict[str, OpProfile] = {p.op: p for p in frozen.profile.ops}
    missing = sorted({op for op in ops if by_op[op].rate is None})
    if not ops or missing:
        note = f"no profile trials for {', '.join(missing)}" if missing else "no operations"
        return Prediction(task.id, ops, None, None, None, None, note)
    probability = 1.0
    for op in ops:
        probability *= by_op[op].rate or 0.0

    def total(field: str) -> float | None:
        values = [getattr(by_op[op], field) for op in ops]
        return None if any(v is None for v in values) else math.fsum(values)

    return Prediction(
        task_id=task.id,
        ops=ops,
        probability=probability,
        cost_ms=total("mean_cost_ms"),
        input_tokens=total("mean_input_tokens"),
        output_tokens=total("mean_output_tokens"),
        note=None,
    )


def task_steps(
    task: Task, condition: Condition, protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL
) -> list[state_aware.Step]:
    """The steps a prediction composes, with exact values: the route's planned calls for
    chains (under the run's chain `protocol`), the reference program's nodes otherwise."""

    if condition != "controlled-chain":
        return state_aware.program_steps(task.program, dict(task.registers))
    outputs: list[int] = []
    steps = []
    for call in plan_route(task, protocol) or ():
        left = resolve_operand(call.left, task.registers, outputs)
        right = resolve_operand(call.right, task.registers, outputs)
        outputs.append(exact_op(call.op, left, right))
        steps.append(state_aware.Step(call.op, left, right, outputs[-1]))
    return steps


def predict_state_aware(
    model: StateAwareModel,
    task: Task,
    condition: Condition,
    protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL,
) -> Prediction:
    steps = task_steps(task, condition, protocol)
    ops = tuple(step.op for step in steps)
    if not steps:
        return Prediction(task.id, ops, None, None, None, None, "no operations")
    chances = [state_aware.step_probability(model, step) for step in steps]
    if any(c is None for c in chances):
        missing = sorted({s.op for s, c in zip(steps, chances, strict=True) if c is None})
        note = f"no profile trials for {', '.join(missing)}"
        return Prediction(task.id, ops, None, None, None, None, note)
    probability = math.prod(c or 0.0 for c in chances)
    costs = [state_aware.step_cost(model, step) for step in steps]
    cost = None if any(c is None for c in costs) else math.fsum(c or 0.0 for c in costs)
    return Prediction(task.id, ops, probability, cost, None, None, None)
