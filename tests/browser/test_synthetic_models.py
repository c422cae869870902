"""End to end (issue 16): a synthetic model chosen from the catalogue's group "synthetic
(validation)" runs in the page's Python worker — no consent dialog, no download, no model
worker — and the run is labelled synthetic everywhere while it runs. Its downloaded trace is
re-derived by `python -m pyapp reproduce` and records exactly the trials and verdicts that
`python -m pyapp simulate` records for the same spec, seed and parameters: the same
SyntheticAdapter in both runtimes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import Booted, open_app, wait_settled
from playwright.sync_api import Browser, Page
from test_accessibility import audit
from test_experiment import download_json, wait_experiment

from pyapp.protocol import SweepRun, SweepStart
from pyapp.records import EVIDENCE_LABELS
from pyapp.sweep import page_state, send, use_synthetic, wait_catalogue, wait_models, wait_page
from pyapp.synthetic import STRUCTURES

pytestmark = pytest.mark.browser

LABEL = EVIDENCE_LABELS["synthetic"]
SPEC = "size-dependent"
CONDITIONS = "supplied-program,model-only,model-program,controlled-chain"
MOMENTS = ("started_at", "ended_at", "prev_sha256")  # the chain link hashes the moments


@pytest.fixture(scope="module")
def booted(browser: Browser, site_url: str) -> Iterator[Booted]:
    booted = open_app(browser, site_url)
    wait_catalogue(booted.page, 30_000)
    yield booted
    booted.context.close()
    assert not booted.log.offenders, booted.log.offenders


def pyapp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyapp", *args], capture_output=True, text=True, check=False
    )


def labelled_everywhere(page: Page) -> list[str]:
    """Every place of the live run that lacks the synthetic label."""
    places = {
        "the models panel": "#model-status",
        "the provenance": "#model-provenance",
        "the experiment's hint": "#experiment-hint",
        "the experiment's banner": "#experiment-evidence",
        "the results caption": "#sweep-results-caption",
        "the predictions caption": "#predictions-caption",
        "the scores": "#scores > p.fixture-label",
    }
    wrong = [what for what, selector in places.items() if LABEL not in page.inner_text(selector)]
    cells = page.eval_on_selector_all(
        "#sweep-results tbody tr:not([data-condition='supplied-program'])",
        "rows => rows.map(r => r.cells[1].textContent)",
    )
    wrong += [f"results row {text!r}" for text in cells if LABEL not in text]
    heads = page.eval_on_selector_all("#freeze-view article h4", "hs => hs.map(h => h.textContent)")
    wrong += [f"frozen profile {head!r}" for head in heads if LABEL not in head]
    sentence = LABEL[0].upper() + LABEL[1:] + "."
    wrong += [p for p in ("#plot-calibration", "#plot-cost") if sentence not in page.inner_html(p)]
    # "model evidence" appears only as "not (never) model evidence" in the panel and experiment
    for selector in ("#models", "#experiment"):
        text = page.inner_text(selector).lower()
        for match in re.finditer("model evidence", text):
            if not text[: match.start()].endswith(("not ", "never ")):
                wrong.append(
                    f"{selector} says model evidence: {text[match.start() - 60 : match.end()]!r}"
                )
    return wrong


def test_the_catalogue_lists_every_structure_as_synthetic(booted: Booted) -> None:
    page = booted.page
    group = page.eval_on_selector(
        "#model-choice optgroup",
        "g => ({label: g.label, options: [...g.children].map(o => [o.value, o.textContent])})",
    )
    assert group["label"] == "synthetic (validation)"
    assert [value for value, _ in group["options"]] == [f"synthetic:{s}" for s in STRUCTURES]
    assert all(LABEL in text for _, text in group["options"])
    for structure in STRUCTURES:
        page.select_option("#model-choice", f"synthetic:{structure}")
        notice = page.inner_text("#synthetic-notice")
        assert page.is_visible("#synthetic-notice") and "NOT model evidence" in notice, notice
        assert "nothing is downloaded" in notice and LABEL in page.inner_text("#model-summary")
        assert page.is_hidden("#model-backend") and page.is_hidden("#model-host-field")
    audit(page, "a synthetic model chosen")
    page.select_option("#model-choice", "fixture")
    assert page.is_hidden("#synthetic-notice") and page.is_visible("#model-backend")


def test_a_synthetic_run_in_the_page_is_the_native_run(booted: Booted, tmp_path: Path) -> None:
    page = booted.page
    page.select_option("#model-choice", f"synthetic:{SPEC}")
    page.get_by_role("button", name="Use synthetic model (no download)").click()
    assert wait_models(page, "loaded", 30_000) == "loaded"
    assert not page.is_visible("#consent-dialog")
    state = page_state(page)
    assert state is not None and state.models.synthetic == SPEC, state
    assert LABEL in state.models.status and not state.models.consent_open
    assert page.is_disabled("#journal-generate") and page.is_disabled("#try-generate")

    page.select_option("#preset", "design")
    for condition in CONDITIONS.split(","):
        page.check(f'input[name="condition"][value="{condition}"]')
    # what the page shows when the first model trial arrives, while the run goes on
    page.evaluate(
        """() => { const off = window.lab.experiment.onEvent((event) => {
             if (event.type !== "trial_done" || event.condition === "supplied-program") return;
             const text = (selector) => document.querySelector(selector).textContent;
             const row = document.querySelector(`tr[data-trial-id="${event.trial_id}"]`);
             window.whileRunning = {data: document.querySelector("#experiment").dataset.state,
               banner: text("#experiment-evidence"), caption: text("#sweep-results-caption"),
               row: row ? row.cells[1].textContent : null, models: text("#model-status")};
             off(); }); }"""
    )
    page.check("#sweep-run-through")  # no pause at the freeze
    page.get_by_role("button", name="Run (measure, freeze, held-out)").click()
    assert wait_experiment(page, "done", 240_000) == "done"
    running: dict[str, str] = page.evaluate("() => window.whileRunning")
    assert running["data"] == "running", running
    assert all(LABEL in running[k] for k in ("banner", "caption", "row", "models")), running
    assert labelled_everywhere(page) == []
    audit(page, "a synthetic run done")
    assert not booted.log.requested("model_worker.js")  # no model worker, no download
    assert not booted.log.requested("/resolve/")

    trace = download_json(page, "Download sweep trace JSON")
    predictions = download_json(page, "Download predictions JSON")
    assert trace["model"]["evidence"] == "synthetic" and predictions["evidence"] == "synthetic"
    assert trace["run"]["seed"] == 1729 and trace["summary"]["model_evidence_trials"] == 0
    (tmp_path / "trace.json").write_text(json.dumps(trace), "utf-8")
    (tmp_path / "predictions.json").write_text(json.dumps(predictions), "utf-8")
    checked = pyapp(
        "reproduce",
        str(tmp_path / "trace.json"),
        "--predictions",
        str(tmp_path / "predictions.json"),
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = pyapp("report", str(tmp_path), "--out", str(tmp_path / "report.html"))
    assert report.returncode == 0, report.stderr
    assert "SYNTHETIC VALIDATION MODEL — NOT MODEL EVIDENCE" in (
        tmp_path / "report.html"
    ).read_text("utf-8")

    native = tmp_path / "native"
    made = pyapp(
        "simulate", "--model", SPEC, "--seeds", "1729..1729", "--preset", "design",
        "--conditions", CONDITIONS, "--out", str(native),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    expected = json.loads((native / "seed-1729" / "trace.json").read_text("utf-8"))

    def comparable(document: dict[str, Any]) -> list[dict[str, Any]]:
        return [{k: v for k, v in t.items() if k not in MOMENTS} for t in document["trials"]]

    assert len(trace["trials"]) == 96 and comparable(trace) == comparable(expected)
    scored = json.loads((native / "seed-1729" / "predictions.json").read_text("utf-8"))
    assert [c["scores"] for c in predictions["conditions"]] == [
        c["scores"] for c in scored["conditions"]
    ]


def test_a_reloaded_synthetic_sweep_resumes_with_its_synthetic_model(booted: Booted) -> None:
    """A stored unfinished synthetic sweep is offered after a reload (a new Python session,
    no model in use) and resumes with its own spec (the trace's revision): nothing to
    download or consent to; the run then finishes."""
    page = booted.page
    chosen = use_synthetic(page, "correlated:seed=3")
    assert chosen.spec == "correlated:seed=3" and chosen.provenance is not None
    assert chosen.provenance.evidence == "synthetic"
    send(page, SweepStart(seed=5, conditions=("model-only",)))
    send(page, SweepRun(phase="measure"))
    page.reload()
    wait_settled(page)
    reloaded = page_state(page)
    assert reloaded is not None and reloaded.models.synthetic is None
    page.wait_for_selector("#resume-prompt:not([hidden])", timeout=30_000)
    offer = page.inner_text("#resume-text")
    assert "synthetic/correlated" in offer and LABEL in offer, offer
    assert "with its synthetic model (nothing to load)" in offer and "load synthetic" not in offer
    page.get_by_role("button", name="Resume", exact=True).click()
    wait_page(page, lambda s: s.models.synthetic == "correlated:seed=3", 30_000, "the spec")
    assert not page.is_visible("#consent-dialog")
    page.check("#sweep-run-through")  # no pause at the freeze
    page.get_by_role("button", name="Run (measure, freeze, held-out)").click()
    assert wait_experiment(page, "done", 120_000) == "done"
    assert LABEL in page.inner_text("#experiment-evidence")


def test_a_sealed_run_chosen_in_step_2_is_the_sealed_native_run(
    browser: Browser, site_url: str, tmp_path: Path
) -> None:
    """Issue 37: step 2's "Seal the held-out tasks" draws the held-out tasks after the freeze;
    the trace says so and carries the draw seed, the CLI re-derives it, and the page's run is
    `simulate --sealed`'s run (the same sealed draw from the same frozen profiles)."""
    booted = open_app(browser, site_url)
    page = booted.page
    try:
        wait_catalogue(page, 30_000)
        page.select_option("#model-choice", f"synthetic:{SPEC}")
        page.get_by_role("button", name="Use synthetic model (no download)").click()
        assert wait_models(page, "loaded", 30_000) == "loaded"
        page.select_option("#preset", "design")
        for condition in CONDITIONS.split(","):
            page.check(f'input[name="condition"][value="{condition}"]')
        assert not page.is_checked("#sweep-sealed")  # unsealed is the design's default
        page.check("#sweep-sealed")
        page.check("#sweep-run-through")
        page.get_by_role("button", name="Run (measure, freeze, held-out)").click()
        assert wait_experiment(page, "done", 240_000) == "done"
        assert "sealed: held-out tasks drawn after the freeze" in page.inner_text(
            "#sweep-results-caption"
        )
        trace = download_json(page, "Download sweep trace JSON")
        predictions = download_json(page, "Download predictions JSON")
    finally:
        booted.context.close()
    assert not booted.log.offenders
    assert trace["run"]["terms"]["sealed"] is True
    assert trace["run"]["generator_version"] == "tasks/2" and trace["draw"]["draw_seed"]
    (tmp_path / "trace.json").write_text(json.dumps(trace), "utf-8")
    (tmp_path / "predictions.json").write_text(json.dumps(predictions), "utf-8")
    checked = pyapp(
        "reproduce",
        str(tmp_path / "trace.json"),
        "--predictions",
        str(tmp_path / "predictions.json"),
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    native = tmp_path / "native"
    made = pyapp(
        "simulate", "--model", SPEC, "--seeds", "1729..1729", "--preset", "design",
        "--conditions", CONDITIONS, "--sealed", "--out", str(native),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    expected = json.loads((native / "seed-1729" / "trace.json").read_text("utf-8"))
    assert expected["draw"]["draw_seed"] == trace["draw"]["draw_seed"]

    def comparable(document: dict[str, Any]) -> list[dict[str, Any]]:
        return [{k: v for k, v in t.items() if k not in MOMENTS} for t in document["trials"]]

    assert comparable(trace) == comparable(expected)
