"""What a synthetic model does, exactly, from its parameters alone: the validation's targets.

Nothing here runs the model, reads its step rule (`SyntheticSpec.error_probability`), the
adapter, the metrics or the predictors: the structure's numbers (`rates`, `size`, `carry`,
`depth`, `encoding`, `format`, `program`, `correlation`, `cancellation`, `cost`) and the task
set (registers and reference trees) are read, and the model's finite choices are enumerated.
A bug in the simulator, the protocol or the scoring then moves the data away from a target
that did not move with it.

- **A step is wrong** with 1 − (1 − p′)·(1 − p_carry)^carries·(1 − p_encoding)·(1 − p_deep),
  p′ the op's rate with the size effect on its log-odds, every factor on the operands the
  step actually sees (`step_wrong`, written again here from the structure's definition).
- **A whole-task answer** (model-only) is enumerated over the tree: each step right, wrong
  by ±10ʲ in one of its value's d places (probability 1/(2d) each), or, after an off-track
  operand, compensated to the exact value; the distribution of every subtree's value is
  kept (`answer_outcome`), so coincidental returns to the exact answer count. Under
  `correlation` a trial's steps share one uniform with probability ρ: on each interval
  between the steps' error rates the set of wrong steps is fixed (the rates may depend on
  the op, the encoding and the position, not on operand values).
- **A written program** (model-program) is enumerated over the subsets of corrupted nodes
  (add→sub, sub→add, mul→add), each node corrupted by `program` or by the step rule on
  exact operands, and the written tree evaluated exactly (`program_outcome`).
- **A chain**: `pyapp.synthetic.closed_chain`, with the same rules.
- **Costs** follow the cost model: `call_ms` per generation, `step_ms` (+ `digit_ms` per
  digit of a computed value) per step.

Branches below `PRUNE` probability are dropped; their total is returned as `dropped`, a
bound on the error of every probability (and, times the largest cost, of every cost).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from interpreter import Node, Op
from pyapp.records import SpecError, SyntheticSpec

PRUNE = 1e-6
"""Branches (and pairs of sibling values) of smaller probability are dropped; their mass is
reported as `dropped`."""
MAX_PROGRAM_NODES = 16
"""Written programs are enumerated over 2ⁿ corruption patterns: at most this many nodes."""
APPLY: dict[str, Callable[[int, int], int]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
}
_CORRUPT = {"add": "sub", "sub": "add", "mul": "add"}


@dataclass(frozen=True)
class Outcome:
    """One trial's exact expectations."""

    final: float
    """P(the final answer is exactly right)."""
    cost_ms: float
    """Expected generation cost (ms)."""
    dropped: float
    """Probability mass of pruned branches: the error bound of `final`."""
    all_steps: float | None = None
    """Chains: P(every call locally right and the route completed)."""


def digit_count(value: int) -> int:
    return len(str(abs(value)))


def carry_count(op: str, left: int, right: int) -> int:
    """Carries of an add or borrows of a subtraction of magnitudes, column by column on the
    decimal strings (0 for mul)."""
    if op == "mul":
        return 0
    other = right if op == "add" else -right
    a, b = str(abs(left))[::-1], str(abs(other))[::-1]
    width = max(len(a), len(b))
    xs = [int(c) for c in a.ljust(width, "0")]
    ys = [int(c) for c in b.ljust(width, "0")]
    same_sign = (left >= 0) == (other >= 0)
    if not same_sign and abs(other) > abs(left):
        xs, ys = ys, xs  # the larger magnitude minus the smaller
    count = carry = 0
    for x, y in zip(xs, ys, strict=True):
        if same_sign:
            carry = 1 if x + y + carry > 9 else 0
        else:
            carry = 1 if x - y - carry < 0 else 0
        count += carry
    return count


