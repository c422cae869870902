"""End to end: models in the browser (issue 4) on the committed tiny-chat TEST FIXTURE.

One page per module boots, consents to the fixture on WASM and is shared by the generation
tests; the WebGPU, consent/no-network and local-hub tests use their own contexts. Every
request is guarded to 127.0.0.1 (conftest) and every wait has a timeout. The fixture is a
test fixture, not model evidence: these tests check the pipeline, not a model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from browser_helpers import (
    ACTION_TIMEOUT_MS,
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    Booted,
    guard,
    missing,
    open_app,
)
from playwright.sync_api import Browser, BrowserType, Page

from pyapp.browser import parse_provenance
from pyapp.host import HUB_COMMIT, serve_hub_in_thread
from pyapp.protocol import ModelChoose, ModelChosen, ModelGenerate
from pyapp.records import to_json
from pyapp.sweep import page_state, send, wait_catalogue, wait_models

pytestmark = pytest.mark.browser

FIXTURE = ROOT / "tests" / "fixtures" / "tiny-chat"
REPLIES: list[dict[str, Any]] = (
    json.loads((FIXTURE / "replies.json").read_text(encoding="utf-8"))
    if (FIXTURE / "replies.json").is_file()
    else []
)
BY_NAME = {reply["name"]: reply for reply in REPLIES}
MODEL_TIMEOUT_MS = 60_000
STEP_DELAY_MS = 30
"""The shared page slows every Python-path generation step by this much (test hook), so the
UI's Cancel can be clicked mid-generation."""


def caps(**changes: int) -> dict[str, int]:
    base = {"max_input_tokens": 1024, "max_new_tokens": 256, "max_output_bytes": 16384}
    return {**base, "timeout_ms": 30_000, **changes}


def client_generate(page: Page, timeout_ms: int = MODEL_TIMEOUT_MS, **request: Any) -> Any:
    """window.lab.models.client.generate(request), failing after timeout_ms."""
    return page.evaluate(
        """([request, ms]) => Promise.race([
             window.lab.models.client.generate(request),
             new Promise((_, reject) =>
               setTimeout(() => reject(new Error(`test timeout ${ms} ms`)), ms)),
           ])""",
        [request, timeout_ms],
    )


def provenance(page: Page) -> Any:
    """The loaded model's provenance (JSON), as `page_state` reports it."""
    state = page_state(page)
    assert state is not None, "the page has no window.lab.send"
    return to_json(state.models.provenance)


def native_ids(reply: dict[str, Any]) -> tuple[list[int], list[int]]:
    """(prompt ids, output ids) of the same text, tokenized natively with `tokenizers`
    (a test dependency) from the fixture's own tokenizer.json, chat template by hand."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(FIXTURE / "tokenizer.json"))
    text = "".join(
        f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in reply["messages"]
    )
    prompt = tokenizer.encode(text + "<|im_start|>assistant\n", add_special_tokens=False)
    output = tokenizer.encode(reply["reply"] + "<|im_end|>", add_special_tokens=False)
    return prompt.ids, output.ids


def choose_fixture(page: Page, backend: str) -> None:
    page.select_option("#model-choice", "fixture")
    page.check(f'input[name="backend"][value="{backend}"]')


@dataclass
class Loaded:
    """The shared page with the fixture loaded on WASM, and what it requested when."""

    booted: Booted
    before_consent: list[str]
    dialog_text: str
    console: list[str]
    """The page's console messages from consent on."""

    @property
    def page(self) -> Page:
        return self.booted.page


@pytest.fixture(scope="module")
def loaded(browser: Browser, site_url: str) -> Iterator[Loaded]:
    if not REPLIES:
        missing(f"no fixture model at {FIXTURE}")
    booted = open_app(browser, f"{site_url}?model_step_delay_ms={STEP_DELAY_MS}")
    page = booted.page
    wait_catalogue(page)
    choose_fixture(page, "wasm")
    page.get_by_role("button", name="Load model…").click()
    dialog_text = page.inner_text("#consent-dialog")
    before = list(booted.log.urls)
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.get_by_role("button", name="Download and load").click()
    assert wait_models(page, "loaded failed", MODEL_TIMEOUT_MS) == "loaded", page.inner_text(
        "#model-status"
    )
    yield Loaded(booted, before, dialog_text, console)
    booted.context.close()
    assert not booted.log.offenders, f"requests left 127.0.0.1: {booted.log.offenders}"


