"""The one entry point JavaScript calls: `handle_async(request_json, context) -> reply_json`.

The page's worker glue (site/python_worker/lab_worker.py) passes JSON strings in and out; no
Python lives in JavaScript. Every message is a record of `pyapp.protocol.messages` (one
envelope, one tag key `type`); `parse_request` validates what arrives before the handler runs,
and `HANDLERS` is the one table from request type to handler. A reply is always sent, so the
page never hangs: a refused request carries the code of the `RequestError` raised, a bug
`internal_error`.

What needs the browser runtime itself (loading sympy's wheels, the model worker's adapter,
the WebAssembly heap) comes in through the `Context` the glue builds; natively those
requests answer `bad_request` ("not available here").
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import Any, TypeVar

from pyapp import __version__
from pyapp.browser.model import handle_model_generate
from pyapp.browser.page_link import Context
from pyapp.browser.session import Session, browser_info, request_task_params
from pyapp.browser.study_view import open_study
from pyapp.browser.viewer import (
    compare_runs,
    open_run,
    predictions_plots,
    receipt_of,
    report_of,
)
from pyapp.conditions import run_supplied
from pyapp.errors import InputError, RecordError
from pyapp.protocol import RequestError
from pyapp.protocol import messages as m
from pyapp.protocol import results as r
from pyapp.records import (
    JSON,
    TaskRecord,
    document_text,
    from_json,
    loads_document,
    python_description,
    stored_trace,
    to_json,
)
from pyapp.report import RunInputError
from pyapp.tasks import GENERATOR_VERSION, check, generate

BridgeError = RequestError
"""Kept for callers of the old name: the boundary has one error class."""

Handler = Callable[[Any, Context], Any]
"""A handler: the request record and the context in, the request's `RESULT` record out (or an
awaitable of it)."""


def _hello(request: m.Hello, ctx: Context) -> r.Versions:
    return r.Versions(
        python=python_description(), pyapp_version=__version__, generator_version=GENERATOR_VERSION
    )


def _tasks(request: m.TasksRequest, ctx: Context) -> r.TaskSet:
    params = request_task_params(request.seed, request.params)
    return r.TaskSet(seed=params.seed, tasks=tuple(TaskRecord.of(t) for t in generate(params)))


def _run_supplied(request: m.RunSupplied, ctx: Context) -> r.SuppliedRun:
    browser = browser_info(request.environment)
    return r.SuppliedRun(
        trace=run_supplied(request_task_params(request.seed, request.params), browser)
    )


def _runtime(ctx: Context, name: str) -> Any:
    found = getattr(ctx, name)
    if found is None:
        raise RequestError("bad_request", f"{name} is not available here (only in the page)")
    return found


R = TypeVar("R")


def _typed(record: type[R], value: JSON, what: str) -> R:
    """What the worker runtime answered, as its record (a mismatch is a bug: internal_error)."""
    try:
        typed: R = from_json(record, value, f"${what}")
    except RecordError as error:
        raise TypeError(f"{what} answered {error}") from None
    return typed


async def _sympy_load(request: m.SympyLoad, ctx: Context) -> r.SympyLoaded:
    try:
        loaded: JSON = await _runtime(ctx, "load_sympy")()
    except RequestError:
        raise
    except Exception as error:  # reported to the page, never swallowed
        raise RequestError("runtime_load_failed", f"loading sympy failed: {error}") from None
    return _typed(r.SympyLoaded, loaded, "sympy_load")


async def _sympy_check(request: m.SympyCheck, ctx: Context) -> r.SympyChecked:
    if ctx.load_sympy is not None:
        await _sympy_load(m.SympyLoad(), ctx)
    checked = check(generate(request_task_params(request.seed, request.params)))
    return _typed(r.SympyChecked, to_json(checked), "sympy_check")


def _memory(request: m.Memory, ctx: Context) -> r.WorkerMemory:
    return _typed(r.WorkerMemory, _runtime(ctx, "memory")(), "memory")


async def _model_generate(request: m.ModelGenerate, ctx: Context) -> r.Generated:
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


def new_session() -> Session:
    """A fresh experiment session in place of the worker's one (a native sweep: each run in a
    process starts from nothing, as a page does)."""
    global SESSION
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


def _trace_open(request: m.TraceOpen, ctx: Context) -> r.OpenedTrace:
    docs = _documents(
        {"the trace": request.trace_json, "the predictions": request.predictions_json}
    )
    try:
        return open_run(docs["the trace"], docs["the predictions"])
    except RunInputError as error:
        raise RequestError("bad_request", str(error)) from None


def _compare_runs(request: m.CompareRuns, ctx: Context) -> r.ComparedRuns:
    docs = _documents({run.name: run.predictions_json for run in request.runs})
    traces = _documents({f"the trace of {run.name}": run.trace_json for run in request.runs})
    try:
        return compare_runs(
            [
                {
                    "name": r.name,
                    "predictions": docs[r.name],
                    "trace": traces[f"the trace of {r.name}"],
                }
                for r in request.runs
            ]
        )
    except RunInputError as error:
        raise RequestError("bad_request", str(error)) from None


def _run_report(request: m.RunReport, ctx: Context) -> r.ReportHtml:
    docs = _documents({"the trace": request.trace_json})
    try:
        return report_of(docs["the trace"])
    except RunInputError as error:
        raise RequestError("bad_request", str(error)) from None


def _receipt_remake(request: m.ReceiptRemake, ctx: Context) -> r.RemadeReceipt:
    docs = _documents({"the trace": request.trace_json})
    try:
        return receipt_of(docs["the trace"])
    except RunInputError as error:
        raise RequestError("bad_request", str(error)) from None


def _study_open(request: m.StudyOpen, ctx: Context) -> r.StudyOpened:
    docs = _documents({"the study": request.study_json})
    try:
        return open_study(docs["the study"])
    except RunInputError as error:
        raise RequestError("bad_request", str(error)) from None


def _stored_trace(request: m.StoredTraceRequest, ctx: Context) -> r.TraceText:
    try:
        trace = stored_trace(request.header_json, request.trials_json, request.changes_json)
    except RecordError as error:
        raise RequestError("bad_request", f"the stored sweep is not a trace: {error}") from None
    return r.TraceText(trace_json=document_text(trace, "trace"), header_json=None, trials_json=None)


def _synthetic_select(request: m.SyntheticSelect, ctx: Context) -> r.SyntheticChosen:
    return session().select_synthetic(request)


def _sweep_start(request: m.SweepStart, ctx: Context) -> r.SweepState:
    return session().start(request, ctx)


def _sweep_resume(request: m.SweepResume, ctx: Context) -> r.SweepState:
    return session().resume(request)


async def _sweep_run(request: m.SweepRun, ctx: Context) -> r.RunEnded:
    return await session().run(request, ctx)


def _sweep_freeze(request: m.SweepFreeze, ctx: Context) -> r.FreezeDone:
    return session().freeze()


def _sweep_state(request: m.SweepStateRequest, ctx: Context) -> r.SweepState:
    return session().state()


def _sweep_header(request: m.SweepHeader, ctx: Context) -> r.HeaderText:
    return r.HeaderText(header_json=session().header_json())


def _sweep_trace(request: m.SweepTrace, ctx: Context) -> r.TraceText:
    return session().trace_text(request.split)


def _sweep_predictions(request: m.SweepPredictions, ctx: Context) -> r.PredictionsText:
    text = session().predictions()
    return replace(text, plots=predictions_plots(text.predictions_json))


async def _journal_generate(request: m.JournalGenerate, ctx: Context) -> r.JournalKept:
    return await session().journal_generate(request, ctx)


HANDLERS: dict[type[m.Request], Handler] = {
    m.Hello: _hello,
    m.TasksRequest: _tasks,
    m.RunSupplied: _run_supplied,
    m.SympyLoad: _sympy_load,
    m.SympyCheck: _sympy_check,
    m.Memory: _memory,
    m.ModelGenerate: _model_generate,
    m.SyntheticSelect: _synthetic_select,
    m.SweepStart: _sweep_start,
    m.SweepResume: _sweep_resume,
    m.SweepRun: _sweep_run,
    m.SweepFreeze: _sweep_freeze,
    m.SweepStateRequest: _sweep_state,
    m.SweepHeader: _sweep_header,
    m.SweepTrace: _sweep_trace,
    m.SweepPredictions: _sweep_predictions,
    m.JournalGenerate: _journal_generate,
    m.TraceOpen: _trace_open,
    m.CompareRuns: _compare_runs,
    m.RunReport: _run_report,
    m.ReceiptRemake: _receipt_remake,
    m.StudyOpen: _study_open,
    m.StoredTraceRequest: _stored_trace,
}
"""The one handler table: request record → handler(record, context) → that request's
`RESULT` record (each handler's annotations say so; `handle_async` checks what it returns)."""


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
    """A JSON request in, a JSON reply out; every request type (`pyapp.protocol.messages`)."""
    kind: JSON = None
    request_id: JSON = None
    try:
        data = decode(request_json)
        if isinstance(data, dict):
            kind, request_id = data.get("type"), data.get("id")
        request = m.parse_request(data)
        if type(request) in m.PAGE_REQUESTS:  # the page's own (site/entry.js)
            raise RequestError("unknown_type", f"{kind} is answered by the page, not Python")
        result = HANDLERS[type(request)](request, context)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, request.RESULT):  # a bug: the reply would not fit the schema
            raise TypeError(f"{kind} answered a {type(result).__name__}, not a {request.RESULT}")
        return m.ok(kind, request_id, result)
    except RequestError as error:
        return m.failed(kind, request_id, error.code, error.message)
    except Exception as error:  # a bug: still answer, so the page never hangs
        return m.failed(kind, request_id, "internal_error", f"{type(error).__name__}: {error}")


def _no_model() -> Context:
    return Context(adapter=lambda: None, notify=lambda event, texts: None, cancel_requested=bool)


def handle(request_json: str) -> str:
    """`handle_async` without a browser (natively, for the requests that never wait)."""
    coroutine: Coroutine[Any, Any, str] = handle_async(request_json, _no_model())
    try:
        coroutine.send(None)
    except StopIteration as finished:
        return str(finished.value)
    coroutine.close()
    return m.failed(None, None, "bad_request", "this request needs the page's worker")
