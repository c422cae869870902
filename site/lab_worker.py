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

This file is plain Python so that it can be read, linted and imported under CPython.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pyapp.bridge import handle as bridge_handle

_sympy_loaded = False


def _reply(kind: str, request_id: Any, result: dict[str, Any] | None, error: str = "") -> str:
    if error:
        return json.dumps(
            {
                "type": kind,
                "id": request_id,
                "ok": False,
                "error": {"code": "runtime_load_failed", "message": error},
            }
        )
    return json.dumps({"type": kind, "id": request_id, "ok": True, "result": result})


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
    if kind in ("sympy_load", "sympy_check"):
        try:
            loaded = await _load_sympy()
        except Exception as error:  # reported to the page, never swallowed
            return _reply(str(kind), request_id, None, f"loading sympy failed: {error}")
        if kind == "sympy_load":
            return _reply(kind, request_id, loaded)
    return bridge_handle(request_json)


# PyScript exposes the names listed here on the worker's ``sync`` object for the page.
__export__ = ["handle"]
