"""A profile from a trace's trials: per primitive, its trials, successes, rate with a 95%
Wilson interval and mean costs, plus the paired-encoding table (`build_profile`); which
trials are profile trials (`profile_trials`) and which tasks a profile predicts
(`heldout_tasks`), from the task set generated once per parameters (`tasks_of`; a sealed
trace's, with the held-out tasks of its draw: `tasks_of_trace`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

from pyapp.conditions import plan_route
from pyapp.predict.metrics import METRIC_VERSION, wilson_interval
from pyapp.predict.predictions import EncodingPair, EncodingTable, OpProfile, Profile
from pyapp.records import (
    DEFAULT_CHAIN_PROTOCOL,
    ChainProtocol,
    Condition,
    Evidence,
    Trace,
    Trial,
    is_sealed,
)
from pyapp.tasks import PRIMITIVE_OPS, Task, TaskParams, generate, sealed_tasks


def trial_cost_ms(trial: Trial) -> float | None:
    t = trial.timings
    if t.generation_ms is None and t.execution_ms is None:
        return None
    return (t.generation_ms or 0.0) + (t.execution_ms or 0.0)


def _mean(values: Sequence[float | int | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None


def profile_trials(
    trials: Sequence[Trial], tasks: dict[str, Task], condition: Condition
) -> list[Trial]:
    """The single-primitive probe trials of `condition` among `trials`."""
    return [t for t in trials if t.condition == condition and tasks[t.task_id].split == "profile"]


def build_profile(
    trials: Sequence[Trial],
    tasks: dict[str, Task],
    condition: Condition,
    evidence: Evidence,
    metric: str = METRIC_VERSION,
) -> Profile:
    """The profile of `condition` from `trials`, its Wilson bounds under the metric version
    `metric` (`pyapp.predict.metrics.METRIC_VERSIONS`)."""
    mine = profile_trials(trials, tasks, condition)
    ops = []
    for op in PRIMITIVE_OPS:
        of_op = [t for t in mine if tasks[t.task_id].family == op]
        successes = sum(1 for t in of_op if t.correct)
        low, high = wilson_interval(successes, len(of_op), version=metric)
        ops.append(
            OpProfile(
                op=op,
                trials=len(of_op),
                successes=successes,
                rate=successes / len(of_op) if of_op else None,
                wilson_low=low,
                wilson_high=high,
                mean_cost_ms=_mean([trial_cost_ms(t) for t in of_op]),
                mean_input_tokens=_mean([t.input_tokens for t in of_op]),
                mean_output_tokens=_mean([t.output_tokens for t in of_op]),
                distinct_states=len(
                    {tuple(sorted(tasks[t.task_id].registers.items())) for t in of_op}
                ),
            )
        )
    return Profile(
        condition=condition,
        evidence=evidence,
        ops=tuple(ops),
        encoding=_encoding_table(mine, tasks),
        trial_ids=tuple(t.trial_id for t in mine),
    )


def _encoding_table(trials: Sequence[Trial], tasks: dict[str, Task]) -> EncodingTable:
    verdicts: dict[str, dict[str, bool]] = {}
    for trial in trials:
        task = tasks[trial.task_id]
        if task.pair is not None:
            verdicts.setdefault(task.pair, {})[task.encoding] = trial.correct
    pairs = []
    for task in tasks.values():
        if task.pair is None or task.encoding != "json":
            continue
        seen = verdicts.get(task.pair, {})
        j, p = seen.get("json"), seen.get("prose")
        pairs.append(
            EncodingPair(
                pair=task.pair,
                op=task.family,  # type: ignore[arg-type]
                json_correct=j,
                prose_correct=p,
                agree=None if j is None or p is None else j == p,
            )
        )
    complete = [pair for pair in pairs if pair.agree is not None]
    json_seen = [pair.json_correct for pair in pairs if pair.json_correct is not None]
    prose_seen = [pair.prose_correct for pair in pairs if pair.prose_correct is not None]
    return EncodingTable(
        pairs=tuple(pairs),
        complete_pairs=len(complete),
        agreement_rate=sum(1 for c in complete if c.agree) / len(complete) if complete else None,
        json_rate=sum(json_seen) / len(json_seen) if json_seen else None,
        prose_rate=sum(prose_seen) / len(prose_seen) if prose_seen else None,
    )


def heldout_tasks(
    tasks: Sequence[Task], condition: str, protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL
) -> tuple[Task, ...]:
    """Held-out tasks a profile under `condition` predicts (chains: the ones the run's chain
    `protocol` routes)."""

    chain = condition == "controlled-chain"
    return tuple(
        t
        for t in tasks
        if t.split == "heldout" and (not chain or plan_route(t, protocol) is not None)
    )


@lru_cache(maxsize=4)
def tasks_of(params: TaskParams) -> tuple[Task, ...]:
    """The task set of `params`, generated once for the several freezes and scores of one
    trace (tasks are frozen records; nothing here changes them)."""
    return generate(params)


@lru_cache(maxsize=4)
def _sealed_tasks_of(params: TaskParams, draw_seed: str | None) -> tuple[Task, ...]:
    return sealed_tasks(params, draw_seed)


def tasks_of_trace(trace: Trace) -> tuple[Task, ...]:
    """The task set a trace was run on: an unsealed run's from its parameters (`tasks_of`);
    a sealed run's (`run.terms.sealed`) its profile tasks from the task seed and the
    held-out tasks of its recorded draw (`trace.draw`; none before the draw).
    `reproduce` checks that the recorded draw seed is the one its freezes seal."""
    if is_sealed(trace.run.terms):
        draw = trace.draw
        return _sealed_tasks_of(trace.run.task_params, None if draw is None else draw.draw_seed)
    return tasks_of(trace.run.task_params)


def unsealed_heldout_ids(
    params: TaskParams, condition: str, protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL
) -> tuple[str, ...]:
    """The ids of the held-out tasks a profile under `condition` predicts: the same in a
    sealed run (only the registers are drawn later), so a freeze can name them before the
    draw."""
    return tuple(t.id for t in heldout_tasks(tasks_of(params), condition, protocol))
