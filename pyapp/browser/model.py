"""The production model adapter: the transformers.js model worker, reached from Pyodide.

    BrowserModelAdapter(transport, direct=...).generate(prompt, caps) -> Completion  (async)

Path of one call through the transport (measured in bench/generation.py):

    Python (PyScript worker) --transport--> main thread (site/model_client.js, owns the
    model worker and the UI: consent, progress, Cancel) --postMessage--> model worker
    (site/model_worker/model_worker.js, transformers.js) --> back the same way

and of a generate call through `direct` (the model mailbox):

    Python --shared memory--> model worker --shared memory--> Python

In the browser the transport is PyScript's synchronous channel to the main thread,
``pyscript.sync.model_call(request_json) -> reply_json`` (site/python_worker/lab_worker.py
wires it),
and generate calls take the `direct` path once it can carry them: the model mailbox
(`pyapp.browser.mailbox`), straight to the model worker and back, the main thread
supervising but out of the call's path (docs/models.md).
The messages are the records of `pyapp.protocol.model_messages` (tables in docs/models.md):
requests are built from them (`Generate`, `Provenance`) and every reply is read into its
envelope (`ModelReply`) and result record (`Completion`, `ModelProvenance`) with
`pyapp.records.base.from_json`, so a malformed reply from JavaScript becomes a typed
failure, never a half-filled Completion. A generate reply's text is decoded once
(`read_generate_reply`: the Completion and the call's timing from one read); from then on
the records travel, never the text. Everything here except the transport is pure and
runs under CPython (tests/test_browser_model.py).

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
    stalled         finish error   the worker sent no token for longer than the stall window
                                   before the hard stop (infrastructure: an interruption)

A hard-stopped generation carries the client's judgement (`Completion.hard_stop`), and every
completion the time it waited for a pending (re)load (`Completion.load_wait_ms`, from the
reply's `timing`): never the model's generation time.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from pyapp.errors import RecordError, ReplyError
from pyapp.protocol import Generated, GenerationTiming, ModelReply, parse_reply
from pyapp.protocol import model_messages as channel
from pyapp.records import (
    JSON,
    NO_GENERATION_CODES,
    WHOLE_TASK_CAPS,
    Caps,
    Completion,
    ModelFailure,
    ModelProvenance,
    finish_for,
    from_json,
    input_hash_matches,
    is_subject,
    subject_of,
)

__all__ = [  # re-exported: reply checks live with the records, finish_for with Completion
    "NO_GENERATION_CODES",
    "ReplyError",
    "finish_for",
    "parse_reply",
]

Transport = Callable[[str], "str | Awaitable[str]"]
"""Sends one request JSON to the main thread; returns (or resolves to) the reply JSON."""

Direct = Callable[[str, int, int], "str | None"]
"""Sends one generate request JSON (with its id and deadline in ms) to the model worker without
the main thread (`pyapp.browser.mailbox.Mailbox.call`); None when it cannot (not attached
yet): the transport carries it then."""


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


def generate_request(request_id: int, prompt: str, caps: Caps) -> dict[str, JSON]:
    """The `generate` request of the model channel."""
    return channel.request(channel.Generate(caps=caps, prompt=prompt), request_id)


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


def read_generate_reply(
    reply_json: str, request_id: int | None, round_trip_ms: float
) -> tuple[Completion, CallTiming]:
    """The ONE read of a `generate` reply's text (issue 22 §3): its envelope decoded once, its
    result read once into the Completion it stands for, and where the call's time went. A
    protocol problem becomes the Completion's failure (`bad_reply`; no timing then). The
    client's hard-stop judgement and load wait (the envelope's) are kept with it."""
    try:
        reply = parse_reply(reply_json, channel.Generate.TYPE, request_id)
    except ReplyError as error:
        return failed("bad_reply", str(error)), CallTiming(round_trip_ms, None, None)
    return completion_of(reply), call_timing(reply, round_trip_ms)


def completion_from_reply(reply_json: str, request_id: int | None) -> Completion:
    """The Completion alone of a `generate` reply's text (`read_generate_reply`)."""
    return read_generate_reply(reply_json, request_id, 0.0)[0]


def completion_of(reply: ModelReply) -> Completion:
    """The Completion a decoded `generate` reply stands for (its result read once)."""
    wait = reply.timing.load_wait_ms if reply.timing is not None else None
    if reply.error is not None:
        completion = failed(reply.error.code, reply.error.message)
    else:
        try:
            completion = parse_completion(reply.result)
        except RecordError as error:
            completion = failed("bad_reply", f"the completion is malformed: {error}")
    if reply.hard_stop is None and wait is None:
        return completion
    return replace(completion, hard_stop=reply.hard_stop, load_wait_ms=wait)


def call_timing(reply: ModelReply, round_trip_ms: float) -> CallTiming:
    """The decoded reply's `timing`, with Python's own round trip."""
    timing = reply.timing
    if timing is None:
        return CallTiming(round_trip_ms, None, None)
    return CallTiming(round_trip_ms, timing.worker_ms, timing.client_ms)