def step_wrong(
    spec: SyntheticSpec, op: str, left: int, right: int, encoding: str, position: int
) -> float:
    """P(a step is wrong), from the structure's definition (docs/validation/structures.md)."""
    rates = spec.rates
    p = {"add": rates.p_add, "sub": rates.p_sub, "mul": rates.p_mul}[op]
    if spec.size is not None and 0.0 < p < 1.0:
        larger = max(digit_count(left), digit_count(right))
        z = math.log(p) - math.log1p(-p) + spec.size.slope * (larger - spec.size.pivot_digits)
        p = 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))
    survive = 1.0
    touched = False
    if spec.carry is not None and (count := carry_count(op, left, right)) > 0:
        survive *= (1.0 - spec.carry.p_carry) ** count
        touched = True
    if spec.encoding is not None and encoding == spec.encoding.affected:
        survive *= 1.0 - spec.encoding.p_encoding
        touched = True
    if spec.depth is not None and position >= spec.depth.from_step:
        survive *= 1.0 - spec.depth.p_deep
        touched = True
    return 1.0 - (1.0 - p) * survive if touched else p


def _value_free(spec: SyntheticSpec) -> bool:
    """Whether a step's error rate is independent of its operand values."""
    return spec.size is None and spec.carry is None


# ---- the latent: independent draws, or one shared uniform -------------------------------

WrongRule = Callable[[str, int, int, int], float]
"""(op, left, right, position) → P(wrong) under one branch of the latent."""


def latent_branches(
    spec: SyntheticSpec, encoding: str, positions: Sequence[tuple[str, int]]
) -> list[tuple[float, WrongRule]]:
    """(weight, rule) pairs whose weighted sum is the model: independent steps with
    probability 1 − ρ, and, with probability ρ, one shared uniform split at the steps' rates
    (`positions`: (op, position) of every step the trial can compute)."""
    rho = spec.correlation.rho if spec.correlation is not None else 0.0

    def independent(op: str, left: int, right: int, position: int) -> float:
        return step_wrong(spec, op, left, right, encoding, position)

    branches: list[tuple[float, WrongRule]] = []
    if rho < 1.0:
        branches.append((1.0 - rho, independent))
    if rho == 0.0:
        return branches
    if not _value_free(spec):
        raise SpecError(f"{spec.structure}: no closed form for correlation with size or carry")
    cuts = sorted({0.0, 1.0, *(step_wrong(spec, op, 1, 1, encoding, k) for op, k in positions)})
    for low, high in itertools.pairwise(cuts):

        def fixed(op: str, left: int, right: int, position: int, top: float = high) -> float:
            # u in [low, high): the step is wrong iff u < its rate, i.e. its rate >= high
            return 1.0 if step_wrong(spec, op, left, right, encoding, position) >= top else 0.0

        branches.append((rho * (high - low), fixed))
    return branches


def postorder(tree: Node) -> list[Node]:
    """Every node of the tree, children before their parent (no recursion)."""
    out: list[Node] = []
    stack: list[tuple[Node, bool]] = [(tree, False)]
    while stack:
        node, expanded = stack.pop()
        if not isinstance(node, Op) or expanded:
            out.append(node)
            continue
        stack += [(node, True), (node.args[1], False), (node.args[0], False)]
    return out


def exact_values(tree: Node, registers: Mapping[str, int]) -> dict[int, int]:
    """id(node) → its exact value."""
    exact: dict[int, int] = {}
    for node in postorder(tree):
        if isinstance(node, Op):
            exact[id(node)] = APPLY[node.op](exact[id(node.args[0])], exact[id(node.args[1])])
        else:
            exact[id(node)] = int(registers[node.name])
    return exact


def _op_positions(tree: Node) -> list[tuple[str, int]]:
    ops = [n for n in postorder(tree) if isinstance(n, Op)]
    return [(n.op, k + 1) for k, n in enumerate(ops)]


# ---- one step's outcomes ------------------------------------------------------------------

OFF = None
"""The off-track bucket: values too unlikely to follow one by one, each off the exact track."""
Dist = dict[int | None, tuple[float, float]]
"""value (or `OFF`) → (probability, probability × expected cost so far)."""


def step_outcomes(
    spec: SyntheticSpec,
    computed: int,
    exact: int,
    off_track: bool,
    wrong: float,
    weight: float,
    floor: float,
) -> tuple[list[tuple[int, float]], float]:
    """(value, probability) of one computed step — compensated (after an off-track input),
    right, or perturbed by ±10ʲ in one of its value's places — and the probability left out:
    the perturbations when each, times the branch's `weight`, is below `floor`."""
    cancel = spec.cancellation.cancel if spec.cancellation is not None else 0.0
    out: list[tuple[int, float]] = []
    stay = 1.0
    if off_track and cancel > 0.0:
        out.append((exact, cancel))
        stay = 1.0 - cancel
    if stay > 0.0 and wrong < 1.0:
        out.append((computed, stay * (1.0 - wrong)))
    if stay > 0.0 and wrong > 0.0:
        places = digit_count(computed)
        share = stay * wrong / (2 * places)
        if weight * share < floor:
            return out, stay * wrong
        for j in range(places):
            out += [(computed + 10**j, share), (computed - 10**j, share)]
    return out, 0.0


