"""Worker-side glue between the page and ``pyapp`` (runs in Pyodide inside a PyScript worker).

The page calls ONE exported function, ``handle(request_json) -> reply_json``, through
PyScript's ``xworker.sync`` channel. Every request is forwarded unchanged to
``pyapp.bridge.handle``, which owns the message contract (written down in
``site/app.js`` and ``docs/hosting.md``). The glue adds only what needs the browser
runtime itself:

* ``{"type": "sympy_load", "id": N}`` -> ``{"type": "sympy_load", "id": N, "ok": true,
  "result": {"packages": [...], "load_ms": float}}``: loads the local sympy + mpmath
  wheels by name from the generated ``pyodide-lock.json`` (never PyPI). A ``sympy_check``
  request loads them first too, so sympy is never on the boot path.
* the session requests (``sweep_*``, ``journal_generate``) go to
  ``pyapp.bridge.handle_async`` with a ``Context`` whose ``notify`` calls the page's
  ``xworker.sync.session_event(json)`` (trial_start / trial_done; the page persists the
  trace before answering) and whose ``cancel_requested`` calls
  ``xworker.sync.cancel_requested()`` (the experiment's Cancel flag).
* ``{"type": "model_generate", "id": N, "prompt": str, "caps": Caps JSON (optional)}`` ->
  ``result: {completion, provenance, timing}``: generates through
  ``pyapp.browser_model.BrowserModelAdapter`` (the Python path to the model worker; the
  adapter is async, ``pyapp.bridge.handle`` is not, so the glue answers it). The adapter's
  transport is ``pyscript.sync.model_call``: the page sets ``xworker.sync.model_call`` and
  PyScript's synchronous channel carries the JSON to the main thread and back.

This file is plain Python so that it can be read, linted and imported under CPython.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pyapp.bridge import handle_async as bridge_handle_async
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


def _notify(event: dict[str, JSON]) -> None:
    """Hand a session event to the page (``xworker.sync.session_event``). The page stores the
    trace in IndexedDB before it answers, so the next trial starts only after that."""
    _page().session_event(json.dumps(event))


def _cancel_requested() -> bool:
    """The page's Cancel flag (``xworker.sync.cancel_requested``), polled before each call."""
    return bool(_page().cancel_requested())


def _context() -> Any:
    """What pyapp.session needs from the browser: the loaded model, the page's event sink
    and its Cancel flag (both reached through PyScript's sync channel)."""
    from pyapp.session import Context

    return Context(adapter=_loaded_adapter, notify=_notify, cancel_requested=_cancel_requested)


def _model_adapter() -> Any:
    """The one BrowserModelAdapter of this worker (created on first use, under Pyodide)."""
    global _adapter
    if _adapter is None:
        from pyscript import sync  # type: ignore[import-not-found]  # only under PyScript

        from pyapp.browser_model import BrowserModelAdapter

        _adapter = BrowserModelAdapter(lambda request_json: str(sync.model_call(request_json)))
    return _adapter


def _reply(kind: str, request_id: Any, result: dict[str, Any] | JSON) -> str:
    return json.dumps({"type": kind, "id": request_id, "ok": True, "result": result})


def _error(code: str, kind: str, request_id: Any, message: str) -> str:
    return json.dumps(
        {"type": kind, "id": request_id, "ok": False, "error": {"code": code, "message": message}}
    )


async def _load_sympy() -> dict[str, Any]:
    """Load sympy and mpmath from the local lock (first call only)."""
    global _sympy_loaded
    started = time.perf_counter()
    if not _sympy_loaded:
        import pyodide_js  # type: ignore[import-not-found]  # only exists under Pyodide

        await pyodide_js.loadPackage(["mpmath", "sympy"])
        _sympy_loaded = True
    return {"packages": ["mpmath", "sympy"], "load_ms": (time.perf_counter() - started) * 1e3}


async def handle(request_json: str) -> str:
    """The single entry point the page calls: a JSON request string in, a JSON reply out."""
    try:
        request = json.loads(request_json)
        kind = request.get("type") if isinstance(request, dict) else None
        request_id = request.get("id") if isinstance(request, dict) else None
    except ValueError:
        kind = request_id = None
    if kind == "model_generate":
        from pyapp.browser_model import handle_model_generate

        try:
            result = await handle_model_generate(_model_adapter(), request)
        except ValueError as error:
            return _error("bad_request", kind, request_id, str(error))
        except Exception as error:  # reported to the page, never swallowed
            message = f"{type(error).__name__}: {error}"
            return _error("internal_error", kind, request_id, message)
        return _reply(kind, request_id, result)
    if kind in ("sympy_load", "sympy_check"):
        try:
            loaded = await _load_sympy()
        except Exception as error:  # reported to the page, never swallowed
            message = f"loading sympy failed: {error}"
            return _error("runtime_load_failed", str(kind), request_id, message)
        if kind == "sympy_load":
            return _reply(kind, request_id, loaded)
    return await bridge_handle_async(request_json, _context())


# PyScript exposes the names listed here on the worker's ``sync`` object for the page.
__export__ = ["handle"]
