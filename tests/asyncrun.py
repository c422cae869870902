"""Run code for tests in a fresh thread.

pytest-playwright's sync API keeps an event loop (and greenlets) alive in the main thread
once a browser test has run, so `asyncio.run` there fails ("cannot be called from a running
event loop") and CPython 3.11's `ast` can trip over the greenlets' recursion bookkeeping.
A fresh thread has neither.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def in_thread(function: Callable[..., T], *args: Any) -> T:
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(function, *args).result()


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coroutine)` in a fresh thread."""
    return in_thread(asyncio.run, coroutine)
