"""Harness overhead bench (issue 5): prints figures, asserts nothing.

One full default sweep (seed 1729, all four conditions, measure → freeze → held-out) runs in
headless Chromium from the page's own Run button, with the tiny-chat TEST FIXTURE on WASM
(not model evidence: this measures the pipeline). From the downloaded trace, per model trial:

    harness overhead = timings.total_ms − timings.generation_ms
    fraction         = overhead / generation_ms

i.e. everything but generation — prompt construction, parsing, interpreter execution,
verification and the glue between them — as a fraction of generation time. `generation_ms`
is the controller's view of each model call (for chains, the sum over the calls), so the
Python → main thread → model worker bridge counts as generation here (docs/models.md
measures it separately: ≈ 3 ms per call). The page's own per-trial work (drawing, storing
the trace in IndexedDB) happens inside the notify call, between trials, so it is not in
total_ms: it is reported as the sweep's wall time minus the sum of total_ms.

Usage: .venv/bin/python bench/harness.py [--seed 1729] [--step-delay-ms 0]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# bench/interpreter.py would shadow the `interpreter` package: the repository comes first.
sys.path.insert(0, str(ROOT))
SITE = ROOT / "build" / "site"
CHROMIUM = "/usr/bin/chromium"
CONDITIONS = ("supplied-program", "model-only", "model-program", "controlled-chain")


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def boot_fixture(page: Any, url: str) -> dict[str, Any]:
    """Open the page at `url`, wait for Python, and load the tiny-chat TEST FIXTURE on WASM
    through the Models panel's consent dialog (what a user clicks); returns the load record."""
    from pyapp.sweep.panel import load_from_catalogue

    page.goto(url, timeout=30_000)
    page.wait_for_function(
        "() => ['ready', 'error'].includes(document.querySelector('#app').dataset.state)",
        timeout=120_000,
    )
    load_from_catalogue(page, 120_000)
    load = page.evaluate("() => window.lab.models.client.provenance().loads.at(-1)")
    if not load["ok"]:
        raise SystemExit(f"fixture load failed: {load}")
    return dict(load)


def run_sweep(seed: int, step_delay_ms: int) -> tuple[dict[str, Any], float]:
    from playwright.sync_api import Route, sync_playwright

    from pyapp.host.serve import serve_in_thread
    from pyapp.sweep.chromium import CHROMIUM_ARGS

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
            query = f"?seed={seed}" + (
                f"&model_step_delay_ms={step_delay_ms}" if step_delay_ms else ""
            )
            boot_fixture(page, url + query)
            for condition in CONDITIONS:
                page.check(f'input[name="condition"][value="{condition}"]')
            started = time.perf_counter()
            page.get_by_role("button", name="Run (measure, freeze, held-out)").click()
            page.wait_for_function(
                "() => ['done', 'error', 'cancelled']"
                ".includes(document.querySelector('#experiment').dataset.state)",
                timeout=1_800_000,
            )
            wall_s = time.perf_counter() - started
            state = page.get_attribute("#experiment", "data-state")
            if state != "done":
                sys.exit(f"the sweep ended in {state}: {page.inner_text('#experiment-status')}")
            trace: dict[str, Any] = page.evaluate("() => window.lab.experiment.trace()")
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return trace, wall_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1729)
    parser.add_argument("--step-delay-ms", type=int, default=0, help="slow the fixture (test hook)")
    options = parser.parse_args()
    trace, wall_s = run_sweep(options.seed, options.step_delay_ms)

    model_trials = [
        t
        for t in trace["trials"]
        if t["timings"]["generation_ms"] is not None and t["timings"]["generation_ms"] > 0
    ]
    rows: dict[str, list[tuple[float, float]]] = {}
    for trial in model_trials:
        t = trial["timings"]
        overhead = t["total_ms"] - t["generation_ms"]
        rows.setdefault(trial["condition"], []).append((overhead, overhead / t["generation_ms"]))
    everything = [pair for pairs in rows.values() for pair in pairs]
    total_ms = sum(t["timings"]["total_ms"] for t in trace["trials"])

    print("Harness overhead per trial, tiny-chat TEST FIXTURE on WASM (not model evidence)")
    print(
        f"seed {trace['run']['seed']}, {len(trace['trials'])} trials "
        f"({len(model_trials)} with generation), sweep wall time {wall_s:.1f} s"
    )
    print(f"browser: {trace['environment']['browser']['user_agent']}")
    print()
    print(
        f"{'condition':<18} {'n':>4} {'median fraction':>16} {'p90 fraction':>13} {'median ms':>10}"
    )
    for condition, pairs in [*rows.items(), ("all model trials", everything)]:
        fractions = [f for _, f in pairs]
        overheads = [o for o, _ in pairs]
        print(
            f"{condition:<18} {len(pairs):>4} {statistics.median(fractions):>16.4f} "
            f"{quantile(fractions, 0.9):>13.4f} {statistics.median(overheads):>10.3f}"
        )
    control = [
        t["timings"]["total_ms"] for t in trace["trials"] if t["condition"] == "supplied-program"
    ]
    if control:
        print(
            "supplied-program control (no generation): "
            f"median total {statistics.median(control):.3f} ms"
        )
    page_s = wall_s - total_ms / 1000
    print(
        f"outside trials (page: drawing, IndexedDB, freeze, events): {page_s:.1f} s of "
        f"{wall_s:.1f} s ({page_s / len(trace['trials']) * 1000:.1f} ms per trial)"
    )
    print(json.dumps({"median_overhead_fraction": statistics.median([f for _, f in everything])}))


if __name__ == "__main__":
    main()
