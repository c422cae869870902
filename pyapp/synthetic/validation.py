"""Validation of the instrument against synthetic models of known error structure.

Simulation-based calibration, adapted: for each structure, many task seeds go through the
page's protocol (`pyapp.synthetic.simulate`); because the model is known, each held-out
task's *true* probability of success q is estimated by Monte Carlo (the same trial re-run
under `mc_draws` other model seeds), and each profile rate's true value is known exactly.
Then, per structure, condition, predictor and target (final or all-step correctness):

- mean predicted p vs observed rate (calibration in the large), a calibration curve;
- mean Brier observed vs its Monte Carlo expectation E(p − q)² + E q(1 − q), split into
  the predictor's miscalibration E(p − q)² and the irreducible part E q(1 − q);
- mean signed and relative cost error;
- coverage of the profile's 95% Wilson intervals over repetitions (seeds);
- the predictors' difference across seeds as Compare and the matrix show it
  (`seed_differences`: each seed's paired Brier(product) − Brier(state-aware) against final
  correctness, the value its predictions hold as `skill.difference`).

Besides the two predictors of `predictions.json`, a third is scored here only:
`product-shrunk`, the product of per-op rates estimated under the state-aware predictor's
own prior on its bias term (logistic MAP, N(0, 2.5²), no state features), so that the
state-aware predictor's gain splits into shrinkage (product → product-shrunk) and state
(product-shrunk → state-aware). Each product point also carries `expected`: the product's
expected prediction E[Π p̂_op] given the true probe success rates, from the structure alone
(binomial sampling of each op's profile trials), so its plug-in bias is known per point.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache

from pyapp.conditions.run import run_trial
from pyapp.predict import skill
from pyapp.predict.metrics import CalibrationCell, brier_score, calibration_cells, wilson_interval
from pyapp.predict.predictor import ConditionResult, OpProfile, Prediction
from pyapp.predict.profile import tasks_of_trace
from pyapp.predict.state_aware import FEATURES, fit_logistic
from pyapp.records.synthetic_spec import SyntheticSpec
from pyapp.records.terms import DEFAULT_CHAIN_PROTOCOL, ChainProtocol, protocol_of
from pyapp.synthetic.adapter import SyntheticAdapter
from pyapp.synthetic.simulate import SeedRun, run_seeds
from pyapp.tasks.taskset import Task, TaskParams, generate

PREDICTORS = ("product", "product-shrunk", "state-aware")
MC_SEED_BASE = 1_000_000
"""Model seeds of the Monte Carlo draws (the protocol runs use the spec's own seed)."""


@dataclass(frozen=True)
class Point:
    """One held-out prediction and what became of it."""

    seed: int
    task_id: str
    predicted: float
    outcome: bool
    truth: float | None
    """Monte Carlo estimate of P(outcome); null outside the Monte Carlo subset."""
    predicted_cost: float | None
    observed_cost: float | None
    expected: float | None = None
    """The product's expected prediction given the true probe rates (product points)."""
    ideal: float | None = None
    """Π r̄_op over the task's ops at the true probe rates r̄ (no sampling; product points)."""


@dataclass(frozen=True)
class Cell:
    """One structure × preset × condition × predictor × target, over every seed."""

    structure: str
    preset: str
    condition: str
    predictor: str
    target: str
    n: int
    mean_predicted: float
    observed_rate: float
    brier: float
    mc_n: int
    """Points with a Monte Carlo truth."""
    brier_mc_subset: float | None
    """Observed mean Brier on those points."""
    expected_brier: float | None
    """Monte Carlo expectation of the mean Brier on those points."""
    miscalibration: float | None
    """E (p − q)²: the part of the expected Brier that is the predictor's fault."""
    irreducible: float | None
    """E q(1 − q): the Brier of a predictor that knew q."""
    mean_truth: float | None
    mean_expected: float | None
    """Mean expected prediction E[p] given the true probe rates (product only)."""
    plug_in_bias: float | None
    """Mean of E[p] − Π r̄ᵏ: the plug-in product's own upward bias (product only)."""
    cost_signed_error_ms: float | None
    cost_relative_error: float | None
    curve: tuple[CalibrationCell, ...]


@dataclass(frozen=True)
class Coverage:
    """How often the profile's 95% Wilson interval held the true rate, over seeds."""

    structure: str
    preset: str
    condition: str
    op: str
    repetitions: int
    covered: int
    trials_per_seed: int
    exact: float | None
    """Exact binomial coverage when the true rate is the same in every seed (else null)."""


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


async def _truth(
    spec: SyntheticSpec,
    params: TaskParams,
    task: Task,
    condition: str,
    draws: int,
    protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL,
) -> tuple[float, float | None]:
    """(P(final right), P(all steps right) for chains) of one trial, by Monte Carlo (a
    chain under the run's chain `protocol`)."""
    final = steps = 0
    for r in range(draws):
        adapter = SyntheticAdapter(replace(spec, seed=MC_SEED_BASE + r), params.seed)
        adapter.begin_trial(condition, task)
        trial = await run_trial(task, condition, adapter, None, protocol)  # type: ignore[arg-type]
        final += trial.correct
        steps += bool(trial.chain is not None and trial.chain.all_steps_correct)
    return final / draws, (steps / draws if condition == "controlled-chain" else None)


def truths(
    spec: SyntheticSpec, run: SeedRun, draws: int
) -> dict[tuple[str, str], tuple[float, float | None]]:
    """(condition, task id) → Monte Carlo truths for every held-out prediction of a run."""
    params = run.trace.run.task_params
    protocol = protocol_of(run.trace.run.terms)
    tasks = {t.id: t for t in generate(params)}

    async def every() -> dict[tuple[str, str], tuple[float, float | None]]:
        found: dict[tuple[str, str], tuple[float, float | None]] = {}
        for result in run.predictions.conditions:
            condition = result.frozen.profile.condition
            for task_id in result.frozen.heldout_task_ids:
                found[(condition, task_id)] = await _truth(
                    spec, params, tasks[task_id], condition, draws, protocol
                )
        return found

    return asyncio.run(every())


def _points(
    run: SeedRun,
    result: ConditionResult,
    predictions: Sequence[Prediction],
    target: str,
    truth: dict[tuple[str, str], tuple[float, float | None]] | None,
    expected: dict[str, tuple[float, float]] | None = None,
) -> list[Point]:
    by_task = {p.task_id: p for p in predictions}
    condition = result.frozen.profile.condition
    points = []
    for o in result.observations:
        p = by_task.get(o.task_id)
        outcome = o.final_correct if target == "final" else o.all_steps_correct
        if p is None or p.probability is None or outcome is None:
            continue
        q = None
        if truth is not None:
            final, steps = truth[(condition, o.task_id)]
            q = final if target == "final" else steps
        e, ideal = expected[o.task_id] if expected and o.task_id in expected else (None, None)
        points.append(
            Point(run.seed, o.task_id, p.probability, outcome, q, p.cost_ms, o.cost_ms, e, ideal)
        )
    return points


def cell_of(key: tuple[str, str, str, str, str], points: Sequence[Point], bins: int = 10) -> Cell:
    structure, preset, condition, predictor, target = key
    probabilities = [p.predicted for p in points]
    outcomes = [p.outcome for p in points]
    known = [p for p in points if p.truth is not None]
    costs = [(p.predicted_cost, p.observed_cost) for p in points]
    paired = [(a, b) for a, b in costs if a is not None and b is not None]
    relative = [abs(a - b) / b for a, b in paired if b > 0]
    mis = _mean([(p.predicted - (p.truth or 0.0)) ** 2 for p in known]) if known else None
    irr = _mean([(p.truth or 0.0) * (1 - (p.truth or 0.0)) for p in known]) if known else None
    return Cell(
        structure=structure,
        preset=preset,
        condition=condition,
        predictor=predictor,
        target=target,
        n=len(points),
        mean_predicted=_mean(probabilities),
        observed_rate=_mean([float(o) for o in outcomes]),
        brier=brier_score(probabilities, outcomes) or 0.0,
        mc_n=len(known),
        brier_mc_subset=brier_score([p.predicted for p in known], [p.outcome for p in known]),
        expected_brier=None if mis is None or irr is None else mis + irr,
        miscalibration=mis,
        irreducible=irr,
        mean_truth=_mean([p.truth or 0.0 for p in known]) if known else None,
        mean_expected=_mean([p.expected for p in points if p.expected is not None])
        if any(p.expected is not None for p in points)
        else None,
        plug_in_bias=_mean([p.expected - p.ideal for p in points if p.expected and p.ideal])
        if any(p.expected and p.ideal for p in points)
        else None,
        cost_signed_error_ms=_mean([a - b for a, b in paired]) if paired else None,
        cost_relative_error=_mean(relative) if relative else None,
        curve=calibration_cells(probabilities, outcomes, bins),
    )


def exact_wilson_coverage(rate: float, trials: int) -> float:
    """P(the 95% Wilson interval of k/trials holds `rate`), k ~ Binomial(trials, rate)."""
    total = 0.0
    for k in range(trials + 1):
        low, high = wilson_interval(k, trials)
        if low <= rate <= high:
            total += math.comb(trials, k) * rate**k * (1 - rate) ** (trials - k)
    return total


def coverage(spec: SyntheticSpec, preset: str, runs: Sequence[SeedRun]) -> list[Coverage]:
    """Wilson coverage of each op's profile rate (model-only and chain: single steps, whose
    true success probability is 1 − P(step wrong) on the probe's operands, exactly)."""
    tally: dict[tuple[str, str], list[int]] = {}
    sizes: dict[tuple[str, str], int] = {}
    truths_seen: dict[tuple[str, str], set[float]] = {}
    for run in runs:
        tasks = {t.id: t for t in tasks_of_trace(run.trace)}
        for result in run.predictions.conditions:
            condition = result.frozen.profile.condition
            if condition == "model-program":
                continue
            ids = [i.split("/", 1)[1] for i in result.frozen.profile.trial_ids]
            for measured in result.frozen.profile.ops:
                mine = [tasks[i] for i in ids if tasks[i].family == measured.op]
                if not mine:
                    continue
                true_rate = _mean(
                    [
                        1 - spec.error_probability(measured.op, t.registers["a"], t.registers["b"])
                        for t in mine
                    ]
                )
                key = (condition, measured.op)
                counts = tally.setdefault(key, [0, 0])
                counts[0] += 1
                counts[1] += measured.wilson_low <= true_rate <= measured.wilson_high
                sizes[key] = measured.trials
                truths_seen.setdefault(key, set()).add(round(true_rate, 12))
    found = []
    for (kind, op), (repetitions, covered) in tally.items():
        constant = truths_seen[(kind, op)]
        exact = (
            exact_wilson_coverage(next(iter(constant)), sizes[(kind, op)])
            if len(constant) == 1
            else None
        )
        found.append(
            Coverage(
                spec.structure,
                preset,
                kind,
                op,
                repetitions,
                covered,
                sizes[(kind, op)],
                exact,
            )
        )
    return found


@cache
def shrunk_rate(trials: int, successes: int) -> float:
    """An op's success rate under the state-aware prior on its bias alone (logistic MAP)."""
    bias_only = (1.0,) + (0.0,) * (len(FEATURES) - 1)
    rows = [(bias_only, True)] * successes + [(bias_only, False)] * (trials - successes)
    beta = fit_logistic(rows)[0]
    return 1.0 / (1.0 + math.exp(-beta))


def shrunk_predictions(result: ConditionResult) -> list[Prediction]:
    """The product predictor with each op's rate shrunk by the state-aware prior."""
    ops: dict[str, OpProfile] = {m.op: m for m in result.frozen.profile.ops}
    out = []
    for p in result.predictions:
        if p.probability is None or any(not ops[op].trials for op in p.ops):
            out.append(replace(p, probability=None))
            continue
        probability = 1.0
        for op in p.ops:
            probability *= shrunk_rate(ops[op].trials, ops[op].successes)
        out.append(replace(p, probability=probability))
    return out


def probe_success(spec: SyntheticSpec, condition: str, task: Task) -> float:
    """Exact P(a single-step profile probe is right) in `condition`."""
    a, b = task.registers["a"], task.registers["b"]
    right = (1.0 - spec.unparseable) * (
        1.0 - spec.error_probability(task.family, a, b, task.encoding, 1)
    )
    return right * (1.0 - spec.deviation) if condition == "model-program" else right


def _moment(trials: int, rate: float, power: int) -> float:
    """E[(X/n)^k] for X ~ Binomial(n, rate)."""
    return math.fsum(
        math.comb(trials, x) * rate**x * (1 - rate) ** (trials - x) * (x / trials) ** power
        for x in range(trials + 1)
    )


def expected_products(
    spec: SyntheticSpec, run: SeedRun, result: ConditionResult
) -> dict[str, tuple[float, float]]:
    """Held-out task id → (E[product prediction], Π r̄ᵏ) given the true probe rates r̄ of
    this seed's profile (each op's trials binomial at the mean true rate of its probes)."""
    tasks = {t.id: t for t in tasks_of_trace(run.trace)}
    condition = result.frozen.profile.condition
    ids = [i.split("/", 1)[1] for i in result.frozen.profile.trial_ids]
    rates: dict[str, tuple[int, float]] = {}
    for measured in result.frozen.profile.ops:
        mine = [tasks[i] for i in ids if tasks[i].family == measured.op]
        if mine and measured.trials:
            true = _mean([probe_success(spec, condition, t) for t in mine])
            rates[measured.op] = (measured.trials, true)
    found = {}
    for p in result.predictions:
        if p.probability is None or any(op not in rates for op in p.ops):
            continue
        counts = {op: p.ops.count(op) for op in set(p.ops)}
        expected = math.prod(_moment(*rates[op], k) for op, k in counts.items())
        ideal = math.prod(rates[op][1] ** k for op, k in counts.items())
        found[p.task_id] = (expected, ideal)
    return found


@dataclass(frozen=True)
class StructureResult:
    """Everything measured for one structure under one preset."""

    spec: SyntheticSpec
    preset: str
    seeds: int
    mc_seeds: int
    """Seeds with a Monte Carlo truth (the first ones)."""
    trials: int
    seconds: float
    cells: tuple[Cell, ...]
    coverage: tuple[Coverage, ...]
    points: dict[tuple[str, str, str, str, str], list[Point]]
    """Every scored point by (structure, preset, condition, predictor, target)."""


def validate_structure(
    spec: SyntheticSpec,
    preset: str,
    params: TaskParams,
    seeds: Sequence[int],
    mc_seeds: int,
    mc_draws: int,
    clock: Callable[[], float],
) -> StructureResult:
    start = clock()
    runs = run_seeds(spec, params, seeds)
    groups: dict[tuple[str, str, str, str, str], list[Point]] = {}
    for index, run in enumerate(runs):
        truth = truths(spec, run, mc_draws) if index < mc_seeds else None
        for result in run.predictions.conditions:
            condition = result.frozen.profile.condition
            targets = ("final", "all_steps") if condition == "controlled-chain" else ("final",)
            sides: list[tuple[str, Sequence[Prediction]]] = [
                ("product", result.predictions),
                ("product-shrunk", shrunk_predictions(result)),
            ]
            if result.state_aware is not None:
                sides.append(("state-aware", result.state_aware.predictions))
            expected = expected_products(spec, run, result)
            for predictor, predictions in sides:
                mine = expected if predictor == "product" else None
                for target in targets:
                    key = (spec.structure, preset, condition, predictor, target)
                    groups.setdefault(key, []).extend(
                        _points(run, result, predictions, target, truth, mine)
                    )
    cells = tuple(cell_of(key, points) for key, points in groups.items() if points)
    return StructureResult(
        spec=spec,
        preset=preset,
        seeds=len(runs),
        mc_seeds=min(mc_seeds, len(runs)),
        trials=sum(len(r.trace.trials) for r in runs),
        seconds=clock() - start,
        cells=cells,
        coverage=tuple(coverage(spec, preset, runs)),
        points={key: points for key, points in groups.items() if points},
    )


def seed_differences(r: StructureResult) -> dict[str, dict[int, float]]:
    """Condition → seed → that seed's Brier(product) − Brier(state-aware), paired over the
    held-out tasks both predicted, against final correctness (`skill.paired_difference` on
    the scored points: the number each seed's predictions document holds as
    `skill.difference`, which `pyapp.predict.compare.across_runs_text` summarises)."""
    found: dict[str, dict[int, float]] = {}
    for (_, _, condition, predictor, target), points in r.points.items():
        if predictor != "product" or target != "final":
            continue
        key = (r.spec.structure, r.preset, condition, "state-aware", "final")
        aware = {(p.seed, p.task_id): p.predicted for p in r.points.get(key, [])}
        by_seed: dict[int, list[Point]] = {}
        for p in points:
            if (p.seed, p.task_id) in aware:
                by_seed.setdefault(p.seed, []).append(p)
        for seed, mine in by_seed.items():
            difference = skill.paired_difference(
                [p.predicted for p in mine],
                [aware[(p.seed, p.task_id)] for p in mine],
                [p.outcome for p in mine],
            )
            if difference is not None:
                found.setdefault(condition, {})[seed] = difference.mean
    return found
