"""Validation of the instrument against synthetic models of known error structure: what a
run measured, per seed.

For each structure and preset, every task seed goes through the page's protocol natively
(`pyapp.synthetic.simulate`: measure, freeze, held-out, score); `observe_seed` then reads
each seed's statistics from the documents the page and `score` make — the predictions and
observations, `scores` (Brier through `brier_score`, cost errors), the skill scores' reference
Brier, the profile's rates, trial counts and Wilson bounds — and the validation's own
same-prior product (`product-shrunk`: each op's rate at the MAP of the state-aware predictor's
prior on its bias, `pyapp.synthetic.targets.shrunk`), so that the state-aware predictor's gain
splits into shrinkage and state. The statistics' expected values are not computed here or
from any run: they are committed data (`pyapp.synthetic.expectations`) made from the
structure's parameters (`pyapp.synthetic.targets`); `pyapp.synthetic.checks` compares them.

Each seed's slice as `score`, the page and the study make it (`slice_figures`) says whether
its degenerate flags (`flags_of`) call its held-out outcomes constant (`constant`); every
seed's tasks pooled give the product's skill against climatology (`skill`,
`pooled_skill`: pseudo-values per seed whose mean is the shipped skill).

A chain's success per composite family (`success:FAMILY`: the mean of its trials' final and
all-step correctness, from the observations `score` made) is read for every family the run's
chain protocol routes — under `chain-extended/1` also determinants and derivatives.

The Wilson coverage of a seed is whether its profile's recorded interval holds r̄, the op's
true probe rate (`targets.probe_rates`: the step rule on each probe's operands in its
encoding, with the format and program effects).

`rederive` makes a seed's predictions again from its trials with the code as it is now (a
new freeze and `score_trace`): the metric mutants of `scripts/mutants.py` are judged on one
shared run this way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from pyapp.predict import (
    RUN_SCOPE,
    CalibrationCell,
    ConditionResult,
    OpProfile,
    Prediction,
    ScoredTask,
    SliceFigures,
    brier_score,
    calibration_cells,
    complete_freeze,
    flags_of,
    score_trace,
    scored_tasks,
    skill,
    slice_figures,
)
from pyapp.records import DEFAULT_CHAIN_PROTOCOL, ChainProtocol, FreezeRecord, SyntheticSpec
from pyapp.synthetic.closed_form import Outcome
from pyapp.synthetic.simulate import SeedRun, run_seeds
from pyapp.synthetic.targets import (
    COMPOSITE,
    STATE_INFORMATIVE,
    heldout_truth,
    key,
    probe_rates,
    shrunk,
)
from pyapp.tasks import TaskParams

PREDICTORS = ("product", "product-shrunk", "state-aware")
SLICE_RESAMPLES = 2
"""Bootstrap resamples of the slices read here: only their point figures and flags are read,
never an interval."""
POOLED = "pooled over seeds"


@dataclass(frozen=True)
class Point:
    """One held-out prediction and what became of it."""

    seed: int
    task_id: str
    predicted: float
    outcome: bool
    predicted_cost: float | None
    observed_cost: float | None


@dataclass(frozen=True)
class Cell:
    """One structure × preset × condition × predictor × target over every seed
    (descriptive: the checks are in `pyapp.synthetic.checks`)."""

    structure: str
    preset: str
    condition: str
    predictor: str
    target: str
    n: int
    mean_predicted: float
    observed_rate: float
    brier: float
    cost_signed_error_ms: float | None
    cost_relative_error: float | None
    curve: tuple[CalibrationCell, ...]


@dataclass(frozen=True)
class StructureResult:
    """Everything measured for one structure under one preset."""

    spec: SyntheticSpec
    preset: str
    seeds: tuple[int, ...]
    trials: int
    seconds: float
    cells: tuple[Cell, ...]
    points: dict[tuple[str, str, str, str, str], list[Point]]
    """Every scored point by (structure, preset, condition, predictor, target)."""
    observed: dict[str, dict[int, float]]
    """Statistic (`targets.key`) → seed → its value in that seed's documents."""


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _points(
    seed: int, result: ConditionResult, predictions: Sequence[Prediction], target: str
) -> list[Point]:
    by_task = {p.task_id: p for p in predictions}
    points = []
    for o in result.observations:
        p = by_task.get(o.task_id)
        outcome = o.final_correct if target == "final" else o.all_steps_correct
        if p is None or p.probability is None or outcome is None:
            continue
        points.append(Point(seed, o.task_id, p.probability, outcome, p.cost_ms, o.cost_ms))
    return points


