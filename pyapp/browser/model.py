"""The production model adapter: the transformers.js model worker, reached from Pyodide.

    BrowserModelAdapter(transport).generate(prompt, caps) -> Completion      (async)

Path of one call (measured in bench/generation.py):

    Python (PyScript worker) --transport--> main thread (workers/model_client.js, owns the
    model worker and the UI: consent, progress, Cancel) --postMessage--> model worker
    (workers/model_worker.js, transformers.js) --> back the same way

In the browser the transport is PyScript's synchronous channel to the main thread,
``pyscript.sync.model_call(request_json) -> reply_json`` (workers/lab_worker.py wires it).
The messages are the model-worker protocol written down in workers/model_worker.js and
docs/models.md: ``{"type": T, "id": N, ...}`` in, ``{"type": T, "id": N, "ok": bool,
"result" | "error": ...}`` out. Everything here except the transport is pure and runs
under CPython (tests/test_browser_model.py): requests are built and replies validated
with `pyapp.records.base.from_json`, so a malformed reply from JavaScript becomes a typed
failure, never a half-filled Completion.

Failure codes carried in `Completion.failure` (finish null = no generation ran):

    not_loaded      finish null    no model loaded (the user has not consented yet)
    input_budget    finish null    prompt over max_input_tokens (counted by the worker)
    busy            finish null    another generation is still running
    bad_request     finish null    the worker refused the request
    timeout         finish timeout deadline: soft stop, or terminate after the grace
    cancelled       finish cancelled  the user's Cancel
    terminated      finish error   the worker went away mid-call
    worker_error    finish error   the worker threw
    bad_reply       finish error   JavaScript answered something that is not a Completion
    bridge_error    finish error   the call to the main thread raised instead of answering
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pyapp.browser.messages import Generated, GenerationTiming
from pyapp.conditions.model import (
    WHOLE_TASK_CAPS,
    Caps,
    Completion,
    FinishReason,
    ModelFailure,
    ModelProvenance,
    input_hash_matches,
)
from pyapp.errors import RecordError, ReplyError
from pyapp.records.base import JSON, from_json, to_json

Transport = Callable[[str], "str | Awaitable[str]"]
"""Sends one request JSON to the main thread; returns (or resolves to) the reply JSON."""

NO_GENERATION_CODES = frozenset({"not_loaded", "input_budget", "busy", "bad_request"})
"""Failures that mean no token was generated: the completion's finish reason is null."""


@dataclass(frozen=True)
class CallTiming:
    """Where the time of one adapter call went (milliseconds)."""

    round_trip_ms: float
    """Python's wall time for the whole call (transport out and back)."""
    worker_ms: float | None
    """The model worker's own time from receiving the request to replying."""
    client_ms: float | None
    """The main thread's time from receiving the request to replying."""

    @property
    def bridge_overhead_ms(self) -> float | None:
        """Round trip minus the worker's own time: what the bridge costs per call."""
        return None if self.worker_ms is None else self.round_trip_ms - self.worker_ms


def caps_json(caps: Caps) -> dict[str, JSON]:
    result: dict[str, JSON] = to_json(caps)
    return result


def generate_request(request_id: int, prompt: str, caps: Caps) -> dict[str, JSON]:
    """The `generate` request of the model-worker protocol."""
    return {"type": "generate", "id": request_id, "prompt": prompt, "caps": caps_json(caps)}


def finish_for(code: str) -> FinishReason | None:
    """The finish reason a failure code implies (null: nothing was generated)."""
    if code in NO_GENERATION_CODES:
        return None
    if code == "timeout":
        return "timeout"
    if code == "cancelled":
        return "cancelled"
    return "error"


def failed(code: str, message: str) -> Completion:
    """A Completion that carries only a failure (finish null when nothing was generated)."""
    return Completion(
        text="",
        finish_reason=finish_for(code),
        input_tokens=None,
        output_tokens=None,
        output_token_ids=None,
        generation_ms=None,
        time_to_first_token_ms=None,
        failure=ModelFailure(code, message),
        input_text=None,
        input_sha256=None,
    )


def parse_reply(reply_json: str, request_type: str, request_id: int | None) -> dict[str, Any]:
    """Decode a reply envelope and check it answers the request; raises ReplyError."""
    try:
        reply = json.loads(reply_json)
    except (TypeError, ValueError) as error:
        raise ReplyError(f"reply is not JSON: {error}") from None
    if not isinstance(reply, dict):
        raise ReplyError("reply must be a JSON object")
    if reply.get("type") != request_type:
        raise ReplyError(f"reply type {reply.get('type')!r} does not answer {request_type!r}")
    if request_id is not None and reply.get("id") != request_id:
        raise ReplyError(f"reply id {reply.get('id')!r} does not answer request {request_id}")
    if reply.get("ok") is True:
        if "result" not in reply:
            raise ReplyError("ok reply without a result")
    elif reply.get("ok") is False:
        problem = reply.get("error")
        if not (
            isinstance(problem, dict)
            and isinstance(problem.get("code"), str)
            and isinstance(problem.get("message"), str)
        ):
            raise ReplyError("failed reply needs error {code, message}")
    else:
        raise ReplyError("reply needs a boolean 'ok'")
    return reply


