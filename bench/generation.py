"""Generation bench (issues 4 and 15): prints figures, asserts nothing.

In one run, on this machine, for the tiny-chat TEST FIXTURE and for the largest catalogue
stand-in (tests/fixtures/standins; random weights, a TEST FIXTURE too: not model evidence),
each chosen in the page like a user would (the stand-in through the local hub stand-in):

* greedy tokens/s in headless Chromium, WASM backend (the page's transformers.js model
  worker) with the page's thread count (all cores when cross-origin isolated; --threads N
  forces N): the first generation after load (cold: V8 first runs onnxruntime-web's
  WebAssembly with its baseline compiler and tiers hot functions up later), then --warmup
  generations (40: after 10, V8's background threads still spent ~0.2-0.9 ms CPU per token
  compiling for the fixture, after 40 ~0.05), then --runs measured ones, with Chromium's CPU
  per token by thread (how much is V8's background work);
* the same greedy loop natively with onnxruntime on the same ONNX file (same dtype), the
  SAME number of intra-op threads, graph optimisation ALL on both sides, past key values fed
  step by step as transformers.js does. Native runs are INTERLEAVED with the browser's (one
  browser generation, one native, ...) so both see the same machine load;
* medians with their quartiles, the median of paired browser/native ratios (goal >= 0.5),
  CPU milliseconds per token on each side (all Chromium processes vs the native process,
  Linux /proc): a figure the other jobs on a shared machine disturb far less than wall time;
  the machine's load average before and after. onnxruntime is not a test dependency: the
  native side runs under this interpreter when it has onnxruntime, else under the fixture
  build venv (build/fixture-venv), else it is skipped, saying so;
* for the fixture, bridge overhead per call: Python (PyScript worker) -> main thread ->
  model worker -> back to Python, minus the model worker's own time (`model_generate`
  requests of one new token, median of many), next to the JS-only overhead.

Usage: .venv/bin/python bench/generation.py [--runs 7] [--warmup 40] [--new-tokens 64]
       [--calls 50] [--threads N] [--js-flags=--no-liftoff (diagnostic)]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chromium_cpu import chromium_cpu_seconds, chromium_threads  # bench/chromium_cpu.py

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


class NativeLoop:
    """Greedy decoding with onnxruntime on the browser's ONNX file: `threads` intra-op threads
    (the browser's count), graph optimisation ALL (onnxruntime-web's default too: both run the
    same optimised graph), sequential execution, past key values fed step by step as
    transformers.js does, argmax of the last logits row each step."""

    def __init__(self, model_file: Path, prompt: list[int], threads: int, spinning: bool) -> None:
        import onnxruntime as ort

        self.prompt = prompt
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if not spinning:  # idle pool threads block instead of spin-waiting (onnxruntime's default)
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            str(model_file), options, providers=["CPUExecutionProvider"]
        )
        self.inputs = {i.name: i for i in self.session.get_inputs()}
        self.outputs = [o.name for o in self.session.get_outputs()]

    def run(self, new_tokens: int) -> dict[str, float]:
        """One greedy generation: tokens/s (wall) and CPU seconds of this process."""
        import numpy as np

        cache = [n for n in self.inputs if n.startswith("past_key_values.")]
        past = {
            n: np.zeros((1, self.inputs[n].shape[1], 0, self.inputs[n].shape[3]), dtype=np.float32)
            for n in cache
        }
        ids, step = list(self.prompt), list(self.prompt)
        started, cpu = time.perf_counter(), time.process_time()
        for _ in range(new_tokens):
            feed = {
                "input_ids": np.array([step], dtype=np.int64),
                "attention_mask": np.ones((1, len(ids)), dtype=np.int64),
                **past,
            }
            if "position_ids" in self.inputs:
                feed["position_ids"] = np.arange(
                    len(ids) - len(step), len(ids), dtype=np.int64
                ).reshape(1, -1)
            result = dict(zip(self.outputs, self.session.run(self.outputs, feed), strict=True))
            next_id = int(result["logits"][0, -1].argmax())
            past = {n: result[n.replace("past_key_values.", "present.")] for n in cache}
            ids.append(next_id)
            step = [next_id]
        return {
            "rate": new_tokens / (time.perf_counter() - started),
            "tokens": new_tokens,
            "cpu_s": time.process_time() - cpu,
        }


def native_prompt(name: str) -> list[int]:
    """The subject's templated prompt as token ids, with its own tokenizer (native side)."""
    from tokenizers import Tokenizer

    chosen = subject(name)
    tokenizer_dir = chosen.hub[-1] if chosen.hub else chosen.folder
    tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    ids: list[int] = tokenizer.encode(chosen.templated, add_special_tokens=False).ids
    return ids


