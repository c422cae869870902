"""The freeze, computed in one place: what a freeze record commits to and its hash.

A freeze record (`pyapp.records.trace.FreezeRecord`; what it carries besides the profile:
`pyapp.records.frozen`) is made by `freeze_condition` when the sweep freezes a condition
(`pyapp.experiment.phases.freeze`): it is completed (`complete_freeze`) with the task set's
identity, the state-aware predictor's fit (`refit_state_aware`) and the reference forecast
of the skill scores (`rederive_reference`: the profile's pooled success rate,
`reference_of`), and with the SHA-256 of the frozen profile (`freeze_profile`), which
covers them, the run's terms (trace/4: the chain protocol, `frozen_protocol`) and the
chain head. Everything that reads a freeze later recomputes it with the same functions:
scoring (`pyapp.predict.predictor.score_trace`), `reproduce`, and the freeze receipt
(`pyapp.verify.receipt`), whose hash of both predictors' predictions is
`predictions_sha256`.

**Metric versions.** The profile's Wilson bounds are numbers of a metric version
(`pyapp.predict.metrics.METRIC_VERSIONS`), and the profile hash commits to them: a freeze
made before metrics/2 is re-derived under the version whose profile has the hash the freeze
recorded (`frozen_as_recorded`), so no record needs a version field; a new freeze is made
under the current version.

A sealed run (`run.terms.sealed`) has no held-out tasks at its freezes: a freeze names the
held-out ids (the same in every draw) and makes the checks it can without their contents
(`early`); the ledger's and the journal's checks are the draw's
(`pyapp.predict.sealing`), made after it. (`complete_freeze` was `seal_freeze`: renamed so
that "seal" means the held-out draw alone.)"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import replace

from pyapp.predict import skill, state_aware
from pyapp.predict.exploratory import journal_leaks
from pyapp.predict.forecast import predict_product, predict_state_aware
from pyapp.predict.metrics import METRIC_VERSION, METRIC_VERSIONS
from pyapp.predict.predictions import FrozenProfile, Profile, without_distinct_states
from pyapp.predict.profile import (
    build_profile,
    heldout_tasks,
    profile_trials,
    tasks_of_trace,
    trial_cost_ms,
    unsealed_heldout_ids,
)
from pyapp.records import (
    ChainProtocol,
    Condition,
    FreezeRecord,
    StateAwareModel,
    Trace,
    is_sealed,
    protocol_of,
    sha256_of,
    task_set_identity,
    to_json,
)
from pyapp.tasks import Task


def canonical_json(value: object) -> str:
    return json.dumps(to_json(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def frozen_protocol(trace: Trace, record: FreezeRecord) -> ChainProtocol:
    """The chain protocol a freeze predicts under: its own terms (trace/4), else the run's
    (the design's before trace/4); `reproduce` checks that the two agree."""
    return protocol_of(record.terms if record.terms is not None else trace.run.terms)


def freeze_profile(trace: Trace, record: FreezeRecord, metric: str | None = None) -> FrozenProfile:
    """The frozen profile a freeze record names, recomputed from the trials before it, under
    the metric version `metric` (default: the one its recorded hash names,
    `frozen_as_recorded`)."""
    if metric is None:
        return frozen_as_recorded(trace, record)[0]
    if trace.model is None:
        raise ValueError("a profile needs a model session")
    tasks = tasks_of_trace(trace)
    by_id = {t.id: t for t in tasks}
    before = trace.trials[: record.after_trials]
    profile = build_profile(before, by_id, record.condition, trace.model.evidence, metric)
    protocol = frozen_protocol(trace, record)
    sealed = is_sealed(trace.run.terms)
    if sealed:  # the held-out tasks are drawn after the freeze: their ids alone are known
        heldout_ids: tuple[str, ...] = unsealed_heldout_ids(
            trace.run.task_params, record.condition, protocol
        )
        heldout: tuple[Task, ...] = ()
    else:
        heldout = heldout_tasks(tasks, record.condition, protocol)
        heldout_ids = tuple(t.id for t in heldout)
    early = sorted(
        {t.task_id for t in before if t.condition == record.condition} & set(heldout_ids)
    )
    earlier_sessions = sorted(set(record.previously_observed) & set(heldout_ids))
    reasons = []
    if early:
        reasons.append(f"observed in this trace before the freeze: {', '.join(early)}")
    if earlier_sessions:
        reasons.append(f"observed in an earlier session: {', '.join(earlier_sessions)}")
    # trace/3: a journal prompt before the freeze that showed a held-out task (exploratory.py;
    # a sealed run's held-out tasks did not exist yet: the draw checks its journal)
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
        "heldout_task_ids": heldout_ids,
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
        if record.terms is not None:  # trace/4: the run's terms (the chain protocol)
            content["terms"] = record.terms
    # No template options hash as before the field existed (older documents still verify).
    hashed = {k: v for k, v in content.items() if v or k != "model_chat_template_options"}
    if record.prev_sha256 is None:  # hashed as before trace/3: no distinct-state counts
        hashed["profile"] = without_distinct_states(to_json(profile))
        digest = hashlib.sha256(canonical_json(hashed).encode("utf-8")).hexdigest()
    else:  # trace/3: the chain's canonical JSON (an optional field at its default is left
        digest = sha256_of(hashed)  # out, so additive fields keep older hashes)
    return FrozenProfile(**content, sha256=digest)  # type: ignore[arg-type]


def frozen_as_recorded(
    trace: Trace, record: FreezeRecord, prefer: Sequence[str] = METRIC_VERSIONS
) -> tuple[FrozenProfile, str]:
    """The frozen profile of `record` and the metric version it was made under: the first
    version of `prefer` whose profile has the hash the record holds (where the profile has
    no bound at k = 0 or k = n the versions agree, and the first is taken); the current
    version for a record not sealed yet, or when none has that hash (the caller names the
    mismatch)."""
    made = {}
    for metric in prefer:
        frozen = freeze_profile(trace, record, metric)
        if frozen.sha256 == record.profile_sha256:
            return frozen, metric
        made[metric] = frozen
    return made.get(METRIC_VERSION) or freeze_profile(trace, record, METRIC_VERSION), METRIC_VERSION


def reference_of(profile: Profile) -> float | None:
    """The reference forecast of a profile: its pooled success rate (`skill.pooled_rate`)."""
    return skill.pooled_rate([o.successes for o in profile.ops], [o.trials for o in profile.ops])


def rederive_reference(trace: Trace, record: FreezeRecord) -> float | None:
    """The reference forecast from the profile trials before `record` (what was frozen)."""
    if trace.model is None:
        raise ValueError("a profile needs a model session")
    by_id = {t.id: t for t in tasks_of_trace(trace)}
    before = trace.trials[: record.after_trials]
    return reference_of(build_profile(before, by_id, record.condition, trace.model.evidence))


def refit_state_aware(trace: Trace, record: FreezeRecord) -> StateAwareModel:
    """The state-aware fit from the profile trials before `record` (what was frozen)."""
    by_id = {t.id: t for t in tasks_of_trace(trace)}
    mine = profile_trials(trace.trials[: record.after_trials], by_id, record.condition)
    return state_aware.fit(mine, by_id, {t.trial_id: trial_cost_ms(t) for t in mine})


def complete_freeze(trace: Trace, record: FreezeRecord) -> tuple[FreezeRecord, FrozenProfile]:
    """A new freeze record completed: the task set, the state-aware fit and the reference
    forecast it freezes, and the hash of the profile (which covers them and the chain
    head)."""
    record = replace(
        record,
        terms=trace.run.terms,
        task_set=task_set_identity(trace.run.task_params, trace.run.generator_version),
        state_aware=refit_state_aware(trace, record),
        reference_probability=rederive_reference(trace, record),
    )
    frozen = freeze_profile(trace, record, METRIC_VERSION)
    return replace(record, profile_sha256=frozen.sha256), frozen


def freeze_condition(
    trace: Trace,
    condition: Condition,
    *,
    sequence: int,
    prev_sha256: str | None,
    frozen_at: str,
    previously_observed: tuple[str, ...],
) -> tuple[FreezeRecord, FrozenProfile]:
    """`condition` frozen after every trial of `trace`: its freeze record at `sequence` in
    the timeline (the chain head `prev_sha256` before it), completed (`complete_freeze`),
    and the profile it freezes."""
    record = FreezeRecord(
        condition=condition,
        sequence=sequence,
        after_trials=len(trace.trials),
        frozen_at=frozen_at,
        previously_observed=previously_observed,
        profile_sha256="",
        prev_sha256=prev_sha256,
    )
    return complete_freeze(trace, record)


def predictions_sha256(trace: Trace, record: FreezeRecord) -> str:
    """SHA-256 of both predictors' predictions from the freeze `record`."""

    frozen = freeze_profile(trace, record)
    protocol = frozen_protocol(trace, record)
    heldout = heldout_tasks(tasks_of_trace(trace), record.condition, protocol)
    fit = record.state_aware or refit_state_aware(trace, record)
    return sha256_of(
        {
            "product": [predict_product(frozen, task) for task in heldout],
            "state_aware": [
                predict_state_aware(fit, task, record.condition, protocol) for task in heldout
            ],
        }
    )
