"""Each seed's expected statistics, from the structure's parameters and the task set alone.

`seed_targets` computes, for one structure, preset and task seed, the value every check's
per-seed statistic has in expectation — from `pyapp.synthetic.closed_form` and
`closed_chain` (each trial's exact success probability and cost) and the profile's sampling
distribution, never from a run. A profile op's successes are Poisson-binomial (its probes
differ in rate: size, carry, the encoding mix), independent across ops, and independent of
the held-out outcomes, so:

| statistic (per seed)          | expectation                                              |
|-------------------------------|----------------------------------------------------------|
| `calibration` (product p − o) | mean over held-out tasks of E[Π p̂ᵏ] − q                  |
| `brier` (product)             | mean of E[p̂²] − 2q·E[p̂] + q                              |
| `cost` (signed error, ms)     | mean of Σ k·E[probe cost] − E[task cost]                 |
| `reference-brier` (skill)     | mean of E[r̂²] − 2q·E[r̂] + q, r̂ the pooled profile rate  |
| `reference` (skill)           | E[r̂]: the probes' mean success probability               |
| `rate:OP`                     | the mean of the op's probe success probabilities r̄        |
| `trials:OP`                   | the op's probe count                                     |
| `coverage:OP`                 | P(r̄ in the 95% Wilson interval of X/n), X ~ PB(probes)   |
| `cancel` (chains)             | mean of q_final − q_all-steps                            |
| `success:FAMILY` (chains)     | mean of q over the seed's routed tasks of a composite    |
|                               | family (recurrences, and under `chain-extended/1`        |
|                               | determinants and derivatives), per target                |
| `shrunk-brier`, `floor`       | the same-prior product's expected Brier; E q(1 − q)      |
| `constant` (flags)            | Π q + Π (1 − q): every held-out outcome equal (final)    |
| `base-rate`, `heldout-n`      | the mean q; the tasks scored (parts of `skill`)          |

`skill` (the product's skill against climatology, final correctness, pooled over the seed
list) is not a per-seed mean: its expectation, 1 − E[Brier] / E[ō(1 − ō)] over all N tasks,
with E[ō(1 − ō)] = Q̄(1 − Q̄) − mean q(1 − q) / N, is made from the list's means of `brier`,
`base-rate`, `floor` and `heldout-n` (`pyapp.synthetic.expectations.skill_expected`).

The Wilson interval is tested by its definition — r lies in it iff n(k/n − r)² ≤ z²r(1 − r) —
not by `pyapp.predict.metrics.wilson_interval`; the same-prior rate is its own Newton solve of
the state-aware predictor's stated prior on the bias, N(0, 2.5²), not `fit_logistic`.
`bound` is each statistic's truncation bound (`closed_form.Outcome.dropped`).

Which held-out tasks a chain routes depends on the run's chain protocol: `ROUTED` states
each protocol version's families here (docs/specification.md), not read from
`pyapp.records.terms`, so a protocol that stops routing a family moves the data away from
the targets. Every routed route is the reference tree in evaluation order
(`closed_chain.route_of`): seven calls for a determinant or a derivative.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

from pyapp.records import SyntheticSpec
from pyapp.synthetic.closed_chain import outcome
from pyapp.synthetic.closed_form import PRUNE, Outcome
from pyapp.tasks import Task, TaskParams, generate

CONDITIONS = ("model-only", "model-program", "controlled-chain")
OPS = ("add", "sub", "mul")
Z = 1.959963984540054
"""The two-sided 95% normal quantile, stated here (not imported from the metrics)."""
PRIOR_SD_BIAS = 2.5
"""The state-aware predictor's stated prior on its bias term (docs/predictor.md)."""
STATE_INFORMATIVE = ("size-dependent", "carry")
"""Structures under which the state-aware predictor's features (operand and result digit
counts) carry information about a step's error rate: the digits of an operand decide its
error rate (`size`) or bound its carries (`carry`)."""
DESIGN_PROTOCOL = "chain-design/1"
ROUTED: dict[str, tuple[str, ...]] = {
    DESIGN_PROTOCOL: ("add", "sub", "mul", "affine_recurrence"),
    "chain-extended/1": (
        "add",
        "sub",
        "mul",
        "affine_recurrence",
        "triangle_determinant",
        "cubic_derivative",
    ),
}
"""Chain protocol version → the families its controlled chain routes (docs/specification.md):
the others make no call."""
COMPOSITE = ("affine_recurrence", "triangle_determinant", "cubic_derivative")
"""The composite families: a chain's success per family (`success:FAMILY`) is checked."""


def targets_of(condition: str) -> tuple[str, ...]:
    """The targets scored under `condition`."""
    return ("all_steps", "final") if condition == "controlled-chain" else ("final",)


def key(condition: str, target: str, name: str) -> str:
    """A statistic's name: `condition/target/name` (target `-` where none applies)."""
    return f"{condition}/{target}/{name}"


@dataclass(frozen=True)
class SeedTargets:
    """One seed's expected statistics (and their truncation bounds)."""

    seed: int
    values: dict[str, float]
    bounds: dict[str, float]
    probe_rates: dict[str, float]
    """`condition/op` → r̄, the mean success probability of the op's probes."""