def shrunk_predictions(result: ConditionResult) -> list[Prediction]:
    """The product predictor with each op's rate shrunk by the state-aware prior."""
    ops: dict[str, OpProfile] = {m.op: m for m in result.frozen.profile.ops}
    out = []
    for p in result.predictions:
        if p.probability is None or any(not ops[op].trials for op in p.ops):
            out.append(replace(p, probability=None))
            continue
        probability = math.prod(shrunk(ops[op].successes, ops[op].trials) for op in p.ops)
        out.append(replace(p, probability=probability))
    return out


def _target(condition: str) -> str:
    return "all_steps" if condition == "controlled-chain" else "final"


def observe_seed(
    run: SeedRun,
    rates: dict[str, float],
    truth: dict[tuple[str, str], Outcome] | None = None,
) -> tuple[dict[str, float], dict[tuple[str, str, str], list[Point]]]:
    """One seed's statistics (`targets.key` → value) as its documents hold them, and its
    scored points by (condition, predictor, target); `rates`: `targets.probe_rates`;
    `truth`: `targets.heldout_truth`, for the gain from state without the outcomes' noise."""
    found: dict[str, float] = {}
    points: dict[tuple[str, str, str], list[Point]] = {}
    families = {t.id: t.family for t in run.trace.tasks}
    for result in run.predictions.conditions:
        condition = result.frozen.profile.condition
        sides: list[tuple[str, Sequence[Prediction]]] = [
            ("product", result.predictions),
            ("product-shrunk", shrunk_predictions(result)),
        ]
        if result.state_aware is not None:
            sides.append(("state-aware", result.state_aware.predictions))
        targets = ("all_steps", "final") if condition == "controlled-chain" else ("final",)
        for predictor, predictions in sides:
            for target in targets:
                mine = _points(run.seed, result, predictions, target)
                points[(condition, predictor, target)] = mine
        scores = result.scores
        for target in targets:
            mine = points[(condition, "product", target)]
            if mine:
                found[key(condition, target, "calibration")] = _mean(
                    [p.predicted - float(p.outcome) for p in mine]
                )
            brier = scores.brier_final_proxy if target == "final" else scores.brier_all_steps
            if brier is not None:
                found[key(condition, target, "brier")] = brier
        if scores.cost.mean_signed_error_ms is not None:
            found[key(condition, "-", "cost")] = scores.cost.mean_signed_error_ms
        if result.skill is not None and result.skill.reference_probability is not None:
            found[key(condition, "-", "reference")] = result.skill.reference_probability
        if result.skill is not None and result.skill.product.brier_reference is not None:
            found[key(condition, "final", "reference-brier")] = result.skill.product.brier_reference
        for op in result.frozen.profile.ops:
            found[key(condition, "-", f"trials:{op.op}")] = float(op.trials)
            if op.rate is not None:
                found[key(condition, "-", f"rate:{op.op}")] = op.rate
            rate = rates.get(f"{condition}/{op.op}")
            if rate is not None:
                covered = op.wilson_low <= rate <= op.wilson_high
                found[key(condition, "-", f"coverage:{op.op}")] = float(covered)
        _gain(condition, points, found, truth)
        if condition == "controlled-chain":
            _success(result, families, found)
            final = {p.task_id: p.outcome for p in points[(condition, "product", "final")]}
            steps = {p.task_id: p.outcome for p in points[(condition, "product", "all_steps")]}
            both = [t for t in final if t in steps]
            if both:
                found[key(condition, "-", "cancel")] = _mean(
                    [float(final[t]) - float(steps[t]) for t in both]
                )
    return found, points


