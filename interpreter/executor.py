"""Execution of a validated program: binary64 arithmetic, safe-integer checks, exact cross-check.

The program's code is already in evaluation order (post-order, left argument first),
so execution is one loop over it with a value stack. Each operation runs its table
entry twice: on two ``float``s (IEEE binary64, what the browser computes) and on two
``int``s (exact). Every intermediate passes one check: the exact value is within
``|v| <= SAFE_INTEGER_MAX`` and binary64 gave exactly that value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from interpreter.errors import ProgramError, integer_text, mistyped, quote
from interpreter.limits import DEFAULT_LIMITS, SAFE_INTEGER_MAX, Limits
from interpreter.parse import parse_program
from interpreter.program import Node, Program, check_register_name, program_from_json


class Step(NamedTuple):
    """One executed operation node (a tuple: up to 63 are made per execution)."""

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


def _register_values(registers: Mapping[str, int], limits: Limits) -> dict[str, int]:
    """The registers as plain ints, or the error for the first one that is too many,
    badly named, not an int, or unsafe."""
    if not isinstance(registers, Mapping):
        raise mistyped(
            "invalid_register_value",
            "registers must be a mapping of names to ints",
            registers,
            path="registers",
        )
    if len(registers) > limits.max_registers:
        raise limits.exceeded("registers", len(registers), "registers")
    values: dict[str, int] = {}
    for name, value in registers.items():
        check_register_name(name, "registers")
        path = f"registers.{name}"
        if not isinstance(value, int) or isinstance(value, bool):
            raise mistyped(
                "invalid_register_value", f"register {name} must hold an int", value, path=path
            )
        if abs(value) > SAFE_INTEGER_MAX:
            raise ProgramError(
                "unsafe_integer",
                f"register {name} is outside the safe-integer domain |v| <= 2**53 - 1",
                path=path,
                value=integer_text(value),
            )
        values[name] = int(value)
    return values


def _check(binary64: float, exact: int, path: str) -> None:
    """The one safety check of an intermediate: finite and safe in binary64 and in
    exact ints, and the two agree."""
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


def execute(
    program: Program | Node, registers: Mapping[str, int], limits: Limits = DEFAULT_LIMITS
) -> Execution:
    """Run a program on registers, recording every operation as a ``Step``.

    ``program`` is what ``parse_program`` returned, or a tree built from ``Ref`` and
    ``Op``, which is validated here (once) against ``limits``. The registers are
    checked first; then every register the program reads must be supplied.
    """
    values = _register_values(registers, limits)
    if not isinstance(program, Program):
        program = program_from_json(program, limits)
    if not program.registers <= values.keys():
        for entry, path in zip(program.code, program.paths, strict=True):
            if isinstance(entry, str) and entry not in values:
                shown = quote(entry)
                raise ProgramError(
                    "unknown_register",
                    f"register {shown!r} is not supplied",
                    path=path,
                    value=shown,
                )
    stack: list[int] = []
    steps: list[Step] = []
    for entry, path in zip(program.code, program.paths, strict=True):
        if isinstance(entry, str):  # {"ref": NAME}: the register's value
            stack.append(values[entry])
            continue
        # {"op": OP, "args": [left, right]}: both arguments are on the stack
        right = stack.pop()
        left = stack.pop()
        exact = entry.apply(left, right)
        binary64 = entry.apply(float(left), float(right))  # type: ignore[arg-type]
        if not (-SAFE_INTEGER_MAX <= exact <= SAFE_INTEGER_MAX and binary64 == exact):
            _check(binary64, exact, path)  # raises: unsafe or disagreeing
        steps.append(Step(path, entry.name, (left, right), exact))
        stack.append(exact)
    return Execution(stack[0], tuple(steps))


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
