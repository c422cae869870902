#!/usr/bin/env python3
"""Screenshots of the page's main states, from the real page, for docs/page.md.

    .venv/bin/python scripts/screenshots.py [--site build/site] [--out docs/screenshots]

Serves the built site on 127.0.0.1, drives headless Chromium (Debian's, as the tests do)
through the flow with the bundled TEST FIXTURE on WASM — boot, consent, running, results,
a raw record, the finished run opened again ("Open a trace"), a boot failure — and writes
one PNG per state, plus the HTML report of the finished run (`python -m pyapp report`).
Every request that would leave 127.0.0.1 is refused. The running state is held by the
tests' model-worker gate (an event, not a timer), so a refresh gives the same pictures on a
fast or a slow machine. The page's state is read through window.lab.send (`page_state`,
`pyapp.sweep.panel`); what the pictures show is done as a person does it (clicks), and the
gate (tests/browser/model_gate.js, a test hook) and the scrolling that frames a picture are
the only other scripts it runs in the page.
Run it after changing the page, and commit the PNGs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from playwright.sync_api import Browser, BrowserContext, Page, Route, sync_playwright

from pyapp.host import serve_in_thread
from pyapp.protocol import PageState
from pyapp.sweep import CHROMIUM_ARGS, load_from_catalogue, page_state, wait_page

ROOT = Path(__file__).resolve().parent.parent
GATE = ROOT / "tests" / "browser" / "model_gate.js"
CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1280, "height": 800}
"""The first screen issue 41 measures step 4 on."""
TIMEOUT_MS = 120_000
HOLD_AFTER = 8
"""The running screenshot is taken with this many trials done and the next one held."""
SCROLL_TO = "(s) => document.querySelector(s).scrollIntoView()"
"""A picture's framing: its anchor at the top of the window, as a person scrolls there."""
HOLD_AT_TRIAL = "(n) => window.__closeGateAtTrial(n)"
"""The gate (tests/browser/model_gate.js) closes once trial `n` is done."""
HELD = (
    "(n) => document.querySelectorAll('#sweep-results tbody tr').length >= n"
    " && Boolean(window.__gate)"
)
"""The page shows `n` result rows and the gate holds the next trial's model call."""


def local_only(context: BrowserContext) -> None:
    def check(route: Route) -> None:
        parts = urlsplit(route.request.url)
        if parts.scheme in ("blob", "data", "file") or parts.hostname == "127.0.0.1":
            route.fallback()
        else:
            route.abort("blockedbyclient")

    context.route("**/*", check)


@contextmanager
def new_page(browser: Browser, url: str, missing: str | None = None) -> Iterator[Page]:
    """A page of the site in a fresh context; `missing`: a URL pattern answered with 404."""
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)  # type: ignore[arg-type]
    context.set_default_timeout(TIMEOUT_MS)
    local_only(context)
    if missing:
        context.route(missing, lambda route: route.fulfill(status=404, body="missing"))
    context.add_init_script(GATE.read_text(encoding="utf-8"))
    try:
        page = context.new_page()
        page.goto(url, timeout=30_000)
        yield page
    finally:
        context.close()


def wait_app(page: Page, states: str) -> str:
    """Wait until the page's state (`page_state`'s app) is one of `states`; return it."""
    wanted = states.split()
    return wait_page(page, lambda s: s.app in wanted, TIMEOUT_MS, f"the page {states}").app


def wait_experiment(page: Page, states: str) -> PageState:
    """Wait until the Experiment section's state is one of `states`."""
    wanted = states.split()
    return wait_page(page, lambda s: s.experiment in wanted, TIMEOUT_MS, f"a sweep {states}")


def shoot(page: Page, out: Path, name: str, anchor: str | None = None) -> None:
    if anchor:
        page.evaluate(SCROLL_TO, anchor)
    path = out / f"{name}.png"
    page.screenshot(path=str(path), animations="disabled", caret="hide")
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


def load_fixture(page: Page, out: Path) -> None:
    """The fixture on WASM through the consent dialog, pictured while it is open."""
    if (
        load_from_catalogue(page, TIMEOUT_MS, before_consent=lambda: shoot(page, out, "consent"))
        != "loaded"
    ):
        state = page_state(page)
        raise SystemExit(f"the fixture did not load: {state.models.status if state else '?'}")