def _slice(condition: str, tasks: Sequence[ScoredTask], scope: str) -> SliceFigures | None:
    """The slice `score`, the page and the study read (`slice_figures`), or None without
    tasks."""
    if not tasks:
        return None
    return slice_figures(tasks, condition=condition, scope=scope, resamples=SLICE_RESAMPLES)


def pooled_skill(condition: str, tasks: Sequence[ScoredTask]) -> dict[int, float]:
    """The product's skill against climatology (final correctness) pooled over every seed's
    held-out tasks, as `slice_figures` computes it for `score`, the page and the study, spread
    over the seeds as delta-method pseudo-values: seed s gets S − (b_s − R·c_s) / c̄, with b_s
    and c_s its tasks' summed squared errors of the product and of climatology (the pooled base
    rate), R = Σb / Σc and c̄ the mean c_s. The pseudo-values' mean is exactly the shipped S and
    their spread is the ratio's between-seed spread; empty when the skill is undefined."""
    fig = _slice(condition, tasks, POOLED)
    if fig is None or fig.product.skill is None or math.isinf(fig.product.skill):
        return {}
    outcomes = [1.0 if t.outcome else 0.0 for t in tasks]
    base = fig.base_rate
    errors: dict[int, list[float]] = {}
    for t, o in zip(tasks, outcomes, strict=True):
        sums = errors.setdefault(t.seed, [0.0, 0.0])
        sums[0] += (t.product - o) ** 2
        sums[1] += (base - o) ** 2
    total_c = math.fsum(c for _, c in errors.values())
    ratio = math.fsum(b for b, _ in errors.values()) / total_c
    mean_c = total_c / len(errors)
    return {seed: fig.product.skill - (b - ratio * c) / mean_c for seed, (b, c) in errors.items()}


def _success(result: ConditionResult, families: Mapping[str, str], found: dict[str, float]) -> None:
    """A chain's success rate per composite family, per target, over the seed's scored
    held-out trials of that family (from the observations, whatever was predicted)."""
    condition = result.frozen.profile.condition
    for family in COMPOSITE:
        mine = [o for o in result.observations if families.get(o.task_id) == family]
        for target in ("all_steps", "final"):
            outcomes = [o.final_correct if target == "final" else o.all_steps_correct for o in mine]
            seen = [float(o) for o in outcomes if o is not None]
            if seen:
                found[key(condition, target, f"success:{family}")] = _mean(seen)


def _gain(
    condition: str,
    points: dict[tuple[str, str, str], list[Point]],
    found: dict[str, float],
    truth: dict[tuple[str, str], Outcome] | None,
) -> None:
    """The gain from state on the condition's main target, over the tasks both predicted:
    Brier(product-shrunk) − Brier(state-aware); given each task's exact success probability
    q, the same difference of squared distances to q instead, (p_shrunk − q)² −
    (p_aware − q)², whose expectation is the same (E(p − o)² = (p − q)² + q(1 − q)) without
    the outcomes' noise."""
    target = _target(condition)
    aware = {p.task_id: p for p in points.get((condition, "state-aware", target), [])}
    same = [p for p in points.get((condition, "product-shrunk", target), []) if p.task_id in aware]
    if not same:
        return
    if truth is not None:
        q = {
            p.task_id: truth[(condition, p.task_id)].final
            if target == "final"
            else truth[(condition, p.task_id)].all_steps or 0.0
            for p in same
        }
        gains = [
            (p.predicted - q[p.task_id]) ** 2 - (aware[p.task_id].predicted - q[p.task_id]) ** 2
            for p in same
        ]
        found[key(condition, target, "state-gain")] = _mean(gains)
        return
    outcomes = [p.outcome for p in same]
    shrunk_brier = brier_score([p.predicted for p in same], outcomes)
    aware_brier = brier_score([aware[p.task_id].predicted for p in same], outcomes)
    if shrunk_brier is not None and aware_brier is not None:
        found[key(condition, target, "state-gain")] = shrunk_brier - aware_brier


