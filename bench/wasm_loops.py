"""Where browser WASM decoding time goes (issue 15; a diagnostic that prints figures and
asserts nothing). Not the page: a module worker of its own (bench/wasm_loops_worker.js) loads
the model through the site's transformers.js + onnxruntime-web exactly as the page's model
worker does, then, interleaved with native onnxruntime on the same ONNX file, prompt ids
and thread count (bench/generation.py's native loop), times greedy generation in five
browser loops: transformers.js `model.generate` (what the page ran before
site/model_worker/greedy.js);
`greedy`, the page's loop (site/model_worker/greedy.js with its output-bytes check); `steps`,
transformers.js's per-step input bookkeeping with a plain argmax; `forward`, a loop over
`model.forward` with its own inputs and a plain argmax; `session`, a loop calling the
onnxruntime-web session directly. Per loop: tokens/s (median, quartiles), the share of
time inside `session.run`, CPU ms per token (all Chromium processes; native: its process)
and the browser/native ratios.

Subjects (all TEST FIXTURES, never model evidence): `fixture` (tiny-chat), `qwen3` (the Qwen3
stand-in, q8 by default, `--dtype q4|fp32`), `scaled` (a random-weight Llama with real matrix
work: hidden 512, 8 layers, ~25 M parameters, the fixture's tokenizer; built on demand into
build/bench-models/scaled by `--build-scaled`, which needs torch + optimum-onnx, e.g. under
build/fixture-venv).

Usage: .venv/bin/python bench/wasm_loops.py fixture [--threads 1] [--runs 8] [--warmup 4]
       [--new-tokens 64] [--js-flags=--no-liftoff]
       build/fixture-venv/bin/python bench/wasm_loops.py scaled --build-scaled
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import generation as gen  # bench/generation.py: native loop, CPU, spread

from pyapp.host import place, serve_in_thread, write_probe_page

ROOT = gen.ROOT
SCALED = ROOT / "build" / "bench-models" / "scaled"
LOOPS = ("greedy", "steps", "forward", "session", "generate")


STANDIN_DTYPES = {
    "q8": "onnx/model_quantized.onnx",
    "q4": "onnx/model_q4.onnx",
    "fp32": "onnx/model.onnx",
}
"""The Qwen3 stand-in's dtypes this loads (--dtype; q8 is the catalogue's WASM default)."""


def subject_files(name: str, dtype: str) -> tuple[dict[str, Any], dict[str, Path], str]:
    """The load request, the model folder's files (served name -> file), the ONNX file."""
    if name == "qwen3":
        meta = json.loads((gen.STANDINS / "qwen3" / "standin.json").read_text(encoding="utf-8"))
        folder, onnx = gen.STANDINS / "qwen3", STANDIN_DTYPES[dtype]
        files = {p.name: p for p in folder.glob("*.json") if p.name not in {"standin.json"}}
        package = ROOT / "node_modules" / meta["tokenizer_package"] / "models"
        files.update({p.name: p for p in package.iterdir()})
        request = {
            "dtype": dtype,
            "prompt": "What is 2 + 2?",
            "template": {"enable_thinking": False},
        }
    else:
        folder = gen.FIXTURE if name == "fixture" else SCALED
        onnx = "onnx/model.onnx"
        files = {p.name: p for p in folder.glob("*.json")}
        request = {"dtype": "fp32", "prompt": gen.long_reply()["messages"][0]["content"]}
    files[onnx] = folder / onnx
    if (folder / f"{onnx}_data").is_file():  # external data (the stand-in's fp32 file)
        files[f"{onnx}_data"] = folder / f"{onnx}_data"
    return {"type": "load", "model_id": f"probe/{name}", **request}, files, onnx