# ---- consent and network -------------------------------------------------------------------


def test_nothing_model_related_is_fetched_before_consent(loaded: Loaded, site_url: str) -> None:
    origin = site_url.rstrip("/")
    assert all(url.startswith(origin) for url in loaded.before_consent), loaded.before_consent
    for fragment in ("model_worker.js", "transformers.min.js", "ort-wasm", "/models/fixture/"):
        assert not [u for u in loaded.before_consent if fragment in u], fragment
    # The dialog says what will load, from where, on what.
    for words in ("fixture/tiny-chat", "test fixture — not model evidence", "bundled", "WASM"):
        assert words in loaded.dialog_text
    assert site_url.split("//")[1].rstrip("/") in loaded.dialog_text  # the source host
    # After consent: the worker, transformers.js, the plain (non-asyncify) wasm, the model.
    urls = loaded.booted.log.urls
    assert loaded.booted.log.requested("ort-wasm-simd-threaded.wasm")
    assert not loaded.booted.log.requested("asyncify")
    assert loaded.booted.log.requested("/models/fixture/tiny-chat/onnx/model.onnx")
    assert all(url.startswith(origin) for url in urls)


def test_progress_and_provenance_after_load(loaded: Loaded) -> None:
    page = loaded.page
    files = page.inner_text("#model-files")
    assert "onnx/model.onnx: done" in files and "tokenizer.json: done" in files
    # The client checked every event it gave the panel (PANEL_EVENTS) and found none amiss.
    assert not [m for m in loaded.console if "does not fit the protocol" in m], loaded.console
    data = provenance(page)
    record = parse_provenance(data)  # every field validated in Python
    assert record.evidence == "fixture" and record.source == "bundled-fixture"
    assert (record.backend_requested, record.backend_actual) == ("wasm", "wasm")
    assert record.adapter is None and record.flops is None
    assert record.transformers_js_version == "4.3.2"
    assert record.onnxruntime_version and record.onnxruntime_version.startswith("1.31")
    assert record.cross_origin_isolated is True and record.threads is not None
    first = record.loads[0]
    assert (first.reason, first.ok, first.compilation_ms) == ("consent", True, None)
    onnx_size = (FIXTURE / "onnx" / "model.onnx").stat().st_size
    assert first.download_bytes is not None and first.download_bytes >= onnx_size
    assert first.download_bytes < onnx_size + 100_000  # model files only, not the runtime
    assert first.setup_ms is not None and first.setup_ms > 0
    text = page.inner_text("#model-provenance")
    assert "test fixture — not model evidence" in text and "transformers.js 4.3.2" in text


# ---- generation semantics -------------------------------------------------------------------


@pytest.mark.parametrize("name", [reply["name"] for reply in REPLIES])
def test_fixture_replies_exactly(loaded: Loaded, name: str) -> None:
    reply = BY_NAME[name]
    answer = client_generate(loaded.page, messages=reply["messages"], caps=caps())
    assert answer["ok"], answer
    result = answer["result"]
    assert result["text"] == reply["reply"]
    assert result["finish_reason"] == "eos" == reply["finish"]
    assert result["output_token_ids"] == reply["output_ids"]
    assert result["output_tokens"] == len(reply["output_ids"])
    assert result["input_tokens"] == reply["prompt_tokens"]
    assert result["failure"] is None
    assert result["generation_ms"] > 0 and result["time_to_first_token_ms"] > 0
    prompt_ids, output_ids = native_ids(reply)  # the same text, counted natively
    assert (len(prompt_ids), output_ids) == (result["input_tokens"], result["output_token_ids"])


