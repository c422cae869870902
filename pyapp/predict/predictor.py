"""Prediction before observation: profile → freeze → predict → observe → score.

1. **Profile** (per model session and condition) from the single-primitive probes (split
   `profile`): per op, trials, successes, rate with a 95% Wilson interval, mean
   generation + execution wall time and mean tokens; plus the paired-encoding table.
2. **Freeze**: canonical JSON of the profile with its provenance (model, seed, generator
   version, prompt templates, task ids) and its SHA-256. A profile frozen after any of its
   held-out tasks was observed (in this trace or, per the browser's ledger, in an earlier
   session) is marked `exploratory`.
3. **Predict** each held-out composition from its reference program: probability = product
   of the rates of the program's operations; cost = sum of their mean costs.
4. **Observe** each held-out task once per frozen profile.
5. **Score**: Brier score of the product against final correctness (a naive proxy),
   cost errors, and for controlled chains a Brier score against all-step correctness;
   descriptive calibration cells with Wilson intervals.

`score_trace` derives all of it from a trace's raw trials and freeze records alone; the
page and `python -m pyapp score` both call it, and `reproduce` compares a predictions
document with it number for number. It refuses a trace that records, among its trials, one
that is never scored (`pyapp.predict.never_scored`: stalled, interrupted, infrastructure,
capacity refusal, zero-call budget failure), naming the trial and the rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyapp.predict import skill
from pyapp.predict.forecast import predict_product, predict_state_aware
from pyapp.predict.freeze import (
    freeze_profile,
    frozen_as_recorded,
    frozen_protocol,
    reference_of,
    refit_state_aware,
)
from pyapp.predict.freeze import rederive_reference as rederive_reference
from pyapp.predict.metrics import (
    METRIC_VERSION,
    METRIC_VERSIONS,
    brier_score,
    calibration_cells,
    cost_errors,
)
from pyapp.predict.never_scored import never_scored_line
from pyapp.predict.predictions import (
    ASSUMPTIONS,
    INTERPRETATION,
    SCHEMA_VERSION,
    ConditionResult,
    FrozenProfile,
    InterruptedAttempts,
    Observation,
    Prediction,
    PredictionsDocument,
    Scores,
    StateAwareResult,
)
from pyapp.predict.predictions import ASSUMPTIONS_3 as ASSUMPTIONS_3
from pyapp.predict.predictions import OpProfile as OpProfile
from pyapp.predict.predictions import as_version as as_version
from pyapp.predict.predictions import predictions_schema as predictions_schema
from pyapp.predict.predictions import read_predictions as read_predictions
from pyapp.predict.predictions import without_absent_fields as without_absent_fields
from pyapp.predict.profile import heldout_tasks, tasks_of, tasks_of_trace, trial_cost_ms
from pyapp.predict.sealing import with_draw
from pyapp.predict.skill import SkillScores
from pyapp.records import (
    FreezeRecord,
    Trace,
    Trial,
    evidence_mismatches,
    is_sealed,
    revision_note,
    task_set_identity,
)
from pyapp.tasks import Task

__all__ = [  # what other modules import from here (some of it re-exported)
    "ASSUMPTIONS",
    "ASSUMPTIONS_3",
    "INTERPRETATION",
    "SCHEMA_VERSION",
    "ConditionResult",
    "FrozenProfile",
    "InterruptedAttempts",
    "Observation",
    "OpProfile",
    "Prediction",
    "PredictionsDocument",
    "Scores",
    "SkillScores",
    "StateAwareResult",
    "as_version",
    "brier_score",
    "calibration_cells",
    "cost_errors",
    "freeze_profile",
    "frozen_as_recorded",
    "heldout_tasks",
    "interrupted_attempts",
    "observe",
    "predict_product",
    "predict_state_aware",
    "predictions_schema",
    "read_predictions",
    "rederive_reference",
    "reference_of",
    "refit_state_aware",
    "score",
    "score_trace",
    "skill_of",
    "state_aware_result",
    "tasks_of",
    "tasks_of_trace",
    "trial_cost_ms",
    "without_absent_fields",
]


def observe(trial: Trial, before_freeze: bool) -> Observation:
    all_steps = trial.chain.all_steps_correct if trial.chain is not None else None
    return Observation(
        task_id=trial.task_id,
        trial_id=trial.trial_id,
        outcome=trial.outcome,
        final_correct=trial.correct,
        all_steps_correct=all_steps,
        cost_ms=trial_cost_ms(trial),
        observed_before_freeze=before_freeze,
    )


def score(
    predictions: Sequence[Prediction],
    observations: Sequence[Observation],
    chain: bool,
    metric: str = METRIC_VERSION,
) -> Scores:
    """Brier scores, cost errors and calibration cells (their Wilson bounds under the metric
    version `metric`) of `predictions` against `observations`."""
    by_task = {p.task_id: p for p in predictions}
    pairs = [
        (by_task[o.task_id], o)
        for o in observations
        if o.task_id in by_task and by_task[o.task_id].probability is not None
    ]
    probabilities = [p.probability or 0.0 for p, _ in pairs]
    finals = [o.final_correct for _, o in pairs]
    steps_pairs = [(p.probability or 0.0, o.all_steps_correct) for p, o in pairs]
    steps_known = [(p, bool(s)) for p, s in steps_pairs if s is not None] if chain else []
    costs = [(p.cost_ms, o.cost_ms) for p, o in pairs if p.cost_ms is not None]
    costs_known = [(p, o) for p, o in costs if o is not None]
    return Scores(
        n=len(pairs),
        brier_final_proxy=brier_score(probabilities, finals),
        brier_all_steps=brier_score([p for p, _ in steps_known], [s for _, s in steps_known])
        if chain
        else None,
        cost=cost_errors([p for p, _ in costs_known], [o for _, o in costs_known]),
        calibration_final=calibration_cells(probabilities, finals, version=metric),
        calibration_all_steps=calibration_cells(
            [p for p, _ in steps_known], [s for _, s in steps_known], version=metric
        ),
    )


def interrupted_attempts(
    trace: Trace, record: FreezeRecord, heldout_ids: set[str]
) -> InterruptedAttempts:
    """Count the held-out attempts of `record`'s condition interrupted after its freeze."""
    mine = [
        i
        for i in trace.interruptions
        if i.sequence > record.sequence
        and i.trial_id.partition("/")[0] == record.condition
        and i.trial_id.partition("/")[2] in heldout_ids
    ]
    observed = {t.trial_id: t.sequence for t in trace.trials}
    return InterruptedAttempts(
        total=len(mine),
        cancelled=sum(1 for i in mine if i.reason == "cancelled"),
        infrastructure=sum(1 for i in mine if i.reason == "infrastructure"),
        page_closed=sum(1 for i in mine if i.reason == "page-closed"),
        attempted_again=sum(1 for i in mine if observed.get(i.trial_id, -1) > i.sequence),
    )


