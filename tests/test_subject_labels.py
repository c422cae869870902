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

from pyapp.browser.model import parse_provenance
from pyapp.predict.compare import evidence_shown
from pyapp.records.base import to_json
from pyapp.records.evidence import EVIDENCE_LABELS, run_evidence
from pyapp.records.model import native_provenance
from pyapp.records.subject import (
    SUBJECT_CONFIG_SHA256,
    SUBJECT_LABEL,
    SUBJECT_RECIPE,
    SUBJECT_SOURCE,
)
from pyapp.report import sections
from pyapp.synthetic.language import parse_spec
from pyapp.synthetic.simulate import run_seed
from pyapp.tasks.taskset import TaskParams
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
    return [f for f in found if f.startswith(("$.model.evidence", "$.model.subject_recipe"))]


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
        source=SUBJECT_SOURCE,
        evidence="reference-subject",
        config_sha256=SUBJECT_CONFIG_SHA256,
        subject_recipe={**SUBJECT_RECIPE, "steps": 1},
    )
    assert found == ["$.model.subject_recipe is not the reference subject's recipe "
                     "(pyapp.records.subject.SUBJECT_RECIPE)"]  # fmt: skip


def test_the_subject_labelled_as_itself_raises_no_subject_mismatch(
    trace: dict[str, Any],
) -> None:
    assert not relabelled(
        trace,
        source=SUBJECT_SOURCE,
        evidence="reference-subject",
        config_sha256=SUBJECT_CONFIG_SHA256,
        subject_recipe=dict(SUBJECT_RECIPE),
    )
