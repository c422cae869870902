"""The one table of evidence labels (pyapp.records.evidence): every kind named, only `model`
called model evidence, the page's copy generated from it, and a run shown under the label of
what it is — a fixture (by source or by config.json hash) or a synthetic model never as model
evidence, whatever its own label claims (issue 16)."""

import dataclasses
import json
import re
from pathlib import Path
from typing import get_args

import pytest
from asyncrun import in_thread

from pyapp.browser import open_run
from pyapp.protocol import FIXTURE_LABEL, constants, js_module
from pyapp.records import (
    EVIDENCE_LABELS,
    SUBJECT_LABEL,
    TEST_FIXTURE_CONFIGS,
    Evidence,
    native_provenance,
    run_evidence,
    to_json,
)
from pyapp.report import sections
from pyapp.synthetic import parse_spec, run_seed
from pyapp.tasks import TaskParams
from pyapp.verify.reproduce import reproduce

ROOT = Path(__file__).resolve().parent.parent
SMALL = TaskParams(primitives_per_op=1, probe_pairs=1, recurrence_steps=(2,), determinants=1)


def test_every_evidence_kind_has_one_label_and_only_model_is_model_evidence() -> None:
    assert list(EVIDENCE_LABELS) == list(get_args(Evidence))
    assert EVIDENCE_LABELS["model"] == "model evidence"
    for kind, label in EVIDENCE_LABELS.items():
        if kind not in ("model", "reference-subject"):
            assert label.endswith(" — not model evidence"), (kind, label)
    # The reference subject is evidence about itself, named as what it is (issue 26).
    assert EVIDENCE_LABELS["reference-subject"] == SUBJECT_LABEL
    assert SUBJECT_LABEL.startswith("locally trained reference subject (")
    assert SUBJECT_LABEL.endswith(" M parameters, trained on primitives only)")
    assert len(set(EVIDENCE_LABELS.values())) == len(EVIDENCE_LABELS)
    assert EVIDENCE_LABELS["fixture"] == FIXTURE_LABEL


def test_the_page_gets_the_table_from_the_generator() -> None:
    assert constants()["EVIDENCE_LABELS"] == EVIDENCE_LABELS
    committed = (ROOT / "site" / "lab_protocol.js").read_text("utf-8")
    assert committed == js_module()  # regenerate with `python -m pyapp schema`
    line = re.search(r"^export const EVIDENCE_LABELS = Object\.freeze\((.*)\);$", committed, re.M)
    assert line is not None and json.loads(line.group(1)) == EVIDENCE_LABELS


def test_the_report_words_the_same_table() -> None:
    assert {kind: label.upper() for kind, label in EVIDENCE_LABELS.items()} == sections.BANNERS
    assert sections.BANNERS["synthetic"] == "SYNTHETIC VALIDATION MODEL — NOT MODEL EVIDENCE"
    assert set(sections.NOT_EVIDENCE_LABELS) == {"fixture", "synthetic"}
    assert all(EVIDENCE_LABELS[k] == v for k, v in sections.NOT_EVIDENCE_LABELS.items())


def test_a_run_is_shown_under_what_it_is() -> None:
    synthetic = native_provenance("synthetic/independent", "independent", "synthetic")
    scripted = native_provenance("fixture/scripted", "none", "scripted")
    hub = dataclasses.replace(synthetic, source="hub", evidence="model", config_sha256="0" * 64)
    assert run_evidence(None) == "control"
    assert run_evidence(synthetic) == "synthetic"
    assert run_evidence(scripted) == "fixture"
    assert run_evidence(hub) == "model"
    # relabelled "model": still what it is
    assert run_evidence(dataclasses.replace(synthetic, evidence="model")) == "synthetic"
    assert run_evidence(dataclasses.replace(scripted, evidence="model")) == "fixture"
    for config in sorted(TEST_FIXTURE_CONFIGS):  # a stand-in served as a hub model
        assert run_evidence(dataclasses.replace(hub, config_sha256=config)) == "fixture"


@pytest.fixture(scope="module")
def synthetic_trace() -> dict[str, object]:
    run = in_thread(run_seed, parse_spec("independent"), SMALL, ("model-only",))
    document: dict[str, object] = to_json(run.trace)
    return document


def test_an_opened_synthetic_trace_is_labelled_synthetic(
    synthetic_trace: dict[str, object],
) -> None:
    opened = open_run(synthetic_trace)
    assert opened.evidence == "synthetic" and opened.ok is True


def test_a_synthetic_trace_relabelled_model_is_caught_and_still_shown_synthetic(
    synthetic_trace: dict[str, object],
) -> None:
    document = json.loads(json.dumps(synthetic_trace))
    document["model"]["evidence"] = "model"
    for trial in document["trials"]:
        trial["evidence"] = "model"
        trial["evidence_note"] = "Model evidence: output of the loaded model under this condition."
    found = [f"{m.where} {m.message}" for m in reproduce(document)]
    assert any(m.startswith("$.model.evidence source 'synthetic'") for m in found), found
    opened = open_run(document)
    assert opened.evidence == "synthetic" and opened.ok is False
