"""A local ONNX model under onnxruntime as a `ModelAdapter`: the page's generation, natively.

    adapter = load_native(files, NativeIdentity(...))      # one InferenceSession, warmed up
    completion = await adapter.generate(prompt, caps)

Each call does what the page's model worker does (site/model_worker/model_worker.js `generate`,
site/model_worker/greedy.js): the chat template rendered once (`pyapp.native.template`), the input
tokenized and counted before generating (over `max_input_tokens`: no generation, failure
`input_budget`), then greedy decoding — the FIRST index of the largest logit of the last
position, one token at a time with the key/value cache fed back, as transformers.js feeds its
ONNX graph (`input_ids`, `attention_mask`, `position_ids`, `past_key_values.*`). After every
token three reasons to stop are each checked and kept once seen: the deadline (the call's
`caps.timeout_ms` from its start: 60 s for a whole task, 15 s for a chain call, less when
the route's 90 s leave less; finish `timeout`, failure `timeout`), the output-bytes cap
(finish `bytes`) and, in the worker, a Cancel (natively the sweep stops between trials
instead). Then an EOS id or `max_new_tokens` ends it. The finish reason is chosen in the
worker's order: timeout, eos, bytes, length. The deadline is checked between tokens: one
forward pass is not interrupted (the page's hard stop after a grace has no native
counterpart; `hard_stop` stays null).

The provenance says backend `native`, the onnxruntime version and its thread count, the
config.json digest, and the evidence: `fixture` for a test fixture's config (the tiny-chat
fixture, the stand-ins), `reference-subject` (with its recipe) for the subject's, else `model`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from pyapp.native.folder import ModelFiles, NativeModelError
from pyapp.native.template import ChatTemplate
from pyapp.native.text import TokenizerText, tokenizer_data
from pyapp.records import (
    TEST_FIXTURE_CONFIGS,
    Caps,
    Completion,
    FinishReason,
    ModelFailure,
    ModelLoad,
    ModelProvenance,
    subject_by_config,
    subject_of,
    text_sha256,
)

Source = Literal["bundled-fixture", "bundled-subject", "local-folder"]
THREADS = 1
"""onnxruntime's intra-op threads: one, so that cells run side by side (a matrix asks one CPU
per native cell) and a run does not depend on the machine's core count."""
WARMUP_TOKENS = 2
"""Tokens of the warm-up generation after loading (not a trial; lazy set-up paid there)."""
FEEDS = ("input_ids", "attention_mask", "position_ids")
"""The graph inputs fed besides the key/value cache."""


@dataclass(frozen=True)
class NativeIdentity:
    """Who the model is, beside its files (the sweep knows it from the catalogue)."""

    model_id: str
    """The model id (`fixture/tiny-chat`, `subject/reference-2`, an org/name id)."""
    revision: str
    """The revision asked for (`bundled` for the bundled fixture and subject)."""
    source: Source
    """Where the files came from."""
    chat_template_options: dict[str, bool | int | str]
    """The catalogue's template options (Qwen3's `enable_thinking: false`), or `{}`."""


