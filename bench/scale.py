"""Scale bench (issue 13): does a trial cost the same at trial 2,000 as at trial 20?

A fixture sweep of at least 2,000 trials (default: model-only over 2,000 profile probes and
its held-out tasks, seed 1729) runs in the real page in headless Chromium, with the tiny-chat
TEST FIXTURE on WASM (not model evidence: this measures the pipeline), driven through
window.lab.send only. A listener on the run's events (relayed to Python as they happen)
keeps what each trial_done reports; per trial (its start time as the page stamped it), the
harness time as `bench/overhead.py` defines it for every bench: the wall time from the
trial's start to the next one's, minus the model worker's own generation time (bridge,
bookkeeping, storing and drawing all count as harness), with its breakdown by stage and the
machine's load. Printed: the median and mean harness time of the first and of the last 10%
of trials and their ratio (goal ≤ 1.2), and, every 1,000 trials, the page's JS heap
(Chromium's DevTools protocol, after a garbage collection) and the Python worker's memory
(WebAssembly heap and the objects Python's collector tracks, the page's `memory` request).
To sample memory between trials the sweep is run in chunks of 1,000: `sweep_stop` (after
1,000 trials) makes the page cancel between two trials (no trial is cut short) and the next
run continues; the first trial after each pause, and the first of the held-out phase (its
gap holds the freeze), are left out of the timings.
Memory is printed per interval and per 1,000 trials over the full chunks (the short last
interval holds the held-out phase and what the freeze keeps once) and over the whole run.

Prints figures; asserts nothing. Takes a few minutes (mostly the fixture's generation).

Usage: .venv/bin/python bench/scale.py [--trials 2000] [--chunk 1000] [--seed 1729]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from datetime import datetime
from typing import Any

import overhead
from harness import CHROMIUM, ROOT, SITE, boot_fixture

sys.path.insert(0, str(ROOT))


def slim(trial: dict[str, Any]) -> dict[str, Any]:
    """What bench/overhead.py needs of a trial, kept small."""

    def gen(completion: dict[str, Any]) -> dict[str, Any]:
        return {k: completion.get(k) for k in ("generation_ms", "bridge_ms", "load_wait_ms")}

    chain = trial.get("chain")
    return {
        "condition": trial["condition"],
        "timings": trial.get("timings"),
        "completion": gen(trial["completion"]) if trial.get("completion") else None,
        "chain": {"calls": [{"completion": gen(c["completion"])} for c in chain["calls"]]}
        if chain
        else None,
    }


class Listener:
    """The run's events as the page relays them (window.lab.send's onEvent, through
    pyapp/sweep/driver.js): every trial done, with its chunk and phase. The gaps are taken
    from the trials' own start times (stamped in the page), so the relay's delivery does not
    count: from one trial's start to the next one's, within a chunk and a phase (a new phase's
    gap holds the freeze; a new chunk's, the memory sample) and with consecutive sequence
    numbers (nothing else between them)."""

    def __init__(self) -> None:
        self.trials: list[tuple[int, str, dict[str, Any]]] = []
        self.chunk = 0

    def new_chunk(self) -> None:
        self.chunk += 1

    def __call__(self, text: str, texts: dict[str, Any]) -> None:
        event = json.loads(text)
        if event["type"] == "trial_done":
            trial = json.loads(texts["trial"])
            kept = {**slim(trial), "sequence": trial["sequence"], "started_at": trial["started_at"]}
            self.trials.append((self.chunk, event["phase"], kept))

    def gaps(self) -> list[list[Any]]:
        """[start-to-next-start ms, trial] for each trial followed by another of its chunk."""
        done = []
        for (chunk, phase, this), (chunk2, phase2, after) in itertools.pairwise(self.trials):
            if (chunk, phase) != (chunk2, phase2) or after["sequence"] != this["sequence"] + 1:
                continue
            if not (this["started_at"] and after["started_at"]):
                continue
            gap = datetime.fromisoformat(after["started_at"]) - datetime.fromisoformat(
                this["started_at"]
            )
            done.append([gap.total_seconds() * 1000, this])
        return done


def params_for(trials: int) -> dict[str, Any]:
    """Task parameters giving at least `trials` model-only profile probes (3 ops)."""
    per_op = -(-trials // 3)
    return {"primitives_per_op": per_op, "probe_pairs": 0}


def memory(page: Any, cdp: Any) -> dict[str, float]:
    from pyapp.protocol import Memory
    from pyapp.sweep import page_state, send

    cdp.send("HeapProfiler.collectGarbage")
    heap = cdp.send("Runtime.getHeapUsage")
    python = send(page, Memory())
    state = page_state(page)
    return {
        "trials": state.trials if state else 0,
        "js_heap_mb": heap["usedSize"] / 2**20,
        "wasm_heap_mb": (python.wasm_heap_bytes or 0) / 2**20,
        "python_objects": python.python_objects,
    }


Samples = list[dict[str, float]]


def run(trials: int, chunk: int, seed: int) -> tuple[list[list[float | None]], Samples, float]:
    from playwright.sync_api import sync_playwright

    from pyapp.host import serve_in_thread
    from pyapp.protocol import ErrorBody, SweepRun, SweepStart, SweepState, SweepStop, page_query
    from pyapp.sweep import CHROMIUM_ARGS, install_relay, relayed, send

    if not (SITE / "index.html").is_file():
        sys.exit(f"{SITE} is not built: run scripts/build_site.py")
    server, url = serve_in_thread(SITE)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
            page = browser.new_context().new_page()
            listener = Listener()
            install_relay(page, listener)
            boot_fixture(page, f"{url}?{page_query({'seed': str(seed)})}")
            cdp = page.context.new_cdp_session(page)
            start = SweepStart(seed=seed, params=params_for(trials), conditions=("model-only",))
            state: SweepState = send(page, start)
            total = state.measure_left + state.heldout_left
            print(f"{total} trials to run (model-only, seed {seed}); sampling every {chunk}")
            samples = [memory(page, cdp)]
            started = time.perf_counter()
            while True:
                listener.new_chunk()
                send(page, SweepStop(after=chunk))  # the page cancels between two trials
                result = relayed(page, SweepRun(phase="all"))
                if isinstance(result, ErrorBody):
                    sys.exit(f"sweep_run failed: {result.code}: {result.message}")
                samples.append(memory(page, cdp))
                done_now = samples[-1]["trials"]
                rate = (time.perf_counter() - started) / max(done_now, 1)
                print(f"  {done_now}/{total} trials, {rate * 1000:.0f} ms per trial so far")
                if not result.cancelled:
                    break
            wall_s = time.perf_counter() - started
            done = listener.gaps()
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return done, samples, wall_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=2000, help="profile probes (at least)")
    parser.add_argument("--chunk", type=int, default=1000, help="trials between memory samples")
    parser.add_argument("--seed", type=int, default=1729)
    options = parser.parse_args()
    done, samples, wall_s = run(options.trials, options.chunk, options.seed)
    chunk = options.chunk

    harness = [overhead.harness_ms(gap, trial) for gap, trial in done]
    tenth = max(1, len(done) // 10)
    first, last = harness[:tenth], harness[-tenth:]
    print()
    print("Scale: harness time per trial (bench/overhead.py), tiny-chat TEST FIXTURE on WASM")
    print(f"(not model evidence); {len(done)} trial gaps in {wall_s:.1f} s")
    figures = overhead.summary(done, "whole run")
    print(f"first and last {tenth} trials (10%):")
    for name, values in (("first 10%", first), ("last 10%", last)):
        ordered = sorted(values)
        print(
            f"  {name:<10} median {statistics.median(values):7.2f} ms"
            f"   mean {statistics.fmean(values):7.2f} ms"
            f"   p90 {ordered[int(0.9 * (len(ordered) - 1))]:7.2f} ms"
            f"   max {ordered[-1]:8.2f} ms"
        )
    ratio = statistics.median(last) / statistics.median(first)
    mean_ratio = statistics.fmean(last) / statistics.fmean(first)
    print(f"  ratio last/first: median {ratio:.3f}, mean {mean_ratio:.3f}  (goal ≤ 1.2)")
    print()
    print(f"{'trials':>7} {'JS heap MB':>11} {'WASM heap MB':>13} {'Python objects':>14}")
    for s in samples:
        print(
            f"{s['trials']:>7} {s['js_heap_mb']:>11.1f} {s['wasm_heap_mb']:>13.1f}"
            f" {s['python_objects']:>14}"
        )
    # Linear means the same growth in every full chunk: the change in each interval, then per
    # 1,000 trials over the full chunks and over the whole run (the last, short interval holds
    # the held-out phase's few trials and whatever that phase keeps once).
    for a, b in itertools.pairwise(samples):
        print(
            f"  trials {a['trials']:.0f} -> {b['trials']:.0f}:"
            f" JS heap {b['js_heap_mb'] - a['js_heap_mb']:+.1f} MB,"
            f" WASM heap {b['wasm_heap_mb'] - a['wasm_heap_mb']:+.1f} MB,"
            f" Python objects {b['python_objects'] - a['python_objects']:+.0f}"
        )
    full = [s for s in samples if s["trials"] % chunk == 0] if chunk > 0 else []
    for name, span in (("full chunks", full), ("whole run", samples)):
        a, b = span[0], span[-1]
        if len(span) > 1 and b["trials"] > a["trials"]:
            per = 1000 / (b["trials"] - a["trials"])
            print(
                f"per 1,000 trials ({name}, {a['trials']:.0f} -> {b['trials']:.0f}):"
                f" JS heap {(b['js_heap_mb'] - a['js_heap_mb']) * per:+.1f} MB,"
                f" WASM heap {(b['wasm_heap_mb'] - a['wasm_heap_mb']) * per:+.1f} MB,"
                f" Python objects {(b['python_objects'] - a['python_objects']) * per:+.0f}"
            )
    figures = {
        "harness_median_ms": figures["median_ms"],
        "ratio_median": ratio,
        "ratio_mean": mean_ratio,
    }
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
