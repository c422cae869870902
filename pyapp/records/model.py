"""The model seam: budgets (`Caps`), what a generation returns (`Completion`), where the
model came from (`ModelProvenance`), and the adapter protocol the conditions call.

    adapter.generate(prompt_text, caps) -> Completion        (async)

In the browser the adapter is the transformers.js model worker reached through the
PyScript bridge (`pyapp.browser.model`); in tests it is a `ScriptedAdapter`, whose
outputs are fixtures and are labelled `evidence: "fixture"` — never model evidence.

Finish reasons: `eos` (the model ended its turn), `length` (hit `max_new_tokens`),
`bytes` (output passed `max_output_bytes`), `timeout` (deadline), `cancelled` (user or
controller), `error` (the worker failed). When no generation ran at all — the prompt was
over the input budget, or no model was loaded — `finish_reason` is null and `failure`
says why (`input_budget`, `not_loaded`, ...).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Literal, Protocol

from pyapp.records.synthetic_spec import SyntheticSpec

FinishReason = Literal["eos", "length", "bytes", "timeout", "cancelled", "error"]
Backend = Literal["webgpu", "wasm", "scripted", "synthetic", "native"]


@dataclass(frozen=True)
class Caps:
    """Budgets for one generation; they travel in each request to the model worker."""

    max_input_tokens: int
    """Most prompt tokens (counted with the model's tokenizer, chat template applied)."""
    max_new_tokens: int
    """Most generated tokens (`max_new_tokens`)."""
    max_output_bytes: int
    """Most UTF-8 bytes of decoded output; generation stops past it (finish `bytes`)."""
    timeout_ms: int
    """Deadline for the whole call; a soft stop, then a hard worker termination."""


WHOLE_TASK_CAPS = Caps(
    max_input_tokens=1024, max_new_tokens=256, max_output_bytes=16384, timeout_ms=60_000
)
"""Model only and model program: ≤1,024 input tokens, ≤256 output tokens, ≤60 s (the
output-bytes cap is the program language's 16,384 bytes)."""

CHAIN_CALL_CAPS = Caps(
    max_input_tokens=512, max_new_tokens=32, max_output_bytes=1024, timeout_ms=15_000
)
"""One controlled-chain call: ≤512 input tokens, ≤32 output tokens, ≤1,024 bytes, ≤15 s."""


@dataclass(frozen=True)
class RouteLimits:
    """Budgets of one controlled-chain route (the design's numbers are the defaults)."""

    max_calls: int = 6
    """Most primitive calls in a route."""
    retries: int = 0
    """Retries per call (none)."""
    max_input_tokens: int = 3072
    """Input tokens the route may reserve in all."""
    max_output_tokens: int = 256
    """Output tokens the route may reserve in all."""
    timeout_ms: int = 90_000
    """Wall time of the whole route."""
    call: Caps = CHAIN_CALL_CAPS
    """Caps of each call (512 input, 32 output tokens, 1,024 bytes, 15 s)."""


DEFAULT_ROUTE_LIMITS = RouteLimits()


@dataclass(frozen=True)
class GenerationSettings:
    """How every generation of a run decodes (the model worker's settings, written down)."""

    greedy: bool
    """Greedy decoding (`do_sample: false`): no sampling, no sampling seed."""
    max_new_tokens: str
    """Where `max_new_tokens` comes from: each request's caps."""
    stop_tokens: str
    """What stops a generation besides the caps: the model's own EOS token id(s)."""
    chat_template: str
    """How the prompt reaches the model: one user message through the model's own chat
    template, with the generation prompt added."""


GENERATION_SETTINGS = GenerationSettings(
    greedy=True,
    max_new_tokens="caps.max_new_tokens of each request",
    stop_tokens="the model's eos_token_id (generation_config.json / config.json)",
    chat_template=(
        "tokenizer.apply_chat_template([{role: user, content: prompt}], "
        "add_generation_prompt: true) with the model's tokenizer_config.json template"
    ),
)

SYNTHETIC_GENERATION = GenerationSettings(
    greedy=True,
    max_new_tokens=(
        "caps.max_new_tokens of each request (a synthetic reply is one integer or tree, "
        "never cut at it)"
    ),
    stop_tokens=(
        "none: a synthetic model has no tokenizer, so its token counts are ESTIMATES "
        "(UTF-8 bytes / 4, rounded up), not a tokenizer's"
    ),
    chat_template="none: a synthetic model has no chat template; it reads the prompt as it is",
)
"""How a synthetic model's generations are recorded (`pyapp.synthetic.adapter`): no
template, no tokenizer — its token counts are estimates, said here, where a trace records
how it generates (the trace's format keeps the counts' fields as they are)."""


def generation_of(model: ModelProvenance | None) -> GenerationSettings:
    """The generation record of a run of `model`: a synthetic model's says it has no
    template and estimates its tokens; every other model's is `GENERATION_SETTINGS`."""
    if model is not None and model.source == "synthetic":
        return SYNTHETIC_GENERATION
    return GENERATION_SETTINGS


@dataclass(frozen=True)
class ModelFailure:
    """Why a generation produced no usable completion."""

    code: str
    """`input_budget`, `not_loaded`, `timeout`, `cancelled`, `worker_error`, ..."""
    message: str
    """Human-readable explanation."""


NO_GENERATION_CODES = frozenset({"not_loaded", "input_budget", "busy", "bad_request"})
"""Failures that mean no token was generated: the completion's finish reason is null."""


def finish_for(code: str) -> FinishReason | None:
    """The finish reason a failure code implies (null: nothing was generated); the model
    worker and its client write every failed Completion with it."""
    if code in NO_GENERATION_CODES:
        return None
    if code == "timeout":
        return "timeout"
    if code == "cancelled":
        return "cancelled"
    return "error"


MAY_BE_LEFT_OUT = {"optional_on_read": True}
"""A field a later version added: absent from older documents and replies (read as its
default), and left out of the canonical JSON the hash chain hashes while at its default."""


@dataclass(frozen=True)
class HardStop:
    """How the client judged a generation it had to terminate (`worker.terminate()` after the
    grace): the model's `timeout`, or an infrastructure stall (docs/specification.md §4a)."""

    judged: Literal["timeout", "stalled"]
    """`timeout`: the worker produced a token within the stall window before the hard stop
    (the model was still generating: its deadline, scored); `stalled`: no token for longer
    than the window (the worker hung: an interruption, never scored, attempted again)."""
    silent_ms: float
    """Time from the last token the worker reported (or, before any, from the request being
    passed to the worker) to the hard stop."""
    window_ms: float
    """The stall window of the load that ran it: max(`floor_ms`, `step_factor` x `step_ms`)."""
    tokens: int
    """Tokens the worker reported before the hard stop."""
    step_ms: float | None
    """The load's per-token step time measured in its warm-up (the slowest decode step; the
    first step when the warm-up made one token); null when the load reported none."""
    floor_ms: int
    """The stated floor of the window (`client.stall_floor_ms`)."""
    step_factor: int
    """The multiple of the step time (`client.stall_step_factor`)."""
    deadline_ms: int
    """The call's deadline (`caps.timeout_ms`); the hard stop came `client.grace_ms` after it."""


@dataclass(frozen=True)
class Completion:
    """One generation as the adapter reports it: raw text, token use, finish, timing."""

    text: str
    """The raw completion text (special tokens removed), exactly as generated."""
    finish_reason: FinishReason | None
    """Why generation stopped; null when no generation ran."""
    input_tokens: int | None
    """Prompt tokens from the tokenizer's actual ids; null when the adapter cannot count."""
    output_tokens: int | None
    """Generated tokens from the actual ids; null when the adapter cannot count."""
    output_token_ids: tuple[int, ...] | None
    """The generated token ids; null when unavailable."""
    generation_ms: float | None
    """Generation wall time measured by the model worker; null when none ran."""
    time_to_first_token_ms: float | None
    """Time from the request to the first generated token; null when unavailable."""
    failure: ModelFailure | None
    """Set when generation did not run or broke down; null otherwise."""
    input_text: str | None
    """The input as the model saw it: the prompt after the model's chat template (special
    tokens included); null when no model rendered it (the request never reached one). A
    scripted adapter has no template: its input is the prompt itself."""
    input_sha256: str | None
    """SHA-256 of `input_text`'s UTF-8 bytes; null with it."""
    hard_stop: HardStop | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """Set when the client terminated the worker after the deadline's grace: how it judged
    the silence (the model's `timeout` or an infrastructure `stalled`); null otherwise and
    in documents older than trace/3."""
    load_wait_ms: float | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """Time this call waited for a pending load or reload before the model received it;
    never part of `generation_ms`, a trial's cost or a route's budget (null: no wait
    reported, as natively and in older documents)."""
    bridge_ms: float | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """The bridge's share of this call: Python's round trip less the main thread's own time
    (PyScript's sync channel, both ways); like `load_wait_ms`, never part of a trial's
    `generation_ms` or a route's budget (null: no bridge, as natively and in older
    documents)."""


@dataclass(frozen=True)
class AdapterInfo:
    """The GPU adapter behind WebGPU (null fields where the browser does not say)."""

    vendor: str | None
    """`GPUAdapterInfo.vendor`."""
    architecture: str | None
    """`GPUAdapterInfo.architecture`."""
    description: str | None
    """`GPUAdapterInfo.description`."""
    is_fallback_adapter: bool | None
    """True for a software (CPU-emulated) adapter such as SwiftShader."""
    shader_f16: bool | None
    """Whether the adapter offers the `shader-f16` feature (needed by q4f16/fp16 dtypes)."""


@dataclass(frozen=True)
class WasmInfo:
    """What the WASM runtime was measured to run with (not what was asked for)."""

    threads: int | None
    """ONNX Runtime Web's thread count after loading; null when unknown."""
    simd: bool
    """Whether this browser's WebAssembly validates a SIMD module (measured)."""
    cross_origin_isolated: bool
    """Whether the page was cross-origin isolated (needed for SharedArrayBuffer)."""
    threads_allowed: bool
    """Cross-origin isolated and `SharedArrayBuffer` present: more than one thread can run."""


@dataclass(frozen=True)
class ModelLoad:
    """One load or reload of the model: a session measurement, not a trial cost."""

    load_id: int
    """Counter within the session, from 1."""
    reason: Literal["consent", "reload-after-terminate", "reload"]
    """Why it loaded: first load after consent, or reload after a worker termination."""
    ok: bool
    """Whether the model was ready afterwards."""
    error_code: str | None
    """Why the load failed (`backend_unavailable`, `download_failed`, ...); null on success."""
    error_message: str | None
    """The failure in words; null on success."""
    backend_requested: Backend
    """The backend the user chose (`scripted` for a scripted test adapter, `synthetic` for a
    synthetic validation model)."""
    backend_actual: Backend | None
    """The backend that runs the model (never silently different); null if none."""
    download_bytes: int | None
    """Bytes fetched for this load (0 when every file came from the browser cache)."""
    download_ms: float | None
    """Wall time of fetching the files."""
    setup_ms: float | None
    """Wall time from request to ready (download included)."""
    compilation_ms: None
    """Shader/graph compilation cannot be isolated from setup: always null."""
    warmup_step_ms: tuple[float, ...] | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """The per-token step times of this load's warm-up generation (ms, in order; the first
    includes the warm-up prompt's prefill); null when not measured (older documents, a
    native adapter, a failed load)."""
    stall_window_ms: float | None = field(default=None, metadata=MAY_BE_LEFT_OUT)
    """The stall window derived from those steps (`HardStop.window_ms`): a generation of
    this load silent for longer before its hard stop is an infrastructure stall."""
    sequence: int | None = field(default=None, metadata={"optional_on_read": True})
    """Position in the sweep's timeline (trace/3: stamped when the sweep takes the load);
    absent where the worker reports it and in documents older than trace/3."""
    prev_sha256: str | None = field(default=None, metadata={"optional_on_read": True})
    """The trace's hash chain (`pyapp.records.chain`): SHA-256 of the canonical record
    before this one; absent where the worker reports it and before trace/3."""


TEST_FIXTURE_CONFIGS: frozenset[str] = frozenset(
    {
        "ac08f6c43634e14258f8834da0c45ea882226099d17be6f21e78e4094d620ab3",  # tiny-chat
        "e29bf54346518e3b8e87cc8c948b94e646f81f4fa95bf44b038394038451b522",  # stand-in llama
        "e12da2f5a53d0dc6429b5edd1f5270debdcc590d9731bbae148d7237baf822e2",  # stand-in qwen2
        "bec6355963a0a1c7ba77aa5f70603e728ef12ff9bac15f0617b9f441d11d98c9",  # stand-in qwen3
    }
)
"""SHA-256 of the test fixtures' `config.json` (tests/fixtures/tiny-chat and the catalogue
stand-ins; the same digests as site/models.json): a model loaded with one of these is a test
fixture wherever it was served from, never model evidence."""


@dataclass(frozen=True)
class ModelProvenance:
    """Which model produced the completions, where it came from, and on what it ran."""

    model_id: str
    """Model id, e.g. `onnx-community/Qwen2.5-0.5B-Instruct` or the bundled fixture's id."""
    revision: str
    """The revision asked for: a pinned commit, or a branch such as `main` (unpinned)."""
    revision_served: str | None
    """The commit the hub said it served (its `X-Repo-Commit` header): on the last download,
    or kept with the cached files when they came from the browser cache; null when bundled
    or unknown (`revision_served_note` says why)."""
    revision_served_note: str | None
    """Where `revision_served` comes from (`download`, `kept with the cached files`) or why
    it is unknown; null for a model not from a hub."""
    dtype: str
    """Weights' dtype as loaded (`fp32`, `q8`, `q4f16`, ...)."""
    chat_template_options: dict[str, bool | int | str]
    """Options passed to the model's own chat template with every prompt, from the catalogue
    entry (e.g. Qwen3's `enable_thinking: false`); `{}` when none. Part of the measurement
    condition: a frozen profile's identity includes them."""
    source: Literal[
        "bundled-fixture", "bundled-subject", "hub", "local-folder", "scripted", "synthetic"
    ]
    """Where the files came from (`synthetic`: a specification in `pyapp.synthetic`, no files;
    `bundled-subject`: the learned reference subject served by the site)."""
    evidence: Literal["fixture", "synthetic", "model", "reference-subject"]
    """`fixture` for the bundled test fixture or a scripted adapter, `synthetic` for a
    synthetic validation model: neither is ever model evidence. `reference-subject` for the
    locally trained reference subject (`pyapp.records.subject`): evidence about it, never
    about a pretrained LLM."""
    backend_requested: Backend
    """The backend the user chose."""
    backend_actual: Backend | None
    """The backend actually used; null when the load failed."""
    adapter: AdapterInfo | None
    """The WebGPU adapter; null on WASM or natively."""
    transformers_js_version: str | None
    """`@huggingface/transformers` version; null natively."""
    onnxruntime_version: str | None
    """ONNX Runtime Web version; null natively."""
    threads: int | None
    """WASM threads in use; null when unknown."""
    wasm: WasmInfo | None
    """The WASM runtime as measured (threads, SIMD, isolation); null on WebGPU or natively.
    With `adapter` (WebGPU), the measured side of `backend_actual`."""
    cross_origin_isolated: bool | None
    """Whether the page was cross-origin isolated (SharedArrayBuffer, threads)."""
    user_agent: str | None
    """The browser's user agent; null natively."""
    flops: None
    """FLOPs are unavailable: always null, never zero."""
    loads: tuple[ModelLoad, ...]
    """Every load and reload in this session, in order."""
    config_sha256: str | None = field(default=None, metadata={"optional_on_read": True})
    """SHA-256 of the `config.json` the last load used, as the model worker hashed it; null
    when none was seen (natively, or traces written before it was recorded). `reproduce`
    refuses `model` evidence whose config is a test fixture's (`TEST_FIXTURE_CONFIGS`)."""
    synthetic: SyntheticSpec | None = field(default=None, metadata={"optional_on_read": True})
    """The whole specification of a synthetic model (source `synthetic`: every error source
    and the cost model, `pyapp.records.synthetic_spec`); null for any other model and in traces
    written before it was recorded."""
    subject_recipe: dict[str, str | int] | None = field(
        default=None, metadata={"optional_on_read": True}
    )
    """The training recipe of the locally trained reference subject (`SUBJECT_RECIPE`:
    script, recipe digest, data generator version, steps, seeds, parameters) when this is it;
    null for any other model and in traces written before it existed."""


IDENTITY_FIELDS = (
    "model_id",
    "revision",
    "dtype",
    "chat_template_options",
    "source",
    "evidence",
    "backend_requested",
    "backend_actual",
    "adapter",
    "transformers_js_version",
    "onnxruntime_version",
    "threads",
    "wasm",
    "cross_origin_isolated",
)
"""What makes two loads the same model for a sweep (`revision_served` is compared apart:
a reload from the browser cache may not know it)."""


def load_identity(provenance: ModelProvenance) -> dict[str, object]:
    """The identity a sweep is bound to, as plain JSON values."""
    identity: dict[str, object] = {}
    for name in IDENTITY_FIELDS:
        value = getattr(provenance, name)
        identity[name] = asdict(value) if isinstance(value, (AdapterInfo, WasmInfo)) else value
    return identity


def identity_sha256(provenance: ModelProvenance) -> str:
    """SHA-256 of the canonical JSON of `load_identity` (recorded in every model trial)."""
    text = json.dumps(load_identity(provenance), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def identity_difference(bound: ModelProvenance, loaded: ModelProvenance) -> list[str]:
    """The identity fields in which `loaded` differs from the sweep's `bound` model. A sweep
    upgraded from trace/1 did not record the WASM runtime (`wasm` null on the WASM backend):
    that field is unknown, not different, so the sweep can continue."""
    a, b = load_identity(bound), load_identity(loaded)
    unrecorded = {"wasm"} if bound.wasm is None and bound.backend_actual == "wasm" else set()
    differ = [
        f"{k}: {a[k]!r} -> {b[k]!r}"
        for k in IDENTITY_FIELDS
        if a[k] != b[k] and k not in unrecorded
    ]
    served = (bound.revision_served, loaded.revision_served)
    if None not in served and served[0] != served[1]:
        differ.append(f"revision_served: {served[0]!r} -> {served[1]!r}")
    return differ


def current_load_id(provenance: ModelProvenance) -> int | None:
    """The load a generation now runs under: the last successful one (null when none)."""
    ok = [load.load_id for load in provenance.loads if load.ok]
    return ok[-1] if ok else None


def unpinned(provenance: ModelProvenance) -> bool:
    """A hub model asked for by a branch name (e.g. `main`), not a commit: the files behind
    it can change between two loads (shown as UNPINNED)."""
    revision = provenance.revision
    pinned = len(revision) == 40 and all(c in "0123456789abcdef" for c in revision)
    return provenance.source == "hub" and not pinned


def text_sha256(text: str) -> str:
    """SHA-256 of a text's UTF-8 bytes, a lone surrogate counted as U+FFFD (as the browser's
    TextEncoder encodes it), so the worker's hash and this one agree."""
    well_formed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return hashlib.sha256(well_formed.encode("utf-8")).hexdigest()


def revision_note(model: ModelProvenance) -> str:
    """Whether the files behind the numbers are pinned, in words (UNPINNED stands out)."""
    if model.source != "hub":
        return f"not a hub download ({model.source}): no revision to pin"
    if not unpinned(model):
        return f"pinned: {model.revision}"
    if model.revision_served is not None:
        return (
            f"UNPINNED: revision {model.revision!r}; the hub served commit {model.revision_served}"
        )
    return (
        f"UNPINNED: revision {model.revision!r}; the commit served is unknown (the hub did "
        "not report it, or the files came from the browser cache)"
    )


def input_hash_matches(completion: Completion) -> bool:
    """`input_sha256` is the hash of `input_text` (both null is fine too)."""
    if completion.input_text is None:
        return completion.input_sha256 is None
    return completion.input_sha256 == text_sha256(completion.input_text)


class ModelAdapter(Protocol):
    """What the conditions need from a model."""

    @property
    def provenance(self) -> ModelProvenance: ...

    async def generate(self, prompt: str, caps: Caps) -> Completion: ...


@dataclass(frozen=True)
class ScriptedReply:
    """A fixture reply for a scripted adapter (test fixture; not model evidence)."""

    text: str
    finish_reason: FinishReason | None = "eos"
    input_tokens: int | None = None
    output_tokens: int | None = None
    generation_ms: float | None = 1.0
    failure: ModelFailure | None = None


def scripted_provenance(name: str = "scripted") -> ModelProvenance:
    return native_provenance(f"fixture/{name}", "none", "scripted")


def native_provenance(
    model_id: str, revision: str, kind: Literal["scripted", "synthetic"]
) -> ModelProvenance:
    """Provenance of a model that runs natively with no files: a scripted fixture
    (evidence `fixture`) or a synthetic validation model (evidence `synthetic`)."""
    return ModelProvenance(
        model_id=model_id,
        revision=revision,
        revision_served=None,
        revision_served_note=None,
        chat_template_options={},
        dtype="none",
        source=kind,
        evidence="fixture" if kind == "scripted" else "synthetic",
        backend_requested=kind,
        backend_actual=kind,
        adapter=None,
        transformers_js_version=None,
        onnxruntime_version=None,
        threads=None,
        wasm=None,
        cross_origin_isolated=None,
        user_agent=None,
        flops=None,
        loads=(
            ModelLoad(
                load_id=1,
                reason="consent",
                ok=True,
                error_code=None,
                error_message=None,
                backend_requested=kind,
                backend_actual=kind,
                download_bytes=0,
                download_ms=None,
                setup_ms=None,
                compilation_ms=None,
            ),
        ),
    )


def over_input_budget(input_tokens: int, caps: Caps, prompt: str) -> Completion:
    """The completion of a prompt over its input cap: no generation ran (a native adapter
    has no chat template: its input is the prompt itself)."""
    return Completion(
        text="",
        finish_reason=None,
        input_tokens=input_tokens,
        output_tokens=None,
        output_token_ids=None,
        generation_ms=None,
        time_to_first_token_ms=None,
        failure=ModelFailure(
            "input_budget",
            f"prompt has {input_tokens} tokens, over the cap of {caps.max_input_tokens}",
        ),
        input_text=prompt,
        input_sha256=text_sha256(prompt),
    )


class ScriptedAdapter:
    """A test fixture: replies come from a function of the prompt (or a fixed mapping).

    Token counts are whitespace-free character counts unless the reply gives them; they
    are fixtures too. The adapter records every call it receives (`calls`)."""

    def __init__(
        self,
        replies: Mapping[str, ScriptedReply] | Callable[[str, Caps], ScriptedReply],
        name: str = "scripted",
    ) -> None:
        self._replies = replies
        self._provenance = scripted_provenance(name)
        self.calls: list[tuple[str, Caps]] = []

    @property
    def provenance(self) -> ModelProvenance:
        return self._provenance

    async def generate(self, prompt: str, caps: Caps) -> Completion:
        self.calls.append((prompt, caps))
        if callable(self._replies):
            reply = self._replies(prompt, caps)
        else:
            reply = self._replies[prompt]
        input_tokens = reply.input_tokens if reply.input_tokens is not None else len(prompt)
        if reply.failure is None and input_tokens > caps.max_input_tokens:
            return over_input_budget(input_tokens, caps, prompt)
        output_tokens = reply.output_tokens if reply.output_tokens is not None else len(reply.text)
        failure = reply.failure
        if failure is None and reply.finish_reason in ("timeout", "cancelled"):
            # as the model worker writes it: a deadline or a Cancel is that failure
            failure = ModelFailure(reply.finish_reason, f"generation ended: {reply.finish_reason}")
        return Completion(
            text=reply.text,
            finish_reason=reply.finish_reason,
            input_tokens=input_tokens,
            output_tokens=output_tokens if reply.finish_reason is not None else None,
            output_token_ids=None,
            generation_ms=reply.generation_ms if reply.finish_reason is not None else None,
            time_to_first_token_ms=None,
            failure=failure,
            input_text=prompt,
            input_sha256=text_sha256(prompt),
        )
