"""Freeze receipts: a small document, made at the freeze, that a person keeps elsewhere.

A hash inside the trace proves nothing to a reader who suspects the trace. At every freeze
the page shows (and offers to download) a receipt, and the sweep CLI writes `receipt.json`
and prints its fingerprint, **before** any held-out trial runs. The receipt holds the run
id, the model identity, the task-set identity, the run's terms (the chain protocol), the
prompt templates' hashes, each frozen profile's hash, both predictors' frozen fits (the
product predictor's is the profile; the state-aware predictor's fit is written out), the
reference forecast of the skill scores (the profile's pooled success rate), the SHA-256 of
both predictors' predictions, the chain head (the hash of the last record at the freeze)
and the time; a sealed run's receipt is made after its held-out draw and carries the draw
seed (`pyapp.predict.sealing`). Its fingerprint is the first 80 bits of the SHA-256 of its
canonical JSON, in five groups of four hex digits: short enough to paste into a lab notebook, a
preregistration or a message.

`receipt_mismatches(trace, receipt)` (`python -m pyapp reproduce TRACE --receipt R`)
checks that the trace's freezes and everything before them are what the receipt names
(the record at the receipt's sequence hashes to its chain head; with an intact chain that
fixes every earlier record), that the profiles, fits, reference forecasts and predictions
are the trace's and re-derive to its hashes, and that every held-out trial of a frozen
condition comes after it.

What it proves, and what not: with the receipt (or its fingerprint) published somewhere
the trace's author cannot rewrite, changing the profile, the predictions or any record
before the freeze afterwards needs a SHA-256 collision. Without it, the chain still catches
edits and deletions, but a determined forger can recompute the whole chain. A receipt does
not prove when it was published (that is the place it was published), that the model
behind the trials is the one named (only its identity as reported), nor anything about
records after the freeze beyond their order (a later held-out trial can still be deleted
at the tail; the receipt lists the held-out tasks each frozen profile predicts, and
`reproduce` counts them against the trials present: `pyapp.verify.completeness`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from pyapp.predict import (
    freeze_profile,
    frozen_protocol,
    heldout_tasks,
    predictions_sha256,
    tasks_of_trace,
)
from pyapp.records import (
    JSON,
    Condition,
    FreezeRecord,
    Mismatch,
    RunTerms,
    StateAwareModel,
    TaskSetIdentity,
    Trace,
    from_json,
    identity_sha256,
    json_schema,
    links,
    sha256_of,
    task_set_identity,
)

SCHEMA_VERSION: Literal["receipt/1"] = "receipt/1"
SCHEMA_ID = "https://composition-lab.invalid/exports/receipt.schema.json"


@dataclass(frozen=True)
class ReceiptModel:
    """The model the profiles were measured on, as the trace reports it."""

    model_id: str
    """Model id."""
    revision: str
    """The revision asked for."""
    revision_served: str | None
    """The commit the hub said it served; null when unknown."""
    dtype: str
    """Weights' dtype."""
    backend: str | None
    """Backend actually used."""
    evidence: str
    """`model`, `fixture` or `synthetic` (only `model` is model evidence)."""
    identity_sha256: str
    """SHA-256 of the load identity (`pyapp.records.model.identity_sha256`)."""


@dataclass(frozen=True)
class ReceiptFreeze:
    """One frozen profile as the receipt names it."""

    condition: Condition
    """The condition frozen."""
    sequence: int
    """The freeze record's place in the chain."""
    profile_sha256: str
    """The frozen profile's hash (the product predictor's fit and its provenance)."""
    state_aware: StateAwareModel | None
    """The state-aware predictor's frozen fit; null for a freeze older than trace/3."""
    heldout_task_ids: tuple[str, ...]
    """The held-out tasks it predicts (each is observed once, after the receipt)."""
    predictions_sha256: str
    """SHA-256 of the canonical JSON of both predictors' predictions for those tasks
    (`{"product": [...], "state_aware": [...]}`)."""
    reference_probability: float | None = field(default=None, metadata={"optional_on_read": True})
    """The reference forecast frozen with the profile (its pooled success rate), against
    which every Brier skill score of this condition is measured; absent in receipts of
    freezes recorded before it was frozen."""


