"""Re-derive everything in a trace from its seed and its raw observations.

`reproduce` trusts nothing it can recompute: it regenerates the task set from the seed,
task parameters and generator version, re-executes every program text, re-judges every
reply with the judges that made the verdicts (`judge_whole_task`, `judge_call`), checks
every recorded budget against the protocol's, every evidence label against the model's
source, every trial's load against the model's loads and the sweep's one identity, the
timeline (held-out trials after their condition's freeze, a freeze naming only earlier
trials), every interruption, the consistency of each completion and of the model's loads
with what their writer guarantees (`pyapp.verify.consistency`), and recounts the summary.
Each disagreement is reported as a `Mismatch`; an empty list means every derivable number in
the trace was re-derived exactly.

A trace/3 or trace/4 document's hash chain is re-walked (`pyapp.records.chain`): the first
broken link (a record deleted, inserted, reordered or edited) and every sequence gap is a
mismatch; each freeze's task set and state-aware fit are compared with the ones the trials
give. A trace/4 document records its terms (`run.terms`: the chain protocol) and every
freeze carries the run's; each chain trial is re-derived under that protocol (a route is
planned by the code that made it, every call's operands routed from the recorded replies).

A sealed run (`run.terms.sealed`, generator `tasks/2`) has its held-out draw seed derived
again from its freeze records (`pyapp.predict.sealing.draw_mismatches`): a draw other than
the one its freezes seal — a profile edited after the draw, or held-out tasks drawn for
another profile — is a mismatch naming the draw seed, and its recorded tasks are compared
with the ones its draw gives; every held-out trial comes after the draw.

An older document is upgraded first (`pyapp.records.trace.upgrade`); what its version did
not record is not checked, and `limitations` says so in a line per check (trace/1: no
timestamps, loads, identities, route limits; trace/1 and trace/2: no chain, no frozen task
set or state-aware fit; trace/1–3: no recorded terms, read as the design's chain protocol).
"""

from __future__ import annotations

import json
from dataclasses import replace

from pyapp.conditions import MODEL_CONDITIONS, kind_of
from pyapp.errors import RecordError
from pyapp.predict import (
    METRIC_VERSION,
    METRIC_VERSIONS,
    as_version,
    draw_mismatches,
    frozen_as_recorded,
    heldout_tasks,
    never_scored_line,
    rederive_reference,
    refit_state_aware,
    score_trace,
    tasks_of,
    tasks_of_trace,
    without_absent_fields,
)
from pyapp.records import (
    CHAINED_VERSIONS,
    JSON,
    SCHEMA_VERSION,
    Mismatch,
    TaskRecord,
    Trace,
    chain_mismatches,
    evidence_mismatches,
    is_sealed,
    prompts,
    protocol_of,
    read_trace,
    revision_note,
    summarise,
    task_set_identity,
    to_json,
)
from pyapp.tasks import GENERATOR_VERSIONS, SEALED_GENERATOR_VERSION
from pyapp.verify.consistency import completion_mismatches, model_mismatches
from pyapp.verify.trials import (
    TrialContext,
    check_model_trial,
    check_trial,
    note_mismatch,
    regenerated_records,
    unstamped,
    upgraded_trials,
)


def limitations(document: JSON) -> list[str]:
    """One line per check an older document cannot support (empty for a whole trace/3)."""
    try:
        trace = read_trace(document)
    except RecordError:
        return []
    version = document.get("schema_version") if isinstance(document, dict) else None
    lines = []
    if version == "trace/1":
        lines.append(
            "trace/1: timestamps, model loads, identities and route limits were not recorded: "
            "not checked"
        )
    _, note = chain_mismatches(trace, required=version in CHAINED_VERSIONS)
    if note is not None:
        lines.append(note)
    if trace.run.terms is None:
        lines.append(
            "run terms absent (recorded before trace/4): the chain protocol reads as "
            "chain-design/1, the only one there was"
        )
    if any(f.state_aware is None for f in trace.freezes):
        lines.append(
            "frozen state-aware fit and task set absent (recorded before trace/3): the "
            "state-aware predictor is fitted at scoring time, not frozen"
        )
    elif any(f.reference_probability is None for f in trace.freezes):
        lines.append(
            "reference forecast not frozen (recorded before it was): the skill scores derive "
            "it from the frozen profile (its pooled success rate)"
        )
    for record in trace.freezes:
        try:
            metric = frozen_as_recorded(trace, record)[1]
        except (KeyError, ValueError, OverflowError, ZeroDivisionError):
            continue  # named by reproduce
        if metric != METRIC_VERSION:
            lines.append(
                f"freeze of {record.condition} made under {metric} (Wilson bounds at k = 0 "
                f"and k = n before {METRIC_VERSION} made them exact): its numbers re-derive "
                f"under {metric}"
            )
    return lines


