"""One re-derivation of a run, whoever asks: `python -m pyapp reproduce`, the page's Open a
trace (`pyapp.browser.viewer.open_run`), `report` and the sweep's end-of-run checks.

`audit` runs, once, on one trace (and a predictions document, a receipt, a re-execution when
given): `reproduce` (every record re-derived, the never-scored rules, the evidence label),
the trace as re-derived (`rederive`: a contradicted verdict is corrected, never scored), the
predictions derived from it (`score_trace`) and a predictions document compared with them,
the receipt's checks, the completeness count (`pyapp.verify.completeness`), and the
re-execution of a synthetic trace from its own specification (`pyapp.synthetic.rerun`;
another re-run when the caller brings one: `reproduce --rerun`). Every caller lists the same
mismatches (`Audit.mismatches`) and says the same verdict (`verdict_lines`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyapp.predict import PredictionsDocument, score_trace
from pyapp.records import CHAINED_VERSIONS, JSON, Mismatch, Trace, read_trace
from pyapp.synthetic import synthetic_rerun
from pyapp.verify import (
    Correction,
    Receipt,
    Rerun,
    incomplete,
    limitations,
    receipt_mismatches,
    rederive,
    reproduce_predictions,
)
from pyapp.verify.reproduce import reproduce

Rerunner = Callable[[Trace], "Rerun | str | None"]
"""A re-execution of a trace: what it found, a line saying why it cannot, or None when it
does not apply (`pyapp.synthetic.rerun.synthetic_rerun` is the default)."""


@dataclass(frozen=True)
class Audit:
    """Everything one re-derivation found."""

    notes: tuple[str, ...]
    """Checks an older document cannot support (`reproduce`'s `limitations`)."""
    trace_mismatches: tuple[Mismatch, ...]
    """The trace against its seed and raw observations (`reproduce`)."""
    rerun: Rerun | None
    """The re-execution, when one ran."""
    rerun_note: str | None
    """Why the trace could not be re-executed, when it was asked or should have been (a
    note: what needs the model is said, the files are re-derived all the same)."""
    receipt_mismatches: tuple[Mismatch, ...] | None
    """The trace against a receipt; null without one."""
    predictions_mismatches: tuple[Mismatch, ...] | None
    """A predictions document against the predictions of the trace as re-derived; null
    without one, or when it is of another run (`predictions_other_run`)."""
    predictions_other_run: str | None
    """One line when the predictions document is of another run than the trace."""
    incomplete: tuple[str, ...]
    """How the run is not complete (`pyapp.verify.completeness`); empty when it is."""
    corrections: tuple[Correction, ...]
    """Each recorded trial field re-derivation contradicts (never scored)."""
    rederived_json: Any
    """The trace with every derivable trial field as re-derived (what is drawn and scored)."""
    derived: PredictionsDocument | None
    """The predictions of the trace as re-derived; null without a frozen profile or when
    they cannot be derived."""
    derive_error: str | None
    """Why they cannot be derived, when a frozen profile exists."""

    @property
    def mismatches(self) -> tuple[Mismatch, ...]:
        """Every mismatch, in the order every caller lists them: the trace, the re-execution,
        the receipt, the predictions document."""
        rerun = self.rerun.mismatches if self.rerun is not None else ()
        return (
            self.trace_mismatches
            + rerun
            + (self.receipt_mismatches or ())
            + (self.predictions_mismatches or ())
        )

    @property
    def rederives(self) -> bool:
        """Every record re-derives (and the predictions can be derived). A re-execution that
        could not run (`rerun_note`) is said, not failed: the files are checked all the same."""
        return not self.mismatches and self.derive_error is None

    @property
    def ok(self) -> bool:
        """It re-derives and the run is complete."""
        return self.rederives and not self.incomplete


def audit(
    document: JSON,
    *,
    read: Trace | None = None,
    predictions_json: Any | None = None,
    receipt: Receipt | None = None,
    rerunner: Rerunner | None = synthetic_rerun,
) -> Audit:
    """The one re-derivation of a trace document (module docstring). `read`: its records
    when the caller has them (a report holds the document without its trials).
    `RecordError` when it is not a trace."""
    trace = read_trace(document) if read is None else read
    changed: dict[int, dict[str, JSON]] = {}
    found = reproduce(document, read=trace, changed=changed)
    current = isinstance(document, dict) and document.get("schema_version") in CHAINED_VERSIONS
    # a trace/3 or trace/4 document: each trial was re-derived once, by `reproduce`
    rederived_json, corrections = rederive(
        document, read=trace, changed=changed if current else None
    )
    rederived = read_trace(rederived_json) if corrections else trace
    derived, error = None, None
    if trace.model is not None and trace.freezes:
        try:
            derived = score_trace(rederived)
        except ValueError as failure:
            error = str(failure)
    other, compared = None, None
    if predictions_json is not None:
        other = other_run(trace, predictions_json)
        if other is None:
            compared = tuple(
                reproduce_predictions(rederived_json, predictions_json, read=rederived)
            )
    ran = rerunner(trace) if rerunner is not None else None
    listed: dict[str, tuple[str, ...]] | None = (
        {f.condition: f.heldout_task_ids for f in receipt.freezes} if receipt else None
    )
    return Audit(
        notes=tuple(limitations(document)),
        trace_mismatches=tuple(found),
        rerun=ran if isinstance(ran, Rerun) else None,
        rerun_note=ran if isinstance(ran, str) else None,
        receipt_mismatches=None if receipt is None else tuple(receipt_mismatches(trace, receipt)),
        predictions_mismatches=compared,
        predictions_other_run=other,
        incomplete=tuple(incomplete(trace, listed)),
        corrections=tuple(corrections),
        rederived_json=rederived_json,
        derived=derived,
        derive_error=error,
    )


def other_run(trace: Trace, predictions_json: Any) -> str | None:
    """One plain line when a predictions document is of another run than the trace (run
    ids or models differ): its numbers are then not compared one by one."""
    if not isinstance(predictions_json, dict):
        return None
    run_id = predictions_json.get("trace_run_id")
    models = set()
    for condition in predictions_json.get("conditions") or ():
        frozen = condition.get("frozen") if isinstance(condition, dict) else None
        if isinstance(frozen, dict):
            models.add(f"{frozen.get('model_id')} @ {frozen.get('model_revision')}")
    model = trace.model
    ours = f"{model.model_id} @ {model.revision}" if model is not None else "no model"
    differ = []
    if run_id != trace.run.run_id:
        differ.append(f"run ids differ (trace {trace.run.run_id}, predictions {run_id})")
    if models and models != {ours}:
        differ.append(f"models differ (trace {ours}, predictions {', '.join(sorted(models))})")
    if not differ:
        return None
    return "the predictions document is of another run: " + "; ".join(differ)


def sealed_line(trace: Trace, mismatched: bool) -> str | None:
    """What a sealed run's verdict says of its draw (None for an unsealed run: its held-out
    tasks follow from the task seed, as always)."""
    if trace.run.terms is None or not trace.run.terms.sealed:
        return None
    if trace.draw is None:
        return "sealed: the held-out tasks are not drawn yet (no profile is complete)"
    if mismatched:
        return f"sealed: held-out draw seed {trace.draw.draw_seed[:16]}… (see the mismatches)"
    study = trace.draw.study_seal
    if study is not None:
        cells = ", ".join(m.cell for m in study.members)
        return (
            f"sealed under a study seal: the held-out tasks were drawn after every freeze, "
            f"from seed {trace.draw.draw_seed[:16]}…, which the study's seal of "
            f"{len(study.members)} runs ({cells}) gives; it lists this run's own seal, "
            "re-derived from its freeze records (the other runs' own seals are checked "
            "against their traces by `study`)"
        )
    return (
        f"sealed: the held-out tasks were drawn after every freeze, from seed "
        f"{trace.draw.draw_seed[:16]}…, which the freeze records seal (re-derived)"
    )


def verdict_lines(result: Audit, trace: Trace) -> list[str]:
    """The verdict in lines, as the command line prints it and the page shows it: the
    trace, the re-execution, the corrections, the predictions, then completeness."""
    lines = []
    if result.trace_mismatches:
        lines.append(f"{len(result.trace_mismatches)} mismatch(es): the trace does not re-derive")
    else:
        lines.append(
            f"ok: {len(trace.tasks)} tasks and {len(trace.trials)} trials re-derived exactly"
        )
    sealed = sealed_line(trace, bool(result.trace_mismatches))
    if sealed is not None:
        lines.append(sealed)
    if result.rerun is not None:
        lines.append(result.rerun.line())
    if result.rerun_note is not None:
        lines.append(f"note: {result.rerun_note}")
    if result.corrections:
        lines.append(
            f"{len(result.corrections)} recorded trial field(s) contradicted: shown and scored "
            "as re-derived"
        )
    if result.derive_error:
        lines.append(f"the predictions cannot be derived: {result.derive_error}")
    if result.predictions_other_run is not None:
        lines.append(result.predictions_other_run)
    elif result.predictions_mismatches:
        lines.append(
            f"predictions: {len(result.predictions_mismatches)} mismatch(es) against the "
            "predictions of the trace as re-derived"
        )
    elif result.predictions_mismatches is not None:
        lines.append(
            "ok: every number in the predictions document re-derived exactly from the trace"
            + (" as re-derived" if result.corrections else "")
        )
    lines += [f"INCOMPLETE: {line}" for line in result.incomplete]
    return lines