def test_finish_length(loaded: Loaded) -> None:
    reply = BY_NAME["long-reply"]
    answer = client_generate(loaded.page, messages=reply["messages"], caps=caps(max_new_tokens=10))
    result = answer["result"]
    assert result["finish_reason"] == "length"
    assert result["output_token_ids"] == reply["output_ids"][:10]
    assert result["output_tokens"] == 10 and reply["reply"].startswith(result["text"])


def test_finish_bytes(loaded: Loaded) -> None:
    reply = BY_NAME["long-reply"]
    answer = client_generate(loaded.page, messages=reply["messages"], caps=caps(max_output_bytes=8))
    result = answer["result"]
    assert result["finish_reason"] == "bytes"
    assert len(result["text"].encode()) > 8
    assert result["output_tokens"] < len(reply["output_ids"])
    assert result["output_token_ids"] == reply["output_ids"][: result["output_tokens"]]


def test_input_budget_means_no_generation(loaded: Loaded) -> None:
    reply = BY_NAME["greeting"]
    answer = client_generate(loaded.page, messages=reply["messages"], caps=caps(max_input_tokens=5))
    result = answer["result"]
    assert result["finish_reason"] is None and result["failure"]["code"] == "input_budget"
    assert result["input_tokens"] == reply["prompt_tokens"]
    assert result["output_tokens"] is None and result["generation_ms"] is None


# ---- the Python path ------------------------------------------------------------------------


def test_python_adapter_generates(loaded: Loaded) -> None:
    reply = BY_NAME["correct-integer"]
    sent = ModelGenerate(prompt=reply["messages"][0]["content"], caps=dict(caps()))
    result: Any = to_json(send(loaded.page, sent))
    completion = result["completion"]
    assert completion["text"] == reply["reply"] and completion["finish_reason"] == "eos"
    assert completion["output_token_ids"] == reply["output_ids"]
    assert parse_provenance(result["provenance"]).model_id == "fixture/tiny-chat"
    timing = result["timing"]
    assert timing["round_trip_ms"] >= timing["worker_ms"] > 0
    assert timing["bridge_overhead_ms"] >= 0


def test_try_a_prompt_box(loaded: Loaded) -> None:
    page = loaded.page
    reply = BY_NAME["greeting"]
    page.get_by_label("Prompt", exact=True).fill(reply["messages"][0]["content"])
    page.get_by_label("Max new tokens").fill("64")
    page.get_by_role("button", name="Generate", exact=True).click()
    page.wait_for_function(
        "() => document.querySelector('#try-status').textContent.startsWith('Finished')",
        timeout=MODEL_TIMEOUT_MS,
    )
    assert page.inner_text("#try-output") == reply["reply"]
    meta = page.inner_text("#try-meta")
    assert "finish: eos" in meta and f"input tokens {reply['prompt_tokens']}" in meta
    assert f"output tokens {len(reply['output_ids'])}" in meta and "first token" in meta


def test_cancel_button(loaded: Loaded) -> None:
    page = loaded.page
    page.get_by_label("Prompt", exact=True).fill(BY_NAME["long-reply"]["messages"][0]["content"])
    page.get_by_label("Max new tokens").fill("200")
    page.get_by_role("button", name="Generate", exact=True).click()
    # Cancel once this generation has produced its first token (an event, not a fixed wait).
    page.wait_for_function(
        "() => window.lab.models.client.current?.firstToken === true", timeout=MODEL_TIMEOUT_MS
    )
    page.get_by_role("button", name="Cancel", exact=True).click()
    page.wait_for_function(
        "() => document.querySelector('#try-status').textContent.startsWith('Finished')",
        timeout=MODEL_TIMEOUT_MS,
    )
    assert "finish: cancelled" in page.inner_text("#try-meta")
    assert page.inner_text("#try-status") == "Finished: cancelled."
    assert page.get_attribute("#models", "data-state") == "loaded"  # a soft stop: no reload