class OnnxGreedy:
    """One InferenceSession and the greedy loop over it."""

    def __init__(self, files: ModelFiles) -> None:
        try:
            import numpy
            import onnxruntime
        except ImportError:
            raise NativeModelError(
                "native_unavailable",
                "the native backend needs onnxruntime and numpy: pip install -e .[native]"
                " (or -r requirements-dev.txt)",
            ) from None
        self.np: Any = numpy
        self.version = str(onnxruntime.__version__)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = THREADS
        options.inter_op_num_threads = 1
        try:
            self.session = onnxruntime.InferenceSession(
                str(files.onnx), options, providers=["CPUExecutionProvider"]
            )
        except Exception as error:  # onnxruntime's own exceptions: a graph it cannot run
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise NativeModelError("load_failed", f"onnxruntime: {first[:300]}") from None
        inputs = self.session.get_inputs()
        self.names = {i.name for i in inputs}
        unknown = sorted(
            n for n in self.names if n not in FEEDS and not n.startswith("past_key_values.")
        )
        if unknown or "input_ids" not in self.names:
            raise NativeModelError(
                "load_failed", f"the graph takes inputs the native loop does not feed: {unknown}"
            )
        self.outputs = [o.name for o in self.session.get_outputs()]
        config = files.config
        heads = config.get("num_key_value_heads") or config.get("num_attention_heads")
        dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
        self.empty: dict[str, Any] = {}
        for i in inputs:
            if i.name.startswith("past_key_values."):
                shape = [1, heads, 0, dim]
                for axis, size in enumerate(i.shape):
                    if isinstance(size, int) and axis != 2:
                        shape[axis] = size
                kind = numpy.float16 if "float16" in i.type else numpy.float32
                self.empty[i.name] = numpy.zeros(shape, dtype=kind)

    def forward(self, step: list[int], past: dict[str, Any], length: int) -> tuple[int, Any]:
        """One forward pass: the next token (first index of the largest last-position
        logit; NaN never wins) and the cache after it."""
        row, after = self.logits(step, past, length)
        return int(row.argmax()), after

    def logits(self, step: list[int], past: dict[str, Any], length: int) -> tuple[Any, Any]:
        """One forward pass: the last position's logits (float32, NaN as -inf) and the cache
        after it."""
        np = self.np
        feed: dict[str, Any] = {"input_ids": np.array([step], dtype=np.int64), **past}
        if "attention_mask" in self.names:
            feed["attention_mask"] = np.ones((1, length), dtype=np.int64)
        if "position_ids" in self.names:
            feed["position_ids"] = np.arange(length - len(step), length, dtype=np.int64)[None]
        result = dict(zip(self.outputs, self.session.run(self.outputs, feed), strict=True))
        row = result["logits"][0, -1].astype(np.float32)
        if np.isnan(row).any():
            row = np.where(np.isnan(row), -np.inf, row)
        after = {n: result[n.replace("past_key_values.", "present.", 1)] for n in past}
        return row, after


def decode_loop(
    model: OnnxGreedy, prompt: list[int], max_new: int, eos: frozenset[int], stop: Any
) -> tuple[list[int], float | None]:
    """site/model_worker/greedy.js `greedyGenerate`: generated ids and the time of the first token
    (`time.perf_counter`); `stop(generated)` is asked after every token, before EOS and the
    cap are."""
    past = dict(model.empty)
    step, length = list(prompt), len(prompt)
    generated: list[int] = []
    first: float | None = None
    while True:
        token, past = model.forward(step, past, length)
        generated.append(token)
        if first is None:
            first = time.perf_counter()
        if stop(generated) or token in eos or len(generated) >= max_new:
            return generated, first
        step, length = [token], length + 1


class NativeAdapter:
    """The model under onnxruntime, greedy, as the page runs it (`ModelAdapter`)."""

    def __init__(
        self, files: ModelFiles, identity: NativeIdentity, model: OnnxGreedy, setup_ms: float
    ) -> None:
        self.files = files
        self.template = ChatTemplate(files.tokenizer_config, identity.chat_template_options)
        self.tokens = TokenizerText(files.tokenizer_json, files.tokenizer_config)
        self.model = model
        self._provenance = native_model_provenance(files, identity, model.version, setup_ms)

    @property
    def provenance(self) -> ModelProvenance:
        return self._provenance

    def render(self, prompt: str) -> tuple[str, list[int]]:
        """The input text and its ids, as the page's worker makes them."""
        templated = self.template.render(prompt)
        return templated, self.tokens.encode(templated)

    async def generate(self, prompt: str, caps: Caps) -> Completion:
        received = time.perf_counter()
        deadline = received + caps.timeout_ms / 1000
        templated, ids = self.render(prompt)
        if len(ids) > caps.max_input_tokens:
            return Completion(
                text="",
                finish_reason=None,
                input_tokens=len(ids),
                output_tokens=None,
                output_token_ids=None,
                generation_ms=None,
                time_to_first_token_ms=None,
                failure=ModelFailure(
                    "input_budget",
                    f"prompt has {len(ids)} tokens, over the cap of {caps.max_input_tokens}",
                ),
                input_text=templated,
                input_sha256=text_sha256(templated),
            )
        reasons: dict[str, bool] = {}
        ceiling = [0]

        def stop(generated: list[int]) -> bool:
            if "timeout" not in reasons and time.perf_counter() >= deadline:
                reasons["timeout"] = True
            if "bytes" not in reasons and self._over_bytes(generated, ceiling, caps):
                reasons["bytes"] = True
            return bool(reasons)

        started = time.perf_counter()
        generated, first = decode_loop(
            self.model, ids, caps.max_new_tokens, self.files.eos_ids, stop
        )
        generation_ms = (time.perf_counter() - started) * 1000
        finish: FinishReason = "length"
        if reasons.get("timeout"):
            finish = "timeout"
        elif generated[-1] in self.files.eos_ids:
            finish = "eos"
        elif reasons.get("bytes"):
            finish = "bytes"
        elif len(generated) < caps.max_new_tokens:
            finish = "error"
        failure = None
        if finish == "timeout":
            failure = ModelFailure(
                "timeout",
                f"deadline of {caps.timeout_ms} ms reached; soft stop after {len(generated)}"
                " tokens",
            )
        elif finish == "error":
            failure = ModelFailure("worker_error", "generation stopped for no known reason")
        return Completion(
            text=self.tokens.decode(generated),
            finish_reason=finish,
            input_tokens=len(ids),
            output_tokens=len(generated),
            output_token_ids=tuple(generated),
            generation_ms=generation_ms,
            time_to_first_token_ms=None if first is None else (first - received) * 1000,
            failure=failure,
            input_text=templated,
            input_sha256=text_sha256(templated),
        )

    def margins(self, prompt: str, output_ids: list[int]) -> list[float]:
        """For re-checking a generation: the gap between the two largest logits at each step
        that chose `output_ids[i]`, the earlier ids fed as the model produced them (a small
        gap is a near-tie: another runtime's rounding may choose the other token there)."""
        _, ids = self.render(prompt)
        past, step, length = dict(self.model.empty), list(ids), len(ids)
        gaps = []
        for token in output_ids:
            row, past = self.model.logits(step, past, length)
            top = self.model.np.partition(row, -2)[-2:]
            gaps.append(float(top[1] - top[0]))
            step, length = [token], length + 1
        return gaps

    def _over_bytes(self, generated: list[int], ceiling: list[int], caps: Caps) -> bool:
        """The decoded output is over `max_output_bytes` (exact once the bound passes it)."""
        ceiling[0] += self.tokens.byte_ceiling(generated[-1])
        if ceiling[0] <= caps.max_output_bytes:
            return False
        return len(self.tokens.decode(generated).encode("utf-8")) > caps.max_output_bytes


