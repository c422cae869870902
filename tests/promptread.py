"""Shared by tests: read the operands back out of a rendered prompt (scripted models)."""

from __future__ import annotations

import json

CHAIN_V2_OPENING = "You are given two integer registers."


def read_registers(prompt: str) -> dict[str, int]:
    """The registers of a prompt, rendered as a JSON block or as prose."""
    if "Register a holds" in prompt:
        registers = {}
        for part in prompt.split("Register ")[1:]:
            name, _, value = part.partition(" holds ")
            registers[name] = int(value.split(".")[0])
        return registers
    line = prompt.split("Registers:\n", 1)[1].split("\n", 1)[0]
    return {str(k): int(v) for k, v in json.loads(line).items()}


def chain_operands(prompt: str) -> tuple[int, str, int] | None:
    """(left, symbol, right) of a chain-step prompt (version 2 or 1); None otherwise."""
    if prompt.startswith(CHAIN_V2_OPENING):
        registers = read_registers(prompt)
        symbol = prompt.rsplit("Compute a ", 1)[1][0]
        return registers["a"], symbol, registers["b"]
    if prompt.startswith("Compute "):
        expression = prompt.split("Compute ", 1)[1].split(". Reply", 1)[0]
        left, symbol, right = expression.split(" ")
        return int(left), symbol, int(right.strip("()"))
    return None


def chain_value(prompt: str) -> tuple[int, str]:
    """The exact value a chain-step prompt asks for, and its symbol."""
    operands = chain_operands(prompt)
    assert operands is not None, f"not a chain-step prompt: {prompt[:60]!r}"
    left, symbol, right = operands
    return {"+": left + right, "-": left - right, "*": left * right}[symbol], symbol
