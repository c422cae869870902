"""Seeded task sets: isolated primitives, held-out compositions, paired encoding probes.

A seed and a `TaskParams` value determine the task set completely. Each task carries its
whole mathematical state as named integer registers, its reference program (a register
tree), and its exact answer. The answer is computed twice by different routes — the
reference program in the binary64 interpreter, and an independent exact-integer oracle
(`pyapp.tasks.oracles`) — and generation fails loudly if they disagree.

Register names, so anyone can check a task by hand:

| family               | registers                    | answer                                  |
|----------------------|------------------------------|-----------------------------------------|
| add / sub / mul      | a, b                         | a+b, a−b, a·b                           |
| affine_recurrence    | a, b, x0 (+ `steps`)         | x_steps, where x_{k+1} = a·x_k + b      |
| triangle_determinant | x1 y1 x2 y2 x3 y3            | (x2−x1)(y3−y1) − (x3−x1)(y2−y1)         |
| cubic_derivative     | c3 c2 c1 c0 x0, three, two   | p'(x0) for p = c3x³+c2x²+c1x+c0         |

The language has no literals, so the constants 3 and 2 that the derivative needs are
supplied as the registers `three` and `two`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

import interpreter
from interpreter import Node, Op, Ref
from pyapp.tasks import oracles
from pyapp.tasks.rng import SplitMix64

GENERATOR_VERSION = "tasks/1"
DEFAULT_SEED = 1729

Family = Literal[
    "add", "sub", "mul", "affine_recurrence", "triangle_determinant", "cubic_derivative"
]
Split = Literal["profile", "heldout"]
Group = Literal["primitive", "composition", "encoding_probe"]
Encoding = Literal["json", "prose"]

PRIMITIVE_OPS: tuple[Literal["add", "sub", "mul"], ...] = ("add", "sub", "mul")
SYMBOLS = {"add": "+", "sub": "-", "mul": "*"}


@dataclass(frozen=True)
class TaskParams:
    """Counts and operand ranges of a task set; the defaults are the design's."""

    seed: int = DEFAULT_SEED
    """Seed of the SplitMix64 stream that draws every operand."""
    primitives_per_op: int = 2
    """Isolated primitive probes per op (add, sub, mul)."""
    recurrence_steps: tuple[int, ...] = (2, 3)
    """One affine recurrence per entry, with that many updates."""
    determinants: int = 2
    """Triangle determinants (signed twice-area)."""
    derivatives: int = 2
    """Cubic derivatives at a point."""
    probe_pairs: int = 6
    """Paired encoding probes (ops cycle add, sub, mul); each pair is two tasks."""
    addsub_magnitude: tuple[int, int] = (1_000, 999_999)
    """Operand magnitudes for add and sub probes (a quarter are negative)."""
    mul_magnitude: tuple[int, int] = (100, 99_999)
    """Operand magnitudes for mul probes (a quarter are negative)."""
    recurrence_a: tuple[int, int] = (2, 49)
    """Magnitude of the multiplier a of a recurrence."""
    recurrence_b: tuple[int, int] = (1, 9_999)
    """Magnitude of the offset b of a recurrence."""
    recurrence_x0: tuple[int, int] = (1, 999)
    """Magnitude of the start value x0 of a recurrence."""
    coordinate: tuple[int, int] = (1, 999)
    """Magnitude of a triangle coordinate."""
    coefficient: tuple[int, int] = (1, 99)
    """Magnitude of a cubic coefficient (c3 is never zero)."""
    point: tuple[int, int] = (1, 99)
    """Magnitude of the point x0 where the derivative is taken."""

    def __post_init__(self) -> None:
        counts = {
            "primitives_per_op": self.primitives_per_op,
            "determinants": self.determinants,
            "derivatives": self.derivatives,
            "probe_pairs": self.probe_pairs,
        }
        for name, count in counts.items():
            if not 0 <= count <= 100_000:
                raise ValueError(f"{name} must be between 0 and 100000, got {count}")
        if any(not 1 <= s <= 6 for s in self.recurrence_steps):
            raise ValueError("recurrence_steps entries must be between 1 and 6")
        ranges = {
            "addsub_magnitude": self.addsub_magnitude,
            "mul_magnitude": self.mul_magnitude,
            "recurrence_a": self.recurrence_a,
            "recurrence_b": self.recurrence_b,
            "recurrence_x0": self.recurrence_x0,
            "coordinate": self.coordinate,
            "coefficient": self.coefficient,
            "point": self.point,
        }
        for name, (low, high) in ranges.items():
            if not 0 <= low <= high:
                raise ValueError(f"{name} must satisfy 0 <= low <= high, got ({low}, {high})")