# ---- the channel's messages are checked at every boundary -----------------------------------


def test_what_does_not_fit_the_channel_is_a_typed_failure_and_the_worker_keeps_serving(
    loaded: Loaded,
) -> None:
    """Unknown types and malformed messages, at the worker, the client and from Python, are
    answered with a typed error (never a crash or a hang); the model still generates."""
    answers = loaded.page.evaluate(
        """async () => {
             const client = window.lab.models.client;
             const text = (r) => (typeof r === "string" ? r : JSON.stringify(r));
             const call = async (request) => JSON.parse(await client.call(text(request)));
             client.worker.postMessage(42);  // not even an object: no id, nothing to answer
             const unknown = await client.send("teleport", {}).promise;
             const wrongCaps = { prompt: "x", caps: { max_new_tokens: "many" } };
             const malformed = await client.send("generate", wrongCaps).promise;
             const notJson = await call("{not json");
             const noCaps = await call({ type: "generate", id: 7, prompt: "x" });
             const interrupt = { type: "interrupt", id: 8, target: 1, reason: "timeout" };
             const notAnswered = await call(interrupt);
             const direct = await client.generate({ prompt: "x", caps: { max_new_tokens: 1 } });
             // A worker reply that does not fit its request's result record fails it (bad_reply).
             const pending = new Promise((resolve) =>
               client.pending.set(99999, { resolve, type: "generate" }));
             client.receive({ type: "generate", id: 99999, ok: true, result: { text: 42 } });
             const badReply = await pending;
             client.receive({ type: "progress", id: 1, file: 5 }); // a malformed event: dropped
             const state = client.state;
             return { unknown, malformed, notJson, noCaps, notAnswered, direct, badReply, state };
           }"""
    )
    assert answers["unknown"]["error"]["code"] == "unknown_type"
    assert answers["malformed"]["error"] == {
        "code": "bad_request",
        "message": "generate: $.caps: missing max_input_tokens",
    }
    assert answers["notJson"]["error"]["code"] == "bad_request"
    assert (answers["noCaps"]["id"], answers["noCaps"]["error"]["code"]) == (7, "bad_request")
    assert "missing caps" in answers["noCaps"]["error"]["message"]
    assert answers["notAnswered"]["error"]["code"] == "unknown_type"
    assert answers["direct"]["error"]["code"] == "bad_request"
    assert answers["badReply"]["error"]["code"] == "bad_reply"
    assert "$.result" in answers["badReply"]["error"]["message"]
    assert answers["state"] == "loaded"
    reply = BY_NAME["greeting"]
    again = client_generate(loaded.page, messages=reply["messages"], caps=caps())
    assert again["result"]["text"] == reply["reply"]


# ---- deadlines ------------------------------------------------------------------------------


def test_deadline_soft_stop(loaded: Loaded) -> None:
    reply = BY_NAME["long-reply"]
    loads_before = len(provenance(loaded.page)["loads"])
    answer = client_generate(
        loaded.page,
        messages=reply["messages"],
        # Generous both ways: the first token comes well within 1.5 s, the whole reply
        # (122 tokens at >= 50 ms each) would need over 6 s.
        caps=caps(timeout_ms=1500),
        debug={"step_delay_ms": 50},
    )
    result = answer["result"]
    assert result["finish_reason"] == "timeout" and result["failure"]["code"] == "timeout"
    assert 0 < result["output_tokens"] < len(reply["output_ids"])
    assert result["output_token_ids"] == reply["output_ids"][: result["output_tokens"]]
    assert len(provenance(loaded.page)["loads"]) == loads_before  # the worker stopped itself


