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
document with it number for number.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Literal

from pyapp.conditions.run import exact_op, plan_route, resolve_operand
from pyapp.predict import skill, state_aware
from pyapp.predict.exploratory import journal_leaks
from pyapp.predict.metrics import (
    CalibrationCell,
    CostErrors,
    brier_score,
    calibration_cells,
    cost_errors,
    wilson_interval,
)
from pyapp.predict.skill import SkillScores
from pyapp.predict.state_aware import StateAwareModel
from pyapp.records.base import JSON, from_json, json_schema, to_json
from pyapp.records.chain import sha256_of
from pyapp.records.frozen import TaskSetIdentity, task_set_identity
from pyapp.records.model import revision_note
from pyapp.records.trace import Condition, Evidence, FreezeRecord, Trace, Trial
from pyapp.tasks.taskset import PRIMITIVE_OPS, Task, TaskParams, generate

SCHEMA_VERSION: Literal["predictions/4"] = "predictions/4"
OLDER_VERSIONS = ("predictions/1", "predictions/2", "predictions/3")
"""Still read (`read_predictions` upgrades them) and re-derived (`as_version`):
predictions/1 has neither the revision note, the interruption counts nor the
state-aware predictor; predictions/2 has no state-aware predictor; predictions/3 has no
task-set identity, chain head or frozen state-aware fit in its frozen profiles."""
SCHEMA_ID = "https://composition-lab.invalid/exports/predictions.schema.json"
ADDED_IN_4 = {"optional_on_read": True}
"""Fields predictions/4 added: absent from older documents (read as null)."""

ASSUMPTIONS_3 = (
    "Matching inputs: each step of a composition sees operands like those of the profile's "
    "single-primitive probes (unverified).",
    "Independent step errors: whether one step is right does not depend on the others "
    "(unverified).",
    "Stationary costs: a primitive costs the same inside a composition as alone (unverified).",
)
"""The product predictor's assumptions, as predictions/1–3 listed them."""
ASSUMPTIONS = (
    "Matching inputs (product predictor): each step of a composition sees operands like "
    "those of the profile's single-primitive probes (unverified).",
    "Independent step errors (product predictor): whether one step is right does not depend "
    "on the others (unverified).",
    "Stationary costs (product predictor): a primitive costs the same inside a composition "
    "as alone (unverified).",
    "State dependence (state-aware predictor): a step's success depends on its state only "
    "through the stated features (operand and result digits, a negative operand), by a "
    "logistic curve per op under the stated prior (unverified).",
    "Independent step errors given the state (state-aware predictor): the product of the "
    "steps' probabilities along the exact intermediates is P(all steps right) (unverified).",
    "No extrapolation (state-aware predictor): outside the profile's feature range a step is "
    "predicted as at the nearest edge, which says nothing about larger operands "
    "(unverified).",
    "Linear stationary costs (state-aware predictor): a step's cost is linear in the "
    "features, floored at zero, and the same inside a composition as alone (unverified).",
)
"""Both frozen predictors' assumptions (predictions/4)."""
INTERPRETATION = (
    "The product of primitive success rates predicts all-step correctness under the "
    "assumptions above. Used as the probability of a correct final answer it is a naive "
    "proxy: errors can cancel. Calibration cells are descriptive; small cells have broad "
    "intervals and establish neither equivalence nor a universal account."
)


@dataclass(frozen=True)
class OpProfile:
    """One primitive's measured success and cost under one condition."""

    op: Literal["add", "sub", "mul"]
    """The primitive."""
    trials: int
    """Profile trials of this op (isolated primitives and encoding probes)."""
    successes: int
    """Trials whose final answer was exactly right."""
    rate: float | None
    """successes / trials; null with no trials."""
    wilson_low: float
    """Lower bound of the 95% Wilson interval of the rate."""
    wilson_high: float
    """Upper bound of the 95% Wilson interval of the rate."""
    mean_cost_ms: float | None
    """Mean generation + execution wall time per trial."""
    mean_input_tokens: float | None
    """Mean prompt tokens over trials that reported them."""
    mean_output_tokens: float | None
    """Mean generated tokens over trials that reported them."""
    distinct_states: int | None = field(default=None, metadata=ADDED_IN_4)
    """How many distinct operand states (register values) those trials measured: the two
    encodings of a probe pair are one state, so by default 6 trials are 4 states
    (predictor.md says what that does to the Wilson interval); null in documents older
    than predictions/4."""


