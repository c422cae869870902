"""The one entry point JavaScript calls: `handle_async(request_json, context) -> reply_json`.

The page's worker glue (workers/lab_worker.py) passes JSON strings in and out; no Python lives
in JavaScript. Every message is a record of `pyapp.browser.messages` (one envelope, one tag key
`type`); `parse_request` validates what arrives before the handler runs, and `HANDLERS` is
the one table from request type to handler. A reply is always sent, so the page never
hangs: a refused request carries the code of the `RequestError` raised, a bug
`internal_error`.

What needs the browser runtime itself (loading sympy's wheels, the model worker's adapter,
the WebAssembly heap) comes in through the `Context` the glue builds; natively those
requests answer `bad_request` ("not available here").
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from pyapp import __version__
from pyapp.browser import messages as m
from pyapp.browser.messages import RequestError
from pyapp.browser.session import Context, Session, browser_info, task_params
from pyapp.errors import InputError
from pyapp.records.base import JSON, to_json
from pyapp.records.documents import loads_document
from pyapp.tasks.taskset import GENERATOR_VERSION, generate

BridgeError = RequestError
"""Kept for callers of the old name: the boundary has one error class."""

Handler = Callable[[Any, Context], JSON | Awaitable[JSON]]


def _hello(request: m.Hello, ctx: Context) -> JSON:
    return {
        "python": sys.version,
        "pyapp_version": __version__,
        "generator_version": GENERATOR_VERSION,
    }


def _tasks(request: m.TasksRequest, ctx: Context) -> JSON:
    params = task_params(request.seed, request.params)
    return {"seed": params.seed, "tasks": [t.to_json() for t in generate(params)]}


def _run_supplied(request: m.RunSupplied, ctx: Context) -> JSON:
    from pyapp.conditions.interpret import run_supplied

    browser = browser_info(request.environment)
    return {"trace": to_json(run_supplied(task_params(request.seed, request.params), browser))}


def _runtime(ctx: Context, name: str) -> Any:
    found = getattr(ctx, name)
    if found is None:
        raise RequestError("bad_request", f"{name} is not available here (only in the page)")
    return found


async def _sympy_load(request: m.SympyLoad, ctx: Context) -> JSON:
    try:
        loaded: JSON = await _runtime(ctx, "load_sympy")()
    except RequestError:
        raise
    except Exception as error:  # reported to the page, never swallowed
        raise RequestError("runtime_load_failed", f"loading sympy failed: {error}") from None
    return loaded


async def _sympy_check(request: m.SympyCheck, ctx: Context) -> JSON:
    from pyapp.tasks.sympy_oracle import check

    if ctx.load_sympy is not None:
        await _sympy_load(m.SympyLoad(), ctx)
    return check(generate(task_params(request.seed, request.params)))


def _memory(request: m.Memory, ctx: Context) -> JSON:
    return _runtime(ctx, "memory")()


async def _model_generate(request: m.ModelGenerate, ctx: Context) -> JSON:
    from pyapp.browser.model import handle_model_generate

    adapter = _runtime(ctx, "model_adapter")()
    try:
        fields = {"prompt": request.prompt, "caps": request.caps}
        # "Try a prompt" is exploration: it lands in the session's journal, never in a trial
        return await handle_model_generate(adapter, fields, session().record_exploration)
    except ValueError as error:
        raise RequestError("bad_request", str(error)) from None


SESSION: Session | None = None


def session() -> Session:
    """The worker's one experiment session (created on first use)."""
    global SESSION
    if SESSION is None:
        SESSION = Session()
    return SESSION


def _documents(texts: dict[str, str | None]) -> dict[str, JSON]:
    """Documents read from the reader's disk, parsed (`bad_request` when one is not JSON)."""
    parsed: dict[str, JSON] = {}
    for name, text in texts.items():
        try:
            parsed[name] = None if text is None else loads_document(text, name)
        except InputError as error:
            raise RequestError("bad_request", f"{name} is not JSON: {error.message}") from None
    return parsed


def _trace_open(request: m.TraceOpen, ctx: Context) -> JSON:
    from pyapp.report.run_folder import RunInputError
    from pyapp.report.viewer import open_run

    docs = _documents(
        {"the trace": request.trace_json, "the predictions": request.predictions_json}
    )
    try:
        return open_run(docs["the trace"], docs["the predictions"])
    except RunInputError as error:
        raise RequestError("bad_request", str(error)) from None


def _compare_runs(request: m.CompareRuns, ctx: Context) -> JSON:
    from pyapp.report.run_folder import RunInputError
    from pyapp.report.viewer import compare_runs

    docs = _documents({run.name: run.predictions_json for run in request.runs})
    try:
        return compare_runs([{"name": r.name, "predictions": docs[r.name]} for r in request.runs])
    except RunInputError as error:
        raise RequestError("bad_request", str(error)) from None


HANDLERS: dict[str, Handler] = {
    "hello": _hello,
    "tasks": _tasks,
    "run_supplied": _run_supplied,
    "sympy_load": _sympy_load,
    "sympy_check": _sympy_check,
    "memory": _memory,
    "model_generate": _model_generate,
    "sweep_start": lambda r, ctx: session().start(r, ctx),
    "sweep_resume": lambda r, ctx: session().resume(r),
    "sweep_run": lambda r, ctx: session().run(r, ctx),
    "sweep_freeze": lambda r, ctx: session().freeze(),
    "sweep_state": lambda r, ctx: session().state(),
    "sweep_header": lambda r, ctx: {"header_json": session().header_json()},
    "sweep_trace": lambda r, ctx: session().trace_json(r.split),
    "sweep_predictions": lambda r, ctx: session().predictions(),
    "journal_generate": lambda r, ctx: session().journal_generate(r, ctx),
    "trace_open": _trace_open,
    "compare_runs": _compare_runs,
}
"""The one handler table: request type → handler(record, context)."""


def decode(request_json: object) -> JSON:
    """The request's JSON value under the input limits of `pyapp.records.documents` (deep
    JSON, NaN/Infinity, 41-digit numbers, repeated keys): `bad_request`, never a
    RecursionError or an `internal_error`."""
    if not isinstance(request_json, str):
        raise RequestError("bad_request", "request is not JSON text")
    try:
        return loads_document(request_json, "request")
    except InputError as error:
        raise RequestError("bad_request", f"request is not JSON: {error.message}") from None


async def handle_async(request_json: str, context: Context) -> str:
    """A JSON request in, a JSON reply out; every request type (`pyapp.browser.messages`)."""
    kind: JSON = None
    request_id: JSON = None
    try:
        data = decode(request_json)
        if isinstance(data, dict):
            kind, request_id = data.get("type"), data.get("id")
        request = m.parse_request(data)
        result = HANDLERS[request.TYPE](request, context)
        if inspect.isawaitable(result):
            result = await result
        return m.ok(kind, request_id, result)
    except RequestError as error:
        return m.failed(kind, request_id, error.code, error.message)
    except Exception as error:  # a bug: still answer, so the page never hangs
        return m.failed(kind, request_id, "internal_error", f"{type(error).__name__}: {error}")


def _no_model() -> Context:
    return Context(adapter=lambda: None, notify=lambda event: None, cancel_requested=bool)


def handle(request_json: str) -> str:
    """`handle_async` without a browser (natively, for the requests that never wait)."""
    coroutine: Coroutine[Any, Any, str] = handle_async(request_json, _no_model())
    try:
        coroutine.send(None)
    except StopIteration as finished:
        return str(finished.value)
    coroutine.close()
    return m.failed(None, None, "bad_request", "this request needs the page's worker")
