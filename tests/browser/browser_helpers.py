"""Helpers for the browser tests: the request guard, booting a page, waiting on its state."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Route

from pyapp.sweep import CHROMIUM_ARGS as SHARED_ARGS
from pyapp.sweep import wait_booted

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "site"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = list(SHARED_ARGS)
"""The flags of PLATFORM-NOTES, kept in one place (`pyapp.sweep.chromium.CHROMIUM_ARGS`)."""


def missing(message: str) -> None:
    """Something the repository or the test command provides is missing: a skip on a
    developer's partial setup, a failure in CI (where `scripts/lab test` installed it all)."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


BOOT_TIMEOUT_MS = 90_000
"""The page gives up on its own after 60 s; the test waits a little longer for that."""
ACTION_TIMEOUT_MS = 120_000


@dataclass
class RequestLog:
    """Every URL a context requested, and the ones the guard refused."""

    urls: list[str] = field(default_factory=list)
    offenders: list[str] = field(default_factory=list)

    def requested(self, fragment: str) -> list[str]:
        return [url for url in self.urls if fragment in url]


def guard(context: BrowserContext) -> RequestLog:
    """Abort and record any request that would leave 127.0.0.1; log every request."""
    log = RequestLog()

    def check(route: Route) -> None:
        url = route.request.url
        parts = urlsplit(url)
        if parts.scheme in ("blob", "data") or parts.hostname == "127.0.0.1":
            route.fallback()
        else:
            log.offenders.append(url)
            route.abort("blockedbyclient")

    context.route("**/*", check)
    context.on("request", lambda request: log.urls.append(request.url))
    return log


@dataclass
class Booted:
    """A page loaded from the site, with its context's request log."""

    page: Page
    log: RequestLog
    context: BrowserContext


def wait_settled(page: Page, timeout_ms: int = BOOT_TIMEOUT_MS) -> str:
    """Wait until the app leaves `booting` (`page_state`); return the state (fails the test on
    `error`)."""
    state = wait_booted(page, timeout_ms)
    if state.app == "error":
        pytest.fail(f"the app reached data-state=error: {state.status}")
    return state.app


def open_app(browser: Browser, url: str, *, boot: bool = True) -> Booted:
    context = browser.new_context(accept_downloads=True)
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    log = guard(context)
    page = context.new_page()
    page.goto(url, timeout=30_000)
    booted = Booted(page, log, context)
    if boot:
        wait_settled(page)
        open_tools(page)
    return booted


UNFOLDED = "details.tool, details.results-fold, #viewing-more, #receipt-details"
"""What `open_tools` unfolds: the Tools, step 4's folded tables, a shown run's provenance
and what the freeze receipt holds."""


def open_tools(page: Page) -> None:
    """Unfold the Tools (task table, control, sympy, prompt box, journal) and step 4's tables
    and provenance, as a reader would to use and read them: the guided flow keeps them
    folded, out of the main path (tests/browser/test_results_page.py reads the page folded)."""
    page.evaluate(f"() => document.querySelectorAll({UNFOLDED!r}).forEach((d) => (d.open = true))")
