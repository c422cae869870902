"""The reference subject is named as what it is, and `reproduce` refuses a relabelled trace
(issue 26): its source or its config.json digest is `reference-subject` evidence with its
recipe wherever it was served from; a trace that claims `model` evidence for it, or claims
its label for another model, is a mismatch.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from asyncrun import in_thread

from pyapp.browser import parse_provenance
from pyapp.predict import evidence_shown
from pyapp.records import (
    EVIDENCE_LABELS,
    EVIDENCE_NOTES,
    LEGACY_EVIDENCE_NOTES,
    RECURRENCES,
    REFERENCE,
    SUBJECT_CONFIG_SHA256,
    SUBJECT_LABEL,
    SUBJECT_RECIPE,
    SUBJECT_SOURCE,
    SUBJECTS,
    evidence_label,
    native_provenance,
    run_evidence,
    to_json,
)
from pyapp.report import sections
from pyapp.synthetic import parse_spec, run_seed
from pyapp.tasks import TaskParams
from pyapp.verify.reproduce import reproduce

SMALL = TaskParams(primitives_per_op=1, probe_pairs=1, recurrence_steps=(2,), determinants=1)
HUB = dataclasses.replace(
    native_provenance("org/some-llm", "main", "synthetic"),
    source="hub",
    evidence="model",
    backend_requested="wasm",
    config_sha256="0" * 64,
)


def test_the_subject_is_shown_as_the_subject_wherever_it_was_served_from() -> None:
    bundled = dataclasses.replace(
        HUB, source=SUBJECT_SOURCE, evidence="reference-subject", config_sha256=None
    )
    assert run_evidence(bundled) == "reference-subject"
    # a copy served from a hub, recognised by its config.json, even when labelled "model"
    copy = dataclasses.replace(HUB, config_sha256=SUBJECT_CONFIG_SHA256)
    assert run_evidence(copy) == "reference-subject"
    assert run_evidence(HUB) == "model"
    assert EVIDENCE_LABELS["reference-subject"] == SUBJECT_LABEL
    assert sections.BANNERS["reference-subject"] == SUBJECT_LABEL.upper()
    assert evidence_shown("reference-subject") == f"reference-subject: {SUBJECT_LABEL}"


def test_the_page_provenance_of_the_subject_gets_its_label_and_recipe() -> None:
    copy = to_json(dataclasses.replace(HUB, config_sha256=SUBJECT_CONFIG_SHA256))
    parsed = parse_provenance(copy)
    assert parsed.evidence == "reference-subject" and parsed.subject_recipe == SUBJECT_RECIPE
    other = parse_provenance(to_json(HUB))
    assert other.evidence == "model" and other.subject_recipe is None


@pytest.fixture(scope="module")
def trace() -> dict[str, Any]:
    run = in_thread(run_seed, parse_spec("independent"), SMALL, ("model-only",))
    document: dict[str, Any] = to_json(run.trace)
    return document


def relabelled(trace: dict[str, Any], **model: Any) -> list[str]:
    """The reproduce mismatches about evidence of `trace` with its model fields changed (a
    synthetic run's: its specification and virtual clock removed, which would name it)."""
    document = json.loads(json.dumps(trace))
    document["model"].update({"synthetic": None, **model})
    document["environment"]["clock"] = {"name": "time.perf_counter_ns",
                                        "declared_resolution_ms": 1e-6,
                                        "measured_resolution_ms": 1e-4}  # fmt: skip
    evidence = document["model"]["evidence"]
    for trial in document["trials"]:
        if trial["evidence"] != "control":
            trial["evidence"] = evidence
    found = [f"{m.where} {m.message}" for m in reproduce(document)]
    wanted = ("$.model.evidence", "$.model.subject_recipe", "$.model.model_id")
    return [f for f in found if f.startswith(wanted)]


def test_reproduce_refuses_model_evidence_for_the_subject(trace: dict[str, Any]) -> None:
    found = relabelled(trace, source="hub", evidence="model", config_sha256=SUBJECT_CONFIG_SHA256)
    assert any(f.startswith("$.model.evidence the model is the locally trained") for f in found)
    found = relabelled(trace, source=SUBJECT_SOURCE, evidence="model")
    assert any(f.startswith("$.model.evidence the model is the locally trained") for f in found)


def test_reproduce_refuses_the_subjects_label_on_another_model(trace: dict[str, Any]) -> None:
    found = relabelled(
        trace,
        source="hub",
        evidence="reference-subject",
        config_sha256="0" * 64,
        subject_recipe=dict(SUBJECT_RECIPE),
    )
    assert any("'reference-subject' names the subject" in f for f in found), found
    found = relabelled(
        trace,
        model_id=REFERENCE.model_id,
        source=SUBJECT_SOURCE,
        evidence="reference-subject",
        config_sha256=SUBJECT_CONFIG_SHA256,
        subject_recipe={**SUBJECT_RECIPE, "steps": 1},
    )
    assert found == ["$.model.subject_recipe is not the recipe of the reference subject "
                     "subject/reference-2 (pyapp.records.subject.SUBJECTS)"]  # fmt: skip


def test_the_subject_labelled_as_itself_raises_no_subject_mismatch(
    trace: dict[str, Any],
) -> None:
    assert not relabelled(
        trace,
        model_id=REFERENCE.model_id,
        source=SUBJECT_SOURCE,
        evidence="reference-subject",
        config_sha256=SUBJECT_CONFIG_SHA256,
        subject_recipe=dict(SUBJECT_RECIPE),
    )


def test_each_subject_has_its_own_label_and_recipe() -> None:
    assert SUBJECTS == (REFERENCE, RECURRENCES)
    assert len({s.label for s in SUBJECTS}) == len({s.model_id for s in SUBJECTS}) == 2
    assert len({s.recipe["recipe_sha256"] for s in SUBJECTS}) == 2
    assert RECURRENCES.label.endswith(
        "M parameters, trained on primitives and one- and two-step recurrences)"
    )
    assert evidence_label("reference-subject", "subject/recurrences-1", None) == RECURRENCES.label
    assert evidence_label("reference-subject", "subject/reference-2", None) == REFERENCE.label
    assert evidence_label("model", "subject/recurrences-1", None) == "model evidence"
    assert evidence_shown("reference-subject", "subject/recurrences-1") == (
        f"reference-subject: {RECURRENCES.label}"
    )
    # the page gets the same labels, by model id
    copy = parse_provenance(
        to_json(dataclasses.replace(HUB, model_id="subject/recurrences-1",
                                    source=SUBJECT_SOURCE, evidence="reference-subject"))
    )  # fmt: skip
    assert copy.subject_recipe == RECURRENCES.recipe


def test_the_first_subject_relabelled_as_the_second_is_refused(trace: dict[str, Any]) -> None:
    # subject 1's config with subject 2's recipe, or under subject 2's bundled model id
    found = relabelled(
        trace,
        model_id=REFERENCE.model_id,
        source=SUBJECT_SOURCE,
        evidence="reference-subject",
        config_sha256=REFERENCE.config_sha256,
        subject_recipe=dict(RECURRENCES.recipe),
    )
    assert found == ["$.model.subject_recipe is not the recipe of the reference subject "
                     "subject/reference-2 (pyapp.records.subject.SUBJECTS)"]  # fmt: skip
    found = relabelled(
        trace,
        model_id=RECURRENCES.model_id,
        source=SUBJECT_SOURCE,
        evidence="reference-subject",
        config_sha256=REFERENCE.config_sha256,
        subject_recipe=dict(REFERENCE.recipe),
    )
    assert found == ["$.model.model_id 'subject/recurrences-1' is not the bundled reference "
                     "subject whose config.json this is (subject/reference-2)"]  # fmt: skip
    assert not relabelled(
        trace,
        model_id=REFERENCE.model_id,
        source=SUBJECT_SOURCE,
        evidence="reference-subject",
        config_sha256=REFERENCE.config_sha256,
        subject_recipe=dict(REFERENCE.recipe),
    )


@pytest.mark.skipif(
    RECURRENCES.config_sha256 is None, reason="the second subject is not trained yet"
)
def test_the_second_subject_reproduces_and_is_not_the_first(trace: dict[str, Any]) -> None:
    second = dict(
        model_id=RECURRENCES.model_id,
        source=SUBJECT_SOURCE,
        evidence="reference-subject",
        config_sha256=RECURRENCES.config_sha256,
    )
    assert not relabelled(trace, **second, subject_recipe=dict(RECURRENCES.recipe))
    found = relabelled(trace, **second, subject_recipe=dict(REFERENCE.recipe))
    assert found == ["$.model.subject_recipe is not the recipe of the reference subject "
                     "subject/recurrences-1 (pyapp.records.subject.SUBJECTS)"]  # fmt: skip
    found = relabelled(trace, **{**second, "evidence": "model", "source": "hub"})
    assert any(f.startswith("$.model.evidence the model is the locally trained") for f in found)
    copy = dataclasses.replace(HUB, config_sha256=RECURRENCES.config_sha256)
    assert run_evidence(copy) == "reference-subject"
    assert parse_provenance(to_json(copy)).subject_recipe == RECURRENCES.recipe


def note_mismatches(trace: dict[str, Any], note: str, **model: Any) -> list[str]:
    """reproduce's evidence_note mismatches of `trace` relabelled as a subject, every model
    trial carrying `note`."""
    document = json.loads(json.dumps(trace))
    document["model"].update(model, evidence="reference-subject", source=SUBJECT_SOURCE)
    for trial in document["trials"]:
        if trial["evidence"] != "control":
            trial["evidence"] = "reference-subject"
            trial["evidence_note"] = note
    return [m.where for m in reproduce(document) if "evidence_note" in m.message]


def test_the_first_subjects_old_trial_note_still_reproduces(trace: dict[str, Any]) -> None:
    first = dict(model_id=REFERENCE.model_id, config_sha256=REFERENCE.config_sha256)
    second = dict(model_id=RECURRENCES.model_id, config_sha256=None)
    legacy = LEGACY_EVIDENCE_NOTES["reference-subject"]
    assert "trained on single primitives only" in legacy
    assert not note_mismatches(trace, EVIDENCE_NOTES["reference-subject"], **first)
    assert not note_mismatches(trace, legacy, **first)
    # the old note says "primitives only": never accepted on the second subject's trials
    assert note_mismatches(trace, legacy, **second)
    assert not note_mismatches(trace, EVIDENCE_NOTES["reference-subject"], **second)
