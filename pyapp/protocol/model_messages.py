"""Every message between Python, the page's model client and the model worker, written once.

The channel (docs/models.md)::

    Python (pyapp/browser/model.py) --transport--> main thread (site/model_client.js)
        --postMessage--> model worker (site/model_worker/model_worker.js, transformers.js)

The envelope and tag key are those of `pyapp.protocol.envelope`, shared with the page ⇄ Python
channel (`type` both ways, an `id` pairing each reply with its request)::

    request  {"type": T, "id": N, ...the fields of T's request record}
    reply    {"type": T, "id": N, "ok": true,  "result": T's result record, ...extras}
           | {"type": T, "id": N, "ok": false, "error": {"code": C, "message": str}}
    event    {"type": E, "id": N (the request it belongs to), ...the fields of E's record}

`load`, `generate` and `interrupt` are answered by the worker (a `generate` passes through
the client, which adds deadlines); `provenance` by the client. Python sends `generate` and
`provenance`; the client sends `load`, `generate` and `interrupt`. The worker's `generate`
reply carries `elapsed_ms`, the client's `timing` (`ModelReply`).

The client then tells the Models panel (site/models_panel.js) what happened, in the same
shape (`PANEL_EVENTS`: the worker's `progress` as received, its own `state` and
`load_done`); and its two deadlines, `GRACE_MS` and `LOAD_TIMEOUT_MS`, are defined here.

From these records `python -m pyapp schema` generates `exports/model-messages.schema.json`,
`site/common/model_protocol.js` (the names, codes and the schema the workers validate with,
through `site/common/model_check.js`) and the message tables of docs/models.md, written by the
one generator (`pyapp.protocol.generate`) from `pyapp.protocol.model_exports.CHANNEL`; a test
fails when any of them drifts. To add a message: a record here, its entry in `REQUESTS` (with
its result in `RESULTS`) or `EVENTS`, its handler in the worker or client, then
`python -m pyapp schema`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from pyapp.errors import RecordError, ReplyError
from pyapp.protocol import envelope
from pyapp.protocol.results import ErrorBody
from pyapp.records import (
    JSON,
    AdapterInfo,
    Caps,
    Completion,
    HardStop,
    ModelLoad,
    ModelProvenance,
    WasmInfo,
    from_json,
)

MAY_BE_LEFT_OUT = {"optional_on_read": True}
"""A field's metadata: a message may leave it out (it reads as its default, null)."""


class ModelMessage:
    """Base of every request and event of this channel: `TYPE` is its tag."""

    TYPE: ClassVar[str]
    ANSWERED_BY: ClassVar[str] = ""


# ---- requests ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSpec:
    """The model to load, as the user consented to it (a catalogue entry or a free-text id)."""

    model_id: str
    """The model's id (`onnx-community/Qwen3-0.6B-ONNX`, or `fixture/tiny-chat` bundled)."""
    revision: str
    """The revision asked for: a commit, a branch (`main`), or `bundled`."""
    dtype: str
    """The weights' dtype (`fp32`, `q8`, `q4`, `q4f16`, ...)."""
    source: Literal["bundled-fixture", "bundled-subject", "hub", "local-folder"]
    """Where the files come from."""
    host: str | None
    """The hub's URL (`https://huggingface.co/`); source `hub` only, else null."""
    local_path: str | None
    """The URL path of the models folder (a path, not a URL); bundled only, else null."""
    chat_template_options: dict[str, bool | int | str]
    """Passed to the model's chat template with every prompt (`{enable_thinking: false}`);
    `{}` when none."""
    fixture_config_sha256: str | tuple[str, ...] | None
    """SHA-256 of the test fixtures' config.json: a loaded config.json with one of these
    digests labels the model a fixture, never model evidence."""
    supported_model_types: tuple[str, ...] | None
    """config.json `model_type`s the page accepts; another is refused after config.json only
    (`architecture_unsupported`); null: not checked."""


@dataclass(frozen=True)
class Load(ModelMessage):
    """Load one model (after consent); one model per worker, a new choice is a new worker."""

    TYPE: ClassVar[str] = "load"
    ANSWERED_BY: ClassVar[str] = "worker"
    model: ModelSpec
    """The model."""
    backend: Literal["webgpu", "wasm"]
    """The backend the user chose: never switched, never fallen back from."""
    wasm_base: str
    """URL of the folder holding the ONNX Runtime wasm files."""
    threads: int | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """WASM threads; null: every core when cross-origin isolated, else 1."""