def reproduce(
    document: JSON,
    *,
    read: Trace | None = None,
    changed: dict[int, dict[str, JSON]] | None = None,
) -> list[Mismatch]:
    """Every mismatch between a trace document and what its seed and observations give.
    `read`: the document's records when the caller has read them already (`read_trace`),
    so a large trace is not held twice. `changed`: filled, by trial index, with each trial
    field re-derivation contradicts — what `rederive` needs, so a caller that wants both
    re-derives every trial once."""
    version = document.get("schema_version") if isinstance(document, dict) else None
    legacy = version == "trace/1"
    try:
        trace = read_trace(document) if read is None else read
    except RecordError as error:
        return [Mismatch(error.path, f"not a valid trace: {error.message}")]

    run = trace.run
    if run.generator_version not in GENERATOR_VERSIONS:
        return [
            Mismatch(
                "$.run.generator_version",
                f"{run.generator_version!r} cannot be regenerated by "
                f"{' or '.join(map(repr, GENERATOR_VERSIONS))}",
            )
        ]
    found: list[Mismatch] = []
    if run.generator_version == SEALED_GENERATOR_VERSION and not is_sealed(run.terms):
        found.append(
            Mismatch(
                "$.run.generator_version", "'tasks/2' is a sealed run's, but the run is unsealed"
            )
        )
    found.extend(Mismatch(where, message) for where, message in draw_mismatches(trace))
    if run.seed != run.task_params.seed:
        found.append(Mismatch("$.run.seed", "differs from task_params.seed"))
    if run.generation is None and not legacy:
        message = "is null, but a trace/2 records how generations decode (null only in trace/1)"
        found.append(Mismatch("$.run.generation", message))
    _check_templates(trace, found)
    tasks = _check_tasks(trace, found)
    _check_model(trace, legacy, found)
    _check_terms(trace, version, found)
    ctx = TrialContext(
        tasks=tasks, model=trace.model, legacy=legacy, protocol=protocol_of(trace.run.terms)
    )
    upgraded = upgraded_trials(trace, legacy)

    seen: set[str] = set()
    for i, trial in enumerate(trace.trials):
        where = f"$.trials[{i}]"
        trial_ctx = replace(ctx, legacy=True) if i < upgraded else ctx
        if trial.trial_id in seen:
            found.append(Mismatch(where, f"duplicate trial {trial.trial_id!r}"))
        seen.add(trial.trial_id)
        if trial.condition not in run.conditions:
            found.append(Mismatch(where, f"condition {trial.condition!r} not listed in the run"))
        fields: dict[str, JSON] = {}
        found.extend(check_trial(trial, where, trial_ctx, fields))
        if fields and changed is not None:
            changed[i] = fields
        if trial.condition in MODEL_CONDITIONS:
            check_model_trial(trial, where, trial_ctx, found)
        unscored = never_scored_line(trial)
        if unscored is not None:
            found.append(Mismatch(where, unscored))

    _check_interruptions(trace, ctx, upgraded, found)
    found.extend(chain_mismatches(trace, required=version in CHAINED_VERSIONS)[0])
    _check_frozen_fits(trace, found)
    if not legacy:
        for i, entry in enumerate(trace.journal):
            found.extend(
                completion_mismatches(entry.completion, entry.caps, f"$.journal[{i}].completion")
            )
    if not _check_timeline(trace, legacy, found):
        return found
    if trace.freezes:
        try:
            score_trace(trace)
        except ValueError as error:  # unless it refuses what was named already
            named = {str(m) for m in found} | {m.message for m in found}
            if str(error) not in named:
                found.append(Mismatch("$.freezes", str(error)))

    summary = summarise(trace.trials)
    if summary != trace.summary:
        found.append(
            Mismatch(
                "$.summary", f"recorded {to_json(trace.summary)}, re-derived {to_json(summary)}"
            )
        )
    return found