class TaskLike(Protocol):
    """What the conditions and `reproduce` read of a task (a `Task` or a trace's record)."""

    @property
    def id(self) -> str: ...
    @property
    def family(self) -> str: ...
    @property
    def steps(self) -> int | None: ...
    @property
    def registers(self) -> Mapping[str, int]: ...
    @property
    def question(self) -> str: ...
    @property
    def encoding(self) -> str: ...
    @property
    def answer(self) -> int: ...


@dataclass(frozen=True)
class Task:
    """One task: its state, what is asked, the reference program and the exact answer."""

    id: str
    family: Family
    split: Split
    group: Group
    encoding: Encoding
    pair: str | None
    registers: Mapping[str, int]
    question: str
    program: Node
    answer: int
    generator_version: str = GENERATOR_VERSION
    steps: int | None = None
    oracle: str = field(default="")

    @property
    def operations(self) -> tuple[str, ...]:
        """The ops of the reference program, in evaluation (post-) order."""
        found: list[str] = []
        stack: list[tuple[Node, bool]] = [(self.program, False)]
        while stack:
            node, expanded = stack.pop()
            if isinstance(node, Op):
                if expanded:
                    found.append(node.op)
                else:
                    stack.append((node, True))
                    stack.append((node.args[1], False))
                    stack.append((node.args[0], False))
        return tuple(found)

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "family": self.family,
            "split": self.split,
            "group": self.group,
            "encoding": self.encoding,
            "pair": self.pair,
            "registers": dict(self.registers),
            "question": self.question,
            "steps": self.steps,
            "program": interpreter.program_to_json(self.program),
            "answer": self.answer,
            "oracle": self.oracle,
            "generator_version": self.generator_version,
        }


class OracleDisagreement(AssertionError):
    """The reference program and the independent oracle gave different answers."""


def _ref(name: str) -> Ref:
    return Ref(name)


def _op(op: str, left: Node, right: Node) -> Op:
    return Op(op, (left, right))


def primitive_program(op: str) -> Node:
    return _op(op, _ref("a"), _ref("b"))


def recurrence_program(steps: int) -> Node:
    """x_{k+1} = a·x_k + b, unrolled: one mul and one add per update."""
    node: Node = _ref("x0")
    for _ in range(steps):
        node = _op("add", _op("mul", _ref("a"), node), _ref("b"))
    return node


def determinant_program() -> Node:
    """(x2−x1)(y3−y1) − (x3−x1)(y2−y1)."""
    return _op(
        "sub",
        _op("mul", _op("sub", _ref("x2"), _ref("x1")), _op("sub", _ref("y3"), _ref("y1"))),
        _op("mul", _op("sub", _ref("x3"), _ref("x1")), _op("sub", _ref("y2"), _ref("y1"))),
    )


def derivative_program() -> Node:
    """p'(x0) = 3·c3·x0·x0 + 2·c2·x0 + c1."""
    cubic = _op("mul", _op("mul", _ref("three"), _ref("c3")), _op("mul", _ref("x0"), _ref("x0")))
    square = _op("mul", _op("mul", _ref("two"), _ref("c2")), _ref("x0"))
    return _op("add", _op("add", cubic, square), _ref("c1"))


def _question(family: str, steps: int | None = None) -> str:
    if family in SYMBOLS:
        return f"Compute a {SYMBOLS[family]} b."
    if family == "affine_recurrence":
        return (
            "Let x_(k+1) = a * x_k + b, starting from x_0 = x0. "
            f"Compute x_{steps} (after {steps} updates)."
        )
    if family == "triangle_determinant":
        return (
            "A triangle has vertices (x1, y1), (x2, y2), (x3, y3). Compute its signed "
            "twice-area (x2 - x1) * (y3 - y1) - (x3 - x1) * (y2 - y1)."
        )
    if family == "cubic_derivative":
        return (
            "Let p(x) = c3 * x^3 + c2 * x^2 + c1 * x + c0. Compute p'(x0), the derivative "
            "of p at x = x0. (The registers three = 3 and two = 2 hold constants.)"
        )
    raise ValueError(f"unknown family {family!r}")


