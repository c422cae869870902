"""Python's generate calls reach the model worker without the page's main thread in their path
once the page attached the model mailbox (issue 22 §3; site/common/model_mailbox.js). The page's
model client counts Python's generate calls by path (`callCounts()`: `sync` through PyScript's
sync channel, `page` through the mailbox but answered by the page, `direct` answered by the
model worker itself). The fixture is a TEST FIXTURE, never model evidence.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from browser_helpers import open_app
from playwright.sync_api import Browser, Page
from test_experiment import SMALL, load_fixture

from pyapp.protocol import RunEnded, SweepRun, SweepStart, SweepTrace, TraceText
from pyapp.sweep import send

pytestmark = pytest.mark.browser


def counts(page: Page) -> dict[str, int]:
    found: dict[str, int] = page.evaluate("() => window.lab.models.client.callCounts()")
    return found


def completions(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """The trace's generate calls' completions (trials' and chain calls')."""
    found = []
    for trial in trace["trials"]:
        if trial.get("completion") is not None:
            found.append(trial["completion"])
        if trial.get("chain") is not None:
            found += [call["completion"] for call in trial["chain"]["calls"]]
    return found


def test_a_sweeps_generate_calls_go_straight_to_the_model_worker(
    browser: Browser, site_url: str
) -> None:
    booted = open_app(browser, site_url)
    page = booted.page
    load_fixture(page)
    send(page, SweepStart(seed=1729, params=dict(SMALL), conditions=("model-only",)))
    first: RunEnded = send(page, SweepRun(phase="all"))  # the mailbox is attached on its way
    assert first.state.stage == "done", first.notice
    before = counts(page)
    both = ("model-only", "controlled-chain")
    send(page, SweepStart(seed=7, params=dict(SMALL), conditions=both))
    ended: RunEnded = send(page, SweepRun(phase="all"))
    assert ended.state.stage == "done", ended.notice
    after = counts(page)
    answer: TraceText = send(page, SweepTrace())
    trace = json.loads(answer.trace_json or "{}")
    calls = len(completions(trace))
    assert calls > 5
    # every one of the second sweep's calls went straight to the model worker
    assert after["direct"] - before["direct"] == calls, (before, after)
    assert (after["sync"], after["page"]) == (before["sync"], before["page"]), (before, after)
    assert before["sync"] + before["page"] <= 1  # at most one before the page attached it
    for completion in completions(trace):
        assert completion["bridge_ms"] is not None and completion["bridge_ms"] >= 0
    booted.context.close()