@dataclass(frozen=True)
class ChatMessage:
    """One message of a chat, passed to the model's chat template."""

    role: str
    """`system`, `user` or `assistant`."""
    content: str
    """Its text."""


@dataclass(frozen=True)
class GenerateDebug:
    """Test hooks of a generate request (never set by a sweep of its own accord)."""

    step_delay_ms: int | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """Await this many ms before every generation step (the page's `?model_step_delay_ms`)."""
    stall_ms: int | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """Block the worker this many ms once (a step that never yields), so that only
    `terminate()` can stop it (the fault hook `hang@N`)."""


@dataclass(frozen=True)
class Generate(ModelMessage):
    """Generate greedily from a prompt (one user message) or a chat, within the caps."""

    TYPE: ClassVar[str] = "generate"
    ANSWERED_BY: ClassVar[str] = "worker (through the client)"
    caps: Caps
    """The budgets (tokens in and out, output bytes, deadline)."""
    prompt: str | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """The prompt, sent as one user message; exactly one of prompt and messages."""
    messages: tuple[ChatMessage, ...] | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """A whole chat, instead of prompt."""
    debug: GenerateDebug | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """Test hooks."""

    def __post_init__(self) -> None:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("generate needs exactly one of prompt and messages")


@dataclass(frozen=True)
class Interrupt(ModelMessage):
    """Stop the running generation between two steps (a soft stop)."""

    TYPE: ClassVar[str] = "interrupt"
    ANSWERED_BY: ClassVar[str] = "worker"
    target: int
    """The id of the running generate request."""
    reason: Literal["cancelled", "timeout"]
    """Why: the user's Cancel or the deadline (the completion's finish reason)."""


@dataclass(frozen=True)
class Provenance(ModelMessage):
    """Which model is loaded, from where, on what, and every load of the session."""

    TYPE: ClassVar[str] = "provenance"
    ANSWERED_BY: ClassVar[str] = "client"


REQUESTS: tuple[type[ModelMessage], ...] = (Load, Generate, Interrupt, Provenance)
"""Every request of the channel, in the order the docs list them."""

# ---- results ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileFetched:
    """One model file fetched over the network API during a load."""

    file: str
    """Its URL."""
    bytes: int
    """Its Content-Length (0 when the server did not say)."""


@dataclass(frozen=True)
class LoadResult:
    """What a load ran with and cost, as the worker measured it."""

    backend_actual: Literal["webgpu", "wasm"]
    """The backend that runs the model (always the one asked for)."""
    dtype: str
    """The dtype loaded."""
    transformers_js_version: str | None
    """`@huggingface/transformers` version."""
    onnxruntime_version: str | None
    """ONNX Runtime Web version."""
    threads: int | None
    """WASM threads ONNX Runtime uses."""
    cross_origin_isolated: bool
    """Whether the worker is cross-origin isolated (SharedArrayBuffer)."""
    user_agent: str
    """The browser's user agent."""
    adapter: AdapterInfo | None
    """The WebGPU adapter; null on WASM."""
    revision_served: str | None
    """The commit the hub said it served (`X-Repo-Commit`), or kept with the cached files."""
    chat_template_options: dict[str, bool | int | str]
    """The chat-template options in use."""
    revision_served_note: str | None
    """Where `revision_served` comes from, or why it is unknown; null when not from a hub."""
    wasm: WasmInfo | None
    """The WASM runtime as measured; null on WebGPU."""
    is_test_fixture: bool
    """The bundled fixture, or a config.json whose digest is a test fixture's."""
    config_sha256: str | None
    """SHA-256 of the config.json this load used; null when none was seen."""
    download_bytes: int
    """Bytes of model files fetched over the network (cache hits: 0)."""
    runtime_bytes: int
    """Bytes of the ONNX Runtime wasm fetched."""
    download_ms: float | None
    """First request to last file done; null when nothing was fetched."""
    setup_ms: float
    """The worker's time from the request to ready, warm-up included."""
    warmup_ms: float
    """The warm-up generation (at most `WARMUP_TOKENS` tokens)."""
    files: tuple[FileFetched, ...]
    """The model files fetched, in order."""
    warmup_step_ms: tuple[float, ...] | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """Each warm-up token's step time (ms, in order; the first includes the warm-up prompt's
    prefill): what the client derives this load's stall window from."""


@dataclass(frozen=True)
class InterruptResult:
    """Whether the interrupt reached the running generation."""

    interrupted: bool
    """True when `target` was running (it stops before its next step)."""


