"""What each kind of evidence is called, written once, and what a run is evidence of.

`EVIDENCE_LABELS` is the one table of labels: the page (exported to `site/lab_protocol.js` by
`python -m pyapp schema`), the report's banner and plots, and the CLI name a run's evidence
with these words. Only `model` is model evidence; every other label says "not model evidence".

`derived_evidence` re-derives the label from everything a trace records about the model and
its environment, whatever its `evidence` field claims: a synthetic specification, the
`synthetic` source or the synthetic virtual clock (`pyapp.records.clock.VIRTUAL_CLOCK`) make
it `synthetic`; a `scripted` or `bundled-fixture` source, or a `config.json` whose SHA-256 is
a test fixture's (the stand-ins served from a hub or folder), `fixture`; the locally trained
reference subjects (`pyapp.records.subject.SUBJECTS`: the `bundled-subject` source or one of
their config.json digests) `reference-subject`, each under its own label (`evidence_label`).
Only a model none of them names keeps its own label (`model`). `run_evidence` is the label a
run is shown under (the derived one; `control` without a model), and `evidence_mismatches` is
what `reproduce` and `score` refuse: a recorded label that is not the derived one.
"""

from __future__ import annotations

from pyapp.records.base import Mismatch
from pyapp.records.clock import VIRTUAL_CLOCK, ClockInfo
from pyapp.records.model import TEST_FIXTURE_CONFIGS, ModelProvenance
from pyapp.records.subject import (
    SUBJECT_LABEL,
    SUBJECT_SOURCE,
    subject_by_config,
    subject_by_model_id,
    subject_of,
    trained_subjects,
)
from pyapp.records.trial import Evidence

EVIDENCE_LABELS: dict[Evidence, str] = {
    "control": "supplied-program control — not model evidence",
    "fixture": "test fixture — not model evidence",
    "synthetic": "synthetic validation model — not model evidence",
    "model": "model evidence",
    "reference-subject": SUBJECT_LABEL,
}
"""The label shown beside a run's numbers, per evidence kind (the report's banner is it in
capitals)."""

EVIDENCE_ROW_TAGS: dict[Evidence, str] = {
    **EVIDENCE_LABELS,
    "model": "",
    "reference-subject": "reference subject — evidence about it only",
}
"""What each row of a run's results table carries beside its condition: the label itself,
but the reference subject's long label shortened (the caption above the table carries it
whole)."""

EVIDENCE_MEANINGS: dict[Evidence, str] = {
    "control": "a control of the interpreter and the verifier, not a measurement of a model",
    "fixture": "a pipeline check with a test fixture, not a measurement of a model",
    "synthetic": (
        "a validation against a synthetic model of known error structure: it checks the "
        "pipeline and the predictor, not a language model"
    ),
    "model": "a measurement of the loaded model",
    "reference-subject": (
        "a measurement of this locally trained reference subject (evidence about it, never "
        "about a pretrained LLM)"
    ),
}
"""What the numbers of a run of each evidence kind are (the page and the report say it beside
the label; a synthetic run is a validation, not "a pipeline check")."""

FIXTURE_SOURCES = ("bundled-fixture", "scripted")
"""Model sources that are test fixtures whatever their label says."""


def evidence_reason(model: ModelProvenance, clock: ClockInfo | None = None) -> tuple[Evidence, str]:
    """The evidence everything recorded about the model (and the run's clock, when given)
    gives, and what gave it (module docstring)."""
    if model.source == "synthetic":
        return "synthetic", "source 'synthetic' is a synthetic model"
    if model.synthetic is not None:
        return "synthetic", "the trace records a synthetic model's specification"
    if model.source in FIXTURE_SOURCES:
        return "fixture", f"source {model.source!r} is a fixture"
    if model.config_sha256 in TEST_FIXTURE_CONFIGS:
        return "fixture", f"config.json {model.config_sha256[:12]}… is a test fixture's"
    if clock is not None and clock.name == VIRTUAL_CLOCK.name:
        return "synthetic", "its timings are the synthetic virtual clock's"
    if is_subject(model):
        return "reference-subject", (
            f"the model is the locally trained reference subject (source {model.source!r}, "
            f"config.json {str(model.config_sha256)[:12]}…)"
        )
    return model.evidence, "nothing recorded about the model names another kind"


def derived_evidence(model: ModelProvenance, clock: ClockInfo | None = None) -> Evidence:
    """The evidence a trace's records give its model (`evidence_reason`)."""
    return evidence_reason(model, clock)[0]


def run_evidence(model: ModelProvenance | None, clock: ClockInfo | None = None) -> Evidence:
    """The evidence a run is shown under (module docstring): never `model` for a fixture or a
    synthetic model, `control` without a model."""
    if model is None:
        return "control"
    return derived_evidence(model, clock)


def evidence_mismatches(model: ModelProvenance, clock: ClockInfo | None = None) -> list[Mismatch]:
    """A recorded label that is not the one the trace's records give (`reproduce` reports
    it; `score` refuses the trace), and the reference subject's own checks."""
    derived, reason = evidence_reason(model, clock)
    found = []
    if model.evidence != derived:
        found.append(Mismatch("$.model.evidence", f"{reason}, never {model.evidence!r} evidence"))
    if derived == "reference-subject" or model.evidence == "reference-subject":
        found += [m for m in subject_mismatches(model) if m not in found]
    return found


def is_subject(model: ModelProvenance) -> bool:
    """A locally trained reference subject: its source or one of their config.json digests."""
    return model.source == SUBJECT_SOURCE or subject_by_config(model.config_sha256) is not None


def evidence_label(evidence: str, model_id: str | None, config_sha256: str | None) -> str:
    """The label of a run's evidence: for `reference-subject`, the label of the subject the
    model is (`pyapp.records.subject.subject_of`); otherwise the kind's."""
    if evidence == "reference-subject" and model_id is not None:
        return subject_of(model_id, config_sha256).label
    return EVIDENCE_LABELS[evidence]  # type: ignore[index]


def subject_mismatches(model: ModelProvenance) -> list[Mismatch]:
    """What `reproduce` refuses about a reference subject's label: its config with another
    evidence kind, the kind (or its source) with a config that is no subject's, or a recipe
    or bundled model id that is not that subject's (so neither subject passes as the
    other)."""
    found = []
    if is_subject(model) and model.evidence != "reference-subject":
        found.append(
            Mismatch(
                "$.model.evidence",
                f"the model is the locally trained reference subject (source {model.source!r}, "
                f"config.json {str(model.config_sha256)[:12]}…), never {model.evidence!r} evidence",
            )
        )
    if model.evidence != "reference-subject":
        return found
    subject = subject_by_config(model.config_sha256)
    if subject is None:
        digests = " or ".join(
            f"{s.config_sha256[:12]}…" for s in trained_subjects() if s.config_sha256
        )
        found.append(
            Mismatch(
                "$.model.evidence",
                f"'reference-subject' names the subject whose config.json is "
                f"{digests}, not {str(model.config_sha256)[:12]}…",
            )
        )
        subject = subject_of(model.model_id, None)
    if model.subject_recipe != subject.recipe:
        found.append(
            Mismatch(
                "$.model.subject_recipe",
                f"is not the recipe of the reference subject {subject.model_id} "
                "(pyapp.records.subject.SUBJECTS)",
            )
        )
    named = subject_by_model_id(model.model_id)
    if model.source == SUBJECT_SOURCE and named is not subject:
        found.append(
            Mismatch(
                "$.model.model_id",
                f"{model.model_id!r} is not the bundled reference subject whose config.json "
                f"this is ({subject.model_id})",
            )
        )
    return found
