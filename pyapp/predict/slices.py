"""Every figure of a slice of held-out tasks, defined once: one run's condition (`score`, the
report, Compare, the page's step 4) or a study's condition × rung × family, pooled over
seeds and, labelled so, over the rungs of one ladder (`python -m pyapp study`).

Per predictor (the product and the state-aware one), against final correctness:

| figure                      | definition                                                     |
|-----------------------------|----------------------------------------------------------------|
| Brier                       | mean (p − o)²                                                  |
| skill against climatology   | 1 − Brier / Brier(climatology) (`skill.climatology_brier`: the  |
|                             | slice's base rate; pooled over rungs, each rung's own); undefined |
|                             | — said in words — when every outcome (of every rung) is equal   |
| skill against the frozen    | 1 − Brier / Brier(each run's frozen reference forecast: its     |
| reference                   | profile's pooled rate), the reference that exists per run       |
| reliability / resolution    | `skill.binned_decomposition`, 10 bins                           |
| tasks for ±0.1              | n such that the skill's 95 % interval is ±0.1, from the slice's |
|                             | own variance: the delta method, u_i = (e_i − (E/R)·r_i)/R with  |
|                             | e, r the predictor's and climatology's squared errors and E, R  |
|                             | their means; n = ⌈(1.96·sd(u)/0.1)²⌉                            |
| calibration cells           | `metrics.calibration_cells`, 10 bins                            |

and the paired difference Brier(product) − Brier(state-aware) over the same tasks, and
success by number of steps (the operations of the route or program the predictor composed).
Every Brier, skill and difference has both intervals of `pyapp.predict.intervals` (the
bootstrap resamples within each stratum — each rung — on the same draws for every statistic,
so the difference is paired); `ScoredTask` is one task's numbers, from a run's
`ConditionResult` (`scored_tasks`) or the study's cells.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pyapp.predict.freeze import reference_of
from pyapp.predict.intervals import (
    DEFAULT_BOOTSTRAP_SEED,
    DEFAULT_RESAMPLES,
    NamedInterval,
    across_seeds,
    bootstrap,
    bootstrap_statistics,
)
from pyapp.predict.metrics import Z_95, CalibrationCell, calibration_cells
from pyapp.predict.predictions import ConditionResult
from pyapp.predict.skill import (
    CLIMATOLOGY,
    RUNG_AWARE,
    binned_decomposition,
    climatology_brier,
)
from pyapp.tasks import FAMILY_TABLE

SKILL_HALF_WIDTH = 0.1
"""The half-width of the skill interval `tasks_needed` asks for."""
CALIBRATION_BINS = 10
RUN_SCOPE = "this run"
"""The scope of one run's slice."""
ALL_FAMILIES = "all families"
"""The family of a slice over every held-out family."""
"""Bins of the slices' reliability diagrams and binned decomposition."""
_FAMILY_OF_PREFIX = {row.prefix: row.family(0) for row in FAMILY_TABLE}


def family_of(task_id: str) -> str:
    """A task's family from its id (`recurrence-3` → `affine_recurrence`)."""
    prefix = task_id.rsplit("-", 1)[0] if task_id.count("-") else task_id
    return str(_FAMILY_OF_PREFIX.get(prefix, prefix))


@dataclass(frozen=True)
class ScoredTask:
    """One held-out task as the slice's figures read it."""

    task_id: str
    """The task (unique within its cell)."""
    cell: str
    """The run or cell it was observed in."""
    seed: int
    """Its task seed."""
    stratum: str
    """Whose base rate is its climatology: its rung (or the slice itself)."""
    family: str
    """Its task family."""
    steps: int
    """Operations the product predictor composed (chain: the route's calls)."""
    outcome: bool
    """Final answer exactly right."""
    product: float
    """The product predictor's probability."""
    state_aware: float | None
    """The state-aware predictor's probability; null where the document has none."""
    frozen_reference: float | None
    """The run's frozen reference forecast (the profile's pooled rate)."""