def step_cost(spec: SyntheticSpec, value: int) -> float:
    return spec.cost.step_ms + spec.cost.digit_ms * digit_count(value)


def _add(into: Dist, value: int | None, probability: float, cost_mass: float) -> None:
    p, c = into.get(value, (0.0, 0.0))
    into[value] = (p + probability, c + cost_mass)


def _prune(dist: Dist, exact: int, floor: float) -> Dist:
    """States below `floor` (never the exact value) folded into the off-track bucket."""
    kept: Dist = {}
    for value, (p, c) in dist.items():
        if p >= floor or value == exact:
            kept[value] = (p, c)
        else:
            _add(kept, OFF, p, c)
    return kept


def _suffix_sums(
    items: Sequence[tuple[int | None, tuple[float, float]]],
) -> list[tuple[float, float]]:
    """(probability, cost mass) of items[i:] for every i."""
    sums = [(0.0, 0.0)]
    for _, (p, c) in reversed(items):
        sums.append((sums[-1][0] + p, sums[-1][1] + c))
    sums.reverse()
    return sums


def _combine(
    spec: SyntheticSpec,
    node: Op,
    left: Dist,
    right: Dist,
    exact: Mapping[int, int],
    rate_of: Callable[[int, int], float],
    floor: float,
) -> Dist:
    """The distribution of `node`'s value from its operands' (independent) distributions.
    A pair below `floor` (never both exact), or one with an off-track bucket, is an
    off-track input of unknown value: compensated to the exact value, else off-track (its
    step's cost counted at the exact value's digits)."""
    exact_left, exact_right, exact_value = (
        exact[id(node.args[0])],
        exact[id(node.args[1])],
        exact[id(node)],
    )
    cancel = spec.cancellation.cancel if spec.cancellation is not None else 0.0
    unknown_cost = step_cost(spec, exact_value)
    out: Dist = {}

    def unknown(weight: float, carried: float) -> None:
        mass = carried + weight * unknown_cost
        if cancel > 0.0:
            _add(out, exact_value, weight * cancel, cancel * mass)
        if cancel < 1.0:
            _add(out, OFF, weight * (1.0 - cancel), (1.0 - cancel) * mass)

    apply, step_ms, digit_ms = APPLY[node.op], spec.cost.step_ms, spec.cost.digit_ms

    def pair(lv: int, rv: int, weight: float, carried: float) -> None:
        both_exact = lv == exact_left and rv == exact_right
        computed = apply(lv, rv)
        rate = rate_of(lv, rv)
        outcomes, lost = step_outcomes(
            spec, computed, exact_value, not both_exact, rate, weight, floor
        )
        for value, p in outcomes:
            cost = step_ms + digit_ms * len(str(abs(value)))
            old = out.get(value)
            probability, mass = weight * p, p * (carried + weight * cost)
            out[value] = (
                (probability, mass) if old is None else (old[0] + probability, old[1] + mass)
            )
        if lost:  # perturbations too unlikely to follow, each off-track (one may be exact)
            _add(out, OFF, weight * lost, lost * (carried + weight * unknown_cost))

    lefts = sorted(left.items(), key=lambda item: -item[1][0])
    rights = sorted(right.items(), key=lambda item: -item[1][0])
    rest = _suffix_sums(rights)
    exact_at = next((i for i, (rv, _) in enumerate(rights) if rv == exact_right), len(rights))
    for lv, (lp, lc) in lefts:
        for i, (rv, (rp, rc)) in enumerate(rights):
            weight, carried = lp * rp, lc * rp + rc * lp
            if lv is OFF or rv is OFF:
                unknown(weight, carried)
            elif weight >= floor:
                pair(lv, rv, weight, carried)
            else:  # this pair and every later one (the exact pair still followed)
                later_p, later_c = rest[i]
                if lv == exact_left and i <= exact_at < len(rights):
                    ep, ec = rights[exact_at][1]
                    pair(lv, exact_right, lp * ep, lc * ep + ec * lp)
                    later_p, later_c = later_p - ep, later_c - ec
                unknown(lp * later_p, lc * later_p + later_c * lp)
                break
    return _prune(out, exact_value, floor)


