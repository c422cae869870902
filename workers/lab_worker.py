"""Worker-side glue between the page and ``pyapp`` (runs in Pyodide inside a PyScript worker).

The page calls ONE exported function, ``handle(request_json) -> reply_json``, through
PyScript's ``xworker.sync`` channel. Every request goes unchanged to
``pyapp.browser.bridge.handle_async``: the messages are the records of
``pyapp.protocol.messages`` and ``pyapp.browser.bridge.HANDLERS`` is the one handler table.
The glue only builds the ``Context`` with what needs the browser runtime itself:

* ``notify``: the page's ``xworker.sync.session_event(json)`` (trial_start / trial_done with
  that trial only; the page answers at once, ``pyapp.protocol.messages.EventAnswer``
  text, and stores the trial off the trial path);
* ``cancel_requested``: ``xworker.sync.cancel_requested()`` (the experiment's Cancel flag);
* ``adapter`` / ``model_adapter``: ``pyapp.browser.model.BrowserModelAdapter`` over
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

from pyapp.browser.bridge import handle_async as bridge_handle_async
from pyapp.protocol.page import CANCEL_REQUESTED, HANDLE, MODEL_CALL, SESSION_EVENT
from pyapp.records.base import JSON

_sympy_loaded = False
_adapter: Any = None


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


def _notify(event: dict[str, JSON]) -> str:
    """Hand a session event to the page (``xworker.sync.session_event``). The page answers at
    once (``EventAnswer`` text: its Cancel flag and its model client's version) and stores and
    draws the event later, off the trial path."""
    return str(getattr(_page(), SESSION_EVENT)(json.dumps(event)))


def _cancel_requested() -> bool:
    """The page's Cancel flag (``xworker.sync.cancel_requested``), polled before each call."""
    return bool(getattr(_page(), CANCEL_REQUESTED)())


def _context() -> Any:
    """What the handlers need from the browser: the loaded model, the page's event sink and
    its Cancel flag (both reached through PyScript's sync channel), and the runtime's own
    abilities (the model adapter, sympy's wheels, the WebAssembly heap)."""
    from pyapp.browser.session import Context

    return Context(
        adapter=_loaded_adapter,
        notify=_notify,
        cancel_requested=_cancel_requested,
        model_adapter=_model_adapter,
        load_sympy=_load_sympy,
        memory=_memory,
    )


def _model_adapter() -> Any:
    """The one BrowserModelAdapter of this worker (created on first use, under Pyodide)."""
    global _adapter
    if _adapter is None:
        from pyscript import sync  # type: ignore[import-not-found]  # only under PyScript

        from pyapp.browser.model import BrowserModelAdapter

        _adapter = BrowserModelAdapter(
            lambda request_json: str(getattr(sync, MODEL_CALL)(request_json))
        )
    return _adapter


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
