"""Generation bench (issues 4 and 15): prints figures, asserts nothing.

In one run, on this machine, for the tiny-chat TEST FIXTURE and for the largest catalogue
stand-in (tests/fixtures/standins; random weights, a TEST FIXTURE too: not model evidence),
each chosen in the page like a user would (the stand-in through the local hub stand-in):

* tokens/s of greedy generation in headless Chromium, WASM backend (transformers.js model
  worker) with the page's thread count (all cores when cross-origin isolated; --threads N
  forces N), after warm-up: median of N runs capped at --new-tokens new tokens;
* tokens/s of the same greedy loop natively with onnxruntime on the same ONNX file, with
  the SAME number of intra-op threads the browser reported, past key values fed step by
  step as transformers.js does, and the browser/native ratio (goal >= 0.5). onnxruntime is
  not a test dependency: the bench imports it here, or runs itself under the fixture build
  venv (build/fixture-venv) when that exists, or says clearly that the native side is
  skipped;
* for the fixture, bridge overhead per call: Python (PyScript worker) -> main thread ->
  model worker -> back to Python, minus the model worker's own time (`model_generate`
  requests of one new token, median of many), next to the JS-only overhead.

Usage: .venv/bin/python bench/generation.py [--runs 5] [--new-tokens 64] [--calls 50]
       [--threads N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "tiny-chat"
STANDINS = ROOT / "tests" / "fixtures" / "standins"
SITE = ROOT / "build" / "site"
FIXTURE_VENV_PYTHON = ROOT / "build" / "fixture-venv" / "bin" / "python"


@dataclass(frozen=True)
class Subject:
    """What the bench generates with: the fixture, or a catalogue entry's stand-in."""

    name: str
    """`tiny-chat` or a stand-in folder name (`qwen3`, ...)."""
    key: str
    """The catalogue entry chosen in the page."""
    model_id: str
    """The entry's model id (the hub stand-in serves the stand-in under it)."""
    folder: Path
    """The model folder (config.json, onnx/model.onnx)."""
    hub: tuple[Path, ...]
    """Folders the hub stand-in serves, stand-in first; empty for the bundled fixture."""
    messages: list[dict[str, str]]
    """The one user message generated from."""
    templated: str
    """The chat template applied to it (what both sides tokenize)."""


def long_reply() -> dict[str, Any]:
    replies = json.loads((FIXTURE / "replies.json").read_text(encoding="utf-8"))
    entry: dict[str, Any] = next(r for r in replies if r["name"] == "long-reply")
    return entry


def subject(name: str) -> Subject:
    if name == "tiny-chat":
        message = long_reply()["messages"][0]
        text = f"<|im_start|>user\n{message['content']}<|im_end|>\n<|im_start|>assistant\n"
        return Subject(name, "fixture", "fixture/tiny-chat", FIXTURE, (), [message], text)
    catalogue = json.loads((ROOT / "site" / "models.json").read_text(encoding="utf-8"))
    entry = next(e for e in catalogue["models"] if e.get("standin") == name)
    meta = json.loads((STANDINS / name / "standin.json").read_text(encoding="utf-8"))
    prompt = json.loads((STANDINS / name / "reference.json").read_text(encoding="utf-8"))
    first = prompt["prompts"][0]
    package = ROOT / "node_modules" / meta["tokenizer_package"] / "models"
    return Subject(
        name,
        entry["key"],
        entry["model_id"],
        STANDINS / name,
        (STANDINS / name, package),
        first["messages"],
        first["templated"],
    )


def largest_standin() -> str:
    sizes = {
        folder.name: sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        for folder in STANDINS.iterdir()
        if (folder / "standin.json").is_file()
    }
    return max(sizes, key=lambda name: sizes[name])


# ---- native (onnxruntime) ------------------------------------------------------------------


