"""Execution of a register tree: binary64 arithmetic, safe-integer checks, exact cross-check.

Evaluation is post-order, left argument first, over an explicit stack (no recursion).
Each operation is computed twice through the dispatch tables below: in IEEE binary64
(Python ``float``), which is what the browser computes, and in exact Python ``int``.
Every intermediate passes one check (``_checked``): it must be finite and within
``|v| <= SAFE_INTEGER_MAX``, and the two routes must agree.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from interpreter.errors import ProgramError, integer_text, quote
from interpreter.limits import DEFAULT_LIMITS, SAFE_INTEGER_MAX, Limits, enforce
from interpreter.parse import parse_program
from interpreter.program import Node, Ref, check_program, check_register_name, postorder

#: op -> binary64 rule. ``operator.add`` on two floats is one IEEE-754 addition.
_BINARY64: Final[dict[str, Callable[[float, float], float]]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
}

#: op -> exact rule, on unbounded Python ints: the oracle.
_EXACT: Final[dict[str, Callable[[int, int], int]]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
}


@dataclass(frozen=True)
class Step:
    """One executed operation node."""

    path: str
    """Where the node is in the tree: ``$``, ``$.args[0]``, ..."""
    op: str
    """``add``, ``sub`` or ``mul``."""
    operands: tuple[int, int]
    """The values of its left and right arguments."""
    result: int
    """The value it produced."""

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "op": self.op,
            "operands": list(self.operands),
            "result": self.result,
        }


@dataclass(frozen=True)
class Execution:
    """The outcome of a successful execution."""

    value: int
    """The value of the root node."""
    steps: tuple[Step, ...]
    """Every operation node, in evaluation order (post-order, left first)."""

    def to_json(self) -> dict[str, object]:
        return {"value": self.value, "steps": [step.to_json() for step in self.steps]}


def validate_registers(registers: Mapping[str, int], limits: Limits = DEFAULT_LIMITS) -> None:
    """Refuse register sets that are too large, badly named, not ints, or unsafe."""
    if not isinstance(registers, Mapping):
        raise ProgramError(
            "invalid_register_value",
            f"registers must be a mapping of names to ints, not {type(registers).__name__}",
            path="registers",
            value=type(registers).__name__,
        )
    enforce("registers", len(registers), limits, "registers")
    for name, value in registers.items():
        check_register_name(name, "registers")
        path = f"registers.{name}"
        if not isinstance(value, int) or isinstance(value, bool):
            raise ProgramError(
                "invalid_register_value",
                f"register {name} must hold an int, not {type(value).__name__}",
                path=path,
                value=type(value).__name__,
            )
        if abs(value) > SAFE_INTEGER_MAX:
            raise ProgramError(
                "unsafe_integer",
                f"register {name} is outside the safe-integer domain |v| <= 2**53 - 1",
                path=path,
                value=integer_text(value),
            )


def _checked(binary64: float, exact: int, path: str) -> int:
    """The one safety check every intermediate passes; returns it as an int."""
    if (
        not math.isfinite(binary64)
        or abs(binary64) > SAFE_INTEGER_MAX
        or (abs(exact) > SAFE_INTEGER_MAX)
    ):
        raise ProgramError(
            "unsafe_integer",
            f"intermediate {integer_text(exact)} is outside the safe-integer domain"
            " |v| <= 2**53 - 1",
            path=path,
            value=integer_text(exact),
        )
    if int(binary64) != exact:
        raise ProgramError(
            "cross_check_mismatch",
            f"binary64 gave {binary64!r} but the exact value is {exact}",
            path=path,
            value=integer_text(exact),
        )
    return exact


def execute(node: Node, registers: Mapping[str, int], limits: Limits = DEFAULT_LIMITS) -> Execution:
    """Run a tree on registers, recording every operation as a ``Step``."""
    validate_registers(registers, limits)
    check_program(node, limits, registers)
    values: list[int] = []
    steps: list[Step] = []
    for path, current in postorder(node):
        if isinstance(current, Ref):  # {"ref": NAME}: the register's value
            values.append(int(registers[current.name]))
            continue
        # {"op": OP, "args": [left, right]}: both args are already on the stack
        right = values.pop()
        left = values.pop()
        binary64 = _BINARY64[current.op](float(left), float(right))
        result = _checked(binary64, _EXACT[current.op](left, right), path)
        steps.append(Step(path, current.op, (left, right), result))
        values.append(result)
    return Execution(values[0], tuple(steps))


def evaluate_exact(node: Node, registers: Mapping[str, int]) -> int:
    """The tree's value in exact Python ints, with no bounds: the oracle."""
    values: list[int] = []
    for path, current in postorder(node):
        if isinstance(current, Ref):
            if current.name not in registers:
                shown = quote(str(current.name))
                raise ProgramError(
                    "unknown_register",
                    f"register {shown!r} is not supplied",
                    path=path,
                    value=shown,
                )
            values.append(registers[current.name])
        elif current.op in _EXACT:
            right = values.pop()
            left = values.pop()
            values.append(_EXACT[current.op](left, right))
        else:
            shown = quote(str(current.op))
            raise ProgramError("unknown_op", f"unknown op {shown!r}", path=path, value=shown)
    return values[0]


def run(
    text: str, registers: Mapping[str, int], limits: Limits = DEFAULT_LIMITS
) -> dict[str, object]:
    """Parse and execute a model's output; never raises.

    Returns ``{"ok": True, "value": v, "steps": [...]}`` or
    ``{"ok": False, "error": {code, message, path, limit, maximum, value}}``.
    """
    try:
        execution = execute(parse_program(text, limits), registers, limits)
    except ProgramError as error:
        return {"ok": False, "error": error.to_json()}
    except Exception as error:  # unreachable by design; a guard, never a crash
        internal = ProgramError(
            "internal_error",
            f"unexpected {type(error).__name__} inside the interpreter",
            value=type(error).__name__,
        )
        return {"ok": False, "error": internal.to_json()}
    return {"ok": True, **execution.to_json()}