RESULTS: dict[str, type] = {
    Load.TYPE: LoadResult,
    Generate.TYPE: Completion,
    Interrupt.TYPE: InterruptResult,
    Provenance.TYPE: ModelProvenance,
}
"""The result record of each request type's ok reply."""


@dataclass(frozen=True)
class ReplyTiming:
    """Where the time of a generate went, added by the client."""

    worker_ms: float | None
    """The worker's own time from receiving the request to replying; null when it did not
    answer (terminated)."""
    client_ms: float
    """The client's time from receiving the request to replying (`load_wait_ms` included)."""
    load_wait_ms: float | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """Of `client_ms`, the time spent waiting for a pending load or reload before the request
    was passed to the worker (0 when none was pending): never the model's generation time."""


@dataclass(frozen=True)
class ModelReply:
    """The envelope of every reply on this channel (`pyapp.protocol.envelope.Reply`'s, plus the
    timings of a generate)."""

    type: str | None
    """The request's type (null when the request had none)."""
    id: int | None
    """The request's id (null when the request had none)."""
    ok: bool
    """Whether it succeeded."""
    result: JSON = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """The result record of the request's type (when ok)."""
    error: ErrorBody | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """Why it failed (when not ok): a code of `ERROR_CODES` and one line."""
    elapsed_ms: float | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """The worker's generate reply: its time from receiving the request to replying."""
    timing: ReplyTiming | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """The client's generate reply: the worker's and the client's time."""
    hard_stop: HardStop | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """The client's generate reply after it terminated the worker past the deadline's grace:
    how it judged the silence (the model's `timeout`: an ok reply; `stalled`: a failed reply
    with code `stalled`)."""

    def __post_init__(self) -> None:
        if self.ok and self.result is None:
            raise ValueError("an ok reply needs a result")
        if not self.ok and self.error is None:
            raise ValueError("a failed reply needs an error {code, message}")


# ---- events -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Progress(ModelMessage):
    """One file of a load progressed (transformers.js's progress callback, per file)."""

    TYPE: ClassVar[str] = "progress"
    id: int
    """The load request's id."""
    file: str
    """The file (as transformers.js names it, e.g. `onnx/model.onnx`)."""
    status: str
    """`initiate`, `download`, `progress`, `done` (transformers.js's words)."""
    loaded: float | None
    """Bytes so far; null when not said."""
    total: float | None
    """The file's size; null when not known."""


@dataclass(frozen=True)
class FirstToken(ModelMessage):
    """The running generation produced its first token (a Cancel test waits for it)."""

    TYPE: ClassVar[str] = "first_token"
    id: int
    """The generate request's id."""


@dataclass(frozen=True)
class Tokens(ModelMessage):
    """The running generation is producing tokens: sent with the first token and then at most
    every `TOKENS_EVERY_MS` (the client judges a hard stop by it: progress is tokens, since a
    worker blocked in a forward pass cannot send anything)."""

    TYPE: ClassVar[str] = "tokens"
    id: int
    """The generate request's id."""
    tokens: int
    """Tokens generated so far."""


EVENTS: tuple[type[ModelMessage], ...] = (Progress, FirstToken, Tokens)
"""Every event of the channel (the worker tells the client, unasked)."""


@dataclass(frozen=True)
class StateChanged(ModelMessage):
    """The client's model state changed (the Models panel redraws)."""

    TYPE: ClassVar[str] = "state"
    state: Literal["loading", "loaded", "unloaded", "failed"]
    """The state now: a load running, a model ready, the worker gone, or the last load failed."""
    reason: Literal["consent", "reload-after-terminate", "reload"] | None = field(
        default=None, metadata=MAY_BE_LEFT_OUT
    )
    """Why a load started (`loading` only)."""
    why: str | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """Why the model was unloaded, in words (`unloaded` only)."""
    record: ModelLoad | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """The load that ended (`loaded` and `failed` only)."""
    result: LoadResult | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """What the worker's load measured (`loaded` only)."""


@dataclass(frozen=True)
class LoadDone(ModelMessage):
    """A load or reload ended, loaded or not, and was recorded (the panel shows it)."""

    TYPE: ClassVar[str] = "load_done"
    record: ModelLoad
    """The session's record of the load."""
    result: LoadResult | None
    """What the worker's load measured; null when it failed."""


PANEL_EVENTS: tuple[type[ModelMessage], ...] = (Progress, StateChanged, LoadDone)
"""Every event the client tells the Models panel (site/models_panel.js): the worker's
`progress` as received, and the client's own. Same tag key, `type`; no request `id` of their
own (a `progress` keeps its load request's)."""