def poisson_binomial(rates: Sequence[float]) -> list[float]:
    """P(X = x) for X a sum of independent Bernoulli(rates)."""
    pmf = [1.0]
    for r in rates:
        nxt = [0.0] * (len(pmf) + 1)
        for x, p in enumerate(pmf):
            nxt[x] += p * (1.0 - r)
            nxt[x + 1] += p * r
        pmf = nxt
    return pmf


def in_wilson(successes: int, trials: int, rate: float) -> bool:
    """Whether `rate` lies in the 95% Wilson score interval of successes/trials, by the
    interval's definition: the rates r with n(k/n − r)² ≤ z²·r(1 − r)."""
    if trials == 0:
        return True
    gap = successes / trials - rate
    return trials * gap * gap <= Z * Z * rate * (1.0 - rate) * (1.0 + 1e-12) or gap == 0.0


@cache
def shrunk(successes: int, trials: int) -> float:
    """The success rate at the MAP of a bias-only logistic model under N(0, 2.5²)."""
    beta = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + math.exp(-beta))
        gradient = successes - trials * p - beta / PRIOR_SD_BIAS**2
        curvature = -trials * p * (1.0 - p) - 1.0 / PRIOR_SD_BIAS**2
        step = gradient / curvature
        beta -= step
        if abs(step) < 1e-13:
            break
    return 1.0 / (1.0 + math.exp(-beta))


def _moment(pmf: Sequence[float], trials: int, rate: Callable[[int, int], float], k: int) -> float:
    """E[rate(X, n)ᵏ] for X with probabilities `pmf`."""
    return math.fsum(p * rate(x, trials) ** k for x, p in enumerate(pmf))


def _plain(x: int, n: int) -> float:
    return x / n


@dataclass(frozen=True)
class _Profile:
    """One condition's profile as the model would measure it: per op, the probe count, the
    distribution of successes and the mean expected probe cost."""

    trials: dict[str, int]
    pmf: dict[str, list[float]]
    rate: dict[str, float]
    cost: dict[str, float]
    pooled: list[float]

    def product(self, ops: Sequence[str], rate: Callable[[int, int], float]) -> tuple[float, float]:
        """(E p, E p²) of a product over `ops` of per-op `rate(X, n)`."""
        first = second = 1.0
        for op in OPS:
            k = ops.count(op)
            if k:
                first *= _moment(self.pmf[op], self.trials[op], rate, k)
                second *= _moment(self.pmf[op], self.trials[op], rate, 2 * k)
        return first, second


def _profile(spec: SyntheticSpec, condition: str, tasks: Sequence[Task]) -> _Profile:
    probes = {op: [t for t in tasks if t.split == "profile" and t.family == op] for op in OPS}
    out = {op: [_trial(spec, condition, t) for t in probes[op]] for op in OPS}
    return _Profile(
        trials={op: len(probes[op]) for op in OPS},
        pmf={op: poisson_binomial([o.final for o in out[op]]) for op in OPS},
        rate={op: math.fsum(o.final for o in out[op]) / len(out[op]) for op in OPS},
        cost={op: math.fsum(o.cost_ms for o in out[op]) / len(out[op]) for op in OPS},
        pooled=poisson_binomial([o.final for op in OPS for o in out[op]]),
    )


def _trial(spec: SyntheticSpec, condition: str, task: Task, prune: float = PRUNE) -> Outcome:
    return outcome(spec, condition, task.program, task.registers, task.encoding, prune)


def heldout_of(
    tasks: Sequence[Task], condition: str, protocol: str = DESIGN_PROTOCOL
) -> list[Task]:
    """The held-out tasks a condition predicts (chains: the families `protocol` routes)."""
    routed = ROUTED[protocol]
    return [
        t
        for t in tasks
        if t.split == "heldout" and (condition != "controlled-chain" or t.family in routed)
    ]


def probe_rates(spec: SyntheticSpec, params: TaskParams) -> dict[str, float]:
    """`condition/op` → r̄: the mean exact success probability of the op's probes."""
    tasks = generate(params)
    found = {}
    for condition in CONDITIONS:
        for op in OPS:
            mine = [t for t in tasks if t.split == "profile" and t.family == op]
            if mine:
                rates = [_trial(spec, condition, t).final for t in mine]
                found[f"{condition}/{op}"] = math.fsum(rates) / len(rates)
    return found


TRUTH_PRUNE = 1e-4
"""The coarser truncation of `heldout_truth` (its q weighs squared distances of
predictions, where an error of 1e-3 in q moves nothing a check can see)."""


def heldout_truth(
    spec: SyntheticSpec, params: TaskParams, protocol: str = DESIGN_PROTOCOL
) -> dict[tuple[str, str], Outcome]:
    """(condition, task id) → the outcome of every held-out trial of a task set (truncated
    at `TRUTH_PRUNE`; chains under the chain protocol version `protocol`)."""
    tasks = generate(params)
    return {
        (condition, t.id): _trial(spec, condition, t, TRUTH_PRUNE)
        for condition in CONDITIONS
        for t in heldout_of(tasks, condition, protocol)
    }