@dataclass(frozen=True)
class EncodingPair:
    """Both encodings of one probe state under one condition."""

    pair: str
    """The pair id (`probe-N`)."""
    op: Literal["add", "sub", "mul"]
    """The probe's primitive."""
    json_correct: bool | None
    """Verdict with registers as JSON; null if not observed."""
    prose_correct: bool | None
    """Verdict with registers in prose; null if not observed."""
    agree: bool | None
    """Both verdicts equal; null unless both were observed."""


@dataclass(frozen=True)
class EncodingTable:
    """Does the encoding of the same state change the verdict?"""

    pairs: tuple[EncodingPair, ...]
    """Every probe pair."""
    complete_pairs: int
    """Pairs with both encodings observed."""
    agreement_rate: float | None
    """Fraction of complete pairs whose two verdicts agree."""
    json_rate: float | None
    """Success rate with the JSON encoding."""
    prose_rate: float | None
    """Success rate with the prose encoding."""


@dataclass(frozen=True)
class Profile:
    """The primitive profile of one model session under one condition."""

    condition: Condition
    """The measurement condition."""
    evidence: Evidence
    """`fixture` or `model`: a fixture profile is never model evidence."""
    ops: tuple[OpProfile, ...]
    """add, sub, mul in that order."""
    encoding: EncodingTable
    """The paired-encoding probes."""
    trial_ids: tuple[str, ...]
    """The trials the profile was computed from."""


@dataclass(frozen=True)
class FrozenProfile:
    """A profile frozen before the held-out observations, with its provenance and hash."""

    profile: Profile
    """The measured profile."""
    model_id: str
    """Model id of the session."""
    model_revision: str
    """Model revision of the session."""
    model_dtype: str
    """Weights' dtype."""
    model_chat_template_options: dict[str, bool | int | str]
    """The chat-template options every prompt was rendered with (e.g. `enable_thinking`);
    hashed only when not empty (`{}` in a document older than the field)."""
    backend: str | None
    """Backend actually used."""
    seed: int
    """Task seed."""
    generator_version: str
    """Task generator version."""
    prompt_templates: dict[str, str]
    """Template id → SHA-256."""
    heldout_task_ids: tuple[str, ...]
    """The held-out tasks this profile predicts."""
    frozen_at: str
    """UTC time of freezing, ISO 8601."""
    exploratory: bool
    """True when any held-out task was observed before the freeze."""
    exploratory_reason: str | None
    """Which held-out observations came first; null when confirmatory."""
    sha256: str
    """SHA-256 of the canonical JSON of every other field (the ones below only when set)."""
    chain_head: str | None = field(default=None, metadata=ADDED_IN_4)
    """The trace's chain head at the freeze (the freeze record's `prev_sha256`); null in
    documents older than predictions/4 or derived from traces older than trace/3."""
    task_set: TaskSetIdentity | None = field(default=None, metadata=ADDED_IN_4)
    """The task set frozen with the profile: seed, canonical parameters, generator version
    (the preset a person chose is only a label); null as `chain_head`."""
    state_aware: StateAwareModel | None = field(default=None, metadata=ADDED_IN_4)
    """The state-aware predictor's fit as frozen; null as `chain_head`."""
    reference_probability: float | None = field(default=None, metadata=ADDED_IN_4)
    """The reference forecast frozen with the profile: its pooled success rate (every op's
    successes / trials), the forecast every Brier skill score is measured against; absent in
    documents derived from freezes recorded before it was frozen (the skill scores then
    derive it from the profile)."""


