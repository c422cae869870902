"""Step 4 leads with the answer, and a run that does not re-derive is marked everywhere it is
drawn (issue 41).

No model runs here: the committed synthetic run `tests/fixtures/runs/size-dependent` (made by
`python -m pyapp simulate`, never model evidence; tests/fixtures/runs/README.md) is opened in
the page, as a reader opens a trace. Screenshots of the first screen are saved under the
pytest temporary folder (`first-screen.png`): looked at, never compared.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_helpers import ACTION_TIMEOUT_MS, ROOT, Booted, guard, wait_settled
from playwright.sync_api import Browser, Page
from test_accessibility import audit

from pyapp.protocol import SweepResume, SweepState, SweepStateRequest
from pyapp.sweep import page_state, send, wait_models, wait_page

pytestmark = pytest.mark.browser

RUN = ROOT / "tests" / "fixtures" / "runs" / "size-dependent"
VIEWPORT = {"width": 1280, "height": 800}
MARK = "not re-derived — see mismatches"


@pytest.fixture(scope="module")
def screen(browser: Browser, site_url: str) -> Iterator[Booted]:
    """The page at 1280 × 800, booted (no model loaded)."""
    context = browser.new_context(accept_downloads=True, viewport=VIEWPORT)
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    log = guard(context)
    page = context.new_page()
    page.goto(site_url, timeout=30_000)
    wait_settled(page)
    yield Booted(page, log, context)
    context.close()
    assert not log.offenders, log.offenders


def opened(page: Page, files: list[Path]) -> str:
    page.eval_on_selector("#open-status", "status => (status.textContent = '')")
    page.set_input_files("#open-files", [str(f) for f in files])
    page.wait_for_function(
        "() => /re-derived|mismatch|Cannot|Open one/.test("
        "document.querySelector('#open-status').textContent)",
        timeout=60_000,
    )
    return page.inner_text("#open-status")


def to_step_4(page: Page) -> None:
    """Go to step 4 as a reader does: its link in the step list."""
    page.click('nav a[href="#step-results"]')
    page.wait_for_function(
        "() => document.querySelector('#step-results').getBoundingClientRect().top < 2"
    )


def in_first_screen(page: Page, selector: str) -> bool:
    """The element lies wholly within the 800 px the reader sees."""
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not shown"
    return box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"]


def test_the_first_screen_of_step_4_holds_the_answer(
    screen: Booted, tmp_path_factory: pytest.TempPathFactory
) -> None:
    page = screen.page
    status = opened(page, [RUN / "trace.json", RUN / "predictions.json"])
    assert "re-derived exactly" in status and "mismatch" not in status, status
    to_step_4(page)
    shots = tmp_path_factory.mktemp("screens")
    page.screenshot(path=str(shots / "first-screen.png"))
    # the verdict in words, its first line first; per condition, each predictor's verdict
    headline = page.inner_text("#answer-headline")
    assert headline
    conditions = page.eval_on_selector_all(
        "#answer-lines table.verdict-table tbody tr", "rows => rows.map(r => r.dataset.condition)"
    )
    assert conditions == ["model-only", "model-program", "controlled-chain"]
    # the calibration plot draws both predictors
    for predictor in ("product", "state-aware"):
        group = f'#plot-calibration svg g[data-predictor="{predictor}"] .cell'
        assert page.locator(group).count() >= 1, predictor
    # the skill picture: each predictor against its references, per condition
    assert page.locator("#plot-skill svg").count() == 1
    for selector in (
        "#answer-headline",
        "#results-downloads button",
        "#plot-skill svg",
        "#plot-calibration svg",
        "#results-downloads",
        "#plot-calibration .plot-export",
    ):
        assert in_first_screen(page, selector), f"{selector} is below the first 800 px"
    # the tables are folded below the answer
    folded = page.eval_on_selector_all(
        "#step-results details.results-fold", "ds => ds.map(d => d.open)"
    )
    assert folded == [False, False, False, False]
    audit(page, "step 4 of an opened run: the answer first")
    # Export SVG / PNG beside every plot: the SVG as Python drew it, the PNG at 2x from it
    with page.expect_download() as caught:
        page.click("#plot-calibration .plot-export button:has-text('Export SVG')")
    svg = Path(caught.value.path()).read_text("utf-8")
    assert caught.value.suggested_filename.startswith("calibration-synthetic-")
    assert svg.startswith("<svg") and 'xmlns="http://www.w3.org/2000/svg"' in svg
    assert 'data-predictor="state-aware"' in svg
    with page.expect_download() as caught:
        page.click("#plot-calibration .plot-export button:has-text('Export PNG')")
    png = Path(caught.value.path()).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (2 * 760, 2 * 420)  # the plot's viewBox, twice
    page.click("#viewing-close")


def test_a_tampered_trace_is_marked_everywhere_it_is_drawn(screen: Booted, tmp_path: Path) -> None:
    page = screen.page
    trace = json.loads((RUN / "trace.json").read_text("utf-8"))
    splits = {t["id"]: t["split"] for t in trace["tasks"]}
    heldout = next(
        t
        for t in trace["trials"]
        if splits[t["task_id"]] == "heldout" and t["condition"] == "model-only"
    )
    heldout["correct"] = not heldout["correct"]  # one held-out verdict edited
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(trace), "utf-8")
    status = opened(page, [tampered])
    assert "mismatch(es): the trace does not re-derive" in status, status
    listed = page.eval_on_selector_all("#viewing-mismatch-list li", "items => items.length")
    assert listed >= 1 and listed == page.locator("#open-view ul.mismatches li").count()
    to_step_4(page)
    page.screenshot(path=str(tmp_path / "tampered.png"))
    marked = {
        "the verdict": "#answer-lines > p.not-rederived",
        "the skill picture": "#plot-skill > p.not-rederived",
        "the calibration plot": "#plot-calibration > p.not-rederived",
        "the cost plot": "#plot-cost > p.not-rederived",
        "the scores": "#scores > p.not-rederived",
        "the predictions": "#fold-predictions p.not-rederived",
    }
    missing = [name for name, selector in marked.items() if page.locator(selector).count() != 1]
    assert not missing, f"unmarked: {missing}"
    summaries = page.eval_on_selector_all(
        "#step-results details.results-fold > summary", "s => s.map(e => e.textContent)"
    )
    assert all(MARK in s for s in summaries), summaries
    profiles = page.locator("#freeze-view article.frozen").count()
    marks = page.locator("#freeze-view article.frozen p.not-rederived").count()
    assert profiles == 3 and marks == 3
    assert MARK in page.text_content("#sweep-results-caption")
    page.click("#fold-trials > summary")
    page.click("#sweep-results tbody button")
    assert MARK in page.inner_text("#record-body")
    page.keyboard.press("Escape")
    # every mark names the mismatches the page's re-derivation returned, and leads to them
    assert f"({listed} mismatch" in page.inner_text("#answer-lines > p.not-rederived")
    page.click("#answer-lines > p.not-rederived a")
    assert page.eval_on_selector("#viewing-mismatches", "d => d.open")
    # nothing of another run: no live receipt, no live progress in the shown run's view
    assert page.is_hidden("#receipt-view") and page.is_hidden("#sweep-progress")
    assert "opened from a file (tampered.json)" in page.inner_text("#viewing-text")
    audit(page, "a tampered trace, marked")
    page.click("#viewing-close")
    assert page.locator("#step-results .not-rederived").count() == 0


# ---- the receipt at the freeze, and no run lost (a synthetic model: nothing downloads) ------

SPEC = "independent"


@pytest.fixture(scope="module")
def lab(browser: Browser, site_url: str) -> Iterator[Booted]:
    """The page at 1280 × 800 with a synthetic model in use (no consent, no download), the
    clipboard granted, model-only on the design set."""
    context = browser.new_context(accept_downloads=True, viewport=VIEWPORT)
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    log = guard(context)
    page = context.new_page()
    page.goto(f"{site_url}?conditions=model-only&preset=design", timeout=30_000)
    wait_settled(page)
    page.select_option("#model-choice", f"synthetic:{SPEC}")
    page.get_by_role("button", name="Use synthetic model (no download)").click()
    assert wait_models(page, "loaded", 30_000) == "loaded"
    yield Booted(page, log, context)
    context.close()
    assert not log.offenders, log.offenders


def sweep(page: Page) -> SweepState:
    """Python's state of the live sweep (the protocol's `sweep_state`)."""
    state: SweepState = send(page, SweepStateRequest())
    return state


def wait_stage(page: Page, stages: str) -> str:
    wanted = stages.split()
    state = wait_page(page, lambda s: s.experiment in wanted, 60_000, f"the sweep {stages}")
    return state.experiment


def status_says(page: Page, words: str) -> None:
    """Wait until the experiment's status line holds `words`."""
    page.wait_for_function(
        "(w) => document.querySelector('#experiment-status').textContent.includes(w)", arg=words
    )