def run_held(page: Page, out: Path) -> None:
    """Run every condition; hold the model after HOLD_AFTER trials for the running picture;
    then cancel, and run a fresh sweep to the end."""
    page.evaluate(HOLD_AT_TRIAL, HOLD_AFTER)
    page.check("#sweep-run-through")  # no pause at the freeze: the pictures need a whole run
    page.click("#sweep-run-all")
    page.wait_for_function(HELD, arg=HOLD_AFTER, timeout=TIMEOUT_MS)
    shoot(page, out, "running", "#experiment")
    # The held generation's time would inflate the numbers: cancel it (an interruption, never
    # scored), open the gate, and run a fresh sweep for the results.
    page.click("#sweep-cancel")
    page.evaluate("() => window.__openGate()")
    wait_experiment(page, "cancelled")
    page.click("#sweep-new")
    page.click("#unfinished-new")  # the cancelled sweep is unfinished: the page asks first
    page.click("#sweep-run-all")
    ended = wait_experiment(page, "done error")
    if ended.experiment != "done":
        raise SystemExit(f"the sweep failed: {page.inner_text('#experiment-error')}")


def download(page: Page, button: str, path: Path) -> None:
    with page.expect_download(timeout=TIMEOUT_MS) as info:
        page.click(button)
    info.value.save_as(str(path))


def report_shots(browser: Browser, page: Page, out: Path) -> None:
    """Download the run; picture its report (the CLI's) and the run opened again in the page."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "fixture-run"
        folder.mkdir()
        download(page, "#download-sweep-trace", folder / "trace.json")
        download(page, "#download-predictions", folder / "predictions.json")
        html = folder / "report.html"
        subprocess.run(
            [sys.executable, "-m", "pyapp", "report", str(folder), "--out", str(html)],
            check=True,
            cwd=ROOT,
        )
        context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
        local_only(context)
        try:
            view = context.new_page()
            view.goto(html.as_uri())
            shoot(view, out, "report")
        finally:
            context.close()
        page.set_input_files(
            "#open-files", [str(folder / "trace.json"), str(folder / "predictions.json")]
        )
        wait_experiment(page, "viewing")
        shoot(page, out, "opened", "#open-trace")
        shoot(page, out, "opened-step4", "#results-heading")


def paused_shot(page: Page, out: Path) -> None:
    """Plain Run (no "run through"): measure, freeze, and the pause with the receipt shown
    beside the buttons, before any held-out result."""
    page.uncheck("#sweep-run-through")
    page.click("#sweep-run-all")  # back to the live sweep (done): a new one, to the freeze
    wait_page(
        page,
        lambda s: s.experiment == "frozen" and not s.sweep_running,
        TIMEOUT_MS,
        "the pause at the freeze",
    )
    shoot(page, out, "frozen", "#run-heading")


STUDY_PLAN = """name = "synthetic study: size-dependent on subject-ladder rungs 1-2, one seed"
[axes]
models = ["size-dependent"]
seeds = [5]
presets = ["subject-ladder"]
conditions = [["model-only", "controlled-chain"]]
[[exclude]]
preset = "subject-ladder/3"
[[exclude]]
preset = "subject-ladder/4"
"""
"""A small synthetic study (seconds, natively): the Study view's picture."""


def study_shot(page: Page, out: Path) -> None:
    """A study folder made here (`matrix`, then `study`), its study.json opened in the page."""
    with tempfile.TemporaryDirectory() as tmp:
        plan = Path(tmp) / "plan.toml"
        plan.write_text(STUDY_PLAN, encoding="utf-8")
        folder = Path(tmp) / "study"
        for command in (["matrix", str(plan), "--out", str(folder)], ["study", str(folder)]):
            subprocess.run(
                [sys.executable, "-m", "pyapp", *command], check=True, cwd=ROOT, capture_output=True
            )
        page.set_input_files("#study-file", str(folder / "study.json"))
        page.wait_for_selector("#study-view-body:not([hidden])", timeout=TIMEOUT_MS)
        shoot(page, out, "study-answer", "#study-heading")


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    options.add_argument("--site", type=Path, default=ROOT / "build" / "site")
    options.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = options.parse_args()
    if not (args.site / "index.html").is_file():
        print(f"error: {args.site} is not built (scripts/build_site.py)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    server, url = serve_in_thread(args.site)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            with new_page(browser, url) as page:
                wait_app(page, "ready error")
                shoot(page, args.out, "ready")
                load_fixture(page, args.out)
                run_held(page, args.out)
                shoot(page, args.out, "results", "#results-heading")  # the answer first
                page.click("#fold-scores > summary")  # the tables are folded: a reader unfolds
                shoot(page, args.out, "skill", "#scores .skill-table")
                shoot(page, args.out, "stored", "#stored-runs-heading")
                page.click("#fold-trials > summary")
                page.click("#sweep-results tbody button")
                shoot(page, args.out, "record")
                page.keyboard.press("Escape")
                report_shots(browser, page, args.out)
                paused_shot(page, args.out)
                study_shot(page, args.out)
            with new_page(browser, url, missing="**/pyodide.asm.wasm") as page:
                wait_app(page, "error")
                shoot(page, args.out, "error")
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
