"""Fixtures shared by every test.

pytest-playwright's sync API runs its event loop in a greenlet of the main thread and
leaves that loop marked as the thread's running loop once a browser test has run (the
browser tests run first). Code under test that calls `asyncio.run` — `simulate`, `sweep`,
`study` in-process — then fails with "cannot be called from a running event loop", but
only in a whole-suite run. Outside tests/browser, each test runs with no running loop
marked, and the mark is put back afterwards for the browser fixtures still alive.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

BROWSER_TESTS = Path(__file__).parent / "browser"


@pytest.fixture(autouse=True)
def no_borrowed_event_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    borrowed = asyncio.events._get_running_loop()
    if borrowed is None or Path(str(request.node.path)).is_relative_to(BROWSER_TESTS):
        yield
        return
    asyncio.events._set_running_loop(None)
    try:
        yield
    finally:
        asyncio.events._set_running_loop(borrowed)
