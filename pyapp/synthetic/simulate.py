"""Run the page's protocol natively with a synthetic model, for many seeds.

For each task seed: a `Sweep` (the page's protocol state), `run_phase("measure")`,
`freeze`, `run_phase("heldout")`, then `score_trace` — the very functions the page's
session calls — under a virtual clock advanced by the synthetic cost model. Each seed gives
an ordinary trace and predictions document (re-derivable by `python -m pyapp reproduce`),
labelled `synthetic`; `summarise_runs` averages the scores across seeds.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from pyapp.conditions import MODEL_CONDITIONS
from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.predict import PredictionsDocument, Scores, score_trace
from pyapp.records import (
    DEFAULT_CHAIN_PROTOCOL,
    VIRTUAL_CLOCK,
    ChainProtocol,
    Condition,
    StudySeal,
    SyntheticSpec,
    Trace,
    clock,
)
from pyapp.synthetic.adapter import SyntheticAdapter
from pyapp.synthetic.language import written_name
from pyapp.tasks import TaskParams


@dataclass(frozen=True)
class SeedRun:
    """One seed of a simulation: the trace and the predictions document it produced."""

    seed: int
    """The task seed."""
    trace: Trace
    """The trace, as the page would export it (evidence `synthetic`)."""
    predictions: PredictionsDocument
    """Frozen profiles, predictions, observations and scores derived from the trace."""


async def run_seed_async(
    spec: SyntheticSpec,
    params: TaskParams,
    conditions: Sequence[Condition] = MODEL_CONDITIONS,
    protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL,
    sealed: bool = False,
    study_seal: StudySeal | None = None,
) -> SeedRun:
    sweep, adapter = _sweep(spec, params, conditions, protocol, sealed, study_seal is not None)
    sweep.study_seal = study_seal
    with clock.using(adapter.clock.now_ns):
        await run_phase(sweep, "measure", adapter, before_trial=adapter.begin_trial)
        freeze(sweep)
        await run_phase(sweep, "heldout", adapter, before_trial=adapter.begin_trial)
    trace = sweep.trace()
    return SeedRun(params.seed, trace, score_trace(trace))


def _sweep(
    spec: SyntheticSpec,
    params: TaskParams,
    conditions: Sequence[Condition],
    protocol: ChainProtocol,
    sealed: bool,
    awaits_study_seal: bool,
) -> tuple[Sweep, SyntheticAdapter]:
    adapter = SyntheticAdapter(spec, params.seed)
    sweep = Sweep(
        params=params,
        conditions=tuple(conditions),
        model=adapter.provenance,
        run_id=f"synthetic-{spec.structure}-seed-{params.seed}",
        clock=VIRTUAL_CLOCK,
        protocol=protocol,
        sealed=sealed or awaits_study_seal,
        awaits_study_seal=awaits_study_seal,
    )
    return sweep, adapter


def run_seed_to_freeze(
    spec: SyntheticSpec,
    params: TaskParams,
    conditions: Sequence[Condition] = MODEL_CONDITIONS,
    protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL,
) -> Trace:
    """A seed under a study-level seal not made yet: measured and frozen, then stopped (the
    trace has no draw and no held-out trial). The synthetic model is deterministic, so the
    run made again with the seal (`run_seed(..., study_seal=...)`) freezes the same profiles:
    its draw refuses a seal that does not list them."""

    async def to_freeze() -> Trace:
        sweep, adapter = _sweep(spec, params, conditions, protocol, True, True)
        with clock.using(adapter.clock.now_ns):
            await run_phase(sweep, "measure", adapter, before_trial=adapter.begin_trial)
            freeze(sweep)
        return sweep.trace()

    return asyncio.run(to_freeze())


def run_seed(
    spec: SyntheticSpec,
    params: TaskParams,
    conditions: Sequence[Condition] = MODEL_CONDITIONS,
    protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL,
    sealed: bool = False,
    study_seal: StudySeal | None = None,
) -> SeedRun:
    """One seed through measure → freeze → held-out → score (the chain under `protocol`;
    `sealed`: held-out tasks drawn after the freeze, `pyapp.predict.sealing`; `study_seal`:
    drawn from that study-level seal, which must list this run's own)."""
    return asyncio.run(run_seed_async(spec, params, conditions, protocol, sealed, study_seal))


def run_seeds(
    spec: SyntheticSpec,
    params: TaskParams,
    seeds: Iterable[int],
    conditions: Sequence[Condition] = MODEL_CONDITIONS,
    on_seed: Callable[[SeedRun], None] | None = None,
    protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL,
    *,
    sealed: bool = False,
) -> list[SeedRun]:
    """Every seed in turn (task seed replaced, everything else in `params` kept)."""

    async def all_seeds() -> list[SeedRun]:
        runs = []
        for seed in seeds:
            seeded = replace(params, seed=seed)
            run = await run_seed_async(spec, seeded, conditions, protocol, sealed)
            if on_seed is not None:
                on_seed(run)
            runs.append(run)
        return runs

    return asyncio.run(all_seeds())


@dataclass(frozen=True)
class ScoreSummary:
    """One predictor's scores under one condition, averaged over seeds."""

    seeds: int
    """Seeds that contributed a score."""
    mean_brier_final_proxy: float | None
    """Mean over seeds of the Brier score against final correctness."""
    mean_brier_all_steps: float | None
    """Mean over seeds of the Brier score against all-step correctness (chains)."""
    mean_cost_error_ms: float | None
    """Mean over seeds of the mean signed cost error (predicted − observed)."""
    mean_cost_absolute_error_ms: float | None
    """Mean over seeds of the mean absolute cost error."""


@dataclass(frozen=True)
class ConditionSummary:
    """A condition's predictors, averaged over the seeds of a simulation."""

    condition: Condition
    """The measurement condition."""
    predictors: dict[str, ScoreSummary]
    """Predictor name (`product`, `state-aware`) → its averaged scores."""


@dataclass(frozen=True)
class SimulationSummary:
    """What a simulation ran and how the predictors scored, across seeds."""

    kind: str
    """Always `composition-lab-simulation-summary`."""
    evidence: str
    """Always `synthetic`: never model evidence."""
    model: str
    """The synthetic model spec, as written (`pyapp.synthetic.language.written_name`)."""
    specification: SyntheticSpec
    """The whole specification (every error source and the cost model)."""
    seeds: tuple[int, ...]
    """The task seeds run."""
    trials: int
    """Trials over all seeds."""
    conditions: tuple[ConditionSummary, ...]
    """Per condition, each predictor's averaged scores."""


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None


def summarise_scores(scores: Sequence[Scores]) -> ScoreSummary:
    return ScoreSummary(
        seeds=sum(1 for s in scores if s.n),
        mean_brier_final_proxy=_mean([s.brier_final_proxy for s in scores]),
        mean_brier_all_steps=_mean([s.brier_all_steps for s in scores]),
        mean_cost_error_ms=_mean([s.cost.mean_signed_error_ms for s in scores]),
        mean_cost_absolute_error_ms=_mean([s.cost.mean_absolute_error_ms for s in scores]),
    )


def predictor_scores(run: SeedRun) -> dict[tuple[str, str], Scores]:
    """(condition, predictor) → scores of one seed."""
    found: dict[tuple[str, str], Scores] = {}
    for result in run.predictions.conditions:
        condition = result.frozen.profile.condition
        found[(condition, "product")] = result.scores
        if result.state_aware is not None:
            found[(condition, "state-aware")] = result.state_aware.scores
    return found


def summarise_runs(spec: SyntheticSpec, runs: Sequence[SeedRun]) -> SimulationSummary:
    by_key: dict[tuple[str, str], list[Scores]] = {}
    for run in runs:
        for key, scores in predictor_scores(run).items():
            by_key.setdefault(key, []).append(scores)
    conditions: list[ConditionSummary] = []
    for condition in dict.fromkeys(c for c, _ in by_key):
        predictors = {p: summarise_scores(s) for (c, p), s in by_key.items() if c == condition}
        conditions.append(ConditionSummary(condition, predictors))  # type: ignore[arg-type]
    return SimulationSummary(
        kind="composition-lab-simulation-summary",
        evidence="synthetic",
        model=written_name(spec),
        specification=spec,
        seeds=tuple(r.seed for r in runs),
        trials=sum(len(r.trace.trials) for r in runs),
        conditions=tuple(conditions),
    )
