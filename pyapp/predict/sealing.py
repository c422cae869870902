"""Sealed held-out tasks: the held-out draw seed a run's freezes seal, the draw's checks,
and what a frozen profile of a sealed run says after the draw.

A **sealed** run (`run.terms.sealed`, generator `tasks/2`) measures its profile tasks as
an unsealed one does (drawn from the task seed, byte for byte `tasks/1`'s), freezes every
profile, and only then draws its held-out tasks: from their own SplitMix64 stream, seeded
by the **held-out draw seed** (`heldout_draw_seed`: a SHA-256 of the task seed, the model
identity and everything every frozen profile predicts with). The draw is one record of the
trace (`Trace.draw`, `HeldoutDraw`, in the hash chain after the freezes); the predictions
and the freeze receipt are made after it and carry its seed. The checks of a freeze that
need the held-out tasks' contents — observed in an earlier session (the ledger's
`previously_observed`, matched by content) and shown in a journal prompt — are the draw's
(`draw_checks`), made after it, per frozen condition.

What it proves: the held-out tasks did not exist until every profile was fixed, so a
profile cannot be chosen after seeing them; a forger who wants a better-looking result has
to try profiles, and each try means running the model on the profile tasks again (minutes
for the subject, nothing for a rung small enough to enumerate): sealing raises a forger's
cost, it does not make forgery impossible. It says nothing about when the files were
published (a receipt kept elsewhere does) or which model produced them (re-execution
does). `reproduce` re-derives the seed from the freeze records and refuses a trace whose
draw, or whose held-out tasks, are not the ones its freezes seal.

A **study-level seal** (`StudySeal`, a plan's `sealed = "study"`: `pyapp.matrix.seals`)
gives every run of one task seed in a study the same draw seed, `study_draw_seed`, made from
each run's own seal once all are frozen; the draw records it, and `draw_mismatches` refuses a
seal that does not list the run's own (the other members are checked against their own
traces by `study`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from pyapp.conditions import MODEL_CONDITIONS
from pyapp.predict.exploratory import journal_leaks, previously_seen
from pyapp.predict.freeze import frozen_protocol
from pyapp.predict.predictions import FrozenProfile
from pyapp.predict.profile import build_profile, heldout_tasks, tasks_of_trace
from pyapp.records import (
    DrawCheck,
    FreezeRecord,
    HeldoutDraw,
    SealMember,
    StudySeal,
    Trace,
    is_sealed,
    sha256_of,
)
from pyapp.tasks import sealed_tasks

DRAW_DERIVATION = "heldout-draw/1"
"""Version of `heldout_draw_seed` (hashed with it: another derivation is another seed)."""
STUDY_DERIVATION = "study-draw/1"
"""Version of `study_draw_seed`."""


def heldout_draw_seed(trace: Trace, freezes: Sequence[FreezeRecord] | None = None) -> str:
    """The held-out draw seed of a sealed run: SHA-256 (hex) of the chain's canonical JSON
    (`pyapp.records.chain.sha256_of`) of exactly these fields, and nothing else:

    - `derivation`: `heldout-draw/1` (`DRAW_DERIVATION`);
    - `seed`: the task seed (`run.task_params.seed`);
    - `model`: the model identity — `model_id`, `revision`, `dtype` and
      `chat_template_options` as the trace's model records them;
    - `profiles`: per freeze of a model condition (`freezes`, default the trace's), in the
      order frozen:
      - `condition`;
      - `profile`: the frozen profile re-derived from the trials before the freeze
        (`build_profile`: per op its trials, successes, rate and interval, mean cost and
        tokens, distinct states; the encoding table; the trial ids; the evidence label) —
        the product predictor's fit;
      - `state_aware`: the state-aware predictor's fit as frozen;
      - `reference_probability`: the reference forecast as frozen;
      - `task_set`: the task set as frozen (seed, canonical parameters, generator version);
      - `terms`: the run's terms as frozen (chain protocol, sealed).

    Left out on purpose: every time (`frozen_at`, the run's `created_at`, the trials'
    clocks), the backend and everything else of the load (threads, runtime versions, the
    revision served), the run id and the chain head — so that identical profiles (a browser
    and a native run of one model whose measurements agree) seal identically. Measured
    costs are part of a profile, so two real runs seal alike only when their costs agree
    too."""
    if trace.model is None:
        raise ValueError("a sealed run needs a model session")
    model = trace.model
    records = trace.freezes if freezes is None else freezes
    by_id = {t.id: t for t in tasks_of_trace(trace)}
    profiles = []
    for record in records:
        if record.condition not in MODEL_CONDITIONS:
            continue
        before = trace.trials[: record.after_trials]
        profiles.append(
            {
                "condition": record.condition,
                "profile": build_profile(before, by_id, record.condition, model.evidence),
                "state_aware": record.state_aware,
                "reference_probability": record.reference_probability,
                "task_set": record.task_set,
                "terms": record.terms,
            }
        )
    return sha256_of(
        {
            "derivation": DRAW_DERIVATION,
            "seed": trace.run.task_params.seed,
            "model": {
                "model_id": model.model_id,
                "revision": model.revision,
                "dtype": model.dtype,
                "chat_template_options": model.chat_template_options,
            },
            "profiles": profiles,
        }
    )


def study_draw_seed(seed: int, members: Sequence[SealMember]) -> str:
    """The held-out draw seed a study-level seal gives every run it combines: SHA-256 (hex)
    of the canonical JSON of exactly `derivation` (`study-draw/1`), `seed` (the task seed
    they share) and `members` (each run's cell and its own seal, `heldout_draw_seed`, in
    the order given: by cell). Each member's own seal covers its task seed, model identity
    and every frozen profile, so the shared held-out tasks do not exist until every profile
    of that seed in the study is fixed, and changing any one of them changes them all."""
    return sha256_of(
        {
            "derivation": STUDY_DERIVATION,
            "seed": seed,
            "members": [{"cell": m.cell, "seal": m.seal} for m in members],
        }
    )


def study_seal_of(members: Sequence[SealMember]) -> StudySeal:
    """The study-level seal of `members` (ordered by cell; one cell once)."""
    ordered = tuple(sorted(members, key=lambda m: m.cell))
    cells = [m.cell for m in ordered]
    if len(set(cells)) != len(cells):
        raise ValueError(f"a cell twice in one study seal: {cells}")
    return StudySeal(derivation=STUDY_DERIVATION, members=ordered)


def study_seal_problem(trace: Trace, seal: StudySeal, own: str) -> str | None:
    """Why `seal` cannot be `trace`'s (whose own seal is `own`), or None."""
    if seal.derivation != STUDY_DERIVATION:
        return f"derivation {seal.derivation!r} is not {STUDY_DERIVATION!r}"
    if [m.cell for m in seal.members] != sorted({m.cell for m in seal.members}):
        return "its members are not ordered by cell, each once"
    if own not in {m.seal for m in seal.members}:
        return (
            f"this run's own seal ({own[:16]}…, from its freeze records) is not among its "
            f"{len(seal.members)} members: the study sealed other profiles"
        )
    return None


def draw_check(
    trace: Trace, record: FreezeRecord, previously_observed: Sequence[str], before_sequence: int
) -> DrawCheck:
    """The checks of `record`'s condition that need the drawn tasks (`trace` holds the
    draw): `previously_observed` (drawn ids the ledger named, kept as given) and the
    journal prompts before the draw (`before_sequence`) that showed a drawn held-out task."""
    heldout = heldout_tasks(tasks_of_trace(trace), record.condition, frozen_protocol(trace, record))
    ids = {t.id for t in heldout}
    reasons = []
    earlier = sorted(set(previously_observed) & ids)
    if earlier:
        reasons.append(f"observed in an earlier session: {', '.join(earlier)}")
    leaked = journal_leaks(trace.journal, heldout, before_sequence)
    if leaked:
        shown = ", ".join(f"{i} (journal #{n})" for i, n in sorted(leaked.items()))
        reasons.append(f"shown in a journal prompt before the draw: {shown}")
    return DrawCheck(
        condition=record.condition,
        previously_observed=tuple(sorted(previously_observed)),
        exploratory_reason="; ".join(reasons) or None,
    )


def make_draw(
    trace: Trace,
    ledger_keys: Mapping[str, Sequence[str]],
    *,
    sequence: int,
    prev_sha256: str,
    drawn_at: str,
    study_seal: StudySeal | None = None,
) -> HeldoutDraw:
    """The held-out draw of a sealed run whose every profile is frozen in `trace`: its seed,
    and per frozen condition the checks that need the drawn tasks (`ledger_keys`: the
    ledger's content keys per condition for this model, matched against the drawn tasks by
    content only — an id names no content in a sealed run). With `study_seal` the seed is
    the study's (`study_draw_seed`), which must list this run's own seal (ValueError)."""
    seed = heldout_draw_seed(trace)
    if study_seal is not None:
        problem = study_seal_problem(trace, study_seal, seed)
        if problem is not None:
            raise ValueError(f"the study seal cannot be this run's: {problem}")
        seed = study_draw_seed(trace.run.task_params.seed, study_seal.members)
    draw = HeldoutDraw(
        sequence=sequence,
        prev_sha256=prev_sha256,
        draw_seed=seed,
        generator_version="tasks/2",
        drawn_at=drawn_at,
        checks=(),
        study_seal=study_seal,
    )
    drawn = replace(trace, draw=draw)
    tasks = sealed_tasks(trace.run.task_params, seed)
    checks = []
    for record in trace.freezes:
        if record.condition not in MODEL_CONDITIONS:
            continue
        protocol = frozen_protocol(drawn, record)
        ids = [t.id for t in heldout_tasks(tasks, record.condition, protocol)]
        keys = [k for k in ledger_keys.get(record.condition, ()) if len(k) == 64]
        seen = previously_seen(keys, tasks, ids)
        checks.append(draw_check(drawn, record, seen, sequence))
    return replace(draw, checks=tuple(checks))


def draw_mismatches(trace: Trace) -> list[tuple[str, str]]:
    """(path, message) for every way a sealed trace's draw is not the one its freezes seal:
    no draw although held-out trials were made, a draw before a freeze, a seed other than
    the one re-derived from the freeze records, a generator other than `tasks/2`, checks
    that the drawn tasks do not give. Empty for an unsealed trace without a draw."""
    found: list[tuple[str, str]] = []
    draw = trace.draw
    if not is_sealed(trace.run.terms):
        if draw is not None:
            found.append(("$.draw", "an unsealed run has no held-out draw"))
        return found
    if trace.run.generator_version != "tasks/2":
        found.append(
            (
                "$.run.generator_version",
                f"a sealed run's tasks are generated by 'tasks/2', not "
                f"{trace.run.generator_version!r}",
            )
        )
    if draw is None:
        return found
    if draw.generator_version != "tasks/2":
        found.append(("$.draw.generator_version", f"{draw.generator_version!r} is not 'tasks/2'"))
    late = [f.condition for f in trace.freezes if f.sequence > draw.sequence]
    if late:
        found.append(("$.draw", f"drawn before a freeze of {', '.join(late)}"))
    try:
        sealed = heldout_draw_seed(trace, [f for f in trace.freezes if f.sequence < draw.sequence])
    except (KeyError, ValueError, OverflowError, ZeroDivisionError) as error:
        found.append(("$.draw.draw_seed", f"cannot be re-derived: {error}"))
        return found
    if draw.study_seal is not None:
        problem = study_seal_problem(trace, draw.study_seal, sealed)
        if problem is not None:
            found.append(("$.draw.study_seal", problem))
            return found
        sealed = study_draw_seed(trace.run.task_params.seed, draw.study_seal.members)
    if sealed != draw.draw_seed:
        found.append(
            (
                "$.draw.draw_seed",
                f"the held-out tasks are not the ones this run's freezes seal: recorded draw "
                f"seed {draw.draw_seed[:16]}…, the freeze records give {sealed[:16]}… (a "
                "profile changed after the draw, or tasks drawn for another profile)",
            )
        )
        return found
    frozen = [f for f in trace.freezes if f.condition in MODEL_CONDITIONS]
    if [c.condition for c in draw.checks] != [f.condition for f in frozen]:
        found.append(("$.draw.checks", "do not list the frozen conditions in freeze order"))
        return found
    for i, (check, record) in enumerate(zip(draw.checks, frozen, strict=True)):
        derived = draw_check(trace, record, check.previously_observed, draw.sequence)
        if derived.exploratory_reason != check.exploratory_reason:
            found.append(
                (
                    f"$.draw.checks[{i}].exploratory_reason",
                    f"recorded {check.exploratory_reason!r}, the drawn tasks give "
                    f"{derived.exploratory_reason!r}",
                )
            )
    return found


def with_draw(frozen: FrozenProfile, trace: Trace) -> FrozenProfile:
    """A sealed run's frozen profile as the predictions show it after the draw: the draw
    seed, and exploratory when the freeze or the draw's checks say so (the profile hash is
    the freeze's, made before the draw)."""
    draw = trace.draw
    if draw is None:
        return frozen
    check = next((c for c in draw.checks if c.condition == frozen.profile.condition), None)
    reasons = [r for r in (frozen.exploratory_reason, check and check.exploratory_reason) if r]
    return replace(
        frozen,
        exploratory=bool(reasons),
        exploratory_reason="; ".join(reasons) or None,
        draw_seed=draw.draw_seed,
    )