def cell_of(key_: tuple[str, str, str, str, str], points: Sequence[Point], bins: int = 10) -> Cell:
    structure, preset, condition, predictor, target = key_
    probabilities = [p.predicted for p in points]
    outcomes = [p.outcome for p in points]
    paired = [
        (p.predicted_cost, p.observed_cost)
        for p in points
        if p.predicted_cost is not None and p.observed_cost is not None
    ]
    relative = [abs(a - b) / b for a, b in paired if b > 0]
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
        cost_signed_error_ms=_mean([a - b for a, b in paired]) if paired else None,
        cost_relative_error=_mean(relative) if relative else None,
        curve=calibration_cells(probabilities, outcomes, bins),
    )


def rederive(run: SeedRun) -> SeedRun:
    """A seed's freezes and predictions made again from its trials by the code as it is."""
    trace = run.trace
    records: list[FreezeRecord] = []
    for record in trace.freezes:
        sealed, _ = complete_freeze(replace(trace, freezes=tuple(records)), record)
        records.append(sealed)
    trace = replace(trace, freezes=tuple(records))
    return SeedRun(run.seed, trace, score_trace(trace))


def validate_structure(
    spec: SyntheticSpec,
    preset: str,
    params: TaskParams,
    seeds: Sequence[int],
    clock: Callable[[], float],
    runs: Sequence[SeedRun] | None = None,
    keep: list[SeedRun] | None = None,
    protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL,
) -> StructureResult:
    """Run (or, given `runs`, re-derive) every seed, chains under `protocol`, and read its
    statistics; `keep`: filled with the runs as simulated."""
    start = clock()
    if runs is None:
        runs = run_seeds(spec, params, seeds, protocol=protocol)
        if keep is not None:
            keep.extend(runs)
    else:
        runs = [rederive(r) for r in runs]
    groups: dict[tuple[str, str, str, str, str], list[Point]] = {}
    observed: dict[str, dict[int, float]] = {}
    exact_gain = spec.structure in STATE_INFORMATIVE and preset != "design"
    scored: dict[str, list[ScoredTask]] = {}
    for run in runs:
        for result in run.predictions.conditions:
            tasks = scored_tasks(result, "validation", run.seed, RUN_SCOPE)
            scored.setdefault(result.frozen.profile.condition, []).extend(tasks)
            fig = _slice(result.frozen.profile.condition, tasks, RUN_SCOPE)
            if fig is not None:
                flagged = any(flag.kind == "constant" for flag in flags_of(fig))
                statistic = key(result.frozen.profile.condition, "final", "constant")
                observed.setdefault(statistic, {})[run.seed] = float(flagged)
        tasks_params = replace(params, seed=run.seed)
        truth = heldout_truth(spec, tasks_params, protocol.version) if exact_gain else None
        values, points = observe_seed(run, probe_rates(spec, tasks_params), truth)
        for stat, value in values.items():
            observed.setdefault(stat, {})[run.seed] = value
        for (condition, predictor, target), mine in points.items():
            groups.setdefault((spec.structure, preset, condition, predictor, target), []).extend(
                mine
            )
    for name, pooled in scored.items():
        pseudo = pooled_skill(name, pooled)
        if pseudo:
            observed[key(name, "final", "skill")] = pseudo
    return StructureResult(
        spec=spec,
        preset=preset,
        seeds=tuple(r.seed for r in runs),
        trials=sum(len(r.trace.trials) for r in runs),
        seconds=clock() - start,
        cells=tuple(cell_of(k, points) for k, points in groups.items() if points),
        points={k: points for k, points in groups.items() if points},
        observed=observed,
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
        k = (r.spec.structure, r.preset, condition, "state-aware", "final")
        aware = {(p.seed, p.task_id): p.predicted for p in r.points.get(k, [])}
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
