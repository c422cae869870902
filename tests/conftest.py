"""Hooks shared by every test.

pytest-playwright's sync API runs its event loop in a greenlet of the main thread and
leaves that loop marked as the thread's running loop once a browser test has run (the
browser tests run first). Code under test that calls `asyncio.run` — `simulate`, `sweep`,
`study` in-process, in a test or in a fixture of any scope — then fails with "cannot be
called from a running event loop", but only in a whole-suite run. Outside tests/browser,
every phase of a test (its fixtures' setup, the test, their teardown) runs with no running
loop marked; the mark is put back after each phase for the browser fixtures still alive.
The very last teardown keeps the mark: it closes the session's browser, whose greenlet
needs it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

BROWSER_TESTS = Path(__file__).parent / "browser"


@contextmanager
def no_borrowed_event_loop(item: pytest.Item) -> Iterator[None]:
    borrowed = asyncio.events._get_running_loop()
    if borrowed is None or Path(str(item.path)).is_relative_to(BROWSER_TESTS):
        yield
        return
    asyncio.events._set_running_loop(None)
    try:
        yield
    finally:
        asyncio.events._set_running_loop(borrowed)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with no_borrowed_event_loop(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with no_borrowed_event_loop(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if nextitem is None:  # the session's fixtures close here, the browser among them
        return (yield)
    with no_borrowed_event_loop(item):
        return (yield)
