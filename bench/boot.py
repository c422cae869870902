"""Boot bench for the static site (issue 3): prints figures, asserts nothing.

In one run, on this machine, in headless Debian Chromium against build/site:

* time to Python-ready of the app (PyScript worker + our wheel + a `hello` round trip)
  vs a bare Pyodide module worker page (site/bench/bare.html), median of N cold loads
  (each load in a fresh browser context: empty HTTP cache), and their ratio;
* time to the first task table (seed 1729);
* Python <-> JS round-trip latency: median of many `hello` requests through the bridge.

Usage: .venv/bin/python bench/boot.py [--loads 3] [--round-trips 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from playwright.sync_api import Browser, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyapp.host.serve import serve_in_thread  # noqa: E402  (after the path tweak)
from pyapp.sweep.chromium import CHROMIUM_ARGS  # noqa: E402

SITE = ROOT / "build" / "site"
ARGS = list(CHROMIUM_ARGS)  # the flags of PLATFORM-NOTES, kept in one place
READY = "() => ['ready', 'error'].includes(document.querySelector('#app').dataset.state)"


def cold_load(browser: Browser, url: str, timings_js: str) -> dict[str, float]:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(url, timeout=30_000)
        page.wait_for_function(READY, timeout=120_000)
        if page.get_attribute("#app", "data-state") != "ready":
            raise RuntimeError(f"{url}: {page.inner_text('#status')}")
        timings: dict[str, float] = page.evaluate(timings_js)
        return timings
    finally:
        context.close()


def round_trips(browser: Browser, url: str, count: int) -> list[float]:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(url, timeout=30_000)
        page.wait_for_function(READY, timeout=120_000)
        samples: list[float] = page.evaluate(
            """async (count) => {
                const out = [];
                for (let i = 0; i < count; i++) {
                    const t = performance.now();
                    await window.lab.request("hello");
                    out.push(performance.now() - t);
                }
                return out;
            }""",
            count,
        )
        return samples
    finally:
        context.close()


def main() -> int:
    parser = argparse.ArgumentParser(description="boot bench for build/site")
    parser.add_argument("--loads", type=int, default=3, help="cold loads per page (>= 3)")
    parser.add_argument("--round-trips", type=int, default=200)
    args = parser.parse_args()
    if not (SITE / "index.html").is_file():
        print(f"{SITE} missing: run `python scripts/build_site.py` first", file=sys.stderr)
        return 1
    server, url = serve_in_thread(SITE)
    app_ready: list[float] = []
    app_table: list[float] = []
    bare_ready: list[float] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        try:
            for _ in range(max(args.loads, 3)):  # interleaved, so drift hits both alike
                app = cold_load(browser, url, "window.lab.timings")
                app_ready.append(app["python_ready_ms"])
                app_table.append(app["first_table_ms"])
                bare = cold_load(browser, url + "bench/bare.html", "window.bareTimings")
                bare_ready.append(bare["python_ready_ms"])
            trips = round_trips(browser, url, args.round_trips)
        finally:
            browser.close()
            server.shutdown()

    def fmt(values: list[float]) -> str:
        runs = ", ".join(f"{value:.0f}" for value in values)
        return f"median {statistics.median(values):7.0f} ms  (runs: {runs})"

    print(f"cold loads per page: {len(app_ready)}, fresh browser context each")
    print(f"bare Pyodide worker, Python ready : {fmt(bare_ready)}")
    print(f"app (PyScript+wheel), Python ready: {fmt(app_ready)}")
    ratio = statistics.median(app_ready) / statistics.median(bare_ready)
    print(f"ratio app / bare (medians)        : {ratio:.2f}")
    print(f"app, first task table (seed 1729) : {fmt(app_table)}")
    trip_median = statistics.median(trips)
    print(
        f"JS -> Python -> JS round trip ('hello', {len(trips)} calls): median "
        f"{trip_median:.3f} ms, p90 {statistics.quantiles(trips, n=10)[-1]:.3f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
