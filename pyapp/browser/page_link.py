"""The page as the experiment session sees it during a run: what the worker glue gives
(`Context`) and how a run's events and checks reach the page (`PageLink`).

Issue 22 §3 (the harness's own time per trial; data crosses each boundary once).

An event travels as an object with no document inside it; the documents it brings (a trial,
the records that joined the header, a receipt: `EventTexts`) go beside it as Python's own
JSON text, serialised once. Two ways to tell the page of an event:

* posted (`Context.post`): the event goes without waiting (the worker's postMessage; the
  page receives the posted events in the order they were posted, stores and draws them),
  and Python's checks read the page's Cancel flag and its model client's version from
  memory the page shares with the worker (`Context.flags`): no call to the page per trial;
* told (`Context.notify`): a synchronous call, answered at once with an `EventAnswer`
  (natively, and whenever the page has not attached the shared flags or reports trouble:
  a failed store is thrown there, so the run stops).

Every synchronous call to the page (`notify`, `cancel_requested`) is answered only after the
page has received every event posted before it, so the page sees events in order whichever
way they went, and a run's end waits for the page to have them all (`PageLink.__exit__`).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pyapp.browser.model import BrowserModelAdapter
from pyapp.errors import RecordError
from pyapp.protocol import EventAnswer, EventTexts
from pyapp.records import JSON, ModelAdapter, from_json, to_json

Notify = Callable[[dict[str, JSON], dict[str, JSON]], Awaitable[object] | object]
"""Hands an event and the texts beside it (`EventTexts` as JSON: `{trial, change, receipt}`,
each Python's text or null) to the page; its answer, when it is text, is an `EventAnswer`."""


@dataclass
class Context:
    """What the handlers need from the browser: the loaded model, a way to tell the page,
    the page's Cancel flag, and what only the worker runtime can do (absent natively)."""

    adapter: Callable[[], ModelAdapter | None]
    """The loaded model's adapter, or None when no model is loaded."""
    notify: Notify
    """Hands an event to the page, which answers at once (it stores and draws the event
    later, off the trial path) with an `EventAnswer`'s JSON text (anything else: not said)."""
    cancel_requested: Callable[[], bool]
    """The page's Cancel flag, asked synchronously (after the page has every posted event)
    where neither an event's answer nor the shared flags tell it (`PageLink`)."""
    model_adapter: Callable[[], Any] | None = None
    """The worker's BrowserModelAdapter, loaded or not (`model_generate`)."""
    load_sympy: Callable[[], Awaitable[dict[str, JSON]]] | None = None
    """Loads the local sympy and mpmath wheels (`sympy_load`, `sympy_check`)."""
    memory: Callable[[], dict[str, JSON]] | None = None
    """The worker's memory (`memory`)."""
    post: Callable[[dict[str, JSON], dict[str, JSON]], None] | None = None
    """Posts an event and the texts beside it to the page without waiting (in order with
    every other event)."""
    flags: Callable[[], EventAnswer | None] | None = None
    """The page's Cancel flag and model client version, read from memory shared with the page
    (no call); None while the page has not attached it, or reports trouble (then events are
    told, `notify`, where the page throws what went wrong)."""


class PageLink:
    """The page during one run. An event is posted when the page shares its flags, told
    otherwise. A told event is answered at once (`EventAnswer`, JSON text): the Cancel flag
    serves Python's next Cancel check, so only a check that no answer has served since the
    last one asks the page (`Context.cancel_requested`), and the model client's version lets
    the page's model adapter keep the provenance it read while the version stays the same.
    A posted event reads both from the shared flags instead, and so does each Cancel check:
    no call to the page per trial (issue 22 §3). An answer that is not `EventAnswer` text (a
    native test's page) says nothing."""

    def __init__(self, ctx: Context, adapter: ModelAdapter) -> None:
        self._ctx = ctx
        self._told: bool | None = None
        self._posted = False
        self._browser = adapter if isinstance(adapter, BrowserModelAdapter) else None

    def __enter__(self) -> PageLink:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._browser is not None:  # outside a run, nothing tells the adapter: it asks
            self._browser.page_model_version = None
        if self._posted:  # the run's reply must not overtake its events: a synchronous
            self._posted = False  # call is answered once the page has every posted one
            self._ctx.cancel_requested()

    def _shared(self) -> EventAnswer | None:
        return None if self._ctx.flags is None else self._ctx.flags()

    def _version(self, told: EventAnswer | None) -> None:
        if self._browser is not None:
            self._browser.page_model_version = None if told is None else told.model_version

    async def tell(self, message: dict[str, JSON], texts: EventTexts | None = None) -> None:
        beside = to_json(texts or NO_TEXTS)
        assert isinstance(beside, dict)
        shared = self._shared() if self._ctx.post is not None else None
        if shared is not None and self._ctx.post is not None:
            self._ctx.post(message, beside)
            self._posted = True
            self._told = None
            self._version(shared)
            return
        answer = self._ctx.notify(message, beside)
        if inspect.isawaitable(answer):
            answer = await answer
        told = _answer(answer)
        self._told = None if told is None else told.cancel
        self._version(told)

    def cancel_requested(self) -> bool:
        told, self._told = self._told, None
        if told is not None:
            return told
        shared = self._shared()
        return shared.cancel if shared is not None else bool(self._ctx.cancel_requested())


NO_TEXTS = EventTexts()
"""An event that brings no document."""


def _answer(answer: object) -> EventAnswer | None:
    """The page's answer to an event, read; None when it is not one (a bug is a TypeError)."""
    if not isinstance(answer, str):
        return None
    try:
        read: EventAnswer = from_json(EventAnswer, json.loads(answer), "$answer")
    except (ValueError, RecordError) as error:
        raise TypeError(f"the page answered an event with {answer[:80]!r}: {error}") from None
    return read
