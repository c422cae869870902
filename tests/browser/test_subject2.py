"""End to end: the second reference subject in the browser (issue 36).

The committed second subject (tests/fixtures/subject2, `subject/recurrences-1`) is in the
catalogue beside the first, loads through the same consent dialog as a bundled model, is
named with its own label (its curriculum in words, never the first subject's, never a
pretrained LLM), records its own recipe and config digest, and reproduces its reference
replies' greedy ids on WASM (fp32; a reply may part from them only at or after a listed
near-tie).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from browser_helpers import ROOT, Booted, missing, open_app
from playwright.sync_api import Browser
from test_models import caps, client_generate, provenance
from test_subject import MODEL_TIMEOUT_MS, agrees

from pyapp.browser import parse_provenance
from pyapp.records import RECURRENCES, REFERENCE
from pyapp.sweep import wait_catalogue, wait_models

pytestmark = pytest.mark.browser

FOLDER = ROOT / RECURRENCES.folder
REPLIES: list[dict[str, Any]] = (
    json.loads((FOLDER / "replies.json").read_text(encoding="utf-8"))
    if (FOLDER / "replies.json").is_file()
    else []
)


@pytest.fixture(scope="module")
def loaded(browser: Browser, site_url: str) -> Iterator[tuple[Booted, str]]:
    if not REPLIES or RECURRENCES.config_sha256 is None:
        missing(f"no second reference subject at {FOLDER}")
    booted = open_app(browser, site_url)
    page = booted.page
    wait_catalogue(page)
    page.select_option("#model-choice", RECURRENCES.key)
    page.check('input[name="backend"][value="wasm"]')
    page.select_option("#model-dtype", "fp32")
    page.get_by_role("button", name="Load model…").click()
    dialog = page.inner_text("#consent-dialog")
    page.get_by_role("button", name="Download and load").click()
    state = wait_models(page, "loaded failed", MODEL_TIMEOUT_MS)
    assert state == "loaded", page.inner_text("#model-status")
    yield booted, dialog
    booted.context.close()
    assert not booted.log.offenders, booted.log.offenders


def test_consent_and_labels_name_the_second_subject(loaded: tuple[Booted, str]) -> None:
    booted, dialog = loaded
    for words in (RECURRENCES.model_id, RECURRENCES.label, "bundled", "WASM"):
        assert words in dialog, (words, dialog)
    status = booted.page.inner_text("#model-status")
    assert RECURRENCES.label in status and REFERENCE.label not in status
    record = parse_provenance(provenance(booted.page))
    assert record.source == "bundled-subject" and record.evidence == "reference-subject"
    assert record.config_sha256 == RECURRENCES.config_sha256
    assert record.subject_recipe == RECURRENCES.recipe
    assert booted.log.requested("/models/subject/recurrences-1/onnx/model.onnx")


def test_its_reference_replies_on_wasm_are_the_native_greedy_ids(
    loaded: tuple[Booted, str],
) -> None:
    page = loaded[0].page
    problems = []
    for row in REPLIES:
        answer = client_generate(
            page, messages=row["messages"], caps=caps(max_new_tokens=row["max_new_tokens"])
        )
        assert answer["ok"], answer
        result = answer["result"]
        assert result["input_tokens"] == row["prompt_tokens"], row["name"]
        problem = agrees(result["output_token_ids"], row)
        if problem:
            problems.append(problem)
    assert not problems, problems