@dataclass(frozen=True)
class Prediction:
    """What the frozen profile says about one held-out task, before it is observed."""

    task_id: str
    """The held-out task."""
    ops: tuple[str, ...]
    """Operations of the reference program (or route), in evaluation order."""
    probability: float | None
    """Product of the ops' rates: P(all steps correct) under the assumptions."""
    cost_ms: float | None
    """Sum of the ops' mean costs."""
    input_tokens: float | None
    """Sum of the ops' mean prompt tokens."""
    output_tokens: float | None
    """Sum of the ops' mean generated tokens."""
    note: str | None
    """Why a prediction is missing (an op without trials, an unsupported route)."""


@dataclass(frozen=True)
class Observation:
    """One held-out trial as scored."""

    task_id: str
    """The held-out task."""
    trial_id: str
    """The trial in the trace."""
    outcome: str
    """The trial's outcome (`correct`, `wrong_answer`, or a failure code)."""
    final_correct: bool
    """The final answer was exactly right."""
    all_steps_correct: bool | None
    """Controlled chains: every step locally right; null for whole-task conditions."""
    cost_ms: float | None
    """Generation + execution wall time."""
    observed_before_freeze: bool
    """True when it was observed before the profile was frozen (exploratory)."""


@dataclass(frozen=True)
class Scores:
    """How well the frozen profile predicted the held-out observations."""

    n: int
    """Scored held-out observations with a prediction."""
    brier_final_proxy: float | None
    """Brier score of the product against final correctness (naive proxy)."""
    brier_all_steps: float | None
    """Controlled chains: Brier score against all-step correctness; null otherwise."""
    cost: CostErrors
    """Predicted vs observed generation + execution cost."""
    calibration_final: tuple[CalibrationCell, ...]
    """Descriptive calibration against final correctness."""
    calibration_all_steps: tuple[CalibrationCell, ...]
    """Descriptive calibration against all-step correctness (chains; else empty cells)."""


@dataclass(frozen=True)
class InterruptedAttempts:
    """Held-out attempts of one condition after its freeze that were not observations (a
    Cancel, an infrastructure failure, a closed page) and were attempted again."""

    total: int
    """Interrupted held-out attempts."""
    cancelled: int
    """Of those, cut short by the user's Cancel."""
    infrastructure: int
    """Of those, failed by the infrastructure (worker, load, bridge, ...)."""
    page_closed: int
    """Of those, in flight when the page closed."""
    attempted_again: int
    """Of those, whose task was attempted again and observed afterwards."""


@dataclass(frozen=True)
class StateAwareResult:
    """The state-aware predictor (`pyapp.predict.state_aware`), frozen with the profile."""

    model: StateAwareModel
    """Per-op success and cost as functions of operand state, fitted from the profile."""
    predictions: tuple[Prediction, ...]
    """One per held-out task, composed along the reference tree with exact intermediates."""
    scores: Scores
    """Scored against the same observations as the product predictor."""


@dataclass(frozen=True)
class ConditionResult:
    """Frozen profile, predictions, observations and scores for one condition."""

    frozen: FrozenProfile
    """The profile as frozen."""
    revision_note: str
    """`pinned: <commit>`, or `UNPINNED: ...` when the model was asked for by a branch
    (e.g. `main`), with the commit the hub served or why it is unknown."""
    interrupted: InterruptedAttempts | None
    """Held-out attempts interrupted and attempted again (never scored); null only in
    documents upgraded from predictions/1."""
    predictions: tuple[Prediction, ...]
    """One per held-out task, made from the frozen profile."""
    observations: tuple[Observation, ...]
    """Held-out trials, each scored once."""
    scores: Scores
    """Scores over observations that have a prediction."""
    state_aware: StateAwareResult | None
    """The state-aware predictor, side by side; null only in documents upgraded from
    predictions/1 or predictions/2."""
    skill: SkillScores | None = field(default=None, metadata={"optional_on_read": True})
    """Both predictors' Brier skill against the reference forecast frozen with the profile
    (its pooled success rate), their decompositions and 95 % intervals, and their paired
    difference (`pyapp.predict.skill`); null in documents written before it existed."""


