"""The one entry point JavaScript calls: `handle(request_json) -> reply_json`.

The page's worker glue passes JSON strings in and out; no Python lives in JavaScript.

Request:  {"type": T, "id": N, ...parameters}
Reply:    {"type": T, "id": N, "ok": true,  "result": {...}}
     or   {"type": T, "id": N, "ok": false, "error": {"code": str, "message": str}}

Types T, their parameters → result:
- `hello`: — → python, pyapp_version, generator_version
- `tasks`: seed (int), params (optional TaskParams JSON) → seed, tasks (list of task JSON)
- `run_supplied`: seed, params?, environment (BrowserInfo JSON, optional) → trace
- `sympy_check`: seed, params? → sympy_version, checked, agreements, mismatches
- the experiment-session requests (`sweep_*`, `journal_generate`): see `pyapp.session`;
  they go through `handle_async`, which needs the browser context (the loaded model).

Error codes: `bad_request` (not JSON, missing or ill-typed field), `unknown_type`,
`bad_params` (task parameters refused), `internal_error` (a bug: please report it).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from pyapp import __version__
from pyapp.records.base import JSON, RecordError, from_json, to_json
from pyapp.records.trace import BrowserInfo
from pyapp.session import SESSION_TYPES, Context, Session, SessionError
from pyapp.tasks.taskset import GENERATOR_VERSION, TaskParams, generate


class BridgeError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def task_params(request: dict[str, Any]) -> TaskParams:
    """TaskParams from a request's `seed` and optional `params` (defaults elsewhere)."""
    merged = to_json(TaskParams())
    params = request.get("params") or {}
    if not isinstance(params, dict):
        raise BridgeError("bad_params", "params must be an object")
    merged.update(params)
    if "seed" in request:
        merged["seed"] = request["seed"]
    try:
        result: TaskParams = from_json(TaskParams, merged)
    except RecordError as error:
        raise BridgeError("bad_params", str(error)) from None
    return result


def _hello(request: dict[str, Any]) -> JSON:
    return {
        "python": sys.version,
        "pyapp_version": __version__,
        "generator_version": GENERATOR_VERSION,
    }


def _tasks(request: dict[str, Any]) -> JSON:
    params = task_params(request)
    return {"seed": params.seed, "tasks": [t.to_json() for t in generate(params)]}


def _run_supplied(request: dict[str, Any]) -> JSON:
    from pyapp.conditions.interpret import run_supplied

    browser = None
    if request.get("environment") is not None:
        try:
            browser = from_json(BrowserInfo, request["environment"])
        except RecordError as error:
            raise BridgeError("bad_request", f"environment: {error}") from None
    return {"trace": to_json(run_supplied(task_params(request), browser))}


def _sympy_check(request: dict[str, Any]) -> JSON:
    from pyapp.tasks.sympy_oracle import check

    return check(generate(task_params(request)))


HANDLERS: dict[str, Callable[[dict[str, Any]], JSON]] = {
    "hello": _hello,
    "tasks": _tasks,
    "run_supplied": _run_supplied,
    "sympy_check": _sympy_check,
}


def handle(request_json: str) -> str:
    kind: object = None
    request_id: object = None
    try:
        try:
            request = json.loads(request_json)
        except (TypeError, ValueError) as error:
            raise BridgeError("bad_request", f"request is not JSON: {error}") from None
        if not isinstance(request, dict):
            raise BridgeError("bad_request", "request must be a JSON object")
        kind, request_id = request.get("type"), request.get("id")
        if not isinstance(kind, str):
            raise BridgeError("bad_request", "request needs a string 'type'")
        handler = HANDLERS.get(kind)
        if handler is None:
            raise BridgeError("unknown_type", f"unknown request type {kind!r}")
        reply = _ok(kind, request_id, handler(request))
    except Exception as error:  # BridgeError, or a bug: still answer, so the page never hangs
        reply = _failed(kind, request_id, error)
    return json.dumps(reply)


def _ok(kind: object, request_id: object, result: JSON) -> dict[str, JSON]:
    return {"type": kind, "id": request_id, "ok": True, "result": result}


def _failed(kind: object, request_id: object, error: Exception) -> dict[str, JSON]:
    if isinstance(error, (BridgeError, SessionError)):
        problem = {"code": error.code, "message": error.message}
    else:
        problem = {"code": "internal_error", "message": f"{type(error).__name__}: {error}"}
    return {"type": kind, "id": request_id, "ok": False, "error": problem}


SESSION: Session | None = None


def session() -> Session:
    """The worker's one experiment session (created on first use)."""
    global SESSION
    if SESSION is None:
        SESSION = Session()
    return SESSION


async def handle_async(request_json: str, context: Context) -> str:
    """Like `handle`, plus the session requests (`pyapp.session`), which need the loaded
    model and may await it. The worker glue calls this one."""
    try:
        request = json.loads(request_json)
    except (TypeError, ValueError):
        return handle(request_json)
    if not isinstance(request, dict) or request.get("type") not in SESSION_TYPES:
        return handle(request_json)
    kind, request_id = request["type"], request.get("id")
    try:
        reply = _ok(kind, request_id, await session().dispatch(kind, request, context))
    except Exception as error:  # SessionError, BridgeError, or a bug: still answer
        reply = _failed(kind, request_id, error)
    return json.dumps(reply)
