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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final, Literal, NoReturn, Protocol

import interpreter
from interpreter import Node, Op, Ref
from pyapp.errors import OracleDisagreement, ParamsError
from pyapp.tasks import oracles
from pyapp.tasks.presets import CALIBRATION_RANGES as CALIBRATION_RANGES
from pyapp.tasks.presets import PRESETS as PRESETS
from pyapp.tasks.rng import SplitMix64

GENERATOR_VERSION = "tasks/1"
SEALED_GENERATOR_VERSION = "tasks/2"
"""A sealed run's generator: profile tasks exactly as `tasks/1` draws them from the task
seed, held-out tasks from their own stream seeded by the held-out draw seed (`sealed_tasks`).
`tasks/1` is unchanged: an unsealed run (the default) and every older trace use it."""
GENERATOR_VERSIONS = (GENERATOR_VERSION, SEALED_GENERATOR_VERSION)
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
    operand_digits: Literal["uniform", "stratified"] = field(
        default="uniform", metadata={"optional_on_read": True}
    )
    """Isolated primitives' operands: `uniform` over the magnitude range, or `stratified`
    so that their digit counts cover every pair of counts in the range (calibration sets);
    absent from traces written before it existed, where it reads as `uniform`."""

    def __post_init__(self) -> None:
        check_params(self)

    @property
    def task_count(self) -> int:
        """How many tasks these parameters generate."""
        return (
            len(PRIMITIVE_OPS) * self.primitives_per_op
            + len(self.recurrence_steps)
            + self.determinants
            + self.derivatives
            + 2 * self.probe_pairs
        )


#: Largest seed + 1: SplitMix64 has 2**64 states, so larger or negative seeds would alias.
SEED_LIMIT: Final = 2**64
#: Most tasks of one family-count parameter (and most `recurrence_steps` entries).
MAX_COUNT: Final = 50_000
#: Most tasks in one task set (a trace of it stays well under the input-file limits).
MAX_TASKS: Final = 120_000
#: Most updates of one affine recurrence.
MAX_RECURRENCE_STEPS: Final = 6
_SAFE: Final = interpreter.SAFE_INTEGER_MAX


def _refuse(
    name: str, message: str, maximum: int | None = None, value: int | None = None
) -> NoReturn:
    shown = value if value is None or abs(value) < 2**63 else _short(value)
    raise ParamsError(f"{name} {message}", limit=name, maximum=maximum, value=shown)


