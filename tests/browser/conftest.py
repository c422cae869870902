"""Shared fixtures for the end-to-end tests of the static site (headless Debian Chromium).

* one static server per session over ``build/site`` (skipped with a message when the site
  is not built, except in CI where a missing build is a failure);
* Chromium launch arguments from PLATFORM-NOTES (no background networking, no QUIC);
* a guard on every browser context that aborts and reports any request whose host is not
  127.0.0.1 (``blob:``/``data:`` URLs stay inside the page and are allowed);
* one booted page per test module (boot takes seconds).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import (
    ACTION_TIMEOUT_MS,
    CHROMIUM,
    CHROMIUM_ARGS,
    SITE,
    Booted,
    RequestLog,
    guard,
    missing,
    open_app,
)
from playwright.sync_api import Browser, BrowserContext

from pyapp.host import serve_in_thread


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def site_url() -> Iterator[str]:
    """URL of the one static server (127.0.0.1, free port) serving build/site."""
    if not (SITE / "index.html").is_file():
        missing(f"{SITE} is not built: run `bash scripts/lab test` (or scripts/build_site.py)")
    if not Path(CHROMIUM).exists():
        missing(f"{CHROMIUM} missing: `apt-get install chromium` (scripts/lab test does)")
    server, url = serve_in_thread(SITE)
    yield url
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def app(browser: Browser, site_url: str) -> Iterator[Booted]:
    """One booted page of the app (seed 1729) shared by a test module."""
    booted = open_app(browser, site_url)
    yield booted
    booted.context.close()
    assert not booted.log.offenders, f"requests left 127.0.0.1: {booted.log.offenders}"


@pytest.fixture
def fresh_context(browser: Browser) -> Iterator[tuple[BrowserContext, RequestLog]]:
    """A new guarded context for one test (fails the test if a request leaves 127.0.0.1)."""
    context = browser.new_context(accept_downloads=True)
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    log = guard(context)
    yield context, log
    context.close()
    assert not log.offenders, f"requests left 127.0.0.1: {log.offenders}"
