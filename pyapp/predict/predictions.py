"""The predictions document: its records — a profile (`OpProfile`, `EncodingTable`,
`Profile`), the profile as frozen (`FrozenProfile`), predictions, observations and scores
per frozen condition (`ConditionResult`), the whole document (`PredictionsDocument`) —,
the assumptions and interpretation it states, its versions (older ones upgraded by
`read_predictions`, re-derived as they were held by `as_version`) and its generated schema
(`exports/predictions.schema.json`).

Computing the numbers is elsewhere in `pyapp.predict`: building a profile (`profile`), the
freeze (`freeze`), both predictors' forecasts (`forecast`), observing and scoring
(`predictor`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from pyapp.predict.metrics import CalibrationCell, CostErrors
from pyapp.predict.skill import SkillScores
from pyapp.records import (
    JSON,
    Condition,
    Evidence,
    RunTerms,
    StateAwareModel,
    TaskSetIdentity,
    from_json,
    json_schema,
)

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
    terms: RunTerms | None = field(default=None, metadata=ADDED_IN_4)
    """The run's terms as frozen (trace/4: the chain protocol, which decides the held-out
    tasks a chain profile predicts and their routes); absent in documents derived from
    traces older than trace/4 (measured under the design's chain protocol)."""
    draw_seed: str | None = field(default=None, metadata=ADDED_IN_4)
    """A sealed run's held-out draw seed (`pyapp.predict.sealing`): the held-out tasks
    predicted here were drawn from it after the freeze. Not covered by `sha256` (the
    freeze's hash, made before the draw); `exploratory` and `exploratory_reason` then also
    carry the draw's checks. Null for an unsealed run."""


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
    sealed: bool = field(default=False, metadata=ADDED_IN_4)
    """True when the trace is a sealed run: its held-out tasks were drawn after every
    profile was frozen, from `draw_seed`; false for an unsealed run (held-out tasks from
    the task seed) and in documents written before the field."""
    draw_seed: str | None = field(default=None, metadata=ADDED_IN_4)
    """A sealed run's held-out draw seed (null when unsealed, or not drawn yet)."""


_LATER_FROZEN_FIELDS = ("reference_probability", "terms", "draw_seed")
_LATER_DOCUMENT_FIELDS = ("sealed", "draw_seed")
"""The document's fields added to predictions/4 later (false or null where unsealed)."""
"""A frozen profile's fields added to predictions/4 after documents without them were
written (null where the freeze recorded none)."""


def without_absent_fields(derived: JSON, recorded: JSON) -> JSON:
    """`derived` without the additive optional fields that `recorded` — a document of the
    same version written before they existed — lacks, so that it still re-derives: `skill`,
    and a frozen profile's `reference_probability` or `terms` where the freeze recorded none
    (null)."""
    if not isinstance(recorded, dict) or not isinstance(derived, dict):
        return derived
    derived = {
        k: v
        for k, v in derived.items()
        if k in recorded or k not in _LATER_DOCUMENT_FIELDS or v not in (None, False)
    }
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
        if isinstance(frozen, dict) and isinstance(theirs, dict):
            absent = {k for k in _LATER_FROZEN_FIELDS if k not in theirs and frozen.get(k) is None}
            if absent:
                frozen = {k: v for k, v in frozen.items() if k not in absent}
                condition = dict(condition, frozen=frozen)
            terms, their_terms = frozen.get("terms"), theirs.get("terms")
            if (
                isinstance(terms, dict)
                and isinstance(their_terms, dict)
                and "sealed" not in their_terms
                and terms.get("sealed") is False
            ):  # written before `RunTerms.sealed` existed: unsealed
                terms = {k: v for k, v in terms.items() if k != "sealed"}
                condition = dict(condition, frozen=dict(frozen, terms=terms))
        trimmed.append(condition)
    return dict(derived, conditions=trimmed)


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
        if k not in ("chain_head", "task_set", "state_aware", *_LATER_FROZEN_FIELDS)
    }
    frozen["profile"] = without_distinct_states(frozen["profile"])
    out = dict(condition, frozen=frozen)
    if isinstance(out.get("interrupted"), dict):  # never shown: predictions/1–3 said 0
        out["interrupted"] = {**out["interrupted"], "output_shown": 0}
    if isinstance(out.get("state_aware"), dict):
        model = {k: v for k, v in out["state_aware"]["model"].items() if k != "version"}
        out["state_aware"] = dict(out["state_aware"], model=model)
    return out


def without_distinct_states(profile: JSON) -> JSON:
    """A profile's JSON as predictions/1–3 held it (no `distinct_states` per op)."""
    ops = [{k: v for k, v in op.items() if k != "distinct_states"} for op in profile["ops"]]
    return {**profile, "ops": ops}


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
