"""Generation bench (issue 4): prints figures, asserts nothing.

In one run, on this machine, with the tiny-chat TEST FIXTURE (not model evidence):

* tokens/s of greedy generation in headless Chromium, WASM backend (transformers.js model
  worker), after warm-up: median of N runs of the `long-reply` prompt capped at
  --new-tokens new tokens (every run ends with finish `length`);
* tokens/s of the same greedy loop natively with onnxruntime on the same
  `onnx/model.onnx` (one thread, past key values fed step by step as transformers.js does),
  and the browser/native ratio. onnxruntime is not a test dependency: the bench imports it
  here, or runs itself under the fixture build venv (build/fixture-venv) when that exists,
  or says clearly that the native side is skipped;
* bridge overhead per call: Python (PyScript worker) -> main thread -> model worker ->
  back to Python, minus the model worker's own time (`model_generate` requests of one
  new token, median of many), next to the JS-only overhead (main thread -> worker -> main).

Usage: .venv/bin/python bench/generation.py [--runs 5] [--new-tokens 64] [--calls 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "tiny-chat"
SITE = ROOT / "build" / "site"
FIXTURE_VENV_PYTHON = ROOT / "build" / "fixture-venv" / "bin" / "python"


def long_reply() -> dict[str, Any]:
    replies = json.loads((FIXTURE / "replies.json").read_text(encoding="utf-8"))
    entry: dict[str, Any] = next(r for r in replies if r["name"] == "long-reply")
    return entry


# ---- native (onnxruntime) ------------------------------------------------------------------


def native_tokens_per_second(runs: int, new_tokens: int) -> list[float]:
    """Greedy loop on onnx/model.onnx with onnxruntime, one thread; tokens/s per run."""
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    config = json.loads((FIXTURE / "config.json").read_text(encoding="utf-8"))
    tokenizer = Tokenizer.from_file(str(FIXTURE / "tokenizer.json"))
    message = long_reply()["messages"][0]
    text = f"<|im_start|>{message['role']}\n{message['content']}<|im_end|>\n<|im_start|>assistant\n"
    prompt = tokenizer.encode(text, add_special_tokens=False).ids
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(
        str(FIXTURE / "onnx" / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    names = [i.name for i in session.get_inputs()]
    outputs = [o.name for o in session.get_outputs()]
    heads, head_dim = config["num_key_value_heads"], config["head_dim"]

    def one_run() -> float:
        past = {
            n: np.zeros((1, heads, 0, head_dim), dtype=np.float32)
            for n in names
            if n.startswith("past_key_values.")
        }
        ids, step = list(prompt), list(prompt)
        started = time.perf_counter()
        for _ in range(new_tokens):
            feed = {
                "input_ids": np.array([step], dtype=np.int64),
                "attention_mask": np.ones((1, len(ids)), dtype=np.int64),
                **past,
            }
            if "position_ids" in names:
                feed["position_ids"] = np.arange(
                    len(ids) - len(step), len(ids), dtype=np.int64
                ).reshape(1, -1)
            result = dict(zip(outputs, session.run(outputs, feed), strict=True))
            next_id = int(result["logits"][0, -1].argmax())
            past = {
                n: result[n.replace("past_key_values.", "present.")]
                for n in names
                if n.startswith("past_key_values.")
            }
            ids.append(next_id)
            step = [next_id]
        return new_tokens / (time.perf_counter() - started)

    for _ in range(3):  # warm-up, as in the browser
        one_run()
    return [one_run() for _ in range(runs)]


def native_side(runs: int, new_tokens: int) -> tuple[list[float] | None, str]:
    """Native tokens/s here, or via the fixture venv, or None with the reason."""
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        pass
    else:
        return native_tokens_per_second(runs, new_tokens), f"onnxruntime in {sys.prefix}"
    if FIXTURE_VENV_PYTHON.exists():
        command = [str(FIXTURE_VENV_PYTHON), __file__, "--native-only"]
        command += ["--runs", str(runs), "--new-tokens", str(new_tokens)]
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
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


def browser_side(runs: int, new_tokens: int, calls: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT))
    from pyapp.cli.serve import serve_in_thread
    from pyapp.sweep.chromium import CHROMIUM_ARGS

    if not (SITE / "index.html").is_file():
        raise SystemExit(f"{SITE} is not built: run python scripts/build_site.py")
    server, url = serve_in_thread(SITE)
    caps = {"max_input_tokens": 1024, "max_output_bytes": 16384, "timeout_ms": 60_000}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium", args=list(CHROMIUM_ARGS)
            )
            page = browser.new_page()
            page.goto(url, timeout=30_000)
            page.wait_for_function(
                "() => ['ready', 'error'].includes(document.querySelector('#app').dataset.state)"
                " && document.querySelector('#model-choice').options.length > 1",
                timeout=120_000,
            )
            page.select_option("#model-choice", "fixture")
            page.check('input[name="backend"][value="wasm"]')
            page.click("#model-review")
            page.click("#consent-accept")
            page.wait_for_function(
                "() => ['loaded', 'failed']"
                ".includes(document.querySelector('#models').dataset.state)",
                timeout=120_000,
            )
            load = page.evaluate("() => window.lab.models.client.provenance().loads.at(-1)")
            if not load["ok"]:
                raise SystemExit(f"fixture load failed: {load}")
            request = {
                "messages": long_reply()["messages"],
                "caps": {**caps, "max_new_tokens": new_tokens},
            }
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
    return {
        "rates": rates,
        "finishes": sorted(finishes),
        "setup_ms": load["setup_ms"],
        "python_overheads": python_overheads,
        "js_overheads": js_overheads,
        "threads": versions["threads"],
        "versions": f"transformers.js {versions['transformers_js_version']}, "
        f"onnxruntime-web {versions['onnxruntime_version']}",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--native-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.native_only:
        print(json.dumps(native_tokens_per_second(args.runs, args.new_tokens)))
        return 0
    print(
        "tiny-chat is a TEST FIXTURE (~100k parameters):"
        " these are pipeline figures, not model evidence."
    )
    browser = browser_side(args.runs, args.new_tokens, args.calls)
    native, where = native_side(args.runs, args.new_tokens)
    median = statistics.median
    web = median(browser["rates"])
    print(f"browser WASM ({browser['versions']}, {browser['threads']} thread(s)):")
    print(f"  fixture load + warm-up      {browser['setup_ms']:8.1f} ms")
    print(
        f"  greedy tokens/s            {web:8.1f}  (median of {len(browser['rates'])} runs of "
        f"{args.new_tokens} new tokens after warm-up; finish {', '.join(browser['finishes'])})"
    )
    if native is None:
        print(f"native onnxruntime: skipped — {where}")
    else:
        print(f"native onnxruntime ({where}, 1 thread):")
        print(f"  greedy tokens/s            {median(native):8.1f}  (median of {len(native)} runs)")
        print(f"  browser / native ratio     {web / median(native):8.3f}")
    py, js = browser["python_overheads"], browser["js_overheads"]
    print(f"bridge overhead per call (median of {len(py)}; one new token each):")
    print(
        f"  Python -> main -> model worker -> Python, minus worker time  {median(py):7.2f} ms"
        f"  (p90 {sorted(py)[int(0.9 * (len(py) - 1))]:.2f} ms)"
    )
    print(f"  JS main -> model worker -> main, minus worker time          {median(js):7.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