def serve_native(args: argparse.Namespace) -> None:
    """`--native-serve`: one generation per line read (its token count), one JSON line back;
    the bench interleaves these runs with the browser's. The model: a subject's file for its
    dtype, or `--model-file` with `--prompt-ids` (bench/wasm_loops.py)."""
    if args.model_file:
        model_file, prompt = Path(args.model_file), list(json.loads(args.prompt_ids))
    else:
        chosen = subject(args.subject)
        model_file = chosen.folder / "onnx" / DTYPE_FILES[args.dtype]
        prompt = native_prompt(args.subject)
    loop = NativeLoop(model_file, prompt, args.threads or 1, not args.no_spinning)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        print(json.dumps(loop.run(int(line))), flush=True)


class NativeSide:
    """The native loop in a child process (this interpreter when it has onnxruntime, else the
    fixture build venv), so its CPU time is its own and runs interleave with the browser's."""

    def __init__(self, model: list[str], threads: int, spinning: bool = True) -> None:
        """`model`: the `--native-serve` arguments naming the model (`--subject N --dtype D`
        or `--model-file F --prompt-ids JSON`)."""
        self.process: subprocess.Popen[str] | None = None
        try:
            import onnxruntime  # noqa: F401
            import tokenizers  # noqa: F401
        except ImportError:
            python, self.where = str(FIXTURE_VENV_PYTHON), "onnxruntime in build/fixture-venv"
            if not FIXTURE_VENV_PYTHON.exists():
                self.where = (
                    "onnxruntime is not importable here and build/fixture-venv does not exist "
                    "(python3 scripts/build_fixture.py makes it): native side skipped"
                )
                return
        else:
            python, self.where = sys.executable, f"onnxruntime in {sys.prefix}"
        command = [python, __file__, "--native-serve", *model, "--threads", str(threads)]
        command += [] if spinning else ["--no-spinning"]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        if self._read() is None:
            self.where = "the native loop failed to start (see stderr above): native side skipped"

    def _read(self) -> dict[str, float] | None:
        assert self.process is not None and self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.close()
            return None
        reply: dict[str, float] = json.loads(line)
        return reply

    def run(self, new_tokens: int) -> dict[str, float] | None:
        if self.process is None or self.process.stdin is None:
            return None
        self.process.stdin.write(f"{new_tokens}\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.process is not None:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.wait(timeout=60)
            self.process = None


# ---- browser -------------------------------------------------------------------------------

CAPS = {"max_input_tokens": 1024, "max_output_bytes": 65536, "timeout_ms": 60_000}


@contextmanager
def browser_page(chosen: Subject, threads: int | None, js_flags: str | None) -> Iterator[Any]:
    """The real page in headless Chromium with `chosen` loaded on WASM (consent given like a
    user), served like the tests serve it; yields the Playwright page. `js_flags` (V8 flags,
    a diagnostic only: users' browsers run without them) is passed to Chromium."""
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT))
    from pyapp.host import serve_hub_in_thread, serve_in_thread
    from pyapp.protocol import page_query
    from pyapp.sweep import CHROMIUM_ARGS, load_from_catalogue, wait_booted

    if not (SITE / "index.html").is_file():
        raise SystemExit(f"{SITE} is not built: run python scripts/build_site.py")
    server, url = serve_in_thread(SITE)
    hub = serve_hub_in_thread({chosen.model_id: chosen.hub}) if chosen.hub else None
    query = {"model_threads": threads, "model_host": hub[1] if hub else None}
    url += "?" + page_query({k: str(v) for k, v in query.items() if v is not None})
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=[*CHROMIUM_ARGS, *([f"--js-flags={js_flags}"] if js_flags else [])],
            )
            page = browser.new_page()
            page.goto(url, timeout=30_000)
            wait_booted(page, 120_000)
            # how the load ended is checked by the caller, from the load record
            load_from_catalogue(page, 120_000, key=chosen.key, dtype=chosen_dtype(chosen))
            yield page
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
        if hub:
            hub[0].shutdown()
            hub[0].server_close()


def direct(page: Any, caps: dict[str, Any], **chat: Any) -> Any:
    """One generation straight in the page's model worker, Python not involved
    (`model_direct` through window.lab.send); its DirectGenerated record."""
    from pyapp.protocol import ChatMessage, ModelDirect
    from pyapp.sweep import send

    if chat.get("messages") is not None:
        chat["messages"] = tuple(ChatMessage(**m) for m in chat["messages"])
    answer = send(page, ModelDirect(caps=caps, **chat))
    if answer.completion is None:
        raise SystemExit(f"generation failed: {answer.error}")
    return answer


