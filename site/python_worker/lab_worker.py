"""Worker-side glue between the page and ``pyapp`` (runs in Pyodide inside a PyScript worker).

The page calls ONE exported function, ``handle(request_json) -> reply_json``, through
PyScript's ``xworker.sync`` channel. Every request goes unchanged to
``pyapp.browser.bridge.handle_async``: the messages are the records of
``pyapp.protocol.messages`` and ``pyapp.browser.bridge.HANDLERS`` is the one handler table.
The glue only builds the ``Context`` with what needs the browser runtime itself:

* ``post`` and ``flags``: a run's events (trial_start / trial_done with that trial only, ...)
  go to the page without waiting, by the worker's ``postMessage`` (``{lab_event: json,
  texts: {trial, change, receipt}, seq}``, in order: the event's JSON text, which holds no
  document, and the documents it brings beside it as Python's own text,
  ``pyapp.protocol.messages.EventTexts``), once the page has attached the flags it shares
  with this worker: an ``Int32Array`` over a ``SharedArrayBuffer`` created here and posted once
  (``{lab_flags: buffer}``; slots ``FLAG``: attached, Cancel, model client version + 1,
  trouble), read with no call (``pyapp.browser.page_link``; site/experiment_channel.js);
* ``notify``: the page's ``xworker.sync.session_event(json, posted, trial, change,
  receipt)`` (an event told
  synchronously: before the page attached the flags, or after it reported trouble; the
  page answers at once, ``pyapp.protocol.messages.EventAnswer`` text);
* ``cancel_requested``: ``xworker.sync.cancel_requested(posted)`` (the experiment's Cancel
  flag). Both synchronous calls say how many events were posted before them: the page
  answers once it has received them all, so events stay in order;
* ``adapter`` / ``model_adapter``: ``pyapp.browser.model.BrowserModelAdapter``: its generate
  calls go through the model mailbox (``pyapp.browser.mailbox``, a SharedArrayBuffer created
  here and posted once, ``{model_mailbox: buffer}``: straight to the model worker, the page
  supervising) once the page attached it; everything else, and generate before that, over
  ``pyscript.sync.model_call`` (the page sets ``xworker.sync.model_call``; PyScript's
  synchronous channel carries the JSON to the main thread's model client and back);
* ``load_sympy``: loads the local sympy + mpmath wheels by name from the generated
  ``pyodide-lock.json`` (never PyPI), on first use only, so sympy is never on the boot path;
* ``memory``: the worker's WebAssembly memory (Pyodide's heap: it grows, never shrinks) and
  the objects Python's collector tracks after a collection (``bench/scale.py`` reads both).

The four ``xworker.sync`` names are ``pyapp.protocol.page``'s (``HANDLE``, ``MODEL_CALL``,
``SESSION_EVENT``, ``CANCEL_REQUESTED``), never written here as literals.

This file is plain Python so that it can be read, linted and imported under CPython.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pyapp.browser import Mailbox
from pyapp.browser import handle_async as bridge_handle_async
from pyapp.protocol import CANCEL_REQUESTED, HANDLE, MODEL_CALL, SESSION_EVENT, EventAnswer
from pyapp.records import JSON

_sympy_loaded = False
_adapter: Any = None
FLAG = {"attached": 0, "cancel": 1, "model_version": 2, "trouble": 3, "stop_at": 4}
"""The slots of the flags the page shares with this worker (site/experiment_channel.js)."""
_flags: Any = None
_posted = 0
_done = 0  # trial_done events sent to the page (posted or told): the page counts them too


def _loaded_adapter() -> Any:
    """The adapter when the page has a model loaded (the session's `Context.adapter`)."""
    adapter = _model_adapter()
    try:
        return adapter if adapter.provenance.backend_actual is not None else None
    except Exception:  # no page client answering: no model
        return None


def _page() -> Any:
    """PyScript's synchronous channel to the page's main thread (only under PyScript)."""
    from pyscript import sync  # type: ignore[import-not-found]  # only under PyScript

    return sync


def _notify(event: dict[str, JSON], texts: dict[str, JSON]) -> str:
    """Tell the page of a session event (``xworker.sync.session_event``) once it has every
    posted one; the texts it brings go beside it, each an argument. The page answers at once
    (``EventAnswer`` text: its Cancel flag and its model client's version) and stores and
    draws the event later, off the trial path."""
    _count(event)
    beside = (texts.get("trial"), texts.get("change"), texts.get("receipt"))
    return str(getattr(_page(), SESSION_EVENT)(json.dumps(event), _posted, *beside))


def _count(event: dict[str, JSON]) -> None:
    """Count a trial_done sent to the page, for a driver's stop (the flag ``stop_at``)."""
    global _done
    if event.get("type") == "trial_done":
        _done += 1


def _cancel_requested() -> bool:
    """The page's Cancel flag (``xworker.sync.cancel_requested``), once it has every posted
    event."""
    return bool(getattr(_page(), CANCEL_REQUESTED)(_posted))


def _shared() -> Any:
    """The flags shared with the page: created and posted to it on first use."""
    global _flags
    if _flags is None:
        import js  # type: ignore[import-not-found]  # only exists under Pyodide
        from pyodide.ffi import to_js  # type: ignore[import-not-found]  # only under Pyodide

        _flags = js.Int32Array.new(js.SharedArrayBuffer.new(4 * len(FLAG)))
        js.postMessage(to_js({"lab_flags": _flags.buffer}, dict_converter=js.Object.fromEntries))
    return _flags


def _flags_read() -> EventAnswer | None:
    """The page's Cancel flag and model client version as it shares them; None until it has
    attached the flags, or while it reports trouble (events are then told, ``_notify``)."""
    flags = _shared()
    if not flags[FLAG["attached"]] or flags[FLAG["trouble"]]:
        return None
    version = int(flags[FLAG["model_version"]])
    stop_at = int(flags[FLAG["stop_at"]])  # a driver's stop: the Cancel once that many are done
    return EventAnswer(
        cancel=bool(flags[FLAG["cancel"]]) or 0 < stop_at <= _done,
        model_version=version - 1 if version else None,
    )


def _post(event: dict[str, JSON], texts: dict[str, JSON]) -> None:
    """Post a session event to the page without waiting (the worker's ``postMessage``), the
    texts it brings beside it."""
    import js  # type: ignore[import-not-found]  # only exists under Pyodide
    from pyodide.ffi import to_js  # type: ignore[import-not-found]  # only under Pyodide

    global _posted
    _count(event)
    _posted += 1
    message = {"lab_event": json.dumps(event), "texts": texts, "seq": _posted}
    js.postMessage(to_js(message, dict_converter=js.Object.fromEntries))


def _context() -> Any:
    """What the handlers need from the browser: the loaded model, the page's event sink and
    its Cancel flag (posted and shared, or through PyScript's sync channel), and the runtime's own
    abilities (the model adapter, sympy's wheels, the WebAssembly heap)."""
    from pyapp.browser import Context

    return Context(
        adapter=_loaded_adapter,
        notify=_notify,
        cancel_requested=_cancel_requested,
        post=_post,
        flags=_flags_read,
        model_adapter=_model_adapter,
        load_sympy=_load_sympy,
        memory=_memory,
    )


def _model_adapter() -> Any:
    """The one BrowserModelAdapter of this worker (created on first use, under Pyodide):
    generate calls through the model mailbox once the page attached it (`_mailbox`), every
    other call (and generate before that) through PyScript's sync channel."""
    global _adapter
    if _adapter is None:
        from pyscript import sync  # type: ignore[import-not-found]  # only under PyScript

        from pyapp.browser import BrowserModelAdapter

        _adapter = BrowserModelAdapter(
            lambda request_json: str(getattr(sync, MODEL_CALL)(request_json)),
            direct=_mailbox().call,
        )
    return _adapter


def _mailbox() -> Mailbox:
    """The model mailbox (``pyapp.browser.mailbox``): created and posted to the page."""
    import js  # type: ignore[import-not-found]  # only exists under Pyodide
    from pyodide.ffi import to_js  # type: ignore[import-not-found]  # only under Pyodide

    return Mailbox(js, lambda value: to_js(value, dict_converter=js.Object.fromEntries))


async def _load_sympy() -> dict[str, Any]:
    """Load sympy and mpmath from the local lock (first call only)."""
    global _sympy_loaded
    started = time.perf_counter()
    if not _sympy_loaded:
        import pyodide_js  # type: ignore[import-not-found]  # only exists under Pyodide

        await pyodide_js.loadPackage(["mpmath", "sympy"])
        _sympy_loaded = True
    return {"packages": ["mpmath", "sympy"], "load_ms": (time.perf_counter() - started) * 1e3}


def _memory() -> dict[str, Any]:
    """The worker's memory: Pyodide's WebAssembly heap and the objects Python's collector
    tracks after a collection (Pyodide's build reports no allocated blocks)."""
    import gc

    gc.collect()
    heap = None
    try:
        import pyodide_js  # type: ignore[import-not-found]  # only exists under Pyodide

        heap = int(pyodide_js._module.HEAPU8.byteLength)
    except Exception:  # natively (tests): no WebAssembly heap
        heap = None
    return {"wasm_heap_bytes": heap, "python_objects": len(gc.get_objects())}


async def handle(request_json: str) -> str:
    """The single entry point the page calls: a JSON request string in, a JSON reply out.
    Every request goes to ``pyapp.browser.bridge.handle_async`` (one handler table)."""
    return await bridge_handle_async(request_json, _context())


# PyScript exposes the names listed here on the worker's ``sync`` object for the page.
__export__ = [HANDLE]
