"""Independent exact-integer oracles: each answer is confirmed by a route other than
the reference program.

| family               | oracle                                                                  |
|----------------------|-------------------------------------------------------------------------|
| add / sub / mul      | Python `int` arithmetic (exact; the program runs in binary64)           |
| affine_recurrence    | closed form x_n = aⁿ·x0 + b·(aⁿ−1)/(a−1)  (x0 + n·b when a = 1)          |
| triangle_determinant | shoelace sum Σ (x_i·y_{i+1} − x_{i+1}·y_i) over the closed polygon      |
| cubic_derivative     | expanded derivative coefficients [c1, 2·c2, 3·c3] evaluated by Horner   |

All arithmetic here is Python `int`: arbitrary precision, no rounding.
"""

from __future__ import annotations

from collections.abc import Mapping


def recurrence_closed_form(a: int, b: int, x0: int, steps: int) -> int:
    if steps < 0:
        raise ValueError("steps must be non-negative")
    if a == 1:
        return x0 + steps * b
    power: int = a**steps
    geometric, remainder = divmod(power - 1, a - 1)
    if remainder:
        raise ArithmeticError("(a^n - 1) is always divisible by (a - 1)")
    return power * x0 + b * geometric


def shoelace_twice_area(points: list[tuple[int, int]]) -> int:
    """Signed twice-area of the polygon through `points` (counter-clockwise positive)."""
    total = 0
    for i, (x, y) in enumerate(points):
        x_next, y_next = points[(i + 1) % len(points)]
        total += x * y_next - x_next * y
    return total


def derivative_coefficients(coefficients_low_first: list[int]) -> list[int]:
    """Coefficients of p' from those of p, lowest degree first."""
    return [k * c for k, c in enumerate(coefficients_low_first)][1:]


def horner(coefficients_low_first: list[int], x: int) -> int:
    value = 0
    for c in reversed(coefficients_low_first):
        value = value * x + c
    return value


def confirm(family: str, registers: Mapping[str, int], steps: int | None) -> tuple[str, int]:
    """(oracle name, exact answer) for a task of `family` with these registers."""
    r = registers
    if family == "add":
        return "python-int", r["a"] + r["b"]
    if family == "sub":
        return "python-int", r["a"] - r["b"]
    if family == "mul":
        return "python-int", r["a"] * r["b"]
    if family == "affine_recurrence":
        if steps is None:
            raise ValueError("a recurrence needs steps")
        return "recurrence-closed-form", recurrence_closed_form(r["a"], r["b"], r["x0"], steps)
    if family == "triangle_determinant":
        points = [(r["x1"], r["y1"]), (r["x2"], r["y2"]), (r["x3"], r["y3"])]
        return "shoelace", shoelace_twice_area(points)
    if family == "cubic_derivative":
        derivative = derivative_coefficients([r["c0"], r["c1"], r["c2"], r["c3"]])
        return "expanded-derivative", horner(derivative, r["x0"])
    raise ValueError(f"no oracle for family {family!r}")