def _check_int(name: str, value: object, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        _refuse(name, f"must be an integer, not {type(value).__name__}")
    if not low <= value <= high:
        _refuse(name, f"must be between {low} and {high}, got {_short(value)}", high, value)
    return value


def _short(value: int) -> str:
    """`value` in decimal, or its size when it is enormous (never a 4,300-digit str())."""
    if abs(value) < 10**30:
        return str(value)
    return f"{'-' if value < 0 else ''}<integer of {abs(value).bit_length()} bits>"


def _worst_intermediate(p: TaskParams) -> dict[str, int]:
    """The largest magnitude any register or intermediate of each family can reach,
    computed from the ranges' upper ends (every family's programs are monotone in them)."""
    addsub, mul = p.addsub_magnitude[1], p.mul_magnitude[1]
    a, b, x = p.recurrence_a[1], p.recurrence_b[1], p.recurrence_x0[1]
    worst_recurrence = x
    for _ in range(max(p.recurrence_steps, default=0)):
        worst_recurrence = max(worst_recurrence, a * worst_recurrence) + b
    c, k, x0 = p.coordinate[1], p.coefficient[1], p.point[1]
    return {
        "addsub_magnitude": 2 * addsub,
        "mul_magnitude": max(mul * mul, mul),
        "recurrence_a": max(worst_recurrence, a),
        "coordinate": max(8 * c * c, 2 * c),  # differences 2c, products 4c², answer 8c²
        "coefficient": 3 * k * x0 * x0 + 2 * k * x0 + k,  # 3·c3·x0² + 2·c2·x0 + c1
        "point": x0 * x0,  # the program's x0·x0, whatever the coefficients (even all 0)
    }


def check_params(p: TaskParams) -> None:
    """Refuse parameters the generator cannot honour, naming the parameter
    (`ParamsError`, code `bad_params`, `limit` = the parameter): every count and range
    within its documented maximum, and every register, intermediate and answer of every
    family within the safe-integer domain ±(2**53 − 1) — checked before any generation."""
    _check_int("seed", p.seed, 0, SEED_LIMIT - 1)
    for name in ("primitives_per_op", "determinants", "derivatives", "probe_pairs"):
        _check_int(name, getattr(p, name), 0, MAX_COUNT)
    steps = p.recurrence_steps
    if not isinstance(steps, tuple):
        _refuse("recurrence_steps", "must be a tuple (a JSON array) of integers")
    if len(steps) > MAX_COUNT:
        _refuse("recurrence_steps", f"has more than {MAX_COUNT} entries", MAX_COUNT, len(steps))
    for step in steps:
        _check_int("recurrence_steps", step, 1, MAX_RECURRENCE_STEPS)
    if p.operand_digits not in ("uniform", "stratified"):
        _refuse("operand_digits", f"must be 'uniform' or 'stratified', not {p.operand_digits!r}")
    for name in _RANGES:
        pair = getattr(p, name)
        if not (isinstance(pair, tuple) and len(pair) == 2):
            _refuse(name, "must be a pair [low, high]")
        low = _check_int(name, pair[0], 0, _SAFE)
        high = _check_int(name, pair[1], 0, _SAFE)
        if low > high:
            _refuse(name, f"must satisfy 0 <= low <= high, got ({low}, {high})")
    for name, worst in _worst_intermediate(p).items():
        if worst > _SAFE:
            _refuse(
                _WORST_NAMES.get(name, name),
                "is too large: a register, intermediate or answer could reach "
                f"{_short(worst)}, beyond the safe-integer bound 2**53-1",
                _SAFE,
            )
    if p.task_count > MAX_TASKS:
        _refuse("task_count", f"would be {p.task_count}, over {MAX_TASKS}", MAX_TASKS, p.task_count)


_RANGES: Final = (
    "addsub_magnitude",
    "mul_magnitude",
    "recurrence_a",
    "recurrence_b",
    "recurrence_x0",
    "coordinate",
    "coefficient",
    "point",
)
_WORST_NAMES: Final = {
    "recurrence_a": "recurrence_a/recurrence_b/recurrence_x0/recurrence_steps",
    "coefficient": "coefficient/point",
}


def preset_params(name: str, seed: int = DEFAULT_SEED) -> TaskParams:
    """The task parameters of a named preset for `seed` (`pyapp.tasks.presets`; KeyError
    names the presets)."""
    if name not in PRESETS:
        raise KeyError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in PRESETS[name].items()}
    return TaskParams(seed=seed, **values)  # type: ignore[arg-type]


def preset_of(params: TaskParams) -> str | None:
    """The preset whose task set `params` is, whatever the seed (every parameter equal);
    None for a custom set. The name a run is shown under comes from here, never from a
    label someone wrote down."""
    for name in PRESETS:
        if preset_params(name, params.seed) == params:
            return name
    return None


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


def _draw(rng: SplitMix64, low: int, high: int, digit_count: int | None) -> int:
    """A signed operand (negative one time in four); with `digit_count`, its magnitude has
    exactly that many digits (clipped to [low, high])."""
    if digit_count is not None:
        low, high = max(low, 10 ** (digit_count - 1)), min(high, 10**digit_count - 1)
    return rng.signed(low, high)


