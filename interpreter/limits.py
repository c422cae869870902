"""The interpreter's bounds: one frozen value, passed in; one place builds a breach."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Final

from interpreter.errors import ProgramError, mistyped

#: The value domain: ``|v| <= 2**53 - 1`` (JavaScript's ``Number.isSafeInteger``).
SAFE_INTEGER_MAX: Final = 2**53 - 1


@dataclass(frozen=True)
class Limits:
    """Bounds on one program and its registers (DESIGN.md: the register-tree language)."""

    max_output_bytes: int = 16384
    """UTF-8 bytes of the whole program text."""
    max_nodes: int = 127
    """Nodes in the tree, leaves included."""
    max_depth: int = 16
    """Nodes on the longest root-to-leaf path (a lone leaf has depth 1)."""
    max_operations: int = 63
    """Operation (``op``) nodes in the tree."""
    max_registers: int = 16
    """Registers supplied to one execution."""

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            name = field.name.removeprefix("max_")
            if not isinstance(value, int) or isinstance(value, bool):
                raise mistyped("invalid_limits", f"{field.name} must be an int", value, limit=name)
            if value < (1 if name == "depth" else 0):
                raise ProgramError(
                    "invalid_limits", f"{field.name} is too small", limit=name, value=value
                )

    def exceeded(self, limit: str, value: int, path: str | None = None) -> ProgramError:
        """The ``limit_exceeded`` error for ``value`` over ``max_<limit>``.

        Callers compare (``if nodes > limits.max_nodes``) and raise this; it is the one
        place a limit error is built, so every breach reports the same fields:
        ``limit`` (the name), ``maximum`` (the bound) and ``value`` (the count reached
        when the breach was noticed, which is ``maximum + 1`` for counts that are
        checked as they grow).
        """
        maximum: int = getattr(self, f"max_{limit}")
        return ProgramError(
            "limit_exceeded",
            f"{limit} limit exceeded: {value} > {maximum}",
            path=path,
            limit=limit,
            maximum=maximum,
            value=value,
        )


DEFAULT_LIMITS: Final = Limits()
