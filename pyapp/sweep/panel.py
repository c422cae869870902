"""The page's Models panel driven as a user drives it (Playwright): wait for the catalogue,
choose a model and a backend, review, consent, wait for the load to end. Shared by the
browser tests, the benches and scripts/screenshots.py (benches must not import tests); the
sweep's own driver goes through driver.js instead."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Page

CATALOGUE_READY = (
    "() => document.querySelector('#model-choice').options.length > 1"
    " && !document.querySelector('#backend-status').textContent.startsWith('Checking')"
)
"""True once the catalogue fills the model choice and the backend check has answered."""
FIXTURE_KEY = "fixture"
"""The catalogue key of the tiny-chat TEST FIXTURE (never model evidence)."""


def wait_catalogue(page: Page, timeout_ms: float = 30_000) -> None:
    """Wait until the model choice is filled and the backend check has answered."""
    page.wait_for_function(CATALOGUE_READY, timeout=timeout_ms)


def wait_models(page: Page, states: str, timeout_ms: float) -> str:
    """Wait until #models' data-state is one of `states` (space-separated); return it."""
    page.wait_for_function(
        f"() => {json.dumps(states.split())}"
        ".includes(document.querySelector('#models').dataset.state)",
        timeout=timeout_ms,
    )
    return page.get_attribute("#models", "data-state") or ""


def load_from_catalogue(
    page: Page,
    timeout_ms: float,
    *,
    key: str = FIXTURE_KEY,
    backend: str = "wasm",
    dtype: str | None = None,
    before_consent: Callable[[], None] | None = None,
) -> str:
    """Load catalogue entry `key` (by default the tiny-chat TEST FIXTURE) on `backend` (with
    `dtype`, or the panel's default) as a user does: choose it, "Load model…", then "Download
    and load" in the consent dialog (`before_consent` runs while the dialog is open). Returns
    how the load ended, `loaded` or `failed` (#model-status says why)."""
    wait_catalogue(page, timeout_ms)
    page.select_option("#model-choice", key)
    page.check(f'input[name="backend"][value="{backend}"]')
    if dtype is not None:
        page.select_option("#model-dtype", dtype)
    page.get_by_role("button", name="Load model…").click()
    if before_consent is not None:
        before_consent()
    page.get_by_role("button", name="Download and load").click()
    return wait_models(page, "loaded failed", timeout_ms)