def browser_generate(page: Any, chosen: Subject, new_tokens: int) -> dict[str, Any]:
    """One greedy generation in the page's model worker: tokens/s of the worker's own
    generation time, the Chromium processes' CPU seconds meanwhile, the finish reason."""
    before = chromium_cpu_seconds()
    result = direct(page, {**CAPS, "max_new_tokens": new_tokens}, messages=chosen.messages)
    after = chromium_cpu_seconds()
    completion = result.completion
    return {
        "rate": completion.output_tokens / completion.generation_ms * 1e3,
        "tokens": completion.output_tokens,
        "cpu_s": None if before is None or after is None else after - before,
        "finish": completion.finish_reason,
    }


def bridge_overheads(page: Any, calls: int) -> tuple[list[float], list[float]]:
    """Per call of one new token: Python -> main -> worker -> Python minus worker time, and
    the JS-only round trip minus worker time (ms)."""
    from pyapp.protocol import ModelGenerate
    from pyapp.sweep import send

    caps = {**CAPS, "max_new_tokens": 1}
    python_overheads, js_overheads = [], []
    for _ in range(calls):
        result = send(page, ModelGenerate(prompt="Say hello.", caps=caps))
        python_overheads.append(result.timing.bridge_overhead_ms)
        reply = direct(page, caps, prompt="Say hello.")
        js_overheads.append(reply.client_ms - reply.worker_ms)
    return python_overheads, js_overheads


def loaded_provenance(page: Any) -> dict[str, Any]:
    """The loaded model's provenance (JSON), as `page_state` reports it."""
    from pyapp.records import to_json
    from pyapp.sweep import page_state

    state = page_state(page)
    if state is None:
        raise SystemExit("the page has no window.lab.send")
    provenance: dict[str, Any] = to_json(state.models.provenance)  # type: ignore[assignment]
    return provenance


DTYPE_FILES = {"fp32": "model.onnx", "q8": "model_quantized.onnx", "q4": "model_q4.onnx"}


def chosen_dtype(chosen: Subject) -> str:
    """fp32 where the catalogue entry offers it on WASM, else its first WASM dtype."""
    catalogue = json.loads((ROOT / "site" / "models.json").read_text(encoding="utf-8"))
    wasm: list[str] = next(e for e in catalogue["models"] if e["key"] == chosen.key)["dtypes"][
        "wasm"
    ]
    return "fp32" if "fp32" in wasm else wasm[0]


def spread(values: list[float], digits: int = 1) -> str:
    """`median [p25 - p75]` of `values`, the figures and their noise."""
    q = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    return (
        f"{statistics.median(values):8.{digits}f}  [p25 {q[0]:.{digits}f} - p75 {q[2]:.{digits}f}]"
    )


def cpu_ms_per_token(runs: list[dict[str, Any]]) -> float | None:
    """CPU milliseconds per generated token over `runs` (None where /proc could not tell)."""
    cpu = [run["cpu_s"] for run in runs]
    if not runs or any(c is None for c in cpu):
        return None
    return float(sum(cpu)) / sum(int(run["tokens"]) for run in runs) * 1e3


def shown(ms: float | None) -> str:
    return "not measured (no /proc)" if ms is None else f"{ms:8.3f} ms"


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.1f} (1 min) / {five:.1f} (5 min)"


@dataclass(frozen=True)
class Measured:
    """One subject's interleaved runs."""

    cold: dict[str, Any]
    """The first browser generation after load."""
    browser: list[dict[str, Any]]
    """The measured browser generations."""
    native: list[list[dict[str, float]]]
    """Each native loop's measured runs."""
    threads: dict[str, float]
    """Chromium CPU ms per browser token over the measured rounds, by thread name."""


def interleaved(
    page: Any, chosen: Subject, natives: list[NativeSide], args: argparse.Namespace
) -> Measured:
    """The first browser generation after load (cold), then warm-up, then `args.runs` rounds
    of one browser generation followed by one run of each native loop, so every side sees
    the same machine load."""
    cold = browser_generate(page, chosen, args.new_tokens)
    for _ in range(args.warmup):
        browser_generate(page, chosen, args.new_tokens)
        for native in natives:
            native.run(args.new_tokens)
    browser_runs: list[dict[str, Any]] = []
    native_runs: list[list[dict[str, float]]] = [[] for _ in natives]
    before = chromium_threads()
    for _ in range(args.runs):
        browser_runs.append(browser_generate(page, chosen, args.new_tokens))
        for native, runs in zip(natives, native_runs, strict=True):
            reply = native.run(args.new_tokens)
            if reply is not None:
                runs.append(reply)
    after = chromium_threads()
    tokens = sum(int(run["tokens"]) for run in browser_runs) or 1
    per_token = 1e3 / os.sysconf("SC_CLK_TCK") / tokens
    threads = {name: (after[name] - before.get(name, 0)) * per_token for name in after}
    return Measured(cold, browser_runs, native_runs, threads)