def saved(page: Page, button: str) -> tuple[str, str]:
    """Click a download button: the file's name and text."""
    with page.expect_download() as caught:
        page.click(button)
    return caught.value.suggested_filename, Path(caught.value.path()).read_text("utf-8")


def test_run_pauses_at_the_freeze_with_the_receipt_beside_the_buttons(lab: Booted) -> None:
    page = lab.page
    assert not page.is_checked("#sweep-run-through")
    page.get_by_role("button", name="Run (measure, freeze, held-out)").click()
    assert wait_stage(page, "frozen error") == "frozen"
    state = sweep(page)
    assert state.heldout_left > 0  # no held-out trial was observed
    observed = page.eval_on_selector_all(
        "#predictions-table tbody tr", "rows => rows.map(r => r.dataset.observed)"
    )
    assert observed and set(observed) == {"false"}
    # the receipt is in step 3, beside the buttons and the progress bar, on screen
    assert page.locator("#step-run #receipt-view").is_visible()
    assert in_first_screen(page, "#receipt-view #copy-receipt")
    assert "paused before the held-out tasks" in page.inner_text("#experiment-status")
    assert page.get_attribute('nav a[href="#step-run"]', "aria-current") == "step"
    page.click("#copy-receipt")
    page.wait_for_function(
        "() => /Copied/.test(document.querySelector('#receipt-status').textContent)"
    )
    copied = page.evaluate("() => navigator.clipboard.readText()")
    name, text = saved(page, "#download-receipt")
    run_id = state.run_id
    assert name == f"receipt-synthetic-{run_id}.json" and text == copied
    assert json.loads(text)["fingerprint"] == page.inner_text("#receipt-fingerprint")
    audit(page, "paused at the freeze, the receipt shown")
    # Run again: the held-out phase, to the end
    page.get_by_role("button", name="Run (measure, freeze, held-out)").click()
    assert wait_stage(page, "done error") == "done"
    assert sweep(page).heldout_left == 0
    # the step list keeps its "you are here" marker after a run: on the results
    assert page.get_attribute('nav a[href="#step-results"]', "aria-current") == "step"


