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
    assert status.startswith("trace.json: re-derived exactly"), status
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
