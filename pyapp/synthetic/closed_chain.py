"""Controlled chains, exactly, from a structure's parameters alone (as `closed_form`).

A chain is enumerated call by call on the routed values (`chain_outcome`): each call halted
by `format` (an unparseable reply halts the route), compensated after an off-track output
(`cancellation`), perturbed, or right; routes agreeing on the outputs later calls read merge.
All-step correctness is the closed form (1 − f)ⁿ·[ρ(1 − max eᵢ) + (1 − ρ)Π(1 − eᵢ)], eᵢ each
call's error rate on the exact route (`all_steps_closed_form`). `outcome` dispatches a trial
of any condition to its enumeration.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from interpreter import Node, Op
from pyapp.records import SyntheticSpec
from pyapp.synthetic.closed_form import (
    APPLY,
    OFF,
    PRUNE,
    Outcome,
    WrongRule,
    answer_outcome,
    exact_values,
    latent_branches,
    postorder,
    program_outcome,
    step_cost,
    step_outcomes,
    step_wrong,
)


@dataclass(frozen=True)
class Call:
    """One call of a route: its op and each operand (a register's value or call k's output)."""

    op: str
    left: int | str
    right: int | str


def route_of(tree: Node, registers: Mapping[str, int]) -> list[Call]:
    """The route a chain walks: the tree's op nodes in evaluation order, one call each, each
    operand a register or the output of the call that computed it."""
    calls: list[Call] = []
    made: dict[int, str] = {}

    def source(node: Node) -> int | str:
        return made[id(node)] if isinstance(node, Op) else int(registers[node.name])

    for node in postorder(tree):
        if isinstance(node, Op):
            calls.append(Call(node.op, source(node.args[0]), source(node.args[1])))
            made[id(node)] = f"call:{len(calls) - 1}"
    return calls


def all_steps_closed_form(
    spec: SyntheticSpec, tree: Node, registers: Mapping[str, int], encoding: str
) -> float:
    """P(a chain completes with every call right): (1 − f)ⁿ·[ρ(1 − max eᵢ) + (1 − ρ)Π(1 − eᵢ)],
    eᵢ each call's error rate on the exact route (position 1: one step per call)."""
    exact = exact_values(tree, registers)
    rates = [
        step_wrong(spec, n.op, exact[id(n.args[0])], exact[id(n.args[1])], encoding, 1)
        for n in postorder(tree)
        if isinstance(n, Op)
    ]
    f = spec.format.p_unparseable if spec.format is not None else 0.0
    rho = spec.correlation.rho if spec.correlation is not None else 0.0
    shared = 1.0 - max(rates)
    independent = math.prod(1.0 - e for e in rates)
    return (1.0 - f) ** len(rates) * (rho * shared + (1.0 - rho) * independent)


def chain_outcome(
    spec: SyntheticSpec,
    tree: Node,
    registers: Mapping[str, int],
    encoding: str,
    prune: float = PRUNE,
) -> Outcome:
    """Controlled chain: every call on the routed values; an unparseable reply halts."""
    route = route_of(tree, registers)
    exact = [0] * len(route)
    for k, call in enumerate(route):
        left, right = (
            exact[int(s.split(":")[1])] if isinstance(s, str) else s
            for s in (call.left, call.right)
        )
        exact[k] = APPLY[call.op](left, right)
    f = spec.format.p_unparseable if spec.format is not None else 0.0
    final = cost = dropped = 0.0
    positions = [(c.op, 1) for c in route]
    for weight, rule in latent_branches(spec, encoding, positions):
        got = _chain_branch(spec, route, exact, rule, f, prune / weight)
        final, cost, dropped = (
            final + weight * got[0],
            cost + weight * got[1],
            dropped + weight * got[2],
        )
    return Outcome(
        final=final,
        cost_ms=cost,
        dropped=dropped,
        all_steps=all_steps_closed_form(spec, tree, registers, encoding),
    )


def _keep(into: dict[ChainState, tuple[float, float]], key: ChainState, p: float, c: float) -> None:
    old_p, old_c = into.get(key, (0.0, 0.0))
    into[key] = (old_p + p, old_c + c)