def native_tokens_per_second(
    name: str, runs: int, new_tokens: int, threads: int, dtype: str = "fp32"
) -> list[float]:
    """Greedy loop on onnx/model.onnx (fp32) with onnxruntime and `threads` intra-op
    threads, past key values fed step by step as transformers.js does; tokens/s per run."""
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    chosen = subject(name)
    tokenizer_dir = chosen.hub[-1] if chosen.hub else chosen.folder
    tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    prompt = tokenizer.encode(chosen.templated, add_special_tokens=False).ids
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(
        str(chosen.folder / "onnx" / DTYPE_FILES[dtype]),
        options,
        providers=["CPUExecutionProvider"],
    )
    inputs = {i.name: i for i in session.get_inputs()}
    outputs = [o.name for o in session.get_outputs()]
    cache = [n for n in inputs if n.startswith("past_key_values.")]

    def one_run() -> float:
        past = {
            n: np.zeros((1, inputs[n].shape[1], 0, inputs[n].shape[3]), dtype=np.float32)
            for n in cache
        }
        ids, step = list(prompt), list(prompt)
        started = time.perf_counter()
        for _ in range(new_tokens):
            feed = {
                "input_ids": np.array([step], dtype=np.int64),
                "attention_mask": np.ones((1, len(ids)), dtype=np.int64),
                **past,
            }
            if "position_ids" in inputs:
                feed["position_ids"] = np.arange(
                    len(ids) - len(step), len(ids), dtype=np.int64
                ).reshape(1, -1)
            result = dict(zip(outputs, session.run(outputs, feed), strict=True))
            next_id = int(result["logits"][0, -1].argmax())
            past = {n: result[n.replace("past_key_values.", "present.")] for n in cache}
            ids.append(next_id)
            step = [next_id]
        return new_tokens / (time.perf_counter() - started)

    for _ in range(3):  # warm-up, as in the browser
        one_run()
    return [one_run() for _ in range(runs)]


def native_side(
    name: str, runs: int, new_tokens: int, threads: int, dtype: str
) -> tuple[list[float] | None, str]:
    """Native tokens/s here, or via the fixture venv, or None with the reason."""
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        pass
    else:
        return native_tokens_per_second(name, runs, new_tokens, threads, dtype), (
            f"onnxruntime in {sys.prefix}"
        )
    if FIXTURE_VENV_PYTHON.exists():
        command = [str(FIXTURE_VENV_PYTHON), __file__, "--native-only", "--subject", name]
        command += ["--runs", str(runs), "--new-tokens", str(new_tokens)]
        command += ["--threads", str(threads), "--dtype", dtype]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if done.returncode == 0:
            return json.loads(
                done.stdout.strip().splitlines()[-1]
            ), "onnxruntime in build/fixture-venv"
        return None, f"the fixture venv failed: {done.stderr.strip()[-300:]}"
    return None, (
        "onnxruntime is not importable here and build/fixture-venv does not exist "
        "(python3 scripts/build_fixture.py makes it): native side skipped"
    )


# ---- browser -------------------------------------------------------------------------------


def browser_side(
    chosen: Subject, runs: int, new_tokens: int, calls: int, threads: int | None
) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT))
    from pyapp.cli.serve import serve_hub_in_thread, serve_in_thread
    from pyapp.sweep.chromium import CHROMIUM_ARGS
    from pyapp.sweep.panel import load_from_catalogue

    if not (SITE / "index.html").is_file():
        raise SystemExit(f"{SITE} is not built: run python scripts/build_site.py")
    server, url = serve_in_thread(SITE)
    hub = serve_hub_in_thread({chosen.model_id: chosen.hub}) if chosen.hub else None
    query = {"model_threads": threads, "model_host": hub[1] if hub else None}
    url += "?" + "&".join(f"{k}={v}" for k, v in query.items() if v is not None)
    caps = {"max_input_tokens": 1024, "max_output_bytes": 65536, "timeout_ms": 60_000}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium", args=list(CHROMIUM_ARGS)
            )
            page = browser.new_page()
            page.goto(url, timeout=30_000)
            page.wait_for_function(
                "() => ['ready', 'error'].includes(document.querySelector('#app').dataset.state)",
                timeout=120_000,
            )
            load_from_catalogue(page, 120_000, key=chosen.key, dtype=chosen_dtype(chosen))
            load = page.evaluate("() => window.lab.models.client.provenance().loads.at(-1)")
            if not load["ok"]:
                raise SystemExit(f"{chosen.name} load failed: {load}")
            request = {"messages": chosen.messages, "caps": {**caps, "max_new_tokens": new_tokens}}
            generate = "(request) => window.lab.models.client.generate(request)"
            for _ in range(3):  # warm-up beyond the worker's own one-token warm-up
                page.evaluate(generate, request)
            rates, finishes = [], set()
            for _ in range(runs):
                result = page.evaluate(generate, request)["result"]
                finishes.add(result["finish_reason"])
                rates.append(result["output_tokens"] / result["generation_ms"] * 1e3)
            one = {"prompt": "Say hello.", "caps": {**caps, "max_new_tokens": 1}}
            python_overheads, js_overheads = [], []
            for _ in range(calls):
                result = page.evaluate("(r) => window.lab.request('model_generate', r)", one)
                python_overheads.append(result["timing"]["bridge_overhead_ms"])
                reply = page.evaluate(generate, one)
                js_overheads.append(reply["timing"]["client_ms"] - reply["timing"]["worker_ms"])
            versions = page.evaluate("() => window.lab.models.client.provenance()")
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
        if hub:
            hub[0].shutdown()
            hub[0].server_close()
    return {
        "rates": rates,
        "finishes": sorted(finishes),
        "setup_ms": load["setup_ms"],
        "python_overheads": python_overheads,
        "js_overheads": js_overheads,
        "threads": versions["threads"],
        "evidence": versions["evidence"],
        "versions": f"transformers.js {versions['transformers_js_version']}, "
        f"onnxruntime-web {versions['onnxruntime_version']}",
    }