@dataclass(frozen=True)
class Receipt:
    """What was frozen, made before any held-out observation; kept elsewhere by a person."""

    schema_version: Literal["receipt/1"]
    """Version of this schema."""
    kind: Literal["composition-lab-receipt"]
    """Document kind."""
    run_id: str
    """The run (the trace's `run.run_id`)."""
    model: ReceiptModel
    """The model identity."""
    task_set: TaskSetIdentity
    """Seed, canonical task parameters and generator version."""
    prompt_templates: dict[str, str]
    """Template id → SHA-256 of the template file."""
    freezes: tuple[ReceiptFreeze, ...]
    """Every profile frozen so far."""
    chain_sequence: int
    """The sequence number of the last record at the freeze."""
    chain_head: str
    """SHA-256 of that record: it fixes every record before it."""
    at: str
    """When the last profile was frozen, UTC ISO 8601."""
    fingerprint: str
    """The first 80 bits of the SHA-256 of the canonical JSON of every other field, as
    five groups of four hex digits."""
    terms: RunTerms | None = field(default=None, metadata={"optional_on_read": True})
    """The run's terms (trace/4: the chain protocol the held-out tasks are routed under,
    and whether the run is sealed); absent in receipts of traces older than trace/4 (the
    design's chain protocol)."""
    draw_seed: str | None = field(default=None, metadata={"optional_on_read": True})
    """A sealed run's held-out draw seed: the receipt is made after the draw (its chain head
    is the draw record) and before any held-out trial; absent for an unsealed run."""


def fingerprint_of(receipt: Receipt) -> str:
    digest = sha256_of(replace(receipt, fingerprint=""))[:20]
    return "-".join(digest[i : i + 4] for i in range(0, 20, 4))


def make_receipt(trace: Trace) -> Receipt:
    """The receipt of a trace at its latest freeze (it must have one and a model)."""
    if trace.model is None or not trace.freezes:
        raise ValueError("a receipt needs a model session and a freeze")
    model = trace.model
    chained = [link for link in links(trace) if link.sequence is not None]
    last = chained[-1]
    receipt = Receipt(
        schema_version=SCHEMA_VERSION,
        kind="composition-lab-receipt",
        run_id=trace.run.run_id,
        model=ReceiptModel(
            model_id=model.model_id,
            revision=model.revision,
            revision_served=model.revision_served,
            dtype=model.dtype,
            backend=model.backend_actual,
            evidence=model.evidence,
            identity_sha256=identity_sha256(model),
        ),
        task_set=task_set_identity(trace.run.task_params, trace.run.generator_version),
        prompt_templates=trace.run.prompt_templates,
        freezes=tuple(_freeze_of(trace, record) for record in trace.freezes),
        chain_sequence=last.sequence or 0,
        chain_head=sha256_of(last.record),
        at=trace.freezes[-1].frozen_at,
        fingerprint="",
        terms=trace.run.terms,
        draw_seed=None if trace.draw is None else trace.draw.draw_seed,
    )
    return replace(receipt, fingerprint=fingerprint_of(receipt))


def _freeze_of(trace: Trace, record: FreezeRecord) -> ReceiptFreeze:
    protocol = frozen_protocol(trace, record)
    heldout = heldout_tasks(tasks_of_trace(trace), record.condition, protocol)
    return ReceiptFreeze(
        condition=record.condition,
        sequence=record.sequence,
        profile_sha256=record.profile_sha256,
        state_aware=record.state_aware,
        heldout_task_ids=tuple(t.id for t in heldout),
        predictions_sha256=predictions_sha256(trace, record),
        reference_probability=record.reference_probability,
    )


def read_receipt(document: JSON) -> Receipt:
    """A receipt from JSON (a `RecordError` names what does not fit)."""
    receipt: Receipt = from_json(Receipt, document)
    return receipt


def receipt_lines(receipt: Receipt) -> list[str]:
    """What the command line prints of a receipt (the page's receipt view shows the same):
    its fingerprint, then per frozen profile its hashes and reference forecast."""
    lines = [f"receipt {receipt.fingerprint}: run {receipt.run_id}, frozen at {receipt.at}"]
    if receipt.terms is not None:
        lines.append(f"  chain protocol {receipt.terms.chain_protocol}")
        sealed = receipt.terms.sealed
        lines.append(
            f"  sealed: held-out tasks drawn after the freeze from seed {receipt.draw_seed}"
            if sealed
            else "  unsealed: held-out tasks follow from the task seed"
        )
    for f in receipt.freezes:
        parts = [f"profile {f.profile_sha256[:12]}…", f"predictions {f.predictions_sha256[:12]}…"]
        if f.state_aware is not None:
            parts.append(f"state-aware fit {f.state_aware.sha256[:12]}…")
        if f.reference_probability is not None:
            parts.append(f"reference forecast {f.reference_probability:.3f} (pooled profile rate)")
        lines.append(f"  {f.condition}: " + ", ".join(parts))
    return lines