def _answer_dist(
    spec: SyntheticSpec, tree: Node, registers: Mapping[str, int], wrong: WrongRule, floor: float
) -> Dist:
    """The distribution of a computed answer (model-only) under one latent branch; `OFF`
    holds the off-track values too unlikely to follow one by one. Sibling subtrees use
    disjoint draws, so their values are independent."""
    exact = exact_values(tree, registers)
    stack: list[Dist] = []
    position = 0
    for node in postorder(tree):
        if not isinstance(node, Op):
            stack.append({exact[id(node)]: (1.0, 0.0)})
            continue
        position += 1
        right, left = stack.pop(), stack.pop()

        def rate_of(lv: int, rv: int, op: str = node.op, k: int = position) -> float:
            return wrong(op, lv, rv, k)

        stack.append(_combine(spec, node, left, right, exact, rate_of, floor))
    return stack[0]


def answer_outcome(
    spec: SyntheticSpec,
    tree: Node,
    registers: Mapping[str, int],
    encoding: str,
    prune: float = PRUNE,
) -> Outcome:
    """Model-only: one generation computes the whole tree (or replies prose, `format`)."""
    answer = exact_values(tree, registers)[id(tree)]
    unparseable = spec.format.p_unparseable if spec.format is not None else 0.0
    final = cost = dropped = 0.0
    for weight, rule in latent_branches(spec, encoding, _op_positions(tree)):
        dist = _answer_dist(spec, tree, registers, rule, prune / weight)
        final += weight * dist.get(answer, (0.0, 0.0))[0]
        cost += weight * math.fsum(c for _, c in dist.values())
        dropped += weight * dist.get(OFF, (0.0, 0.0))[0]
    return Outcome(
        final=(1.0 - unparseable) * final,
        cost_ms=spec.cost.call_ms + (1.0 - unparseable) * cost,
        dropped=dropped,
    )


def program_outcome(
    spec: SyntheticSpec, tree: Node, registers: Mapping[str, int], encoding: str
) -> Outcome:
    """Model-program: the written tree, each node's op corrupted by `program` or by the step
    rule on its exact operands, evaluated exactly for every corruption pattern."""
    exact = exact_values(tree, registers)
    nodes = [n for n in postorder(tree) if isinstance(n, Op)]
    if len(nodes) > MAX_PROGRAM_NODES:
        raise SpecError(
            f"no closed form for {len(nodes)} program nodes (at most {MAX_PROGRAM_NODES})"
        )
    deviate = spec.program.p_deviate if spec.program is not None else 0.0
    unparseable = spec.format.p_unparseable if spec.format is not None else 0.0
    final = 0.0
    for weight, rule in latent_branches(spec, encoding, _op_positions(tree)):
        corrupt = [
            1.0
            - (1.0 - deviate)
            * (1.0 - rule(n.op, exact[id(n.args[0])], exact[id(n.args[1])], k + 1))
            for k, n in enumerate(nodes)
        ]
        for pattern in range(2 ** len(nodes)):
            p = 1.0
            ops: dict[int, str] = {}
            for k, n in enumerate(nodes):
                bad = bool(pattern >> k & 1)
                p *= corrupt[k] if bad else 1.0 - corrupt[k]
                ops[id(n)] = _CORRUPT[n.op] if bad else n.op
            if p == 0.0:
                continue
            final += weight * p * (_evaluate(tree, registers, ops) == exact[id(tree)])
    return Outcome(
        final=(1.0 - unparseable) * final,
        cost_ms=spec.cost.call_ms + (1.0 - unparseable) * spec.cost.step_ms * len(nodes),
        dropped=0.0,
    )


def _evaluate(tree: Node, registers: Mapping[str, int], ops: Mapping[int, str]) -> int:
    values: dict[int, int] = {}
    for node in postorder(tree):
        if isinstance(node, Op):
            left, right = values[id(node.args[0])], values[id(node.args[1])]
            values[id(node)] = APPLY[ops[id(node)]](left, right)
        else:
            values[id(node)] = int(registers[node.name])
    return values[id(tree)]