def _finish(
    *,
    task_id: str,
    family: Family,
    split: Split,
    group: Group,
    encoding: Encoding,
    pair: str | None,
    registers: dict[str, int],
    program: Node,
    steps: int | None = None,
) -> Task:
    """Compute the answer by the reference program and confirm it by the oracle."""
    execution = interpreter.execute(program, registers)
    oracle_name, oracle_answer = oracles.confirm(family, registers, steps)
    if oracle_answer != execution.value:
        raise OracleDisagreement(
            f"{task_id}: reference program gives {execution.value}, "
            f"{oracle_name} gives {oracle_answer}"
        )
    return Task(
        id=task_id,
        family=family,
        split=split,
        group=group,
        encoding=encoding,
        pair=pair,
        registers=registers,
        question=_question(family, steps),
        program=program,
        answer=execution.value,
        steps=steps,
        oracle=oracle_name,
    )


def _primitive_registers(rng: SplitMix64, op: str, params: TaskParams) -> dict[str, int]:
    low, high = params.mul_magnitude if op == "mul" else params.addsub_magnitude
    return {"a": rng.signed(low, high), "b": rng.signed(low, high)}


def generate(params: TaskParams | None = None) -> tuple[Task, ...]:
    """The task set for `params` (default: seed 1729, the design's 24 tasks)."""
    p = params or TaskParams()
    rng = SplitMix64(p.seed)
    tasks: list[Task] = []

    for op in PRIMITIVE_OPS:
        for i in range(1, p.primitives_per_op + 1):
            tasks.append(
                _finish(
                    task_id=f"{op}-{i}",
                    family=op,
                    split="profile",
                    group="primitive",
                    encoding="json",
                    pair=None,
                    registers=_primitive_registers(rng, op, p),
                    program=primitive_program(op),
                )
            )

    for i, steps in enumerate(p.recurrence_steps, start=1):
        registers = {
            "a": rng.signed(*p.recurrence_a),
            "b": rng.signed(*p.recurrence_b),
            "x0": rng.signed(*p.recurrence_x0),
        }
        tasks.append(
            _finish(
                task_id=f"recurrence-{i}",
                family="affine_recurrence",
                split="heldout",
                group="composition",
                encoding="json",
                pair=None,
                registers=registers,
                program=recurrence_program(steps),
                steps=steps,
            )
        )

    for i in range(1, p.determinants + 1):
        registers = {}
        for name in ("x1", "y1", "x2", "y2", "x3", "y3"):
            registers[name] = rng.signed(*p.coordinate, negative_in=2)
        tasks.append(
            _finish(
                task_id=f"determinant-{i}",
                family="triangle_determinant",
                split="heldout",
                group="composition",
                encoding="json",
                pair=None,
                registers=registers,
                program=determinant_program(),
            )
        )

    for i in range(1, p.derivatives + 1):
        registers = {name: rng.signed(*p.coefficient, negative_in=2) for name in ("c3", "c2")}
        registers.update({name: rng.signed(*p.coefficient, negative_in=2) for name in ("c1", "c0")})
        registers["x0"] = rng.signed(*p.point, negative_in=2)
        registers["three"] = 3
        registers["two"] = 2
        tasks.append(
            _finish(
                task_id=f"derivative-{i}",
                family="cubic_derivative",
                split="heldout",
                group="composition",
                encoding="json",
                pair=None,
                registers=registers,
                program=derivative_program(),
            )
        )

    for i in range(1, p.probe_pairs + 1):
        op = PRIMITIVE_OPS[(i - 1) % len(PRIMITIVE_OPS)]
        registers = _primitive_registers(rng, op, p)
        pair = f"probe-{i}"
        for encoding in ("json", "prose"):
            tasks.append(
                _finish(
                    task_id=f"{pair}-{encoding}",
                    family=op,
                    split="profile",
                    group="encoding_probe",
                    encoding=encoding,
                    pair=pair,
                    registers=dict(registers),
                    program=primitive_program(op),
                )
            )
    return tuple(tasks)


def tasks_by_id(tasks: tuple[Task, ...]) -> dict[str, Task]:
    return {task.id: task for task in tasks}