def _check_terms(trace: Trace, version: object, found: list[Mismatch]) -> None:
    """A trace/4 document records its terms, and every freeze it made carries the run's (an
    older freeze, of a sweep resumed under trace/4, carries none)."""
    if version == SCHEMA_VERSION and trace.run.terms is None:
        found.append(
            Mismatch("$.run.terms", "is null, but a trace/4 records its terms (chain protocol)")
        )
    for i, record in enumerate(trace.freezes):
        if record.terms is not None and record.terms != trace.run.terms:
            found.append(
                Mismatch(
                    f"$.freezes[{i}].terms",
                    "are not the run's terms: a profile frozen under another chain protocol",
                )
            )


def _check_frozen_fits(trace: Trace, found: list[Mismatch]) -> None:
    """Each freeze's task set is the run's, and its state-aware fit and reference forecast
    are what the trials before it give (re-derived here); a chained (trace/3) freeze records
    the task set and the fit (the reference forecast since it was frozen)."""

    identity = task_set_identity(trace.run.task_params, trace.run.generator_version)
    for i, record in enumerate(trace.freezes):
        where = f"$.freezes[{i}]"
        if not 0 <= record.after_trials <= len(trace.trials):
            continue  # named by the timeline check
        if record.state_aware is None or record.task_set is None:
            if record.prev_sha256 is not None:
                found.append(
                    Mismatch(where, "a trace/3 freeze records its task set and state-aware fit")
                )
            continue
        if record.task_set != identity:
            found.append(Mismatch(f"{where}.task_set", "is not the run's task set"))
        try:
            refit = refit_state_aware(trace, record)
            reference = rederive_reference(trace, record)
        except (KeyError, ValueError, OverflowError, ZeroDivisionError):
            continue  # a trial naming no task, or numbers out of range: named elsewhere
        if record.reference_probability is not None and record.reference_probability != reference:
            found.append(
                Mismatch(
                    f"{where}.reference_probability",
                    f"the frozen reference forecast {record.reference_probability!r} is not the "
                    f"frozen profile's pooled success rate, re-derived {reference!r}",
                )
            )
        if refit != record.state_aware:
            found.append(
                Mismatch(
                    f"{where}.state_aware",
                    f"the frozen fit ({record.state_aware.sha256[:12]}…, "
                    f"{record.state_aware.version}) differs from the re-fit "
                    f"({refit.sha256[:12]}…, {refit.version})",
                )
            )


def _check_templates(trace: Trace, found: list[Mismatch]) -> None:
    """Every template a prompt used is listed with the checkout's hash; none is missing."""
    current = prompts.template_hashes()
    listed = trace.run.prompt_templates
    for template_id, digest in listed.items():
        if current.get(template_id) != digest:
            found.append(
                Mismatch(
                    f"$.run.prompt_templates.{template_id}",
                    "template hash differs from this version's template file",
                )
            )
    used: set[str] = set()
    for trial in trace.trials:
        if trial.prompt is not None:
            used.add(trial.prompt.template_id)
        if trial.chain is not None:
            used |= {call.prompt.template_id for call in trial.chain.calls}
    needed = {
        "model-only": prompts.INTEGER_ANSWER,
        "model-program": prompts.REGISTER_PROGRAM,
    }
    used |= {needed[c] for c in trace.run.conditions if c in needed}
    for template_id in sorted(used - set(listed)):
        found.append(Mismatch("$.run.prompt_templates", f"the hash of {template_id!r} is missing"))


def _check_tasks(trace: Trace, found: list[Mismatch]) -> dict[str, TaskRecord]:
    """The recorded tasks are the ones the seed gives (a sealed run's: its profile tasks
    from the task seed, its held-out tasks from its draw's seed, which `draw_mismatches`
    checks against the freezes)."""
    if is_sealed(trace.run.terms):
        regenerated = tuple(TaskRecord.of(t) for t in tasks_of_trace(trace))
    else:
        regenerated = regenerated_records(trace.run.task_params)
    if len(regenerated) != len(trace.tasks):
        found.append(
            Mismatch(
                "$.tasks", f"{len(trace.tasks)} tasks recorded, the seed gives {len(regenerated)}"
            )
        )
    for i, (recorded, derived) in enumerate(zip(trace.tasks, regenerated, strict=False)):
        if recorded != derived:
            diff = sorted(k for k, v in to_json(derived).items() if to_json(recorded)[k] != v)
            found.append(
                Mismatch(
                    f"$.tasks[{i}]",
                    f"{recorded.id} differs from the regenerated task in {', '.join(diff)}",
                )
            )
    return {task.id: task for task in regenerated}