def test_no_run_is_lost(lab: Booted, tmp_path: Path) -> None:
    page = lab.page
    # "run through" ticked: measure, freeze and held-out in one go, no pause
    page.check("#sweep-run-through")
    page.eval_on_selector("#experiment-status", "s => (s.textContent = '')")
    page.get_by_role("button", name="Run (measure, freeze, held-out)").click()
    status_says(page, "Finished all.")
    first = sweep(page).run_id
    page.uncheck("#sweep-run-through")
    page.get_by_role("button", name="New sweep").click()  # the last one is done: no question
    page.wait_for_function(
        f"() => !document.querySelector('#experiment-status').textContent.includes('{first[:8]}')"
    )
    page.get_by_role("button", name="Run (measure, freeze, held-out)").click()
    assert wait_stage(page, "frozen error") == "frozen"
    paused = sweep(page).run_id
    assert paused != first
    # New sweep while it is unfinished: the page asks first; Cancel keeps it live
    page.get_by_role("button", name="New sweep").click()
    assert page.is_visible("#unfinished-dialog")
    assert paused[:8] in page.inner_text("#unfinished-text")
    audit(page, "the unfinished-sweep question")
    page.click("#unfinished-cancel")
    assert sweep(page).run_id == paused
    # Run while a trace opened from disk is shown: back to the live sweep, asked first
    opened(page, [RUN / "trace.json"])
    shown = page_state(page)
    assert shown is not None and shown.experiment == "viewing"
    page.get_by_role("button", name="Run (measure, freeze, held-out)").click()
    assert page.is_visible("#unfinished-dialog")
    page.eval_on_selector("#experiment-status", "s => (s.textContent = '')")
    page.click("#unfinished-new")  # a new sweep; the paused one stays stored, unfinished
    status_says(page, "paused before the held-out tasks")
    newest = sweep(page).run_id
    assert newest not in (first, paused)
    # the runs list: where each came from, Resume for the unfinished, every download
    row = f'#stored-runs-table tr[data-run-id="{paused}"]'
    page.wait_for_selector(row)
    assert "unfinished" in page.inner_text(row)
    assert page.locator(f"{row} button", has_text="Resume").count() == 1
    assert (
        page.locator(
            f'#stored-runs-table tr[data-run-id="{first}"] button', has_text="Resume"
        ).count()
        == 0
    )
    name, text = saved(page, f"{row} button:has-text('Download receipt')")
    assert name == f"receipt-synthetic-{paused}.json"  # the one made at its freeze, kept
    assert "as made at its freeze" in page.inner_text("#stored-runs-status")
    name, text = saved(page, f"{row} button:has-text('Download predictions')")
    assert name == f"predictions-synthetic-{paused}.json"
    assert json.loads(text)["trace_run_id"] == paused
    name, text = saved(page, f"{row} button:has-text('Download trace')")
    assert json.loads(text)["run"]["run_id"] == paused
    # Resume the paused one: the live one (the newest) is unfinished, so the page asks
    page.locator(f"{row} button", has_text="Resume").click()
    assert page.is_visible("#unfinished-dialog")
    page.click("#unfinished-new")
    status_says(page, f"Resumed sweep {paused[:8]}")
    assert "Press Run to continue it" in page.inner_text("#experiment-status")
    assert page.is_visible("#receipt-view")  # its own receipt, kept since its freeze
    page.get_by_role("button", name="Run (measure, freeze, held-out)").click()
    assert wait_stage(page, "done error") == "done"
    assert sweep(page).run_id == paused
    finished = f'#stored-runs-table tr[data-run-id="{paused}"]'
    page.wait_for_function(
        "(row) => /finished/.test(document.querySelector(row)?.textContent)", arg=finished
    )
    assert page.locator(f"{finished} button", has_text="Resume").count() == 0


def test_a_receipt_made_again_after_the_heldout_phase_says_so(lab: Booted) -> None:
    """A run this browser holds without its freeze receipt (handed in as texts, as the sweep
    CLI's --resume does): the receipt is made again from its trace, after its held-out phase,
    and its file name and the status line say that it proves nothing about timing."""
    page = lab.page
    trace = json.loads((RUN / "trace.json").read_text("utf-8"))
    header = {k: v for k, v in trace.items() if k != "trials"}
    lines = tuple(json.dumps(t) for t in trace["trials"])
    send(page, SweepResume(header_json=json.dumps(header), trials_json=lines, in_flight=None))
    run_id = trace["run"]["run_id"]
    row = f'#stored-runs-table tr[data-run-id="{run_id}"]'
    page.wait_for_selector(row)
    name, text = saved(page, f"{row} button:has-text('Download receipt')")
    assert name == f"receipt-remade-after-heldout-synthetic-{run_id}.json"
    assert json.loads(text)["run_id"] == run_id
    said = page.inner_text("#stored-runs-status")
    assert "RE-MADE AFTER ITS HELD-OUT PHASE" in said and "proves nothing about timing" in said