@dataclass(frozen=True)
class PredictorFigures:
    """One predictor over one slice."""

    predictor: str
    """`product` or `state-aware`."""
    mean_predicted: float
    """Mean predicted probability."""
    brier: float
    """Brier score (final correctness)."""
    brier_bootstrap: NamedInterval
    """Its percentile-bootstrap interval over tasks."""
    brier_seeds: NamedInterval
    """Its Student-t interval across seeds."""
    skill: float | None
    """Brier skill against climatology; null when undefined (`skill_undefined`)."""
    skill_undefined: str | None
    """Why the skill against climatology is undefined, in words; null when it is defined."""
    skill_bootstrap: NamedInterval
    """The skill's percentile-bootstrap interval over tasks."""
    skill_seeds: NamedInterval
    """The skill's Student-t interval across seeds (each seed against its own base rate)."""
    skill_frozen_reference: float | None
    """Brier skill against each run's frozen reference forecast (the profile's pooled rate:
    the reference the predictions documents carry); null when that reference scores 0."""
    reliability: float
    """Binned reliability (0 is calibrated)."""
    resolution: float
    """Binned resolution (higher is better)."""
    within_bins: float
    """What binning leaves over (Brier = reliability − resolution + uncertainty + this)."""
    tasks_needed: int | None
    """Tasks needed for a skill interval of ±0.1 at this slice's variance; null when the
    skill is undefined or does not vary (`tasks_needed_note`)."""
    tasks_needed_note: str | None
    """Why `tasks_needed` is null; null otherwise."""
    calibration: tuple[CalibrationCell, ...]
    """Reliability diagram cells (10 bins)."""


@dataclass(frozen=True)
class StepsRow:
    """Success by number of steps."""

    steps: int
    """Operations composed."""
    n: int
    """Tasks."""
    successes: int
    """Tasks answered right."""
    mean_product: float
    """Mean probability the product predictor gave them."""
    mean_state_aware: float | None
    """Mean probability the state-aware predictor gave them; null without it."""


@dataclass(frozen=True)
class SliceFigures:
    """Every figure of one slice of held-out tasks."""

    condition: str
    """The condition."""
    scope: str
    """What is pooled: a run, a preset, a rung, or `pooled over LADDER` (rung-aware)."""
    family: str
    """`all families` or one family."""
    pooled_over_rungs: bool
    """True for a row pooled over the rungs of one ladder (rung-aware climatology)."""
    n: int
    """Tasks scored."""
    successes: int
    """Tasks answered right."""
    base_rate: float
    """Observed base rate (successes / n)."""
    climatology: str
    """What the reference forecast is, in words."""
    climatology_brier: float
    """The reference's Brier score (0: every outcome of every stratum equal)."""
    seeds: tuple[int, ...]
    """Task seeds of the tasks, sorted."""
    cells: int
    """Runs (cells) the tasks come from."""
    frozen_reference_low: float | None
    """The lowest frozen reference forecast among the runs; null when none recorded."""
    frozen_reference_high: float | None
    """The highest; null when none recorded."""
    product: PredictorFigures
    """The product predictor."""
    state_aware: PredictorFigures | None
    """The state-aware predictor; null when a run has none."""
    difference: float | None
    """Brier(product) − Brier(state-aware), paired over the tasks (negative: the product did
    better); null without the state-aware predictor."""
    difference_bootstrap: NamedInterval | None
    """Its percentile-bootstrap interval over tasks (the same draws for both predictors)."""
    difference_seeds: NamedInterval | None
    """Its Student-t interval across seeds."""
    by_steps: tuple[StepsRow, ...]
    """Success by number of steps, fewest first."""

    @property
    def label(self) -> str:
        """`condition · scope · family`, leaving out `this run` and `all families`."""
        parts = [self.condition, self.scope, self.family]
        return " · ".join(p for p in parts if p not in (RUN_SCOPE, ALL_FAMILIES))


def scored_tasks(result: ConditionResult, cell: str, seed: int, stratum: str) -> list[ScoredTask]:
    """A run's condition as scored tasks: every observation the product predicted, with the
    state-aware prediction of the same task (`pyapp.predict.predictor.score`'s pairs)."""
    product = {p.task_id: p for p in result.predictions if p.probability is not None}
    aware = (
        {}
        if result.state_aware is None
        else {p.task_id: p.probability for p in result.state_aware.predictions}
    )
    reference = result.frozen.reference_probability
    if reference is None:  # a freeze older than the frozen reference: derived, as skill_of does
        reference = reference_of(result.frozen.profile)
    found = []
    for o in result.observations:
        p = product.get(o.task_id)
        if p is None or p.probability is None:
            continue
        found.append(
            ScoredTask(
                o.task_id,
                cell,
                seed,
                stratum,
                family_of(o.task_id),
                len(p.ops),
                o.final_correct,
                p.probability,
                aware.get(o.task_id),
                reference,
            )
        )
    return found