GRACE_MS = 1_500
"""After a deadline or a Cancel, how long the client waits for the worker's reply before
`terminate()` (docs/specification.md `client.grace_ms`)."""
LOAD_TIMEOUT_MS = 300_000
"""A load with no answer after this is a failed load, `load_timeout`
(docs/specification.md `client.load_timeout_ms`)."""
STALL_FLOOR_MS = 10_000
"""The stall window is never below this (docs/specification.md `client.stall_floor_ms`): a
slow model's prefill before its first token is not a hang."""
STALL_STEP_FACTOR = 20
"""The stall window is this many of the load's warm-up step times when that is above the
floor (docs/specification.md `client.stall_step_factor`)."""
WARMUP_TOKENS = 4
"""The warm-up generation makes at most this many tokens, timing each step
(docs/specification.md `client.warmup_tokens`)."""
TOKENS_EVERY_MS = 100
"""The model worker reports token progress (`tokens`) at most this often
(docs/specification.md `client.tokens_every_ms`)."""

ERROR_CODES: dict[str, str] = {
    "bad_request": "not an object, a missing or ill-typed field",
    "unknown_type": "no such request type",
    "busy": "the worker already holds (or is loading) a model, or a generation is running",
    "not_loaded": "no model is loaded (consent first, or the reload failed)",
    "backend_unavailable": "WebGPU asked for where there is no adapter (nothing downloaded)",
    "dtype_unsupported": "an f16 dtype on an adapter without `shader-f16` (nothing downloaded)",
    "architecture_unsupported": "config.json names a model type transformers.js cannot run",
    "download_failed": "a model file could not be fetched",
    "load_failed": "transformers.js could not load the model",
    "load_timeout": "the worker did not answer a load in time (client)",
    "worker_error": "the worker threw or crashed",
    "stalled": "no token for longer than the stall window before the hard stop (client)",
    "device_lost": "the runtime lost its GPU device",
    "out_of_memory": "the runtime ran out of memory",
    "terminated": "the client terminated the worker while the request was pending",
    "bad_reply": "the worker answered something that is not this protocol (client)",
}
"""Codes a failed reply carries (`error.code`), each with what it means."""

COMPLETION_CODES: dict[str, str] = {
    "input_budget": "the prompt is over max_input_tokens: nothing generated",
    "timeout": "the deadline stopped the generation (soft, or terminate after the grace)",
    "cancelled": "the user's Cancel stopped the generation",
    "worker_error": "generation stopped for no known reason",
}
"""Codes an ok generate reply's Completion carries in `failure`."""


# ---- building and reading ---------------------------------------------------------------------


def request(message: ModelMessage, request_id: int) -> dict[str, JSON]:
    """A request as sent: `{"type": T, "id": N, ...fields}`, fields left at null omitted."""
    return envelope.outgoing(message, request_id)


REQUEST_TYPES: dict[str, type[ModelMessage]] = {r.TYPE: r for r in REQUESTS}
EVENT_TYPES: dict[str, type[ModelMessage]] = {e.TYPE: e for e in (*EVENTS, *PANEL_EVENTS)}


def parse_message(data: JSON) -> ModelMessage:
    """The request or event record of a decoded message; raises RecordError."""
    kind = envelope.tag_of(data)
    assert isinstance(data, dict)
    if kind in REQUEST_TYPES:
        parsed: ModelMessage = envelope.read_record(REQUEST_TYPES[kind], data, request=True)
    elif kind in EVENT_TYPES:
        parsed = envelope.read_record(EVENT_TYPES[kind], data, request=False)
    else:
        raise RecordError("$.type", f"unknown message type {kind!r}")
    return parsed


def parse_reply(reply_json: str, request_type: str, request_id: int | None) -> ModelReply:
    """Decode a reply envelope and check that it answers the request; raises ReplyError.
    The result is checked by the caller against `RESULTS[request_type]`."""
    try:
        data = json.loads(reply_json)
    except (TypeError, ValueError) as error:
        raise ReplyError(f"reply is not JSON: {error}") from None
    envelope.check_reply(data, request_type, request_id)
    try:
        reply: ModelReply = from_json(ModelReply, data)
    except RecordError as error:
        if not data["ok"]:
            raise ReplyError(f"failed reply needs error {{code, message}}: {error}") from None
        raise ReplyError(f"malformed reply: {error}") from None
    return reply
