"""Runs that stay (issue 25 item 6): the page lists every sweep IndexedDB holds — model, seed,
calibration set, evidence, when, finished or not — after a reload as before it, and each can
be shown, downloaded (its name says the evidence kind), reported, compared or deleted.

No model is loaded: two small finished runs are made natively with a scripted adapter (a TEST
FIXTURE, never model evidence) and handed to the page as the sweep CLI's --resume hands a
sweep (`sweep_resume` through window.lab.send), which stores them; nothing leaves 127.0.0.1
(the conftest guard).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser_helpers import open_app
from playwright.sync_api import Browser, Page
from test_accessibility import audit
from test_viewer import finished_run

from pyapp.protocol import SweepResume
from pyapp.records import document_text, read_trace
from pyapp.sweep import send, wait_page

pytestmark = pytest.mark.browser


def store(page: Page, run: Path) -> str:
    """Hand a finished run to the page as a resumed sweep (it stores every trial)."""
    trace = json.loads((run / "trace.json").read_text("utf-8"))
    header = json.dumps({k: v for k, v in trace.items() if k != "trials"})
    trials = tuple(json.dumps(t) for t in trace["trials"])
    send(page, SweepResume(header_json=header, trials_json=trials))
    run_id: str = trace["run"]["run_id"]
    return run_id


def listed(page: Page) -> list[list[str]]:
    cells: list[list[str]] = page.eval_on_selector_all(
        "#stored-runs-table tbody tr",
        "rows => rows.map(r => [...r.cells].map(c => c.textContent.trim()))",
    )
    return cells


def test_stored_runs_stay_and_can_be_used(
    browser: Browser, site_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = tmp_path_factory.mktemp("stored")
    runs = [finished_run(base / "A", 1729), finished_run(base / "B", 7)]
    booted = open_app(browser, site_url)
    page = booted.page
    try:
        ids = [store(page, run) for run in runs]
        page.reload(timeout=30_000)
        page.wait_for_function(
            "() => document.querySelectorAll('#stored-runs-table tbody tr').length === 2",
            timeout=90_000,
        )
        rows = {row[0]: row for row in listed(page)}
        assert set(rows) == {run_id[:8] for run_id in ids}
        a = rows[ids[0][:8]]
        assert a[1] != "—", a
        assert a[2] == "1729" and a[3] == "custom (1 per op)"
        assert a[4] == "test fixture — not model evidence" and a[6] == "finished"
        assert rows[ids[1][:8]][2] == "7"
        status = page.inner_text("#experiment-status")
        assert "No sweep yet" not in status and "2 run(s) are stored" in status, status
        audit(page, "the stored runs")

        # download: the name says the evidence kind; Python assembled and wrote it (the
        # page assembles no trace), so its text is Python's: 1.0 stays 1.0
        with page.expect_download() as download:
            page.get_by_role("button", name=f"Download trace of run {ids[0][:8]}").click()
        assert download.value.suggested_filename == f"trace-fixture-{ids[0]}.json"
        text = Path(download.value.path()).read_text("utf-8")
        saved = json.loads(text)
        assert saved["run"]["run_id"] == ids[0] and len(saved["trials"]) > 0
        assert text == document_text(read_trace(saved), "trace")

        # report: the code of `python -m pyapp report`, in this page's Python
        with page.expect_download(timeout=120_000) as download:
            page.get_by_role("button", name=f"Download the report of run {ids[0][:8]}").click()
        assert download.value.suggested_filename == f"report-fixture-{ids[0]}.html"
        assert "run report" in Path(download.value.path()).read_text("utf-8")

        # show: re-derived and drawn in step 4 with the verdict at its top
        page.get_by_role("button", name=f"Show run {ids[0][:8]}").click()
        wait_page(page, lambda s: s.experiment == "viewing", 60_000, "the run shown")
        assert page.inner_text("#viewing-verdict").startswith("✓")
        page.click("#viewing-close")

        # compare the two checked runs
        for run_id in ids:
            page.check(f'input.compare-run[value="{run_id}"]')
        page.click("#stored-runs-compare")
        page.wait_for_function(
            "() => document.querySelector('#compare-status').textContent.includes('side by side')",
            timeout=120_000,
        )
        assert page.locator("#compare-view table").count() >= 1

        # delete one: it goes, the other stays
        page.once("dialog", lambda dialog: dialog.accept())
        page.get_by_role("button", name=f"Delete run {ids[1][:8]}").click()
        page.wait_for_function(
            "() => document.querySelectorAll('#stored-runs-table tbody tr').length === 1",
            timeout=30_000,
        )
        assert [row[0] for row in listed(page)] == [ids[0][:8]]
    finally:
        booted.context.close()
    assert not booted.log.offenders, booted.log.offenders
