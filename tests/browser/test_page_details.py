"""Small things that add up (issue 25 items 9-11): each was reproduced on the old page and is
pinned here — the pager hidden under "No trials yet", no backend preselected where the page
said WebGPU is unavailable, no "Model host" for a model this site serves, focus kept when Run
is pressed, the results caption counting wrong trials, and plots zoomed to their points.

The model is the tiny-chat TEST FIXTURE (never model evidence); nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_helpers import Booted, open_app
from playwright.sync_api import Browser
from test_accessibility import audit
from test_experiment import MODEL_TIMEOUT_MS, choose_conditions, load_fixture, wait_experiment
from test_viewer import finished_run, opened

from pyapp.sweep import wait_catalogue, wait_page

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def fresh(browser: Browser, site_url: str) -> Iterator[Booted]:
    booted = open_app(browser, site_url)
    yield booted
    booted.context.close()
    assert not booted.log.offenders, booted.log.offenders


def test_no_backend_preselected_where_webgpu_is_unavailable(fresh: Booted) -> None:
    page = fresh.page
    wait_catalogue(page, 60_000)
    if "WebGPU is not available" not in page.inner_text("#backend-status"):
        pytest.skip("this browser offers a WebGPU adapter")
    checked = page.eval_on_selector_all('input[name="backend"]:checked', "bs => bs.length")
    assert checked == 0, "a backend the page said is unavailable is preselected"
    assert "Choose a backend" in page.inner_text("#backend-status")
    page.select_option("#model-choice", "fixture")
    page.click("#model-review")
    assert "Choose a backend" in page.inner_text("#model-status")
    assert page.is_hidden("#consent-dialog")
    # issue 41: no "· · size unknown" before a backend gives a dtype: it says what comes
    page.select_option("#model-choice", "smollm2-135m")
    summary = page.inner_text("#model-summary")
    assert "·  ·" not in summary and "size unknown" not in summary, summary
    assert "dtype and size once a backend is chosen" in summary


def test_model_host_only_for_models_served_from_elsewhere(fresh: Booted) -> None:
    page = fresh.page
    wait_catalogue(page, 60_000)
    page.select_option("#model-choice", "fixture")
    assert page.is_hidden("#model-host-field")  # bundled: served by this site
    page.select_option("#model-choice", "subject")
    assert page.is_hidden("#model-host-field")  # the bundled reference subject too (issue 41)
    page.select_option("#model-choice", "other")
    assert page.is_visible("#model-host-field")


def test_the_pager_is_hidden_when_there_is_one_page_or_none(fresh: Booted) -> None:
    page = fresh.page
    assert page.inner_text("#sweep-results-caption") == "No trials yet."
    assert page.is_hidden("#sweep-results-pager")
    display = page.eval_on_selector("#sweep-results-pager", "p => getComputedStyle(p).display")
    assert display == "none"


def test_focus_stays_in_the_run_step_and_the_caption_counts_wrong_trials(fresh: Booted) -> None:
    page = fresh.page
    load_fixture(page)
    choose_conditions(page, ("model-only",))
    page.check("#sweep-run-through")  # to the end, no pause at the freeze
    page.focus("#sweep-run-all")
    page.keyboard.press("Enter")
    wait_page(page, lambda s: s.sweep_running, MODEL_TIMEOUT_MS, "the run to start")
    focused = page.evaluate("() => document.activeElement.id")
    assert focused in ("sweep-cancel", "experiment-status"), f"focus fell to {focused!r}"
    assert wait_experiment(page, "done") == "done"
    assert page.evaluate("() => document.activeElement.tagName") != "BODY"
    caption = page.inner_text("#sweep-results-caption")
    assert "correct," in caption and " wrong " in caption and " failed " in caption, caption
    assert page.is_hidden("#sweep-results-pager")  # 24 trials: one page
    audit(page, "a finished fixture sweep")


def test_the_calibration_plot_zooms_to_its_points_and_labels_do_not_overlap(
    fresh: Booted, tmp_path: Path
) -> None:
    page = fresh.page
    run = finished_run(tmp_path / "zoom", 1729)  # every prediction 0: every point at (0, 0)
    document = json.loads((run / "predictions.json").read_text("utf-8"))
    cells = [c for c in document["conditions"][0]["scores"]["calibration_final"] if c["n"]]
    assert {c["mean_predicted"] for c in cells} == {0.0}
    opened(page, [run / "trace.json", run / "predictions.json"])
    ticks = page.eval_on_selector_all(
        "#plot-calibration svg text.tick", "ts => ts.map(t => Number(t.textContent))"
    )
    assert max(ticks) <= 0.5, ticks  # not 0-1 with every point on the corner
    boxes = page.eval_on_selector_all(
        "#plot-calibration svg text:not([transform])",  # the rotated y label stands apart
        "ts => ts.map(t => { const b = t.getBBox(); return [b.x, b.y, b.width, b.height]; })",
    )

    def overlap(a: list[float], b: list[float]) -> bool:
        return (
            a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]
        )

    clashes = [(i, j) for i in range(len(boxes)) for j in range(i) if overlap(boxes[i], boxes[j])]
    assert clashes == []
    points = page.eval_on_selector_all(
        "#plot-calibration svg .cell",
        "ps => ps.map(p => { const b = p.getBBox(); return [b.x, b.y, b.width, b.height]; })",
    )
    frame = page.eval_on_selector(
        "#plot-calibration svg rect[fill='none']",
        "r => { const b = r.getBBox(); return [b.x, b.y, b.width, b.height]; }",
    )
    for p in points:  # inside the frame, off its edges (where the tick labels are)
        assert frame[0] < p[0] and p[0] + p[2] < frame[0] + frame[2]
        assert frame[1] < p[1] and p[1] + p[3] < frame[1] + frame[3]
    width = page.eval_on_selector("#plot-calibration svg", "s => s.getBoundingClientRect().width")
    container = page.eval_on_selector("#plot-calibration", "f => f.clientWidth")
    assert width >= min(container, 1000) - 2  # the plot uses the width it is given
    page.click("#viewing-close")


def test_the_page_shows_the_plots_the_report_draws(fresh: Booted, tmp_path: Path) -> None:
    """Issue 22 §3, one implementation: the opened run's plots on the page are the SVG of
    `python -m pyapp report` for the same trace, node for node (the page draws none)."""
    page = fresh.page
    run = finished_run(tmp_path / "same", 1730)
    out = tmp_path / "report.html"
    done = subprocess.run(
        [sys.executable, "-m", "pyapp", "report", str(run), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text("utf-8")
    svgs = ["<svg " + part.split("</svg>", 1)[0] + "</svg>" for part in text.split("<svg ")[1:]]
    assert len(svgs) == 2
    opened(page, [run / "trace.json"])
    same = page.evaluate(
        """([calibration, cost]) => {
          const xml = (svg) => new XMLSerializer().serializeToString(svg);
          const parse = (t) => new DOMParser().parseFromString(t, "text/html");
          const parsed = (t) => xml(parse(t).body.firstElementChild);
          const shown = (id) => xml(document.querySelector(`${id} svg`));
          return [
            [shown("#plot-calibration"), parsed(calibration)],
            [shown("#plot-cost"), parsed(cost)],
          ];
        }""",
        svgs,
    )
    for shown, reported in same:
        assert "<title>" in shown and 'class="tick"' in shown
        assert shown == reported
    page.click("#viewing-close")