ChainState = tuple[int | None, ...] | None
"""The outputs so far (those no later call reads forgotten: None), or `OFF`: off-track, the
outputs too unlikely to follow one by one."""


def _chain_branch(
    spec: SyntheticSpec,
    route: Sequence[Call],
    exact: Sequence[int],
    rule: WrongRule,
    f: float,
    floor: float,
) -> tuple[float, float, float]:
    """(P(final right), E cost, off-track mass at the end) of a route under one latent
    branch. Routes agreeing on the outputs later calls read merge; a state below `floor`
    joins `OFF`, which a later call compensates back to the exact route (or not)."""
    read_later = [
        {
            int(s.split(":")[1])
            for c in route[k + 1 :]
            for s in (c.left, c.right)
            if isinstance(s, str)
        }
        for k in range(len(route))
    ]
    cancel = spec.cancellation.cancel if spec.cancellation is not None else 0.0
    states: dict[ChainState, tuple[float, float]] = {(): (1.0, 0.0)}
    halted_cost = 0.0
    for k, call in enumerate(route):
        out: dict[ChainState, tuple[float, float]] = {}
        back: ChainState = OFF if any(j < k for j in read_later[k]) else (*(None,) * k, exact[k])
        for outputs, (p, c) in states.items():
            halted_cost += f * (c + p * spec.cost.call_ms)  # the call replies prose: halt
            if outputs is OFF:  # compensated back to the exact route, or still off
                mass, step = (1.0 - f) * p, spec.cost.call_ms + step_cost(spec, exact[k])
                _keep(out, back, mass * cancel, cancel * (1.0 - f) * (c + p * step))
                _keep(out, OFF, mass * (1.0 - cancel), (1.0 - cancel) * (1.0 - f) * (c + p * step))
                continue
            left, right = (
                _output(outputs, int(s.split(":")[1])) if isinstance(s, str) else s
                for s in (call.left, call.right)
            )
            off = k > 0 and outputs[-1] != exact[k - 1]
            computed = APPLY[call.op](left, right)
            rate = rule(call.op, left, right, 1)
            outcomes, lost = step_outcomes(spec, computed, exact[k], off, rate, p, floor)
            forget = tuple(v if j in read_later[k] else None for j, v in enumerate(outputs))
            for value, q in outcomes:
                mass = (1.0 - f) * q
                step = spec.cost.call_ms + step_cost(spec, value)
                _keep(out, (*forget, value), p * mass, mass * (c + p * step))
            if lost:
                mass, step = (1.0 - f) * lost, spec.cost.call_ms + step_cost(spec, exact[k])
                _keep(out, OFF, p * mass, mass * (c + p * step))
        states = {}
        for key, (p, c) in out.items():
            small = key is not OFF and p < floor and key[-1] != exact[k]
            target = OFF if small else key
            old_p, old_c = states.get(target, (0.0, 0.0))
            states[target] = (old_p + p, old_c + c)
    final = math.fsum(
        p for outputs, (p, _) in states.items() if outputs is not OFF and outputs[-1] == exact[-1]
    )
    cost = halted_cost + math.fsum(c for _, c in states.values())
    return final, cost, states.get(OFF, (0.0, 0.0))[0]


def _output(outputs: Sequence[int | None], k: int) -> int:
    value = outputs[k]
    assert value is not None  # kept: a later call reads it
    return value


def outcome(
    spec: SyntheticSpec,
    condition: str,
    tree: Node,
    registers: Mapping[str, int],
    encoding: str,
    prune: float = PRUNE,
) -> Outcome:
    """One trial of `condition` on the task (tree, registers, encoding), exactly (up to
    `prune`, the smallest branch followed one by one)."""
    if condition == "model-only":
        return answer_outcome(spec, tree, registers, encoding, prune)
    if condition == "model-program":
        return program_outcome(spec, tree, registers, encoding)
    if condition == "controlled-chain":
        return chain_outcome(spec, tree, registers, encoding, prune)
    raise ValueError(f"unknown condition {condition!r}")