def site_folder(name: str, files: dict[str, Path]) -> tempfile.TemporaryDirectory[str]:
    """A served folder under build/: the site's transformers.js + ORT files, the worker, the
    model's files."""
    (ROOT / "build").mkdir(exist_ok=True)
    folder = tempfile.TemporaryDirectory(prefix="wasm-loops-", dir=ROOT / "build")
    root = Path(folder.name)
    for path in (gen.SITE / "transformers").iterdir():
        place(path, root / "transformers" / path.name)
    place(Path(__file__).with_name("wasm_loops_worker.js"), root / "wasm_loops_worker.js")
    for module in ("greedy.js", "output_bytes.js"):
        place(gen.SITE / "model_worker" / module, root / module)
    write_probe_page(root, "wasm_loops_worker.js", "wasm loops")
    for served, path in files.items():
        place(path, root / "models" / "probe" / name / served)
    return folder


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Load in Chromium, then rounds of every browser loop followed by one native run."""
    from playwright.sync_api import sync_playwright

    from pyapp.sweep import CHROMIUM_ARGS

    load, files, onnx = subject_files(args.subject, args.dtype)
    folder = site_folder(args.subject, files)
    server, url = serve_in_thread(Path(folder.name))
    flags = [f"--js-flags={args.js_flags}"] if args.js_flags else []
    runs: dict[str, list[dict[str, Any]]] = {loop: [] for loop in (*LOOPS, "native")}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium", args=[*CHROMIUM_ARGS, *flags]
            )
            page = browser.new_page()
            page.goto(url + "index.html")
            call = lambda m: page.evaluate("(m) => window.probe.call(m)", m)  # noqa: E731
            extra = json.loads(args.session_options) if args.session_options else None
            loaded = call({**load, "threads": args.threads, "session_options": extra})
            if not loaded["ok"]:
                raise SystemExit(f"load failed: {loaded['error']}")
            model = [
                "--model-file",
                str(files[onnx]),
                "--prompt-ids",
                json.dumps(loaded["prompt_ids"]),
            ]
            native = gen.NativeSide(model, loaded["threads"])
            try:
                for round_ in range(args.warmup + args.runs):
                    for loop in LOOPS:
                        before = gen.chromium_cpu_seconds()
                        reply = call({"type": loop, "tokens": args.new_tokens})
                        if not reply["ok"]:
                            raise SystemExit(f"{loop} failed: {reply['error']}")
                        after = gen.chromium_cpu_seconds()
                        reply["cpu_s"] = None if before is None or after is None else after - before
                        reply["rate"] = reply["tokens"] / reply["ms"] * 1e3
                        if round_ >= args.warmup:
                            runs[loop].append(reply)
                    done = native.run(args.new_tokens)
                    if done is not None and round_ >= args.warmup:
                        runs["native"].append(done)
            finally:
                native.close()
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
        folder.cleanup()
    return {"load": loaded, "runs": runs, "where": native.where}


def report(args: argparse.Namespace, before: str, measured: dict[str, Any]) -> None:
    runs = measured["runs"]
    dtype = f" ({args.dtype})" if args.subject == "qwen3" else ""
    print(
        f"== {args.subject}{dtype} (TEST FIXTURE, not model evidence),"
        f" {measured['load']['threads']} thread(s), {args.new_tokens} new tokens,"
        f" {args.runs} rounds after {args.warmup}"
    )
    if args.js_flags:
        print(f"DIAGNOSTIC: Chromium ran with --js-flags={args.js_flags} (users' browsers do not)")
    print(f"load average {before} before, {gen.load_average()} after; {os.cpu_count()} cores")
    native = runs["native"]
    native_cpu = gen.cpu_ms_per_token(native)
    for loop in (*LOOPS, "native"):
        rates = [run["rate"] for run in runs[loop]]
        if not rates:
            print(f"  {loop:9s} skipped — {measured['where']}")
            continue
        cpu = gen.cpu_ms_per_token(runs[loop])
        line = f"  {loop:9s} tokens/s {gen.spread(rates)}  CPU/token {gen.shown(cpu)}"
        if loop != "native":
            inside = statistics.median(run["run_ms"] / run["ms"] for run in runs[loop])
            line += f"  in session.run {inside:.2f}"
            if native:
                paired = [w / n["rate"] for w, n in zip(rates, native, strict=False)]
                line += f"  paired ratio {statistics.median(paired):.3f}"
                line += f"  CPU ratio {native_cpu / cpu:.3f}" if cpu and native_cpu else ""
        print(line)
    for loop in ("greedy", "steps", "forward"):
        same = runs[loop][-1]["ids"] == runs["session"][-1]["ids"]
        print(f"  {loop} and session loops chose the same tokens: {same}")


def build_scaled() -> None:
    """A random-weight Llama (hidden 512, 8 layers) with the fixture's tokenizer files,
    exported like the fixture (optimum-onnx, text-generation-with-past), into SCALED."""
    import torch
    from optimum.exporters.onnx import onnx_export_from_model
    from transformers import LlamaConfig, LlamaForCausalLM

    config = json.loads((gen.FIXTURE / "config.json").read_text(encoding="utf-8"))
    config.update(hidden_size=512, intermediate_size=1536, num_hidden_layers=8)
    config.update(num_attention_heads=8, num_key_value_heads=4, head_dim=64)
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**config)).eval()
    (SCALED / "onnx").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        onnx_export_from_model(model, Path(tmp), task="text-generation-with-past", device="cpu")
        shutil.copyfile(Path(tmp) / "model.onnx", SCALED / "onnx" / "model.onnx")
        shutil.copyfile(Path(tmp) / "config.json", SCALED / "config.json")
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copyfile(gen.FIXTURE / name, SCALED / name)
    shutil.copyfile(gen.FIXTURE / "generation_config.json", SCALED / "generation_config.json")
    count = sum(p.numel() for p in model.parameters())
    print(f"built {SCALED} ({count:,} parameters, random weights: a test fixture)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("subject", choices=("fixture", "qwen3", "scaled"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", choices=sorted(STANDIN_DTYPES), default="q8", help="qwen3 only")
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--js-flags", default=None, help="diagnostic V8 flags, e.g. --no-liftoff")
    parser.add_argument("--build-scaled", action="store_true", help="build the scaled model")
    parser.add_argument(
        "--session-options",
        default=None,
        help='diagnostic: onnxruntime-web session options (JSON), e.g. {"enableMemPattern": false}',
    )
    args = parser.parse_args()
    if args.build_scaled:
        build_scaled()
        return 0
    if args.subject == "scaled" and not (SCALED / "onnx" / "model.onnx").is_file():
        raise SystemExit(f"{SCALED} is missing: run this script with --build-scaled first")
    before = gen.load_average()
    report(args, before, measure(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