def parse_completion(data: JSON) -> Completion:
    """Validate a Completion reported by JavaScript (every field, every type)."""
    completion: Completion = from_json(Completion, data)
    ids, count = completion.output_token_ids, completion.output_tokens
    if ids is not None and count is not None and len(ids) != count:
        raise RecordError("$.output_tokens", "does not match the number of output_token_ids")
    if completion.finish_reason is None and completion.failure is None:
        raise RecordError("$.failure", "a completion without a finish reason must say why")
    if not input_hash_matches(completion):
        raise RecordError("$.input_sha256", "is not the SHA-256 of input_text")
    return completion


def completion_from_reply(reply_json: str, request_id: int | None) -> Completion:
    """The Completion a `generate` reply stands for; protocol problems become failures."""
    try:
        reply = parse_reply(reply_json, "generate", request_id)
    except ReplyError as error:
        return failed("bad_reply", str(error))
    if not reply["ok"]:
        return failed(reply["error"]["code"], reply["error"]["message"])
    try:
        return parse_completion(reply["result"])
    except RecordError as error:
        return failed("bad_reply", f"the completion is malformed: {error}")


def timing_from_reply(reply_json: str, round_trip_ms: float) -> CallTiming:
    """The optional `timing` of a generate reply, with Python's own round trip."""
    try:
        timing = json.loads(reply_json).get("timing") or {}
    except (TypeError, ValueError, AttributeError):
        timing = {}

    def number(key: str) -> float | None:
        value = timing.get(key) if isinstance(timing, dict) else None
        return (
            float(value)
            if isinstance(value, (int, float)) and not isinstance(value, bool)
            else None
        )

    return CallTiming(round_trip_ms, number("worker_ms"), number("client_ms"))


def parse_provenance(data: JSON) -> ModelProvenance:
    """Validate the provenance the main thread reports."""
    provenance: ModelProvenance = from_json(ModelProvenance, data)
    return provenance


class BrowserModelAdapter:
    """A `pyapp.conditions.model.ModelAdapter` whose model runs in the browser's model worker."""

    def __init__(
        self, transport: Transport, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self._transport = transport
        self._clock = clock
        self._next_id = 1
        self.last_timing: CallTiming | None = None
        """Timing of the last generate call (bench, the page's "try a prompt" box)."""

    def _id(self) -> int:
        request_id = self._next_id
        self._next_id += 1
        return request_id

    async def _send(self, request: dict[str, JSON]) -> str:
        answer = self._transport(json.dumps(request))
        if inspect.isawaitable(answer):
            answer = await answer
        return str(answer)

    @property
    def provenance(self) -> ModelProvenance:
        request_id = self._id()
        answer = self._transport(json.dumps({"type": "provenance", "id": request_id}))
        if inspect.isawaitable(answer):
            if inspect.iscoroutine(answer):
                answer.close()
            raise TypeError("the provenance transport must answer synchronously")
        reply = parse_reply(str(answer), "provenance", request_id)
        if not reply["ok"]:
            raise ReplyError(
                f"provenance failed: {reply['error']['code']}: {reply['error']['message']}"
            )
        return parse_provenance(reply["result"])

    async def generate(self, prompt: str, caps: Caps) -> Completion:
        request_id = self._id()
        started = self._clock()
        try:
            reply_json = await self._send(generate_request(request_id, prompt, caps))
        except Exception as error:  # the bridge itself failed: infrastructure, never the model's
            self.last_timing = None
            return failed("bridge_error", f"the call to the main thread failed: {error}")
        round_trip_ms = (self._clock() - started) * 1e3
        self.last_timing = timing_from_reply(reply_json, round_trip_ms)
        return completion_from_reply(reply_json, request_id)


Exploration = Callable[[str, Caps, Completion], object]
"""Records a model call made outside a sweep trial (the session's journal)."""


async def handle_model_generate(
    adapter: BrowserModelAdapter, request: dict[str, Any], journal: Exploration | None = None
) -> Generated:
    """The page's `model_generate` request, answered through the adapter (the Python path).

    Fields: prompt (str), caps (optional Caps JSON; default WHOLE_TASK_CAPS).
    Result: `pyapp.browser.messages.Generated` (completion, provenance, timing). `journal`,
    when given, records the call (it is exploration, never a trial). Raises ValueError for
    a malformed request."""
    prompt = request.get("prompt")
    if not isinstance(prompt, str):
        raise ValueError("model_generate needs a string 'prompt'")
    caps = WHOLE_TASK_CAPS
    if request.get("caps") is not None:
        try:
            caps = from_json(Caps, request["caps"])
        except RecordError as error:
            raise ValueError(f"caps: {error}") from None
    completion = await adapter.generate(prompt, caps)
    if journal is not None:
        journal(prompt, caps, completion)
    timing = adapter.last_timing
    return Generated(
        completion=completion,
        provenance=adapter.provenance,
        timing=None
        if timing is None
        else GenerationTiming(
            round_trip_ms=timing.round_trip_ms,
            worker_ms=timing.worker_ms,
            client_ms=timing.client_ms,
            bridge_overhead_ms=timing.bridge_overhead_ms,
        ),
    )