@dataclass(frozen=True)
class PredictionsDocument:
    """Frozen profiles, predictions, observations and scores derived from one trace."""

    schema_version: Literal["predictions/4"]
    """Version of this schema (older versions are upgraded on reading)."""
    kind: Literal["composition-lab-predictions"]
    """Document kind."""
    trace_run_id: str
    """The run id of the trace these numbers derive from."""
    evidence: Evidence
    """`fixture` or `model`; fixture numbers are never model evidence."""
    assumptions: tuple[str, ...]
    """The predictor's assumptions, all unverified."""
    interpretation: str
    """What the numbers do and do not mean."""
    conditions: tuple[ConditionResult, ...]
    """One entry per frozen profile."""
    task_set: TaskSetIdentity | None = field(default=None, metadata=ADDED_IN_4)
    """The trace's task set (seed, canonical parameters, generator version); null only in
    documents older than predictions/4."""


# ---- profile and freeze ---------------------------------------------------------------


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
    trials: Sequence[Trial], tasks: dict[str, Task], condition: Condition, evidence: Evidence
) -> Profile:
    mine = profile_trials(trials, tasks, condition)
    ops = []
    for op in PRIMITIVE_OPS:
        of_op = [t for t in mine if tasks[t.task_id].family == op]
        successes = sum(1 for t in of_op if t.correct)
        low, high = wilson_interval(successes, len(of_op))
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


