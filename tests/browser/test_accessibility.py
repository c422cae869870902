"""Accessibility (issue 17): an axe-core audit of every main state, and the whole flow by
keyboard alone, with the tiny-chat TEST FIXTURE on WASM (a pipeline check, not a model).

axe-core is pinned in package.json (a devDependency: it is never copied into build/site and
never on the app's boot path); the test injects node_modules/axe-core/axe.min.js into the
page as an inline script, so the audit makes no request. Each state is audited in the light
and the dark colour scheme and must have no serious or critical violation.

States are held by events, never by timing: boot is held by answering Pyodide's request
only after the audit; the running state is held by a gate on the messages the page posts
to the model worker (an init script wraps `Worker`), opened after the audit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import BOOT_TIMEOUT_MS, ROOT, guard, missing, wait_settled
from playwright.sync_api import Browser, Page, Route

from pyapp.sweep import wait_catalogue

pytestmark = pytest.mark.browser

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
FIXTURE = ROOT / "tests" / "fixtures" / "tiny-chat"
MODEL_TIMEOUT_MS = 60_000
SWEEP_TIMEOUT_MS = 300_000
BLOCKING = ("serious", "critical")

GATE = (Path(__file__).parent / "model_gate.js").read_text(encoding="utf-8")
"""Test hook: holds messages to the model worker while `window.__gate` is pending."""


def audit(page: Page, state: str) -> None:
    """axe-core on the whole document, light and dark: no serious or critical violation."""
    if not AXE.is_file():
        missing(f"{AXE} missing: run `npm ci --ignore-scripts` (scripts/lab test does)")
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
    found: list[str] = []
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        violations: list[dict[str, Any]] = page.evaluate(
            """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
                 .map((v) => ({id: v.id, impact: v.impact, help: v.help,
                               nodes: v.nodes.map((n) => n.target.join(' '))}))"""
        )
        found += [
            f"{scheme}: {v['impact']} {v['id']} ({v['help']}): {v['nodes'][:5]}"
            for v in violations
            if v["impact"] in BLOCKING
        ]
    page.emulate_media(color_scheme="light")
    assert not found, f"axe in state {state!r}:\n" + "\n".join(found)


def focused(page: Page) -> dict[str, Any]:
    where: dict[str, Any] = page.evaluate(
        """() => { const e = document.activeElement; const s = getComputedStyle(e);
             return {tag: e.tagName, id: e.id, text: (e.textContent || '').trim().slice(0, 40),
                     visible: e.matches(':focus-visible') && s.outlineStyle !== 'none'
                              && parseFloat(s.outlineWidth) >= 2}; }"""
    )
    return where


def tab_to(page: Page, selector: str, *, back: bool = False, limit: int = 120) -> None:
    """Press Tab (Shift+Tab) until `selector` has focus; every stop must show its focus."""
    for _ in range(limit):
        if page.evaluate("(s) => document.activeElement.matches(s)", selector):
            return
        page.keyboard.press("Shift+Tab" if back else "Tab")
        where = focused(page)
        if where["tag"] != "BODY":
            assert where["visible"], f"focus is not visible on {where}"
    pytest.fail(f"{selector} not reachable with the keyboard in {limit} presses")


def state_of(page: Page, selector: str) -> str:
    return page.get_attribute(selector, "data-state") or ""


def wait_state(page: Page, selector: str, states: str, timeout_ms: int) -> str:
    page.wait_for_function(
        f"() => {json.dumps(states.split())}.includes(document.querySelector('{selector}')"
        ".dataset.state)",
        timeout=timeout_ms,
    )
    return state_of(page, selector)


def test_the_error_state_passes_the_audit(browser: Browser, site_url: str) -> None:
    context = browser.new_context()
    log = guard(context)
    try:
        context.route("**/pyodide.asm.wasm", lambda route: route.fulfill(status=404, body="gone"))
        page = context.new_page()
        page.goto(site_url, timeout=30_000)
        assert wait_state(page, "#app", "error", BOOT_TIMEOUT_MS) == "error"
        audit(page, "error")
    finally:
        context.close()
    assert not log.offenders


def choose_fixture_by_keyboard(page: Page) -> None:
    wait_catalogue(page)
    tab_to(page, "#model-choice")
    options = page.evaluate("() => document.querySelector('#model-choice').options.length")
    for _ in range(options):
        if page.input_value("#model-choice") == "fixture":
            break
        page.keyboard.press("ArrowDown")
    assert page.input_value("#model-choice") == "fixture"
    # nothing is preselected where WebGPU is unavailable (issue 25), and WebGPU is then not
    # offered (issue 41): Tab reaches WASM, Space chooses it; else ArrowDown from WebGPU
    none = page.locator('input[name="backend"]:checked').count() == 0
    tab_to(page, 'input[name="backend"][value="wasm"]' if none else 'input[name="backend"]:checked')
    page.keyboard.press("Space" if none else "ArrowDown")
    assert page.is_checked('input[name="backend"][value="wasm"]')


def test_the_whole_flow_by_keyboard_passes_the_audit_in_every_state(
    browser: Browser, site_url: str, tmp_path: Path
) -> None:
    if not (FIXTURE / "onnx" / "model.onnx").is_file():
        missing(f"no fixture model at {FIXTURE}")
    context = browser.new_context(accept_downloads=True)
    context.set_default_timeout(120_000)
    log = guard(context)
    context.add_init_script(GATE)
    held: list[Route] = []
    context.route("**/pyodide.asm.mjs", lambda route: held.append(route))
    try:
        page = context.new_page()
        with page.expect_request("**/pyodide.asm.mjs", timeout=30_000):
            page.goto(site_url, timeout=30_000)
        assert state_of(page, "#app") == "booting"
        audit(page, "booting")
        assert state_of(page, "#app") == "booting"  # still held: the audit saw booting
        context.unroute("**/pyodide.asm.mjs")
        for route in held:
            route.fallback()
        assert wait_settled(page) == "ready"
        audit(page, "ready")

        choose_fixture_by_keyboard(page)
        tab_to(page, "#model-review")
        page.keyboard.press("Enter")
        assert page.is_visible("#consent-dialog")
        assert focused(page)["id"] == "consent-decline"  # the safe choice has focus
        audit(page, "consent dialog")
        page.keyboard.press("Escape")  # declined: nothing is downloaded
        assert not page.is_visible("#consent-dialog")
        assert not log.requested("/models/fixture/")
        tab_to(page, "#model-review")
        page.keyboard.press("Enter")
        tab_to(page, "#consent-accept", back=True)
        page.keyboard.press("Enter")
        loaded = wait_state(page, "#models", "loaded failed", MODEL_TIMEOUT_MS)
        assert loaded == "loaded", page.inner_text("#model-status")
        audit(page, "model loaded (test fixture)")

        for condition in ("supplied-program", "model-program", "controlled-chain"):
            tab_to(page, f'input[name="condition"][value="{condition}"]')
            page.keyboard.press("Space")
        checked = 'input[name="condition"]:checked'
        assert page.eval_on_selector_all(checked, "boxes => boxes.map(b => b.value)") == [
            "model-only"
        ]
        page.evaluate("() => window.__closeGate()")
        tab_to(page, "#sweep-run-all")
        page.keyboard.press("Enter")
        page.wait_for_function(
            "() => document.querySelector('#experiment').dataset.state === 'running'"
            " && document.querySelector('#sweep-current').textContent.trim() !== ''",
            timeout=60_000,
        )
        audit(page, "running")
        assert state_of(page, "#experiment") == "running"  # held by the gate
        page.evaluate("() => window.__openGate()")
        # plain Run pauses at the freeze, the receipt shown; Enter on Run again goes on
        assert wait_state(page, "#experiment", "frozen error", SWEEP_TIMEOUT_MS) == "frozen"
        assert page.is_visible("#receipt-view")
        audit(page, "paused at the freeze")
        tab_to(page, "#sweep-run-all")
        page.keyboard.press("Enter")
        assert wait_state(page, "#experiment", "done error", SWEEP_TIMEOUT_MS) == "done"
        audit(page, "done")
        verdicts = page.eval_on_selector_all(
            "#sweep-results td.correct, #sweep-results td.incorrect",
            "cells => cells.map(c => c.textContent.trim())",
        )
        assert verdicts and all(v in ("correct", "wrong", "failed") for v in verdicts)

        tab_to(page, "#fold-trials > summary")  # every trial is folded below the answer
        page.keyboard.press("Enter")
        tab_to(page, "#sweep-results tbody button")
        page.keyboard.press("Enter")
        assert page.is_visible("#record-dialog")
        audit(page, "raw record dialog")
        page.keyboard.press("Escape")
        assert not page.is_visible("#record-dialog")

        tab_to(page, "#download-predictions")
        with page.expect_download(timeout=60_000) as info:
            page.keyboard.press("Enter")
        predictions = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
        assert predictions["evidence"] == "fixture"
    finally:
        context.close()
    assert not log.offenders, log.offenders


def test_axe_is_a_test_tool_only() -> None:
    """Pinned for the tests, never shipped: nothing in the built site is or loads axe-core."""
    package = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))
    assert package["devDependencies"]["axe-core"] == "4.14.1"
    assert "axe-core" not in package["dependencies"]
    site = ROOT / "build" / "site"
    if not (site / "index.html").is_file():
        missing(f"{site} is not built")
    shipped = [p for p in site.rglob("*") if "axe" in p.name.lower()]
    assert not shipped, shipped
    for page in (*site.glob("*.html"), *site.glob("*.js")):
        assert "axe-core" not in page.read_text(encoding="utf-8"), page
