"""The state-aware predictor: each primitive's success as a function of its operands' state.

Frozen at the same moment as the product predictor (from the same profile trials, those
before the freeze record), it describes each primitive step by the state it acts on:

| feature      | meaning                                                        |
|--------------|----------------------------------------------------------------|
| `bias`       | 1                                                              |
| `max_digits` | digits of the larger operand (|value|), minus 3                |
| `min_digits` | digits of the smaller operand, minus 3                         |
| `res_digits` | digits of the exact result, minus 3                            |
| `negative`   | 1 when either operand is negative, else 0                      |

**Success.** Per op, a logistic model P(step right) = σ(β·x), fitted by maximum a
posteriori (Newton's method) under the stated prior β_bias ~ N(0, 2.5²) and every other
β ~ N(0, 1²) (log-odds per digit): with few or one-sided trials the estimate stays finite
and is pulled towards "no dependence on state" rather than to 0 or 1.

**Cost.** Per op, a ridge regression of the trial's generation + execution cost on the same
features (penalty `COST_RIDGE` on every coefficient but the bias), floored at zero.

**No extrapolation.** A step's features are clamped into the range the op's profile trials
spanned (`feature_low`, `feature_high`): outside the calibration set's operand sizes the
predictor says what it saw at the nearest edge rather than extending a line fitted on a few
points (calibration presets with digit-stratified operands widen that range).

**Composition.** A held-out task's steps are walked with their *exact* intermediate values
— the reference program's nodes for whole-task conditions, the route's calls for chains —
and the prediction is the product of the steps' success probabilities (P(all steps
right) under independent errors *given the state*) and the sum of their costs.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from interpreter import Node, Op
from pyapp.records import STATE_AWARE_VERSION, Trial, to_json
from pyapp.records import OpStateModel as OpStateModel  # re-exported
from pyapp.records import StateAwareModel as StateAwareModel  # re-exported
from pyapp.tasks import PRIMITIVE_OPS, Task

FEATURES = ("bias", "max_digits", "min_digits", "res_digits", "negative")
PRIOR_SD = (2.5, 1.0, 1.0, 1.0, 1.0)
"""Prior standard deviations of the logistic coefficients, in FEATURES order."""
COST_RIDGE = 1.0
"""Ridge penalty of the cost regression's non-bias coefficients."""
PRIOR = (
    "logistic MAP per op; prior N(0, 2.5^2) on the bias and N(0, 1) on each state "
    "coefficient (log-odds per digit or for a negative operand); cost: ridge regression "
    "(penalty 1.0 on state coefficients), floored at 0"
)
_DIGIT_CENTRE = 3


@dataclass(frozen=True)
class Step:
    """One primitive step with its exact operands and result."""

    op: str
    left: int
    right: int
    result: int