def seed_targets(
    spec: SyntheticSpec, params: TaskParams, protocol: str = DESIGN_PROTOCOL
) -> SeedTargets:
    """Every expected per-seed statistic of `spec` for the task set of `params` (a preset's
    parameters with the task seed), chains under the chain protocol version `protocol`."""
    seed = params.seed
    tasks = generate(params)
    sums: dict[str, list[float]] = {}
    values: dict[str, float] = {}
    bounds: dict[str, float] = {}
    probe_rates: dict[str, float] = {}
    for condition in CONDITIONS:
        profile = _profile(spec, condition, tasks)
        for op in OPS:
            rbar = profile.rate[op]
            probe_rates[f"{condition}/{op}"] = rbar
            values[key(condition, "-", f"rate:{op}")] = rbar
            values[key(condition, "-", f"trials:{op}")] = float(profile.trials[op])
            values[key(condition, "-", f"coverage:{op}")] = math.fsum(
                p for x, p in enumerate(profile.pmf[op]) if in_wilson(x, profile.trials[op], rbar)
            )
        total = sum(profile.trials.values())
        values[key(condition, "-", "reference")] = (
            math.fsum(profile.rate[op] * profile.trials[op] for op in OPS) / total
        )
        reference = (
            _moment(profile.pooled, total, _plain, 1),
            _moment(profile.pooled, total, _plain, 2),
        )
        finals = [
            _heldout(spec, condition, task, profile, reference, sums)
            for task in heldout_of(tasks, condition, protocol)
        ]
        if finals:
            _climatology(condition, finals, values, bounds)
    for name, items in sums.items():
        mean = math.fsum(items) / len(items)
        if name.endswith("/bound"):
            bounds[name.removesuffix("/bound")] = mean
        else:
            values[name] = mean
    return SeedTargets(seed, values, bounds, probe_rates)


def _heldout(
    spec: SyntheticSpec,
    condition: str,
    task: Task,
    profile: _Profile,
    reference: tuple[float, float],
    sums: dict[str, list[float]],
) -> Outcome:
    """Add one held-out task's expected values to the per-seed sums; its outcome."""
    out = _trial(spec, condition, task)
    ops = task.operations
    product, product2 = profile.product(ops, _plain)
    same, same2 = profile.product(ops, shrunk)
    for target in targets_of(condition):
        q = out.final if target == "final" else (out.all_steps or 0.0)
        _sum(sums, key(condition, target, "calibration"), product - q)
        _sum(sums, key(condition, target, "brier"), product2 - 2 * q * product + q)
        _sum(sums, key(condition, target, "shrunk-brier"), same2 - 2 * q * same + q)
        _sum(sums, key(condition, target, "floor"), q * (1.0 - q))
        _sum(sums, key(condition, target, "calibration/bound"), out.dropped)
        _sum(sums, key(condition, target, "brier/bound"), out.dropped)
    ref, ref2 = reference
    _sum(sums, key(condition, "final", "reference-brier"), ref2 - 2 * out.final * ref + out.final)
    predicted = math.fsum(profile.cost[op] * ops.count(op) for op in OPS)
    _sum(sums, key(condition, "-", "cost"), predicted - out.cost_ms)
    _sum(sums, key(condition, "-", "cost/bound"), out.dropped * out.cost_ms)
    if condition == "controlled-chain":
        _sum(sums, key(condition, "-", "cancel"), out.final - (out.all_steps or 0.0))
        _sum(sums, key(condition, "-", "cancel/bound"), out.dropped)
        if task.family in COMPOSITE:
            for target in targets_of(condition):
                q = out.final if target == "final" else (out.all_steps or 0.0)
                name = key(condition, target, f"success:{task.family}")
                _sum(sums, name, q)
                _sum(sums, f"{name}/bound", out.dropped)
    return out


def _climatology(
    condition: str, outs: Sequence[Outcome], values: dict[str, float], bounds: dict[str, float]
) -> None:
    """A seed's expected degenerate flag and the parts of the pooled skill against
    climatology, against final correctness: `constant`, P(every held-out outcome equal) =
    Π q + Π (1 − q) (the outcomes are independent); `base-rate`, the mean q; `heldout-n`, the
    tasks scored. (`floor`, the mean q(1 − q), and `brier` complete the skill's expectation,
    `pyapp.synthetic.expectations.skill_expected`.)"""
    qs = [o.final for o in outs]
    values[key(condition, "final", "constant")] = math.prod(qs) + math.prod(1.0 - q for q in qs)
    bounds[key(condition, "final", "constant")] = math.fsum(o.dropped for o in outs)
    values[key(condition, "final", "base-rate")] = math.fsum(qs) / len(qs)
    values[key(condition, "final", "heldout-n")] = float(len(qs))


def _sum(into: dict[str, list[float]], name: str, value: float) -> None:
    into.setdefault(name, []).append(value)