class TaskColumns:
    """A slice's tasks as columns, and the statistics of any multiset of them (indices)."""

    def __init__(self, tasks: Sequence[ScoredTask]) -> None:
        self.outcome = [1.0 if t.outcome else 0.0 for t in tasks]
        self.errors = {
            "product": [(t.product - o) ** 2 for t, o in zip(tasks, self.outcome, strict=True)],
            "state-aware": [
                ((t.state_aware or 0.0) - o) ** 2 for t, o in zip(tasks, self.outcome, strict=True)
            ],
        }
        self.frozen = [
            None if t.frozen_reference is None else (t.frozen_reference - o) ** 2
            for t, o in zip(tasks, self.outcome, strict=True)
        ]
        names = sorted({t.stratum for t in tasks})
        self.stratum = [names.index(t.stratum) for t in tasks]
        self.strata = len(names)

    def climatology(self, chosen: Sequence[int]) -> float:
        """Σ over the chosen tasks of (their stratum's base rate − o)² (as a sum)."""
        if self.strata == 1:
            k, h = len(chosen), sum(map(self.outcome.__getitem__, chosen))
            return h * (k - h) / k if k else 0.0
        count, hits = [0] * self.strata, [0.0] * self.strata
        for i in chosen:
            count[self.stratum[i]] += 1
            hits[self.stratum[i]] += self.outcome[i]
        return sum(h * (k - h) / k for k, h in zip(count, hits, strict=True) if k)

    def statistics(self, chosen: Sequence[int]) -> list[float | None]:
        """[Brier product, Brier state-aware, skill product, skill state-aware, difference]
        over the chosen tasks (plain sums in index order: the same indices give the same
        numbers everywhere)."""
        n = len(chosen)
        reference = self.climatology(chosen)
        sums = [sum(map(self.errors[p].__getitem__, chosen)) for p in ("product", "state-aware")]
        skills = [_skill(total, reference) for total in sums]
        return [sums[0] / n, sums[1] / n, *skills, (sums[0] - sums[1]) / n]


def _skill(total_error: float, total_reference: float) -> float | None:
    """1 − E/R; −∞ when the reference is perfect and the forecast is not; None for 0/0."""
    if total_reference > 0:
        return 1.0 - total_error / total_reference
    return None if total_error == 0 else -math.inf


def _undefined(tasks: Sequence[ScoredTask]) -> str | None:
    """Why skill against climatology is undefined here, in words; None when it is defined."""
    by_stratum: dict[str, set[bool]] = {}
    for t in tasks:
        by_stratum.setdefault(t.stratum, set()).add(t.outcome)
    if any(len(seen) > 1 for seen in by_stratum.values()):
        return None
    values = {v for seen in by_stratum.values() for v in seen}
    if len(by_stratum) > 1 and len(values) > 1:
        return (
            "undefined: within each rung every held-out outcome is equal, so the rung-aware "
            "climatology is perfect"
        )
    value = "1 (every task right)" if values == {True} else "0 (every task failed)"
    return f"undefined: all {len(tasks)} held-out outcomes are {value}"


def tasks_needed(
    errors: Sequence[float], reference: Sequence[float]
) -> tuple[int | None, str | None]:
    """Tasks for a skill interval of ±`SKILL_HALF_WIDTH` (the delta method on this slice's
    squared errors `errors` and climatology's `reference`), or None and why."""
    n = len(errors)
    big_r = math.fsum(reference) / n if n else 0.0
    if big_r == 0:
        return None, "the skill is undefined (every outcome equal), at any number of tasks"
    ratio = math.fsum(errors) / n / big_r
    u = [(e - ratio * r) / big_r for e, r in zip(errors, reference, strict=True)]
    mean = math.fsum(u) / n
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in u) / (n - 1)) if n > 1 else 0.0
    if sd == 0:
        return None, "the per-task contributions do not vary: no estimate from this slice"
    return max(2, math.ceil((Z_95 * sd / SKILL_HALF_WIDTH) ** 2)), None


