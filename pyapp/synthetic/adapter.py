"""A synthetic model behind the ordinary `ModelAdapter` seam.

The protocol code tells the adapter which trial comes next (`begin_trial`, passed to
`run_phase` as `before_trial`), exactly as the page tells a real model nothing but the
prompt: the adapter still reads the operands of a chain call from the prompt it receives,
so a wrong routed value reaches it as it would reach a model. It answers:

- model-only: one decimal integer, the reference tree computed step by step with the step
  rule of its specification (`pyapp.records.synthetic_spec`), each wrong step a seeded perturbation
  (± one unit in one seeded decimal place of the step's value);
- model-program: one register tree, each operation node written right or, when its step is
  wrong, corrupted to a specific other op (add→sub, sub→add, mul→add);
- controlled-chain: one integer per call, the step rule applied to the call's operands.

With the `format` source a whole reply is prose instead (`UNPARSEABLE`), once per generation.

Every draw is a hash of (the specification's SHA-256, task seed, trial id, purpose, step
index): the same trial always gets the same answer, whatever ran before it, and two
structures (or two seeds of one) never share a draw. Costs come from the spec's cost
model through a virtual clock (`VirtualClock`) that only the adapter advances.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re

import interpreter
from interpreter import Node, Op
from pyapp.conditions import exact_op, resolve_operand, route_of
from pyapp.records import (
    Caps,
    Completion,
    ModelProvenance,
    SyntheticSpec,
    digits,
    native_provenance,
    over_input_budget,
    text_sha256,
)
from pyapp.synthetic.language import written_name
from pyapp.tasks import Task

CORRUPTED_OP = {"add": "sub", "sub": "add", "mul": "add"}
"""The specific corruption of a wrongly written program node."""

_CHAIN_V1 = re.compile(r"Compute (-?[0-9]+) ([-+*]) \(?(-?[0-9]+)\)?\.")
_CHAIN_OP = re.compile(r"Compute a ([-+*]) b\.")
_REGISTER = {
    name: re.compile(rf'"{name}": (-?[0-9]+)|Register {name} holds (-?[0-9]+)\.')
    for name in ("a", "b")
}
_OPS = {"+": "add", "-": "sub", "*": "mul"}
UNPARSEABLE = "I am not sure how to answer that."
"""A reply of the `format` source: neither an integer nor a program."""


class VirtualClock:
    """Nanoseconds that pass only when the cost model says so."""

    def __init__(self) -> None:
        self.ns = 0

    def now_ns(self) -> int:
        return self.ns

    def advance_ms(self, ms: float) -> None:
        self.ns += round(ms * 1e6)


def synthetic_provenance(spec: SyntheticSpec) -> ModelProvenance:
    """Its provenance: the written name as revision, the whole specification in `synthetic`."""
    provenance = native_provenance(f"synthetic/{spec.structure}", written_name(spec), "synthetic")
    return dataclasses.replace(provenance, synthetic=spec)


def _tokens(text: str) -> int:
    return max(1, (len(text.encode("utf-8")) + 3) // 4)


class SyntheticAdapter:
    """A synthetic model of known error structure (never model evidence)."""

    def __init__(self, spec: SyntheticSpec, task_seed: int) -> None:
        self.spec = spec
        self.clock = VirtualClock()
        self._provenance = synthetic_provenance(spec)
        self._task_seed = task_seed
        self._stream = spec.sha256[:32]
        self._trial = ""
        self._task: Task | None = None
        self._condition = ""
        self._call = 0
        self._exact_route: list[int] = []
        self._shared: float | None = None
        self._off_track = False

    @property
    def provenance(self) -> ModelProvenance:
        return self._provenance

    @property
    def task_seed(self) -> int:
        """The task seed its draws are keyed by (one adapter per seed, as in `simulate`)."""
        return self._task_seed

    def begin_trial(self, condition: str, task: Task, index: int = 0, total: int = 0) -> None:
        """The next trial: its draws are keyed by its id (`before_trial` of `run_phase`)."""
        self._condition, self._task, self._call = condition, task, 0
        self._off_track = False
        self._trial = f"{condition}/{task.id}"
        shared = self._uniform("shared", 0) < self.spec.shared_latent
        self._shared = self._uniform("latent", 0) if shared else None
        self._exact_route = []  # the route's exact outputs, for compensating steps
        # the route of the task's reference program, whichever chain protocol runs it (a
        # protocol that does not route the family makes no call)
        route = route_of(task) if condition == "controlled-chain" else ()
        for planned in route:
            left = resolve_operand(planned.left, task.registers, self._exact_route)
            right = resolve_operand(planned.right, task.registers, self._exact_route)
            self._exact_route.append(exact_op(planned.op, left, right))

    def _uniform(self, purpose: str, index: int) -> float:
        key = f"{self._stream}|{self._task_seed}|{self._trial}|{purpose}|{index}"
        digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
        return int.from_bytes(digest, "big") / 2.0**64

    def _wrong(self, op: str, left: int, right: int, index: int, position: int = 1) -> bool:
        """Whether step `index` of the trial (the `position`-th of its generation) is wrong."""
        draw = self._shared if self._shared is not None else self._uniform("step", index)
        encoding = self._task.encoding if self._task is not None else "json"
        return draw < self.spec.error_probability(op, left, right, encoding, position)

    def _unparseable(self, call: int) -> bool:
        return self._uniform("format", call) < self.spec.unparseable

    def _perturb(self, value: int, index: int) -> int:
        place = int(self._uniform("place", index) * digits(value))
        sign = 1 if self._uniform("sign", index) < 0.5 else -1
        return value + sign * int(10**place)

    def _compensates(self, index: int) -> bool:
        return self._uniform("cancel", index) < self.spec.compensation

    def _step_cost(self, value: int) -> float:
        return self.spec.cost.step_ms + self.spec.cost.digit_ms * digits(value)

    # ---- the three conditions ------------------------------------------------------

    def _answer_integer(self, task: Task) -> tuple[str, float]:
        """The reference tree computed step by step; returns the reply and its cost."""
        cost = self.spec.cost.call_ms
        if self._unparseable(0):
            return UNPARSEABLE, cost
        counter = [0]

        def evaluate(node: Node) -> tuple[int, int]:  # (model's value, exact value)
            if not isinstance(node, Op):
                value = int(task.registers[node.name])
                return value, value
            (left, exact_left), (right, exact_right) = map(evaluate, node.args)
            index = counter[0]
            counter[0] += 1
            exact = exact_op(node.op, exact_left, exact_right)
            value = exact_op(node.op, left, right)
            off_track = (left, right) != (exact_left, exact_right)
            if off_track and self._compensates(index):
                value = exact
            elif self._wrong(node.op, left, right, index, index + 1):
                value = self._perturb(value, index)
            nonlocal cost
            cost += self._step_cost(value)
            return value, exact

        value, _ = evaluate(task.program)
        return str(value), cost

    def _write_program(self, task: Task) -> tuple[str, float]:
        """The reference tree written node by node, a wrong node's op corrupted."""
        cost = self.spec.cost.call_ms
        if self._unparseable(0):
            return UNPARSEABLE, cost
        counter = [0]

        def write(node: Node) -> tuple[Node, int]:  # (written node, exact value)
            if not isinstance(node, Op):
                return node, int(task.registers[node.name])
            (left, exact_left), (right, exact_right) = map(write, node.args)
            index = counter[0]
            counter[0] += 1
            op = node.op
            deviates = self._uniform("deviate", index) < self.spec.deviation
            if deviates or self._wrong(op, exact_left, exact_right, index, index + 1):
                op = CORRUPTED_OP[op]
            nonlocal cost
            cost += self.spec.cost.step_ms
            return Op(op, (left, right)), exact_op(node.op, exact_left, exact_right)

        written, _ = write(task.program)
        return json.dumps(interpreter.program_to_json(written), separators=(",", ":")), cost

    def _answer_call(self, prompt: str) -> tuple[str, float]:
        """One chain call: the step rule on the operands in the prompt."""
        operands = _read_chain_step(prompt)
        if operands is None:
            return "I cannot read this step.", self.spec.cost.call_ms
        op, left, right = operands
        index = self._call
        self._call += 1
        if self._unparseable(index):
            return UNPARSEABLE, self.spec.cost.call_ms
        value = exact_op(op, left, right)
        exact_route = self._exact_route[index] if index < len(self._exact_route) else value
        if self._off_track and self._compensates(index):
            value = exact_route
        elif self._wrong(op, left, right, index):
            value = self._perturb(value, index)
        self._off_track = value != exact_route
        return str(value), self.spec.cost.call_ms + self._step_cost(value)

    async def generate(self, prompt: str, caps: Caps) -> Completion:
        task = self._task
        if task is None:
            raise RuntimeError("begin_trial must name the trial before generate")
        input_tokens = _tokens(prompt)
        if input_tokens > caps.max_input_tokens:
            return over_input_budget(input_tokens, caps, prompt)
        if self._condition == "model-only":
            text, cost = self._answer_integer(task)
        elif self._condition == "model-program":
            text, cost = self._write_program(task)
        else:
            text, cost = self._answer_call(prompt)
        self.clock.advance_ms(cost)
        return Completion(
            text=text,
            finish_reason="eos",
            input_tokens=input_tokens,
            output_tokens=_tokens(text),
            output_token_ids=None,
            generation_ms=cost,
            time_to_first_token_ms=None,
            failure=None,
            input_text=prompt,  # no chat template: the input is the prompt itself
            input_sha256=text_sha256(prompt),
        )


def _read_chain_step(prompt: str) -> tuple[str, int, int] | None:
    """(op, left, right) of a chain-step prompt: version 2 (registers a, b in the task's
    encoding, `Compute a + b.`) or version 1 (`Compute L + R.`)."""
    match = _CHAIN_OP.search(prompt)
    found = {name: pattern.search(prompt) for name, pattern in _REGISTER.items()}
    if match is not None and found["a"] is not None and found["b"] is not None:
        a, b = (int(next(g for g in m.groups() if g is not None)) for m in found.values() if m)
        return _OPS[match.group(1)], a, b
    old = _CHAIN_V1.search(prompt)
    if old is None:
        return None
    return _OPS[old.group(2)], int(old.group(1)), int(old.group(3))
