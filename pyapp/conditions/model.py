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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

FinishReason = Literal["eos", "length", "bytes", "timeout", "cancelled", "error"]
Backend = Literal["webgpu", "wasm", "scripted"]


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
class ModelFailure:
    """Why a generation produced no usable completion."""

    code: str
    """`input_budget`, `not_loaded`, `timeout`, `cancelled`, `worker_error`, ..."""
    message: str
    """Human-readable explanation."""


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
    backend_requested: Literal["webgpu", "wasm"]
    """The backend the user chose."""
    backend_actual: Literal["webgpu", "wasm"] | None
    """The backend that runs the model (never silently different); null if none."""
    download_bytes: int | None
    """Bytes fetched for this load (0 when every file came from the browser cache)."""
    download_ms: float | None
    """Wall time of fetching the files."""
    setup_ms: float | None
    """Wall time from request to ready (download included)."""
    compilation_ms: None
    """Shader/graph compilation cannot be isolated from setup: always null."""


@dataclass(frozen=True)
class ModelProvenance:
    """Which model produced the completions, where it came from, and on what it ran."""

    model_id: str
    """Model id, e.g. `onnx-community/Qwen2.5-0.5B-Instruct` or the bundled fixture's id."""
    revision: str
    """The revision asked for: a pinned commit, or a branch such as `main` (unpinned)."""
    revision_served: str | None
    """The commit the hub said it served (its `X-Repo-Commit` header) on the last download;
    null when bundled, served from the browser cache, or not reported."""
    dtype: str
    """Weights' dtype as loaded (`fp32`, `q8`, `q4f16`, ...)."""
    source: Literal["bundled-fixture", "hub", "local-folder", "scripted"]
    """Where the files came from."""
    evidence: Literal["fixture", "model"]
    """`fixture` for the bundled test fixture or a scripted adapter: never model evidence."""
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
    cross_origin_isolated: bool | None
    """Whether the page was cross-origin isolated (SharedArrayBuffer, threads)."""
    user_agent: str | None
    """The browser's user agent; null natively."""
    flops: None
    """FLOPs are unavailable: always null, never zero."""
    loads: tuple[ModelLoad, ...]
    """Every load and reload in this session, in order."""


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
    return ModelProvenance(
        model_id=f"fixture/{name}",
        revision="none",
        revision_served=None,
        dtype="none",
        source="scripted",
        evidence="fixture",
        backend_requested="scripted",
        backend_actual="scripted",
        adapter=None,
        transformers_js_version=None,
        onnxruntime_version=None,
        threads=None,
        cross_origin_isolated=None,
        user_agent=None,
        flops=None,
        loads=(),
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
            )
        output_tokens = reply.output_tokens if reply.output_tokens is not None else len(reply.text)
        return Completion(
            text=reply.text,
            finish_reason=reply.finish_reason,
            input_tokens=input_tokens,
            output_tokens=output_tokens if reply.finish_reason is not None else None,
            output_token_ids=None,
            generation_ms=reply.generation_ms,
            time_to_first_token_ms=None,
            failure=reply.failure,
        )