def score_trace(trace: Trace, prefer: Sequence[str] = METRIC_VERSIONS) -> PredictionsDocument:
    """Everything a predictions document holds, derived from the trace alone; each freeze's
    numbers under the metric version its recorded hash names, the first of `prefer` where
    several do (`pyapp.predict.freeze.frozen_as_recorded`)."""
    if trace.model is None:
        raise ValueError("this trace has no model session: nothing to predict")
    sealed = is_sealed(trace.run.terms)
    if sealed and trace.freezes and trace.draw is None:
        raise ValueError(
            "a sealed run's held-out tasks are not drawn yet: nothing to predict before the draw"
        )
    tasks = tasks_of_trace(trace)
    by_id = {t.id: t for t in tasks}
    unknown = sorted({t.task_id for t in trace.trials if t.task_id not in by_id})
    if unknown:
        shown = ", ".join(repr(i[:40]) for i in unknown[:3])
        raise ValueError(f"trials name tasks the seed does not generate: {shown}")
    relabelled = evidence_mismatches(trace.model, trace.environment.clock)
    if relabelled:
        raise ValueError(str(relabelled[0]))
    for trial in trace.trials:  # the writer's rules, applied again to what was read
        line = never_scored_line(trial)
        if line is not None:
            raise ValueError(line)
    try:
        results = _score_freezes(trace, by_id, prefer)
    except OverflowError as error:  # numbers near 1.8e308 in the trace: refused, never inf/NaN
        raise ValueError(f"a number in the trace is too large to average: {error}") from None
    return PredictionsDocument(
        schema_version=SCHEMA_VERSION,
        kind="composition-lab-predictions",
        trace_run_id=trace.run.run_id,
        evidence=trace.model.evidence,
        assumptions=ASSUMPTIONS,
        interpretation=INTERPRETATION,
        conditions=tuple(results),
        task_set=task_set_identity(trace.run.task_params, trace.run.generator_version),
        sealed=sealed,
        draw_seed=None if trace.draw is None else trace.draw.draw_seed,
    )