def _primitive_registers(rng: SplitMix64, op: str, p: TaskParams, i: int = 0) -> dict[str, int]:
    """Operands of the i-th (from 0) probe of `op`. Stratified: the digit counts of a and b
    walk every pair of counts between those of the range's ends, a fastest."""
    low, high = p.mul_magnitude if op == "mul" else p.addsub_magnitude
    if p.operand_digits == "uniform":
        return {"a": rng.signed(low, high), "b": rng.signed(low, high)}
    first, last = len(str(max(low, 1))), len(str(high))
    levels = last - first + 1
    return {
        "a": _draw(rng, low, high, first + i % levels),
        "b": _draw(rng, low, high, first + (i // levels) % levels),
    }


def _recurrence_registers(rng: SplitMix64, p: TaskParams, i: int) -> dict[str, int]:
    return {
        "a": rng.signed(*p.recurrence_a),
        "b": rng.signed(*p.recurrence_b),
        "x0": rng.signed(*p.recurrence_x0),
    }


def _determinant_registers(rng: SplitMix64, p: TaskParams, i: int) -> dict[str, int]:
    names = ("x1", "y1", "x2", "y2", "x3", "y3")
    return {name: rng.signed(*p.coordinate, negative_in=2) for name in names}


def _derivative_registers(rng: SplitMix64, p: TaskParams, i: int) -> dict[str, int]:
    registers = {n: rng.signed(*p.coefficient, negative_in=2) for n in ("c3", "c2", "c1", "c0")}
    registers["x0"] = rng.signed(*p.point, negative_in=2)
    registers["three"] = 3
    registers["two"] = 2
    return registers


def _probe_op(i: int) -> Literal["add", "sub", "mul"]:
    return PRIMITIVE_OPS[i % len(PRIMITIVE_OPS)]


@dataclass(frozen=True)
class FamilyRow:
    """One row of the task-family table: how many instances, their registers, their program.

    `generate` walks the rows in order and draws each instance's registers from the one
    SplitMix64 stream, so the table's order is part of what a seed means."""

    prefix: str
    """Task id prefix (`add`, `recurrence`, `probe`, ...); ids are `PREFIX-N` from 1."""
    family: Callable[[int], Family]
    """The family of the i-th instance (from 0)."""
    split: Split
    """`profile` or `heldout`."""
    group: Group
    """`primitive`, `composition` or `encoding_probe`."""
    count: Callable[[TaskParams], int]
    """How many instances the parameters ask for."""
    registers: Callable[[SplitMix64, TaskParams, int], dict[str, int]]
    """The i-th instance's registers, drawn from the stream."""
    steps: Callable[[TaskParams, int], int | None] = lambda p, i: None
    """Recurrence updates of the i-th instance; null for other families."""
    encodings: tuple[Encoding, ...] = ("json",)
    """One task per encoding; two encodings make a pair (`PREFIX-N-json`, `PREFIX-N-prose`)."""


def _primitive_row(op: Literal["add", "sub", "mul"]) -> FamilyRow:
    return FamilyRow(
        prefix=op,
        family=lambda i: op,
        split="profile",
        group="primitive",
        count=lambda p: p.primitives_per_op,
        registers=lambda rng, p, i: _primitive_registers(rng, op, p, i),
    )


FAMILY_TABLE: tuple[FamilyRow, ...] = (
    *(_primitive_row(op) for op in PRIMITIVE_OPS),
    FamilyRow(
        prefix="recurrence",
        family=lambda i: "affine_recurrence",
        split="heldout",
        group="composition",
        count=lambda p: len(p.recurrence_steps),
        registers=_recurrence_registers,
        steps=lambda p, i: p.recurrence_steps[i],
    ),
    FamilyRow(
        prefix="determinant",
        family=lambda i: "triangle_determinant",
        split="heldout",
        group="composition",
        count=lambda p: p.determinants,
        registers=_determinant_registers,
    ),
    FamilyRow(
        prefix="derivative",
        family=lambda i: "cubic_derivative",
        split="heldout",
        group="composition",
        count=lambda p: p.derivatives,
        registers=_derivative_registers,
    ),
    FamilyRow(
        prefix="probe",
        family=_probe_op,
        split="profile",
        group="encoding_probe",
        count=lambda p: p.probe_pairs,
        registers=lambda rng, p, i: _primitive_registers(
            rng, _probe_op(i), replace(p, operand_digits="uniform")
        ),
        encodings=("json", "prose"),
    ),
)
"""Every task family, in generation order. To add a family: a program builder in
`PROGRAMS`, an oracle in `pyapp.tasks.oracles`, a row here (appended, so that existing
seeds keep their tasks), and a new GENERATOR_VERSION if any existing seed changes."""

PROGRAMS: dict[str, Callable[[int | None], Node]] = {
    "add": lambda steps: primitive_program("add"),
    "sub": lambda steps: primitive_program("sub"),
    "mul": lambda steps: primitive_program("mul"),
    "affine_recurrence": lambda steps: recurrence_program(steps or 0),
    "triangle_determinant": lambda steps: determinant_program(),
    "cubic_derivative": lambda steps: derivative_program(),
}
"""Family → its reference program (given the recurrence's number of updates)."""


def generate(params: TaskParams | None = None) -> tuple[Task, ...]:
    """The task set for `params` (default: seed 1729, the design's 24 tasks)."""
    p = params or TaskParams()
    rng = SplitMix64(p.seed)
    tasks: list[Task] = []
    for row in FAMILY_TABLE:
        for i in range(row.count(p)):
            family, steps = row.family(i), row.steps(p, i)
            registers = row.registers(rng, p, i)
            paired = len(row.encodings) > 1
            for encoding in row.encodings:
                tasks.append(
                    _finish(
                        task_id=f"{row.prefix}-{i + 1}" + (f"-{encoding}" if paired else ""),
                        family=family,
                        split=row.split,
                        group=row.group,
                        encoding=encoding,
                        pair=f"{row.prefix}-{i + 1}" if paired else None,
                        registers=dict(registers),
                        program=PROGRAMS[family](steps),
                        steps=steps,
                    )
                )
    return tuple(tasks)


def draw_stream_seed(draw_seed: str) -> int:
    """The SplitMix64 seed of a sealed run's held-out stream: the first 64 bits (16 hex
    digits) of the held-out draw seed (a SHA-256 in hex, `pyapp.predict.sealing`)."""
    if len(draw_seed) != 64 or any(c not in "0123456789abcdef" for c in draw_seed):
        raise ValueError(f"a held-out draw seed is 64 lowercase hex digits, not {draw_seed!r}")
    return int(draw_seed[:16], 16)


def draw_heldout(params: TaskParams, draw_seed: str) -> tuple[Task, ...]:
    """A sealed run's held-out tasks (generator `tasks/2`): the held-out rows of
    `FAMILY_TABLE`, in order, with the same ids, counts and ranges as `tasks/1` gives them,
    their registers drawn from one SplitMix64 stream seeded by `draw_stream_seed(draw_seed)`
    instead of the task seed's stream."""
    rng = SplitMix64(draw_stream_seed(draw_seed))
    drawn: list[Task] = []
    for row in FAMILY_TABLE:
        if row.split != "heldout":
            continue
        for i in range(row.count(params)):
            family, steps = row.family(i), row.steps(params, i)
            registers = row.registers(rng, params, i)
            task = _finish(
                task_id=f"{row.prefix}-{i + 1}",
                family=family,
                split=row.split,
                group=row.group,
                encoding="json",
                pair=None,
                registers=dict(registers),
                program=PROGRAMS[family](steps),
                steps=steps,
            )
            drawn.append(replace(task, generator_version=SEALED_GENERATOR_VERSION))
    return tuple(drawn)


def profile_tasks(params: TaskParams) -> tuple[Task, ...]:
    """The profile tasks of `params` (the same in a sealed and an unsealed run)."""
    return tuple(t for t in generate(params) if t.split == "profile")


def sealed_tasks(params: TaskParams, draw_seed: str | None) -> tuple[Task, ...]:
    """A sealed run's task set in `generate`'s order: the profile tasks from the task seed
    (`tasks/1`, byte for byte) and, once the draw is made, its held-out tasks from the draw
    seed (`draw_heldout`, `tasks/2`) in their places; before the draw (`draw_seed` None)
    the profile tasks alone: the held-out tasks do not exist yet."""
    if draw_seed is None:
        return profile_tasks(params)
    drawn = {t.id: t for t in draw_heldout(params, draw_seed)}
    return tuple(t if t.split == "profile" else drawn[t.id] for t in generate(params))


def tasks_by_id(tasks: tuple[Task, ...]) -> dict[str, Task]:
    return {task.id: task for task in tasks}