def slice_figures(
    tasks: Sequence[ScoredTask],
    *,
    condition: str,
    scope: str,
    family: str = ALL_FAMILIES,
    pooled_over_rungs: bool = False,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
) -> SliceFigures:
    """Every figure of the slice `tasks` (at least one), each interval named, the bootstrap
    drawn from `seed` (`resamples` resamples, within each task's stratum). Pooled over rungs,
    each task's stratum (its rung) has its own climatology; otherwise the slice is one."""
    if not tasks:
        raise ValueError("a slice needs at least one scored task")
    if not pooled_over_rungs:  # one climatology: the slice's own base rate
        tasks = [replace(t, stratum=scope) for t in tasks]
    columns = TaskColumns(tasks)
    everything = list(range(len(tasks)))
    strata = [[i for i in everything if columns.stratum[i] == s] for s in range(columns.strata)]
    point = columns.statistics(everything)
    boot = bootstrap_statistics(strata, columns.statistics, resamples, seed)
    seeds = sorted({t.seed for t in tasks})
    per_seed = [columns.statistics([i for i in everything if tasks[i].seed == s]) for s in seeds]
    context = _Context(tasks, columns, point, boot, per_seed, resamples, seed)
    aware = all(t.state_aware is not None for t in tasks)
    references = [t.frozen_reference for t in tasks if t.frozen_reference is not None]
    reference_brier = climatology_brier([t.outcome for t in tasks], [t.stratum for t in tasks])
    successes = sum(1 for t in tasks if t.outcome)
    return SliceFigures(
        condition=condition,
        scope=scope,
        family=family,
        pooled_over_rungs=pooled_over_rungs,
        n=len(tasks),
        successes=successes,
        base_rate=successes / len(tasks),
        climatology=RUNG_AWARE if pooled_over_rungs else CLIMATOLOGY,
        climatology_brier=reference_brier or 0.0,
        seeds=tuple(seeds),
        cells=len({t.cell for t in tasks}),
        frozen_reference_low=min(references) if references else None,
        frozen_reference_high=max(references) if references else None,
        product=context.predictor(0),
        state_aware=context.predictor(1) if aware else None,
        difference=point[4] if aware else None,
        difference_bootstrap=bootstrap(boot[4], len(tasks), resamples, seed, (-1.0, 1.0))
        if aware
        else None,
        difference_seeds=across_seeds([s[4] for s in per_seed], (-1.0, 1.0)) if aware else None,
        by_steps=_by_steps(tasks, aware),
    )


@dataclass(frozen=True)
class _Context:
    """What `slice_figures` computed once, read by each predictor's figures."""

    tasks: Sequence[ScoredTask]
    columns: TaskColumns
    point: list[float | None]
    boot: list[list[float | None]]
    per_seed: list[list[float | None]]
    resamples: int
    seed: int

    def predictor(self, k: int) -> PredictorFigures:
        """Predictor `k` (0 the product, 1 the state-aware one)."""
        name = ("product", "state-aware")[k]
        tasks, n = self.tasks, len(self.tasks)
        probabilities = [t.product if k == 0 else t.state_aware or 0.0 for t in tasks]
        outcomes = [t.outcome for t in tasks]
        split = binned_decomposition(probabilities, outcomes, CALIBRATION_BINS)
        assert split is not None  # n >= 1
        errors = self.columns.errors[name]
        frozen = self.columns.frozen
        frozen_skill = None
        if all(f is not None for f in frozen):
            value = _skill(math.fsum(errors), math.fsum(f or 0.0 for f in frozen))
            frozen_skill = None if value is None or math.isinf(value) else value
        undefined = _undefined(tasks)
        needed, why = tasks_needed(errors, self._reference_errors())
        brier = self.point[k]
        assert brier is not None
        return PredictorFigures(
            predictor=name,
            mean_predicted=math.fsum(probabilities) / n,
            brier=brier,
            brier_bootstrap=bootstrap(self.boot[k], n, self.resamples, self.seed, (0.0, 1.0)),
            brier_seeds=across_seeds([s[k] for s in self.per_seed], (0.0, 1.0)),
            skill=None if undefined else self.point[2 + k],
            skill_undefined=undefined,
            skill_bootstrap=bootstrap(
                self.boot[2 + k], n, self.resamples, self.seed, (-math.inf, 1.0)
            ),
            skill_seeds=across_seeds([s[2 + k] for s in self.per_seed], (-math.inf, 1.0)),
            skill_frozen_reference=frozen_skill,
            reliability=split.reliability,
            resolution=split.resolution,
            within_bins=split.within_bins,
            tasks_needed=needed,
            tasks_needed_note=why,
            calibration=calibration_cells(probabilities, outcomes, CALIBRATION_BINS),
        )

    def _reference_errors(self) -> list[float]:
        """Each task's squared error under climatology (its stratum's base rate)."""
        c = self.columns
        count, hits = [0] * c.strata, [0.0] * c.strata
        for s, o in zip(c.stratum, c.outcome, strict=True):
            count[s] += 1
            hits[s] += o
        return [(hits[s] / count[s] - o) ** 2 for s, o in zip(c.stratum, c.outcome, strict=True)]


def _by_steps(tasks: Sequence[ScoredTask], aware: bool) -> tuple[StepsRow, ...]:
    rows = []
    for steps in sorted({t.steps for t in tasks}):
        members = [t for t in tasks if t.steps == steps]
        k = len(members)
        rows.append(
            StepsRow(
                steps,
                k,
                sum(1 for t in members if t.outcome),
                math.fsum(t.product for t in members) / k,
                math.fsum(t.state_aware or 0.0 for t in members) / k if aware else None,
            )
        )
    return tuple(rows)