def _score_freezes(
    trace: Trace, by_id: dict[str, Task], prefer: Sequence[str]
) -> list[ConditionResult]:
    model = trace.model
    assert model is not None  # score_trace refused a trace without one
    results = []
    for record in trace.freezes:
        frozen, metric = frozen_as_recorded(trace, record, prefer)
        if frozen.sha256 != record.profile_sha256:
            raise ValueError(
                f"freeze of {record.condition}: recorded hash {record.profile_sha256} but the "
                f"trials give {frozen.sha256}"
            )
        frozen = with_draw(frozen, trace)  # a sealed run: the draw's seed and checks
        heldout_ids = set(frozen.heldout_task_ids)
        predictions = tuple(predict_product(frozen, by_id[i]) for i in frozen.heldout_task_ids)
        observations = tuple(
            observe(trial, index < record.after_trials)
            for index, trial in enumerate(trace.trials)
            if trial.condition == record.condition and trial.task_id in heldout_ids
        )
        chain = record.condition == "controlled-chain"
        aware = state_aware_result(trace, record, by_id, observations, metric)
        results.append(
            ConditionResult(
                frozen=frozen,
                revision_note=revision_note(model),
                interrupted=interrupted_attempts(trace, record, heldout_ids),
                predictions=predictions,
                observations=observations,
                scores=score(predictions, observations, chain, metric),
                state_aware=aware,
                skill=skill_of(frozen, predictions, observations, aware),
            )
        )
    return results


def skill_of(
    frozen: FrozenProfile,
    predictions: Sequence[Prediction],
    observations: Sequence[Observation],
    aware: StateAwareResult | None,
) -> SkillScores:
    """Both predictors' skill against the reference forecast frozen with the profile (its
    pooled success rate; derived from the profile where a freeze predates it), on the
    observations each scores (those `score` pairs), and their difference on the tasks both
    scored."""
    reference = frozen.reference_probability
    if reference is None:
        reference = reference_of(frozen.profile)
    product = {p.task_id: p.probability for p in predictions if p.probability is not None}
    other = {} if aware is None else {p.task_id: p.probability for p in aware.predictions}
    mine = [o for o in observations if o.task_id in product]
    theirs = [o for o in observations if other.get(o.task_id) is not None]
    both = [o for o in mine if other.get(o.task_id) is not None]

    def of(chosen: Sequence[Observation], probabilities: dict[str, float | None]) -> list[float]:
        return [probabilities[o.task_id] or 0.0 for o in chosen]

    return SkillScores(
        reference=skill.REFERENCE,
        reference_probability=reference,
        product=skill.predictor_skill(
            of(mine, dict(product)), [o.final_correct for o in mine], reference
        ),
        state_aware=None
        if aware is None
        else skill.predictor_skill(of(theirs, other), [o.final_correct for o in theirs], reference),
        difference=skill.paired_difference(
            of(both, dict(product)), of(both, other), [o.final_correct for o in both]
        ),
    )


def state_aware_result(
    trace: Trace,
    record: FreezeRecord,
    tasks: dict[str, Task],
    observations: Sequence[Observation],
    metric: str = METRIC_VERSION,
) -> StateAwareResult:
    """The state-aware predictor frozen by `record`: its frozen fit (trace/3), or, for an
    older trace, fitted now on the same profile trials."""
    model = record.state_aware or refit_state_aware(trace, record)
    protocol = frozen_protocol(trace, record)
    heldout = heldout_tasks(tuple(tasks.values()), record.condition, protocol)
    predictions = tuple(predict_state_aware(model, t, record.condition, protocol) for t in heldout)
    chain = record.condition == "controlled-chain"
    return StateAwareResult(model, predictions, score(predictions, observations, chain, metric))