def features(step: Step) -> tuple[float, ...]:
    a, b, r = (len(str(abs(v))) for v in (step.left, step.right, step.result))
    return (
        1.0,
        float(max(a, b) - _DIGIT_CENTRE),
        float(min(a, b) - _DIGIT_CENTRE),
        float(r - _DIGIT_CENTRE),
        1.0 if step.left < 0 or step.right < 0 else 0.0,
    )


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (small dense systems)."""
    n = len(vector)
    a = [[*row, vector[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        if abs(a[col][col]) < 1e-300:
            raise ZeroDivisionError("singular system")
        for r in range(col + 1, n):
            factor = a[r][col] / a[col][col]
            for c in range(col, n + 1):
                a[r][c] -= factor * a[col][c]
    solution = [0.0] * n
    for r in range(n - 1, -1, -1):
        total = a[r][n] - math.fsum(a[r][c] * solution[c] for c in range(r + 1, n))
        solution[r] = total / a[r][r]
    return solution


_LN2 = 0.6931471805599453


def _exp(x: float) -> float:
    """e**x from IEEE basic operations only: the same bits under CPython and Pyodide, whose
    C libraries' `exp` may differ in the last place (the page and `reproduce` must agree
    number for number). Range reduction by ln 2, then a Taylor series (|r| ≤ 0.35)."""
    x = min(max(x, -700.0), 700.0)
    k = round(x / _LN2)
    r = x - k * _LN2
    term = total = 1.0
    for n in range(1, 22):
        term = term * r / n
        total += term
    return math.ldexp(total, k)


def _dot(coefficients: Sequence[float], x: Sequence[float]) -> float:
    """β·x, correctly rounded (`math.fsum`; `sum` of floats changed in Python 3.12)."""
    return math.fsum(b * v for b, v in zip(coefficients, x, strict=True))


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + _exp(-z))
    e = _exp(z)
    return e / (1.0 + e)


def fit_logistic(rows: Sequence[tuple[tuple[float, ...], bool]]) -> tuple[float, ...]:
    """MAP logistic coefficients under the Gaussian prior `PRIOR_SD` (Newton's method)."""
    k = len(FEATURES)
    beta = [0.0] * k
    precision = [1.0 / (sd * sd) for sd in PRIOR_SD]
    for _ in range(50):
        gradient = [-precision[j] * beta[j] for j in range(k)]
        hessian = [[precision[i] if i == j else 0.0 for j in range(k)] for i in range(k)]
        for x, y in rows:
            p = _sigmoid(_dot(beta, x))
            w = p * (1.0 - p)
            for i in range(k):
                gradient[i] += (float(y) - p) * x[i]
                if x[i]:
                    for j in range(k):
                        hessian[i][j] += w * x[i] * x[j]
        step = _solve(hessian, gradient)
        beta = [b + s for b, s in zip(beta, step, strict=True)]
        if max(abs(s) for s in step) < 1e-10:
            break
    return tuple(beta)


def fit_cost(rows: Sequence[tuple[tuple[float, ...], float]]) -> tuple[float, ...] | None:
    """Ridge least squares of cost on the features; null with no rows."""
    if not rows:
        return None
    k = len(FEATURES)
    normal = [[COST_RIDGE if i == j and i > 0 else 0.0 for j in range(k)] for i in range(k)]
    normal[0][0] += 1e-9
    target = [0.0] * k
    for x, y in rows:
        for i in range(k):
            target[i] += x[i] * y
            for j in range(k):
                normal[i][j] += x[i] * x[j]
    return tuple(_solve(normal, target))


def primitive_step(task: Task) -> Step:
    """The single step of a profile task (isolated primitive or encoding probe)."""
    a, b = task.registers["a"], task.registers["b"]
    return Step(task.family, a, b, task.answer)


def fit(
    trials: Sequence[Trial], tasks: dict[str, Task], cost_of: dict[str, float | None]
) -> StateAwareModel:
    """The per-op fits from profile trials (already restricted to one condition)."""
    ops = []
    for op in PRIMITIVE_OPS:
        mine = [t for t in trials if tasks[t.task_id].family == op]
        rows = [(features(primitive_step(tasks[t.task_id])), t.correct) for t in mine]
        costs = [
            (features(primitive_step(tasks[t.task_id])), cost)
            for t in mine
            if (cost := cost_of[t.trial_id]) is not None
        ]
        seen = [x for x, _ in rows]
        ops.append(
            OpStateModel(
                op=op,
                trials=len(mine),
                successes=sum(1 for t in mine if t.correct),
                coefficients=fit_logistic(rows),
                cost_coefficients=fit_cost(costs),
                feature_low=tuple(map(min, zip(*seen, strict=True))) if seen else (),
                feature_high=tuple(map(max, zip(*seen, strict=True))) if seen else (),
            )
        )
    content = {"features": FEATURES, "prior": PRIOR, "ops": tuple(ops)}
    canonical = json.dumps(to_json(content), sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    return StateAwareModel(FEATURES, PRIOR, tuple(ops), digest, STATE_AWARE_VERSION)


def program_steps(program: Node, registers: dict[str, int]) -> list[Step]:
    """The reference program's steps in evaluation order, with exact values."""
    steps: list[Step] = []

    def walk(node: Node) -> int:
        if not isinstance(node, Op):
            return int(registers[node.name])
        left, right = walk(node.args[0]), walk(node.args[1])
        value = {"add": left + right, "sub": left - right, "mul": left * right}[node.op]
        steps.append(Step(node.op, left, right, value))
        return value

    walk(program)
    return steps


def _fitted(model: StateAwareModel, step: Step) -> tuple[OpStateModel, tuple[float, ...]]:
    """The step's op model and its features clamped into the profile's range."""
    fitted = next(o for o in model.ops if o.op == step.op)
    x = tuple(
        min(max(v, low), high)
        for v, low, high in zip(
            features(step), fitted.feature_low, fitted.feature_high, strict=False
        )
    )
    return fitted, x


def step_probability(model: StateAwareModel, step: Step) -> float | None:
    """P(step right) given its state; null when the op had no profile trials."""
    fitted, x = _fitted(model, step)
    if not fitted.trials:
        return None
    return _sigmoid(_dot(fitted.coefficients, x))


def step_cost(model: StateAwareModel, step: Step) -> float | None:
    """Expected cost (ms) of the step given its state; null without cost observations."""
    fitted, x = _fitted(model, step)
    if fitted.cost_coefficients is None or not fitted.trials:
        return None
    return max(0.0, _dot(fitted.cost_coefficients, x))