def evidence_of(
    files: ModelFiles, source: Source
) -> Literal["fixture", "model", "reference-subject"]:
    """What the model's numbers are evidence of, by its config.json digest."""
    if source == "bundled-fixture" or files.config_sha256 in TEST_FIXTURE_CONFIGS:
        return "fixture"
    if source == "bundled-subject" or subject_by_config(files.config_sha256) is not None:
        return "reference-subject"
    return "model"


def native_model_provenance(
    files: ModelFiles, identity: NativeIdentity, version: str, setup_ms: float
) -> ModelProvenance:
    """The provenance of a model run natively (one load, backend `native`)."""
    evidence = evidence_of(files, identity.source)
    load = ModelLoad(
        load_id=1,
        reason="consent",
        ok=True,
        error_code=None,
        error_message=None,
        backend_requested="native",
        backend_actual="native",
        download_bytes=0,
        download_ms=None,
        setup_ms=setup_ms,
        compilation_ms=None,
    )
    return ModelProvenance(
        model_id=identity.model_id,
        revision=identity.revision,
        revision_served=None,
        revision_served_note=None,
        dtype=files.dtype,
        chat_template_options=dict(identity.chat_template_options),
        source=identity.source,
        evidence=evidence,
        backend_requested="native",
        backend_actual="native",
        adapter=None,
        transformers_js_version=None,
        onnxruntime_version=version,
        threads=THREADS,
        wasm=None,
        cross_origin_isolated=None,
        user_agent=None,
        flops=None,
        loads=(load,),
        config_sha256=files.config_sha256,
        subject_recipe=(
            dict(subject_of(identity.model_id, files.config_sha256).recipe)
            if evidence == "reference-subject"
            else None
        ),
    )


def check_model(files: ModelFiles, identity: NativeIdentity) -> None:
    """What would refuse the model, found before anything loads: a chat template not
    compared with the page's, a decoder other than ByteLevel (`NativeModelError`)."""
    ChatTemplate(files.tokenizer_config, identity.chat_template_options)
    tokenizer_data(files.tokenizer_json)


def load_native(files: ModelFiles, identity: NativeIdentity) -> NativeAdapter:
    """The model loaded (checked first: `check_model`), warmed up, ready."""
    started = time.perf_counter()
    check_model(files, identity)
    model = OnnxGreedy(files)
    adapter = NativeAdapter(files, identity, model, 0.0)
    _, ids = adapter.render("Hi")
    decode_loop(model, ids, WARMUP_TOKENS, files.eos_ids, lambda _: False)
    setup_ms = (time.perf_counter() - started) * 1000
    adapter._provenance = native_model_provenance(files, identity, model.version, setup_ms)
    return adapter