def _check_model(trace: Trace, legacy: bool, found: list[Mismatch]) -> None:
    """The recorded evidence label is the one everything the trace records about the model
    gives (`pyapp.records.evidence.derived_evidence`): a fixture, a synthetic model or the
    reference subject is never relabelled."""
    model = trace.model
    expected_note = None if model is None or legacy else revision_note(model)
    if trace.revision_note != expected_note:
        found.append(Mismatch("$.revision_note", note_mismatch(trace.revision_note, expected_note)))
    if model is None:
        return
    if not legacy:
        found.extend(model_mismatches(model))
    found.extend(evidence_mismatches(model, trace.environment.clock))


def _check_interruptions(
    trace: Trace, ctx: TrialContext, upgraded: int, found: list[Mismatch]
) -> None:
    """Each interruption names a trial of this run, came before that trial was observed, and
    its `partial` trial re-derives. trace/1 did not record when an interruption happened (the
    upgrade numbers them last): against a trial recorded under trace/1 the order is unknown,
    so it is not checked (the trial was attempted again after it, as trace/1 did)."""
    observed = {t.trial_id: t.sequence for t in trace.trials[upgraded:]}
    for i, interruption in enumerate(trace.interruptions):
        where = f"$.interruptions[{i}]"
        condition, _, task_id = interruption.trial_id.partition("/")
        if condition not in trace.run.conditions or task_id not in ctx.tasks:
            found.append(Mismatch(where, f"{interruption.trial_id!r} is no trial of this run"))
            continue
        earlier = observed.get(interruption.trial_id)
        if earlier is not None and earlier < interruption.sequence:
            found.append(Mismatch(where, "interrupts a trial that was already observed"))
        code = interruption.code
        expected_kind = {"cancelled": "cancelled", "infrastructure": "infrastructure"}.get(
            interruption.reason
        )
        if expected_kind is not None and (code is None or kind_of(code) != expected_kind):
            found.append(
                Mismatch(f"{where}.code", f"{code!r} is not a {interruption.reason} failure")
            )
        partial = interruption.partial
        if partial is None:
            continue
        at = f"{where}.partial"
        if partial.trial_id != interruption.trial_id:
            found.append(Mismatch(at, "is not the interrupted trial"))
        if partial.failure is None or partial.failure.code != code:
            found.append(Mismatch(at, f"does not fail with the interruption's code {code!r}"))
        legacy = ctx.legacy or unstamped(partial)
        found.extend(check_trial(partial, at, replace(ctx, legacy=legacy)))