def test_deadline_terminate_then_reload_then_generate(loaded: Loaded) -> None:
    page = loaded.page
    loads_before = len(provenance(page)["loads"])
    # One step blocks the worker for 6 s: the soft stop cannot run; the client terminates.
    answer = client_generate(
        page,
        messages=BY_NAME["greeting"]["messages"],
        caps=caps(timeout_ms=300),
        debug={"stall_ms": 6000},
    )
    result = answer["result"]
    assert result["finish_reason"] == "timeout"
    assert "terminated" in result["failure"]["message"]
    assert wait_models(page, "loaded failed", MODEL_TIMEOUT_MS) == "loaded"
    loads = parse_provenance(provenance(page)).loads
    assert len(loads) == loads_before + 1
    reload = loads[-1]
    assert (reload.reason, reload.ok, reload.backend_actual) == (
        "reload-after-terminate",
        True,
        "wasm",
    )
    assert reload.setup_ms is not None and reload.setup_ms > 0
    again = client_generate(page, messages=BY_NAME["greeting"]["messages"], caps=caps())
    assert again["result"]["text"] == BY_NAME["greeting"]["reply"]
    assert again["result"]["finish_reason"] == "eos"


def test_a_late_close_event_of_a_declined_dialog_does_not_answer_the_next_one(
    browser: Browser, site_url: str
) -> None:
    """The dialog's close event is queued: declined, then shown again before that event ran,
    the stale event must not decline the new showing (it did, and the accept then did nothing)."""
    if not REPLIES:
        missing(f"no fixture model at {FIXTURE}")
    booted = open_app(browser, site_url)
    page = booted.page
    try:
        wait_catalogue(page)
        choose_fixture(page, "wasm")
        page.get_by_role("button", name="Load model…").click()
        # decline and review again in one task: the close event runs after the second showing
        page.evaluate(
            """() => { const dialog = document.querySelector('#consent-dialog');
                 dialog.close('decline'); document.querySelector('#model-review').click(); }"""
        )
        assert page.is_visible("#consent-dialog")
        assert "declined" not in page.inner_text("#model-status")
        page.get_by_role("button", name="Download and load").click()
        assert wait_models(page, "loaded failed", MODEL_TIMEOUT_MS) == "loaded"
    finally:
        booted.context.close()
    assert not booted.log.offenders


# ---- WebGPU ---------------------------------------------------------------------------------


def test_webgpu_without_adapter_is_refused_not_switched(browser: Browser, site_url: str) -> None:
    if not REPLIES:
        missing(f"no fixture model at {FIXTURE}")
    booted = open_app(browser, site_url, boot=False)
    page = booted.page
    try:
        wait_catalogue(page)
        assert "WebGPU is not available" in page.inner_text("#backend-status")
        # issue 41: the option is not offered where the browser has none, and says why
        webgpu = 'input[name="backend"][value="webgpu"]'
        assert page.is_disabled(webgpu)
        assert "not available in this browser" in page.inner_text(
            'label:has(input[value="webgpu"])'
        )
        page.select_option("#model-choice", "fixture")
        chosen: ModelChosen = send(page, ModelChoose(key="fixture", backend="webgpu"))
        assert chosen.outcome == "not_offered" and not page.is_visible("#consent-dialog")
        # The worker refuses too (if a page skipped the check), before fetching any model file.
        load = page.evaluate(
            """() => window.lab.models.client.load({model_id: 'fixture/tiny-chat',
                 revision: 'bundled', dtype: 'fp32', source: 'bundled-fixture',
                 local_path: new URL('./models/', location.href).pathname}, 'webgpu')"""
        )
        assert (load["ok"], load["error_code"]) == (False, "backend_unavailable")
        answer = client_generate(page, prompt="Say hello.", caps=caps())
        assert answer["ok"] is False and answer["error"]["code"] == "not_loaded"
        assert not booted.log.requested("/models/fixture/")
        assert not booted.log.requested("ort-wasm-simd-threaded.wasm")
    finally:
        booted.context.close()
    assert not booted.log.offenders


