"""A third, independent oracle: sympy (imported lazily — never on the page's boot path).

Each answer is recomputed symbolically by yet another route: recurrences by a power of the
affine update matrix, determinants as a 3×3 determinant with a column of ones, derivatives
by differentiating the polynomial.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyapp.tasks.taskset import Task


def sympy_answer(task: Task, sympy: Any) -> int:
    r = {name: sympy.Integer(value) for name, value in task.registers.items()}
    if task.family == "add":
        value = r["a"] + r["b"]
    elif task.family == "sub":
        value = r["a"] - r["b"]
    elif task.family == "mul":
        value = r["a"] * r["b"]
    elif task.family == "affine_recurrence":
        update = sympy.Matrix([[r["a"], r["b"]], [0, 1]])
        value = (update ** int(task.steps or 0) * sympy.Matrix([r["x0"], 1]))[0]
    elif task.family == "triangle_determinant":
        value = sympy.Matrix(
            [[r["x1"], r["y1"], 1], [r["x2"], r["y2"], 1], [r["x3"], r["y3"], 1]]
        ).det()
    elif task.family == "cubic_derivative":
        x = sympy.Symbol("x")
        p = r["c3"] * x**3 + r["c2"] * x**2 + r["c1"] * x + r["c0"]
        value = sympy.diff(p, x).subs(x, r["x0"])
    else:
        raise ValueError(f"no sympy oracle for {task.family!r}")
    if not value.is_Integer:
        raise ArithmeticError(f"{task.id}: sympy gave a non-integer {value}")
    return int(value)


def check(tasks: Iterable[Task]) -> dict[str, object]:
    """Compare every task's answer with sympy's; returns counts and each mismatch."""
    import sympy  # type: ignore[import-untyped]

    checked = agreements = 0
    mismatches: list[dict[str, object]] = []
    for task in tasks:
        checked += 1
        derived = sympy_answer(task, sympy)
        if derived == task.answer:
            agreements += 1
        else:
            mismatches.append({"task_id": task.id, "answer": task.answer, "sympy": derived})
    return {
        "sympy_version": str(sympy.__version__),
        "checked": checked,
        "agreements": agreements,
        "mismatches": mismatches,
    }