def parse_provenance(data: JSON) -> ModelProvenance:
    """Validate the provenance the main thread reports. The locally trained reference subject
    (its source or its config.json digest, wherever it was served from) is labelled
    `reference-subject` with that subject's recipe (`pyapp.records.subject.subject_of`), never
    `model`."""
    provenance: ModelProvenance = from_json(ModelProvenance, data)
    if provenance.evidence == "model" and is_subject(provenance):
        provenance = replace(provenance, evidence="reference-subject")
    if provenance.evidence == "reference-subject" and provenance.subject_recipe is None:
        subject = subject_of(provenance.model_id, provenance.config_sha256)
        provenance = replace(provenance, subject_recipe=dict(subject.recipe))
    return provenance


class BrowserModelAdapter:
    """A `pyapp.records.model.ModelAdapter` whose model runs in the browser's model worker."""

    def __init__(
        self,
        transport: Transport,
        clock: Callable[[], float] = time.perf_counter,
        direct: Direct | None = None,
    ) -> None:
        self._transport = transport
        self._direct = direct
        self._clock = clock
        self._next_id = 1
        self.last_timing: CallTiming | None = None
        """Timing of the last generate call (bench, the page's "try a prompt" box)."""
        self._read: tuple[JSON, ModelProvenance] | None = None
        """The last provenance the page reported, as JSON and as read (an unchanged one is
        not read again)."""
        self.page_model_version: int | None = None
        """The page's model client version, as the page last said it during a run (each
        session event's answer, `pyapp.browser.session.PageLink`); None outside a run."""
        self._read_at: int | None = None
        """`page_model_version` when `_read` was fetched."""

    def _id(self) -> int:
        request_id = self._next_id
        self._next_id += 1
        return request_id

    async def _send(self, request_id: int, prompt: str, caps: Caps) -> str:
        """A generate request's reply JSON: through the mailbox when it can carry it, else
        through the transport."""
        text = json.dumps(generate_request(request_id, prompt, caps))
        if self._direct is not None:
            reply = self._direct(text, request_id, caps.timeout_ms)
            if reply is not None:
                return reply
        answer = self._transport(text)
        if inspect.isawaitable(answer):
            answer = await answer
        return str(answer)

    @property
    def provenance(self) -> ModelProvenance:
        """The page's model provenance, asked of the page unless it cannot have changed
        (issue 22 §3: no call to the page per trial): while the page says during a run that
        its model client's version is the one it said when the provenance was read
        (`page_model_version`: the client changes version with every load, reload, crash or
        termination, everything its provenance reports). A change after the page said it is
        seen at the next event (a trial that waited for a reload records the wait with its
        call, `load_wait_ms`), as a change after a read always was. Outside a run every read
        asks. A provenance equal to the last one is not read into its record again."""
        version = self.page_model_version
        if self._read is not None and version is not None and version == self._read_at:
            return self._read[1]
        request_id = self._id()
        message = channel.Provenance()
        answer = self._transport(json.dumps(channel.request(message, request_id)))
        if inspect.isawaitable(answer):
            if inspect.iscoroutine(answer):
                answer.close()
            raise TypeError("the provenance transport must answer synchronously")
        reply = parse_reply(str(answer), message.TYPE, request_id)
        if reply.error is not None:
            raise ReplyError(f"provenance failed: {reply.error.code}: {reply.error.message}")
        if self._read is None or self._read[0] != reply.result:
            self._read = (reply.result, parse_provenance(reply.result))
        self._read_at = version
        return self._read[1]

    async def generate(self, prompt: str, caps: Caps) -> Completion:
        request_id = self._id()
        started = self._clock()
        try:
            reply_json = await self._send(request_id, prompt, caps)
        except Exception as error:  # the bridge itself failed: infrastructure, never the model's
            self.last_timing = None
            return failed("bridge_error", f"the call to the model channel failed: {error}")
        round_trip_ms = (self._clock() - started) * 1e3
        completion, self.last_timing = read_generate_reply(reply_json, request_id, round_trip_ms)
        client_ms = self.last_timing.client_ms
        if client_ms is None:
            return completion
        # the sync channel's share, recorded apart from the model's time (issue 23 §1)
        return replace(completion, bridge_ms=max(0.0, round_trip_ms - client_ms))


Exploration = Callable[[str, Caps, Completion], object]
"""Records a model call made outside a sweep trial (the session's journal)."""


async def handle_model_generate(
    adapter: BrowserModelAdapter, request: dict[str, Any], journal: Exploration | None = None
) -> Generated:
    """The page's `model_generate` request, answered through the adapter (the Python path).

    Fields: prompt (str), caps (optional Caps JSON; default WHOLE_TASK_CAPS).
    Result: `pyapp.protocol.results.Generated` (completion, provenance, timing). `journal`,
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