def receipt_mismatches(trace: Trace, receipt: Receipt) -> list[Mismatch]:
    """Every way the trace departs from the receipt (see the module docstring)."""
    found: list[Mismatch] = []

    def differs(where: str, message: str) -> None:
        found.append(Mismatch(f"receipt {where}", message))

    if fingerprint_of(receipt) != receipt.fingerprint:
        differs("$.fingerprint", "is not the hash of the receipt (the receipt was edited)")
    if receipt.run_id != trace.run.run_id:
        differs("$.run_id", f"names run {receipt.run_id}, the trace is run {trace.run.run_id}")
    if trace.model is None or receipt.model.identity_sha256 != identity_sha256(trace.model):
        differs("$.model", "is not the trace's model identity")
    identity = task_set_identity(trace.run.task_params, trace.run.generator_version)
    if receipt.task_set != identity:
        differs("$.task_set", "is not the trace's task set")
    if receipt.prompt_templates != trace.run.prompt_templates:
        differs("$.prompt_templates", "are not the trace's prompt templates")
    if receipt.terms != trace.run.terms:
        differs("$.terms", "are not the trace's run terms (the chain protocol, sealed)")
    drawn = None if trace.draw is None else trace.draw.draw_seed
    if receipt.draw_seed != drawn:
        differs(
            "$.draw_seed",
            f"is {receipt.draw_seed!r}, the trace's held-out draw seed is {drawn!r}",
        )
    by_sequence = {link.sequence: link for link in links(trace) if link.sequence is not None}
    anchor = by_sequence.get(receipt.chain_sequence)
    if anchor is None or sha256_of(anchor.record) != receipt.chain_head:
        differs(
            "$.chain_head",
            f"the trace's record at sequence {receipt.chain_sequence} is not the one the "
            "receipt names: the trace was changed at or before the freeze",
        )
    for i, frozen in enumerate(receipt.freezes):
        _check_freeze(trace, frozen, f"$.freezes[{i}]", differs)
    return found


def _check_freeze(
    trace: Trace, frozen: ReceiptFreeze, where: str, differs: Callable[[str, str], None]
) -> None:
    wanted = (frozen.condition, frozen.sequence)
    record = next((f for f in trace.freezes if (f.condition, f.sequence) == wanted), None)
    if record is None:
        differs(where, f"the trace has no freeze of {frozen.condition} at {frozen.sequence}")
        return
    if record.state_aware != frozen.state_aware:
        differs(f"{where}.state_aware", "is not the trace's frozen state-aware fit")
    if record.reference_probability != frozen.reference_probability:
        differs(f"{where}.reference_probability", "is not the trace's frozen reference forecast")
    try:
        if record.profile_sha256 != frozen.profile_sha256:
            differs(f"{where}.profile_sha256", "is not the trace's frozen profile")
        elif freeze_profile(trace, record).sha256 != frozen.profile_sha256:
            differs(f"{where}.profile_sha256", "the trials no longer give this profile")
        derived = predictions_sha256(trace, record)
    except (KeyError, ValueError, OverflowError, ZeroDivisionError) as error:
        differs(f"{where}.predictions_sha256", f"cannot be re-derived: {error}")
        return
    if derived != frozen.predictions_sha256:
        differs(f"{where}.predictions_sha256", "both predictors' predictions re-derive otherwise")
    heldout = set(frozen.heldout_task_ids)
    for i, trial in enumerate(trace.trials):
        if (
            trial.condition == frozen.condition
            and trial.task_id in heldout
            and trial.sequence <= frozen.sequence
        ):
            differs(where, f"held-out trial $.trials[{i}] ({trial.trial_id}) is not after it")


def receipt_schema() -> dict[str, JSON]:
    return json_schema(Receipt, schema_id=SCHEMA_ID, title="Composition Lab freeze receipt")