def canonical_json(value: object) -> str:
    return json.dumps(to_json(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def heldout_tasks(tasks: Sequence[Task], condition: Condition) -> tuple[Task, ...]:
    """Held-out tasks a profile under `condition` predicts (chains: routed ones only)."""

    return tuple(
        t
        for t in tasks
        if t.split == "heldout" and (condition != "controlled-chain" or plan_route(t) is not None)
    )


@lru_cache(maxsize=4)
def tasks_of(params: TaskParams) -> tuple[Task, ...]:
    """The task set of `params`, generated once for the several freezes and scores of one
    trace (tasks are frozen records; nothing here changes them)."""
    return generate(params)


def freeze_profile(trace: Trace, record: FreezeRecord) -> FrozenProfile:
    """The frozen profile a freeze record names, recomputed from the trials before it."""
    if trace.model is None:
        raise ValueError("a profile needs a model session")
    tasks = tasks_of(trace.run.task_params)
    by_id = {t.id: t for t in tasks}
    before = trace.trials[: record.after_trials]
    profile = build_profile(before, by_id, record.condition, trace.model.evidence)
    heldout = heldout_tasks(tasks, record.condition)
    early = sorted(
        {t.task_id for t in before if t.condition == record.condition} & {t.id for t in heldout}
    )
    earlier_sessions = sorted(set(record.previously_observed) & {t.id for t in heldout})
    reasons = []
    if early:
        reasons.append(f"observed in this trace before the freeze: {', '.join(early)}")
    if earlier_sessions:
        reasons.append(f"observed in an earlier session: {', '.join(earlier_sessions)}")
    # trace/3: a journal prompt before the freeze that showed a held-out task (exploratory.py)
    leaked = journal_leaks(
        trace.journal, heldout, record.sequence if record.prev_sha256 is not None else None
    )
    if leaked:
        shown = ", ".join(f"{i} (journal #{n})" for i, n in sorted(leaked.items()))
        reasons.append(f"shown in a journal prompt before the freeze: {shown}")
    content: dict[str, object] = {
        "profile": profile,
        "model_id": trace.model.model_id,
        "model_revision": trace.model.revision,
        "model_dtype": trace.model.dtype,
        "model_chat_template_options": trace.model.chat_template_options,
        "backend": trace.model.backend_actual,
        "seed": trace.run.seed,
        "generator_version": trace.run.generator_version,
        "prompt_templates": trace.run.prompt_templates,
        "heldout_task_ids": tuple(t.id for t in heldout),
        "frozen_at": record.frozen_at,
        "exploratory": bool(reasons),
        "exploratory_reason": "; ".join(reasons) or None,
    }
    if record.prev_sha256 is not None:  # trace/3: the chain head, task set and both fits
        content["chain_head"] = record.prev_sha256
        content["task_set"] = record.task_set
        content["state_aware"] = record.state_aware
        if record.reference_probability is not None:  # hashed only where it was frozen
            content["reference_probability"] = record.reference_probability
    # No template options hash as before the field existed (older documents still verify).
    hashed = {k: v for k, v in content.items() if v or k != "model_chat_template_options"}
    if record.prev_sha256 is None:  # hashed as before trace/3: no distinct-state counts
        hashed["profile"] = _without_distinct_states(to_json(profile))
        digest = hashlib.sha256(canonical_json(hashed).encode("utf-8")).hexdigest()
    else:  # trace/3: the chain's canonical JSON (an optional field at its default is left
        digest = sha256_of(hashed)  # out, so additive fields keep older hashes)
    return FrozenProfile(**content, sha256=digest)  # type: ignore[arg-type]


def _without_distinct_states(profile: JSON) -> JSON:
    """A profile's JSON as predictions/1–3 held it (no `distinct_states` per op)."""
    ops = [{k: v for k, v in op.items() if k != "distinct_states"} for op in profile["ops"]]
    return {**profile, "ops": ops}


def reference_of(profile: Profile) -> float | None:
    """The reference forecast of a profile: its pooled success rate (`skill.pooled_rate`)."""
    return skill.pooled_rate([o.successes for o in profile.ops], [o.trials for o in profile.ops])


def rederive_reference(trace: Trace, record: FreezeRecord) -> float | None:
    """The reference forecast from the profile trials before `record` (what was frozen)."""
    if trace.model is None:
        raise ValueError("a profile needs a model session")
    by_id = {t.id: t for t in tasks_of(trace.run.task_params)}
    before = trace.trials[: record.after_trials]
    return reference_of(build_profile(before, by_id, record.condition, trace.model.evidence))


def refit_state_aware(trace: Trace, record: FreezeRecord) -> StateAwareModel:
    """The state-aware fit from the profile trials before `record` (what was frozen)."""
    by_id = {t.id: t for t in tasks_of(trace.run.task_params)}
    mine = profile_trials(trace.trials[: record.after_trials], by_id, record.condition)
    return state_aware.fit(mine, by_id, {t.trial_id: trial_cost_ms(t) for t in mine})


def seal_freeze(trace: Trace, record: FreezeRecord) -> tuple[FreezeRecord, FrozenProfile]:
    """A new freeze record completed: the task set, the state-aware fit and the reference
    forecast it freezes, and the hash of the profile (which covers them and the chain
    head)."""
    record = replace(
        record,
        task_set=task_set_identity(trace.run.task_params, trace.run.generator_version),
        state_aware=refit_state_aware(trace, record),
        reference_probability=rederive_reference(trace, record),
    )
    frozen = freeze_profile(trace, record)
    return replace(record, profile_sha256=frozen.sha256), frozen


# ---- predict, observe, score ----------------------------------------------------------


def predict(frozen: FrozenProfile, task: Task) -> Prediction:
    if frozen.profile.condition == "controlled-chain":
        route = plan_route(task)
        ops = tuple(c.op for c in route) if route is not None else ()
    else:
        ops = task.operations
    by_op: dict[str, OpProfile] = {p.op: p for p in frozen.profile.ops}
    missing = sorted({op for op in ops if by_op[op].rate is None})
    if not ops or missing:
        note = f"no profile trials for {', '.join(missing)}" if missing else "no operations"
        return Prediction(task.id, ops, None, None, None, None, note)
    probability = 1.0
    for op in ops:
        probability *= by_op[op].rate or 0.0

    def total(field: str) -> float | None:
        values = [getattr(by_op[op], field) for op in ops]
        return None if any(v is None for v in values) else math.fsum(values)

    return Prediction(
        task_id=task.id,
        ops=ops,
        probability=probability,
        cost_ms=total("mean_cost_ms"),
        input_tokens=total("mean_input_tokens"),
        output_tokens=total("mean_output_tokens"),
        note=None,
    )


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
    predictions: Sequence[Prediction], observations: Sequence[Observation], chain: bool
) -> Scores:
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
        calibration_final=calibration_cells(probabilities, finals),
        calibration_all_steps=calibration_cells(
            [p for p, _ in steps_known], [s for _, s in steps_known]
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


def score_trace(trace: Trace) -> PredictionsDocument:
    """Everything a predictions document holds, derived from the trace alone."""
    if trace.model is None:
        raise ValueError("this trace has no model session: nothing to predict")
    tasks = tasks_of(trace.run.task_params)
    by_id = {t.id: t for t in tasks}
    unknown = sorted({t.task_id for t in trace.trials if t.task_id not in by_id})
    if unknown:
        shown = ", ".join(repr(i[:40]) for i in unknown[:3])
        raise ValueError(f"trials name tasks the seed does not generate: {shown}")
    try:
        results = _score_freezes(trace, by_id)
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
    )


def _score_freezes(trace: Trace, by_id: dict[str, Task]) -> list[ConditionResult]:
    model = trace.model
    assert model is not None  # score_trace refused a trace without one
    results = []
    for record in trace.freezes:
        frozen = freeze_profile(trace, record)
        if frozen.sha256 != record.profile_sha256:
            raise ValueError(
                f"freeze of {record.condition}: recorded hash {record.profile_sha256} but the "
                f"trials give {frozen.sha256}"
            )
        heldout_ids = set(frozen.heldout_task_ids)
        predictions = tuple(predict(frozen, by_id[i]) for i in frozen.heldout_task_ids)
        observations = tuple(
            observe(trial, index < record.after_trials)
            for index, trial in enumerate(trace.trials)
            if trial.condition == record.condition and trial.task_id in heldout_ids
        )
        chain = record.condition == "controlled-chain"
        aware = state_aware_result(trace, record, by_id, observations)
        results.append(
            ConditionResult(
                frozen=frozen,
                revision_note=revision_note(model),
                interrupted=interrupted_attempts(trace, record, heldout_ids),
                predictions=predictions,
                observations=observations,
                scores=score(predictions, observations, chain),
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


def without_absent_fields(derived: JSON, recorded: JSON) -> JSON:
    """`derived` without the additive optional fields that `recorded` — a document of the
    same version written before they existed — lacks, so that it still re-derives: `skill`,
    and a frozen profile's `reference_probability` where the freeze recorded none (null)."""
    if not isinstance(recorded, dict) or not isinstance(derived, dict):
        return derived
    kept = recorded.get("conditions")
    if not isinstance(kept, list) or not all(isinstance(c, dict) for c in kept):
        return derived
    conditions = derived["conditions"]
    if not all("skill" in c for c in kept):
        conditions = [{k: v for k, v in c.items() if k != "skill"} for c in conditions]
    trimmed = []
    for i, condition in enumerate(conditions):
        frozen = condition.get("frozen")
        theirs = kept[i].get("frozen") if i < len(kept) else None
        if (
            isinstance(frozen, dict)
            and isinstance(theirs, dict)
            and "reference_probability" not in theirs
            and frozen.get("reference_probability") is None
        ):
            frozen = {k: v for k, v in frozen.items() if k != "reference_probability"}
            condition = dict(condition, frozen=frozen)
        trimmed.append(condition)
    return dict(derived, conditions=trimmed)


def task_steps(task: Task, condition: Condition) -> list[state_aware.Step]:
    """The steps a prediction composes, with exact values: the route's calls for chains,
    the reference program's nodes otherwise."""

    if condition != "controlled-chain":
        return state_aware.program_steps(task.program, dict(task.registers))
    outputs: list[int] = []
    steps = []
    for call in plan_route(task) or ():
        left = resolve_operand(call.left, task.registers, outputs)
        right = resolve_operand(call.right, task.registers, outputs)
        outputs.append(exact_op(call.op, left, right))
        steps.append(state_aware.Step(call.op, left, right, outputs[-1]))
    return steps


def predict_state_aware(model: StateAwareModel, task: Task, condition: Condition) -> Prediction:
    steps = task_steps(task, condition)
    ops = tuple(step.op for step in steps)
    if not steps:
        return Prediction(task.id, ops, None, None, None, None, "no operations")
    chances = [state_aware.step_probability(model, step) for step in steps]
    if any(c is None for c in chances):
        missing = sorted({s.op for s, c in zip(steps, chances, strict=True) if c is None})
        note = f"no profile trials for {', '.join(missing)}"
        return Prediction(task.id, ops, None, None, None, None, note)
    probability = math.prod(c or 0.0 for c in chances)
    costs = [state_aware.step_cost(model, step) for step in steps]
    cost = None if any(c is None for c in costs) else math.fsum(c or 0.0 for c in costs)
    return Prediction(task.id, ops, probability, cost, None, None, None)


def state_aware_result(
    trace: Trace,
    record: FreezeRecord,
    tasks: dict[str, Task],
    observations: Sequence[Observation],
) -> StateAwareResult:
    """The state-aware predictor frozen by `record`: its frozen fit (trace/3), or, for an
    older trace, fitted now on the same profile trials."""
    model = record.state_aware or refit_state_aware(trace, record)
    heldout = heldout_tasks(tuple(tasks.values()), record.condition)
    predictions = tuple(predict_state_aware(model, t, record.condition) for t in heldout)
    chain = record.condition == "controlled-chain"
    return StateAwareResult(model, predictions, score(predictions, observations, chain))


def as_version(document: JSON, version: str) -> JSON:
    """A derived predictions document (JSON) as an older schema version held it."""
    dropped = {
        "predictions/1": ("state_aware", "revision_note", "interrupted", "skill"),
        "predictions/2": ("state_aware", "skill"),
        "predictions/3": ("skill",),
    }.get(version)
    if dropped is None:
        return document
    older = dict(document, schema_version=version, assumptions=list(ASSUMPTIONS_3))
    older.pop("task_set", None)
    older["conditions"] = [
        _condition_as_3({k: v for k, v in c.items() if k not in dropped})
        for c in document["conditions"]
    ]
    return older


def _condition_as_3(condition: dict[str, JSON]) -> dict[str, JSON]:
    """A predictions/4 condition entry without what predictions/3 did not hold."""
    frozen = {
        k: v
        for k, v in condition["frozen"].items()
        if k not in ("chain_head", "task_set", "state_aware", "reference_probability")
    }
    frozen["profile"] = _without_distinct_states(frozen["profile"])
    out = dict(condition, frozen=frozen)
    if isinstance(out.get("interrupted"), dict):  # never shown: predictions/1–3 said 0
        out["interrupted"] = {**out["interrupted"], "output_shown": 0}
    if isinstance(out.get("state_aware"), dict):
        model = {k: v for k, v in out["state_aware"]["model"].items() if k != "version"}
        out["state_aware"] = dict(out["state_aware"], model=model)
    return out


def read_predictions(document: JSON) -> PredictionsDocument:
    """A predictions document from JSON; an older version is upgraded (what it did not
    record: the revision note says so, the interruption counts and the state-aware
    predictor are null)."""
    version = document.get("schema_version") if isinstance(document, dict) else None
    if version in OLDER_VERSIONS:
        document = json.loads(json.dumps(document))
        document["schema_version"] = SCHEMA_VERSION
        for entry in document.get("conditions") or []:
            if isinstance(entry, dict):
                entry.setdefault("revision_note", f"not recorded ({version})")
                entry.setdefault("interrupted", None)
                entry.setdefault("state_aware", None)
                if isinstance(entry.get("interrupted"), dict):
                    entry["interrupted"].pop("output_shown", None)  # always 0: dropped
                if isinstance(entry.get("frozen"), dict):
                    entry["frozen"].setdefault("model_chat_template_options", {})
    upgraded: PredictionsDocument = from_json(PredictionsDocument, document)
    return upgraded


def predictions_schema() -> dict[str, JSON]:
    return json_schema(
        PredictionsDocument, schema_id=SCHEMA_ID, title="Composition Lab predictions"
    )