DTYPE_FILES = {"fp32": "model.onnx", "q8": "model_quantized.onnx", "q4": "model_q4.onnx"}


def chosen_dtype(chosen: Subject) -> str:
    """fp32 where the catalogue entry offers it on WASM, else its first WASM dtype."""
    catalogue = json.loads((ROOT / "site" / "models.json").read_text(encoding="utf-8"))
    wasm: list[str] = next(e for e in catalogue["models"] if e["key"] == chosen.key)["dtypes"][
        "wasm"
    ]
    return "fp32" if "fp32" in wasm else wasm[0]


def compare(name: str, args: argparse.Namespace, calls: int) -> None:
    """One subject: browser WASM tokens/s, then native with the browser's thread count."""
    chosen = subject(name)
    browser = browser_side(chosen, args.runs, args.new_tokens, calls, args.threads)
    dtype = chosen_dtype(chosen)
    threads = int(browser["threads"])
    native, where = native_side(name, args.runs, args.new_tokens, threads, dtype)
    median = statistics.median
    web = median(browser["rates"])
    print(f"== {name} ({chosen.key}, dtype {dtype}; evidence: {browser['evidence']})")
    print(f"browser WASM ({browser['versions']}, {threads} thread(s)):")
    print(f"  load + warm-up             {browser['setup_ms']:8.1f} ms")
    print(
        f"  greedy tokens/s            {web:8.1f}  (median of {len(browser['rates'])} runs of "
        f"{args.new_tokens} new tokens after warm-up; finish {', '.join(browser['finishes'])})"
    )
    if native is None:
        print(f"native onnxruntime: skipped — {where}")
    else:
        print(f"native onnxruntime ({where}, {threads} thread(s)):")
        print(f"  greedy tokens/s            {median(native):8.1f}  (median of {len(native)} runs)")
        print(f"  browser / native ratio     {web / median(native):8.3f}  (goal >= 0.5)")
    py, js = browser["python_overheads"], browser["js_overheads"]
    if py:
        print(f"bridge overhead per call (median of {len(py)}; one new token each):")
        print(
            f"  Python -> main -> model worker -> Python, minus worker time  {median(py):7.2f} ms"
            f"  (p90 {sorted(py)[int(0.9 * (len(py) - 1))]:.2f} ms)"
        )
        print(f"  JS main -> model worker -> main, minus worker time          {median(js):7.2f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument(
        "--threads", type=int, default=None, help="WASM threads (default: the page's, all cores)"
    )
    parser.add_argument("--subject", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--dtype", default="fp32", help=argparse.SUPPRESS)
    parser.add_argument("--native-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.native_only:
        rates = native_tokens_per_second(
            args.subject, args.runs, args.new_tokens, args.threads or 1, args.dtype
        )
        print(json.dumps(rates))
        return 0
    print(
        "tiny-chat (~100k parameters) and the stand-ins (random weights) are TEST FIXTURES:"
        " these are pipeline figures, not model evidence."
    )
    compare("tiny-chat", args, args.calls)
    compare(largest_standin(), args, 0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