def print_native(
    label: str, native: NativeSide, runs: list[dict[str, float]], browser: list[dict[str, Any]]
) -> None:
    """One native loop's figures and the browser/native ratios."""
    if not runs:
        print(f"native onnxruntime: skipped — {native.where}")
        return
    web = [run["rate"] for run in browser]
    rates = [run["rate"] for run in runs]
    paired = [w / n for w, n in zip(web, rates, strict=False)]
    print(f"native onnxruntime ({native.where}, {label}, interleaved):")
    print(f"  greedy tokens/s            {spread(rates)}")
    native_cpu = cpu_ms_per_token(runs)
    print(f"  CPU per token              {shown(native_cpu)}")
    print(
        f"  browser / native ratio     {spread(paired, 3)}  (median of paired runs; ratio of"
        f" medians {statistics.median(web) / statistics.median(rates):.3f}; goal >= 0.5)"
    )
    web_cpu = cpu_ms_per_token(browser)
    if web_cpu and native_cpu:
        ratio = native_cpu / web_cpu
        print(f"  native / browser CPU per token {ratio:6.3f}  (less load-dependent)")


def compare(name: str, args: argparse.Namespace, calls: int) -> None:
    """One subject: browser WASM and native onnxruntime (the browser's thread count), run
    interleaved; medians with their spread, CPU per token, the machine's load average."""
    chosen = subject(name)
    dtype = chosen_dtype(chosen)
    before = load_average()
    with browser_page(chosen, args.threads, args.js_flags) as page:
        versions = loaded_provenance(page)
        load = versions["loads"][-1]
        if not load["ok"]:
            raise SystemExit(f"{chosen.name} load failed: {load}")
        threads = int(versions["threads"])
        # onnxruntime's default pool spin-waits; with 2+ threads on a busy machine that alone
        # changes the native figure several-fold, so the bench also shows spinning off.
        model = ["--subject", name, "--dtype", dtype]
        natives = [NativeSide(model, threads)]
        natives += [NativeSide(model, threads, spinning=False)] if threads > 1 else []
        try:
            measured = interleaved(page, chosen, natives, args)
        finally:
            for native in natives:
                native.close()
        py, js = bridge_overheads(page, calls)
    cold, browser_runs, native_runs = measured.cold, measured.browser, measured.native
    web = [run["rate"] for run in browser_runs]
    finishes = sorted({run["finish"] for run in browser_runs})
    print(f"== {name} ({chosen.key}, dtype {dtype}; evidence: {versions['evidence']})")
    if args.js_flags:
        print(f"DIAGNOSTIC: Chromium ran with --js-flags={args.js_flags} (users' browsers do not)")
    print(f"load average {before} before, {load_average()} after; {os.cpu_count()} cores")
    print(
        f"browser WASM (transformers.js {versions['transformers_js_version']}, onnxruntime-web "
        f"{versions['onnxruntime_version']}, {threads} thread(s)):"
    )
    print(f"  load + warm-up             {load['setup_ms']:8.1f} ms")
    print(f"  first generation (cold)    {cold['rate']:8.1f} tokens/s")
    print(
        f"  greedy tokens/s            {spread(web)}  ({len(web)} runs of {args.new_tokens} new"
        f" tokens after {args.warmup} warm-up generations; finish {', '.join(finishes)})"
    )
    print(f"  CPU per token              {shown(cpu_ms_per_token(browser_runs))}")
    busiest = sorted(measured.threads.items(), key=lambda item: -item[1])[:4]
    if busiest:
        shares = ", ".join(f"{name} {ms:.3f}" for name, ms in busiest)
        print(f"    by Chromium thread (ms/token): {shares}")
    labels = [f"{threads} thread(s), onnxruntime defaults", f"{threads} threads, spinning off"]
    for label, native, runs in zip(labels, natives, native_runs, strict=False):
        print_native(label, native, runs, browser_runs)
    if py:
        print(f"bridge overhead per call (median of {len(py)}; one new token each):")
        p90 = sorted(py)[int(0.9 * (len(py) - 1))]
        print(
            f"  Python -> main -> model worker -> Python, minus worker time"
            f"  {statistics.median(py):7.2f} ms  (p90 {p90:.2f} ms)"
        )
        print(
            f"  JS main -> model worker -> main, minus worker time          "
            f"{statistics.median(js):7.2f} ms"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=40, help="warm-up generations per side")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument(
        "--threads", type=int, default=None, help="WASM threads (default: the page's, all cores)"
    )
    parser.add_argument(
        "--js-flags",
        default=None,
        help="diagnostic only: V8 flags for Chromium, e.g. --no-liftoff (compile onnxruntime-web's"
        " WebAssembly with V8's optimising tier before the first run, as a tiered-up page would)",
    )
    parser.add_argument("--subject", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--dtype", default="fp32", help=argparse.SUPPRESS)
    parser.add_argument("--native-serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-spinning", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model-file", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--prompt-ids", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.native_serve:
        serve_native(args)
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
