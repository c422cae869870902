"""Harness overhead bench (issues 5 and 22): prints figures, asserts nothing.

One full default sweep (seed 1729, all four conditions, measure → freeze → held-out) runs in
headless Chromium from the page's own Run button, with the tiny-chat TEST FIXTURE on WASM
(not model evidence: this measures the pipeline). From the downloaded trace it prints the
harness time per trial as `bench/overhead.py` defines it for every bench — the wall time from
one trial's start to the next's (the trials' `started_at`, millisecond resolution), minus the
model worker's own generation time for that trial — with its breakdown by stage and the
machine's load; then that time as a fraction of the worker's generation time, by condition.
Gaps across the freeze or an interruption (a record between two trials in the timeline) are
left out. Then the same summary (median and stages) per condition; `--save` also writes the
sweep's trace.

`--sweeps N` (default 1) runs N sweeps one after another in the same page (seeds seed,
seed + 1, ...) and prints each later sweep's summary too: the first sweep after the page
loaded runs while the page still warms up (V8 tiers hot WebAssembly and JavaScript up to
optimised code as they run, compiling in the background on the same cores; which part
warms up was not isolated), so a 96-trial sweep shows more harness time per trial than the
same page does once warm (`bench/scale.py`'s 2,000-trial sweep is the figure issue 22 sets
its goal on).

Usage: .venv/bin/python bench/harness.py [--seed 1729] [--step-delay-ms 0] [--save trace.json]
       [--sweeps 1]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import overhead

ROOT = Path(__file__).resolve().parent.parent
# bench/interpreter.py would shadow the `interpreter` package: the repository comes first.
sys.path.insert(0, str(ROOT))
SITE = ROOT / "build" / "site"
CHROMIUM = "/usr/bin/chromium"
CONDITIONS = ("supplied-program", "model-only", "model-program", "controlled-chain")


def boot_fixture(page: Any, url: str) -> dict[str, Any]:
    """Open the page at `url`, wait for Python, and load the tiny-chat TEST FIXTURE on WASM
    (`model_choose`, then the consent dialog's click, as a user); returns the load record."""
    from pyapp.records import to_json
    from pyapp.sweep import load_from_catalogue, page_state, wait_booted

    page.goto(url, timeout=30_000)
    wait_booted(page, 120_000)
    load_from_catalogue(page, 120_000)
    state = page_state(page)
    load = to_json(state.models.provenance.loads[-1]) if state else None
    if not isinstance(load, dict) or not load["ok"]:
        raise SystemExit(f"fixture load failed: {load}")
    return dict(load)


def run_sweep(seed: int, step_delay_ms: int, sweeps: int = 1) -> tuple[list[dict[str, Any]], float]:
    """The traces of `sweeps` sweeps run one after another in one page (seeds `seed`,
    `seed` + 1, ...), and the first sweep's wall time (s)."""
    from playwright.sync_api import Route, sync_playwright

    from pyapp.host import serve_in_thread
    from pyapp.protocol import RunEnded, SweepRun, SweepStart, SweepTrace, TraceText, page_query
    from pyapp.sweep import CHROMIUM_ARGS, send

    if not (SITE / "index.html").is_file():
        sys.exit(f"{SITE} is not built: run `bash scripts/lab test` or scripts/build_site.py")
    server, url = serve_in_thread(SITE)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
            context = browser.new_context()

            def local_only(route: Route) -> None:
                host = route.request.url.split("/")[2].split(":")[0]
                if route.request.url.startswith(("blob:", "data:")) or host == "127.0.0.1":
                    route.fallback()
                else:
                    route.abort("blockedbyclient")

            context.route("**/*", local_only)
            page = context.new_page()
            query = {"seed": str(seed)}
            if step_delay_ms:
                query["model_step_delay_ms"] = str(step_delay_ms)
            boot_fixture(page, f"{url}?{page_query(query)}")
            traces: list[dict[str, Any]] = []
            wall_s = 0.0
            for k in range(sweeps):
                started = time.perf_counter()
                # Start and run all through window.lab.send: the Experiment section does what
                # its "Run (measure, freeze, held-out)" does
                send(page, SweepStart(seed=seed + k, conditions=CONDITIONS))
                ended: RunEnded = send(page, SweepRun(phase="all"))
                wall_s = wall_s or time.perf_counter() - started
                if ended.cancelled or ended.state.stage != "done":
                    sys.exit(f"the sweep ended in {ended.state.stage}: {ended.notice}")
                answer: TraceText = send(page, SweepTrace())
                traces.append(json.loads(answer.trace_json or "{}"))
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return traces, wall_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1729)
    parser.add_argument("--step-delay-ms", type=int, default=0, help="slow the fixture (test hook)")
    parser.add_argument("--save", type=Path, help="also write the (first) sweep's trace here")
    parser.add_argument(
        "--sweeps", type=int, default=1, help="sweeps one after another in the same page"
    )
    options = parser.parse_args()
    if options.sweeps < 1:
        parser.error("--sweeps must be at least 1")
    traces, wall_s = run_sweep(options.seed, options.step_delay_ms, options.sweeps)
    trace = traces[0]

    pairs = trial_gaps(trace["trials"])
    print("Harness time per trial, tiny-chat TEST FIXTURE on WASM (not model evidence)")
    print(
        f"seed {trace['run']['seed']}, {len(trace['trials'])} trials, sweep wall time "
        f"{wall_s:.1f} s; browser: {trace['environment']['browser']['user_agent']}"
    )
    figures = overhead.summary(pairs, "all trials")
    print()
    print(f"{'condition':<18} {'n':>4} {'median ms':>10} {'median fraction of worker time':>31}")
    by_condition: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    for gap, trial in pairs:
        by_condition.setdefault(trial["condition"], []).append((gap, trial))
    for condition, rows in by_condition.items():
        harness = [overhead.harness_ms(g, t) for g, t in rows]
        fractions = [
            overhead.harness_ms(g, t) / overhead.worker_ms(t)
            for g, t in rows
            if overhead.worker_ms(t) > 0
        ]
        fraction = f"{statistics.median(fractions):.4f}" if fractions else "— (no model)"
        print(f"{condition:<18} {len(rows):>4} {statistics.median(harness):>10.2f} {fraction:>31}")
    print()
    for condition, rows in by_condition.items():
        overhead.summary(rows, condition)
    if len(traces) > 1:
        print()
        print("the later sweeps in the same page (the engines warmed up by the ones before):")
        for k, later in enumerate(traces[1:], start=2):
            label = f"sweep {k} (seed {later['run']['seed']})"
            overhead.summary(trial_gaps(later["trials"]), label)
    if options.save:
        options.save.write_text(json.dumps(trace), encoding="utf-8")
    print(json.dumps({"harness_median_ms": round(figures.get("median_ms", 0.0), 3)}))


def trial_gaps(trials: list[dict[str, Any]]) -> list[tuple[float, dict[str, Any]]]:
    """(start-to-next-start ms, trial) for each trial directly followed by another trial in
    the timeline (consecutive sequence numbers: no freeze or interruption between them)."""
    ordered = sorted(trials, key=lambda t: t["sequence"])
    pairs = []
    for this, after in itertools.pairwise(ordered):
        if after["sequence"] != this["sequence"] + 1:
            continue
        gap = datetime.fromisoformat(after["started_at"]) - datetime.fromisoformat(
            this["started_at"]
        )
        pairs.append((gap.total_seconds() * 1000, this))
    return pairs


if __name__ == "__main__":
    main()