def _check_timeline(trace: Trace, legacy: bool, found: list[Mismatch]) -> bool:
    """Sequence numbers in order; each freeze names only earlier trials; every held-out
    trial of a model condition comes after its condition's freeze. False when a freeze
    names trials that do not exist (nothing can be scored then)."""

    sequences = [t.sequence for t in trace.trials]
    if sequences != sorted(sequences):
        found.append(Mismatch("$.trials", "sequence numbers are not in the recorded order"))
    everything = sequences + [f.sequence for f in trace.freezes]
    everything += [i.sequence for i in trace.interruptions]
    if len(set(everything)) != len(everything):
        found.append(Mismatch("$", "two events share a sequence number"))
    for i, record in enumerate(trace.freezes):
        where = f"$.freezes[{i}]"
        if record.condition not in trace.run.conditions:
            found.append(Mismatch(where, "freezes a condition the run did not list"))
        if not 0 <= record.after_trials <= len(trace.trials):
            found.append(Mismatch(f"{where}.after_trials", "outside the trial list"))
            return False
        before, after = trace.trials[: record.after_trials], trace.trials[record.after_trials :]
        if any(t.sequence > record.sequence for t in before) or any(
            t.sequence < record.sequence for t in after
        ):
            found.append(Mismatch(where, "names trials that came after it"))
        ended = [t.ended_at for t in before if t.ended_at is not None]
        if not legacy and ended and max(ended) > record.frozen_at:
            found.append(Mismatch(f"{where}.frozen_at", "is before a trial it names ended"))
    draw = trace.draw
    if is_sealed(trace.run.terms):
        heldout_ids = {t.id for t in tasks_of(trace.run.task_params) if t.split == "heldout"}
        for i, trial in enumerate(trace.trials):
            if trial.task_id not in heldout_ids:
                continue
            if draw is None:
                found.append(
                    Mismatch(f"$.trials[{i}]", "a held-out trial of a sealed run with no draw")
                )
            elif trial.sequence is not None and trial.sequence < draw.sequence:
                found.append(Mismatch(f"$.trials[{i}]", "a held-out trial before the draw"))
    for condition in trace.run.conditions:
        if condition not in MODEL_CONDITIONS:
            continue
        tasks = tasks_of_trace(trace)
        protocol = protocol_of(trace.run.terms)
        heldout = {t.id for t in heldout_tasks(tasks, condition, protocol)}
        freezes = [f for f in trace.freezes if f.condition == condition]
        for i, trial in enumerate(trace.trials):
            if trial.condition != condition or trial.task_id not in heldout:
                continue
            earlier = [f for f in freezes if f.after_trials <= i]
            if not earlier:
                found.append(
                    Mismatch(f"$.trials[{i}]", "a held-out trial with no freeze before it")
                )
            elif trial.started_at is not None and trial.started_at < earlier[0].frozen_at:
                found.append(
                    Mismatch(f"$.trials[{i}].started_at", "is before its condition's freeze")
                )
    return True


def _differences(recorded: JSON, derived: JSON, path: str, out: list[Mismatch]) -> None:
    if isinstance(recorded, dict) and isinstance(derived, dict):
        for key in sorted(set(recorded) | set(derived)):
            if key not in recorded or key not in derived:
                out.append(Mismatch(f"{path}.{key}", "present on one side only"))
            else:
                _differences(recorded[key], derived[key], f"{path}.{key}", out)
    elif isinstance(recorded, list) and isinstance(derived, list):
        if len(recorded) != len(derived):
            out.append(Mismatch(path, f"{len(recorded)} items recorded, {len(derived)} derived"))
        for i, (a, b) in enumerate(zip(recorded, derived, strict=False)):
            _differences(a, b, f"{path}[{i}]", out)
    elif recorded != derived or type(recorded) is not type(derived):
        out.append(
            Mismatch(path, f"recorded {json.dumps(recorded)}, re-derived {json.dumps(derived)}")
        )


def reproduce_predictions(
    trace_document: JSON, predictions_document: JSON, *, read: Trace | None = None
) -> list[Mismatch]:
    """Every number of a predictions document that the trace does not re-derive (`read`:
    the trace's records, when the caller has them already)."""

    try:
        trace = read_trace(trace_document) if read is None else read
    except (RecordError, ValueError) as error:
        return [Mismatch("trace", f"cannot score the trace: {error}")]
    first: list[Mismatch] | None = None
    for preferred in METRIC_VERSIONS:
        # a document made before metrics/2 re-derives under the version it was made with
        prefer = (preferred, *(v for v in METRIC_VERSIONS if v != preferred))
        found = _predictions_mismatches(trace, predictions_document, prefer)
        if not found:
            return []
        first = found if first is None else first
    return first or []


def _predictions_mismatches(
    trace: Trace, predictions_document: JSON, prefer: tuple[str, ...]
) -> list[Mismatch]:
    """The mismatches of a predictions document with the trace scored preferring the metric
    versions `prefer` (a freeze whose hash names another version keeps that one)."""
    try:
        derived = to_json(score_trace(trace, prefer))
        if isinstance(predictions_document, dict):  # an older document: its version's fields
            derived = as_version(derived, str(predictions_document.get("schema_version")))
            derived = without_absent_fields(derived, predictions_document)
    except (RecordError, ValueError) as error:
        return [Mismatch("trace", f"cannot score the trace: {error}")]
    found: list[Mismatch] = []
    _differences(predictions_document, derived, "$", found)
    return found
