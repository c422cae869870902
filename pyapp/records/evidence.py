"""What each kind of evidence is called, written once, and what a run is evidence of.

`EVIDENCE_LABELS` is the one table of labels: the page (exported to `site/lab_protocol.js` by
`python -m pyapp schema`), the report's banner and plots, and the CLI name a run's evidence
with these words. Only `model` is model evidence; every other label says "not model evidence".

`run_evidence` is the label a run is shown under. It is the trace's own `model.evidence`,
except that a fixture is a fixture whatever its label claims: a `scripted` or
`bundled-fixture` source, or a `config.json` whose SHA-256 is a test fixture's (the stand-ins
served from a hub or folder), is shown as `fixture`, and a `synthetic` source as `synthetic`
(`reproduce` reports such a relabelled trace as a mismatch as well). The locally trained
reference subject (`pyapp.records.subject`: the `bundled-subject` source or its config.json
digest) is shown as `reference-subject`, whatever its trace claims. A run without a model is
the supplied-program `control`.
"""

from __future__ import annotations

from pyapp.records.base import Mismatch
from pyapp.records.model import TEST_FIXTURE_CONFIGS, ModelProvenance
from pyapp.records.subject import (
    SUBJECT_CONFIG_SHA256,
    SUBJECT_LABEL,
    SUBJECT_RECIPE,
    SUBJECT_SOURCE,
)
from pyapp.records.trace import Evidence

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


def run_evidence(model: ModelProvenance | None) -> Evidence:
    """The evidence a run is shown under (module docstring): never `model` for a fixture or a
    synthetic model, `control` without a model."""
    if model is None:
        return "control"
    if model.source in FIXTURE_SOURCES or model.config_sha256 in TEST_FIXTURE_CONFIGS:
        return "fixture"
    if model.source == "synthetic":
        return "synthetic"
    if is_subject(model):
        return "reference-subject"
    return model.evidence


def is_subject(model: ModelProvenance) -> bool:
    """The locally trained reference subject: its source or its config.json digest."""
    return model.source == SUBJECT_SOURCE or model.config_sha256 == SUBJECT_CONFIG_SHA256


def subject_mismatches(model: ModelProvenance) -> list[Mismatch]:
    """What `reproduce` refuses about the reference subject's label: its config with another
    evidence kind, the kind (or its source) with another config, or a recipe that is not
    the subject's."""
    found = []
    if is_subject(model) and model.evidence != "reference-subject":
        found.append(
            Mismatch(
                "$.model.evidence",
                f"the model is the locally trained reference subject (source {model.source!r}, "
                f"config.json {str(model.config_sha256)[:12]}…), never {model.evidence!r} evidence",
            )
        )
    if model.evidence == "reference-subject" and model.config_sha256 != SUBJECT_CONFIG_SHA256:
        found.append(
            Mismatch(
                "$.model.evidence",
                f"'reference-subject' names the subject whose config.json is "
                f"{SUBJECT_CONFIG_SHA256[:12]}…, not {str(model.config_sha256)[:12]}…",
            )
        )
    if model.evidence == "reference-subject" and model.subject_recipe != SUBJECT_RECIPE:
        found.append(
            Mismatch(
                "$.model.subject_recipe",
                "is not the reference subject's recipe (pyapp.records.subject.SUBJECT_RECIPE)",
            )
        )
    return found