def test_webgpu_on_the_software_adapter(browser_type: BrowserType, site_url: str) -> None:
    if not REPLIES:
        missing(f"no fixture model at {FIXTURE}")
    gpu_browser = browser_type.launch(
        executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--enable-unsafe-webgpu"]
    )
    try:
        context = gpu_browser.new_context()
        context.set_default_timeout(ACTION_TIMEOUT_MS)
        log = guard(context)
        page = context.new_page()
        page.goto(site_url, timeout=30_000)
        wait_catalogue(page)
        if "WebGPU is not available" in page.inner_text("#backend-status"):
            pytest.skip(
                "no WebGPU adapter even with --enable-unsafe-webgpu: "
                + page.inner_text("#backend-status")
            )
        choose_fixture(page, "webgpu")
        page.get_by_role("button", name="Load model…").click()
        page.get_by_role("button", name="Download and load").click()
        assert wait_models(page, "loaded failed", 120_000) == "loaded", page.inner_text(
            "#model-status"
        )
        reply = BY_NAME["greeting"]
        answer = client_generate(
            page,
            120_000,
            messages=reply["messages"],
            caps=caps(max_new_tokens=3, timeout_ms=100_000),
        )
        result = answer["result"]
        assert result["output_token_ids"] == reply["output_ids"][:3]
        assert result["finish_reason"] == "length"
        record = parse_provenance(provenance(page))
        assert (record.backend_requested, record.backend_actual) == ("webgpu", "webgpu")
        assert record.adapter is not None and record.adapter.is_fallback_adapter is True
        assert record.adapter.shader_f16 is not None
        assert log.requested("ort-wasm-simd-threaded.asyncify.wasm")
        assert not log.offenders
    finally:
        gpu_browser.close()


# ---- the consented download path, against a local stand-in for the hub ---------------------


def test_local_hub_download_with_progress(browser: Browser, site_url: str) -> None:
    if not REPLIES:
        missing(f"no fixture model at {FIXTURE}")
    hub, hub_url, served = serve_hub_in_thread({"test-org/tiny-chat": FIXTURE})
    booted = open_app(browser, f"{site_url}?model_host={hub_url}", boot=False)
    page = booted.page
    try:
        wait_catalogue(page)
        page.select_option("#model-choice", "other")
        page.get_by_label("Model id").fill("test-org/tiny-chat")
        page.get_by_label("Revision").fill("main")
        page.check('input[name="backend"][value="wasm"]')
        page.select_option("#model-dtype", "fp32")
        page.get_by_role("button", name="Load model…").click()
        dialog = page.inner_text("#consent-dialog")
        assert "test-org/tiny-chat" in dialog and "UNPINNED" in dialog
        assert hub_url.split("//")[1].rstrip("/") in dialog
        # Nothing before consent: the hub saw no request, the page made none to it.
        assert served == [] and not [u for u in booted.log.urls if u.startswith(hub_url)]
        page.get_by_role("button", name="Download and load").click()
        assert wait_models(page, "loaded failed", MODEL_TIMEOUT_MS) == "loaded", page.inner_text(
            "#model-status"
        )
        assert "/test-org/tiny-chat/resolve/main/onnx/model.onnx" in served
        assert "onnx/model.onnx: done" in page.inner_text("#model-files")
        record = parse_provenance(provenance(page))
        # Downloaded from a hub, but byte for byte the fixture's config: labelled a fixture.
        assert (record.source, record.evidence, record.revision) == ("hub", "fixture", "main")
        config = hashlib.sha256((FIXTURE / "config.json").read_bytes()).hexdigest()
        assert record.config_sha256 == config  # recorded, so reproduce can re-check the label
        assert record.revision_served == HUB_COMMIT  # the branch resolved to this commit
        fetched = {p.split("/resolve/main/")[1] for p in served if not p.startswith("HEAD")}
        sizes = sum((FIXTURE / name).stat().st_size for name in fetched)
        assert record.loads[-1].download_bytes == sizes
        assert record.loads[-1].download_ms is not None
        reply = BY_NAME["greeting"]
        answer = client_generate(page, messages=reply["messages"], caps=caps())
        assert answer["result"]["text"] == reply["reply"]
    finally:
        booted.context.close()
        hub.shutdown()
        hub.server_close()
    assert not booted.log.offenders
