"""Boot bench for the static site (issue 3): prints figures, asserts nothing.

In one run, on this machine, in headless Debian Chromium against build/site:

* time to Python-ready of the app (PyScript worker + our wheel + a `hello` round trip)
  vs a bare Pyodide module worker page (site/bench/bare.html), median of N cold loads
  (each load in a fresh browser context: empty HTTP cache), and their ratio;
* time to the first task table (seed 1729);
* Python <-> JS round-trip latency: median of many `hello` requests through window.lab.send
  from Python, and the same less a `page_state` (answered by the page, no Python worker):
  the page's own JS -> Python -> JS cost.

Usage: .venv/bin/python bench/boot.py [--loads 3] [--round-trips 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from playwright.sync_api import Browser, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyapp.host import serve_in_thread  # noqa: E402  (after the path tweak)
from pyapp.protocol import (  # noqa: E402
    BootTimings,
    Hello,
    PageStateRequest,
)
from pyapp.sweep import (  # noqa: E402
    CHROMIUM_ARGS,
    send,
    wait_booted,
)

SITE = ROOT / "build" / "site"
ARGS = list(CHROMIUM_ARGS)  # the flags of PLATFORM-NOTES, kept in one place
BARE_TIMINGS = "() => window.bareTimings"
"""The bare Pyodide page (site/bench/bare.html) is a page of its own, not the lab page: it has
no window.lab.send, only its timings."""


def cold_load_app(browser: Browser, url: str) -> BootTimings:
    """The lab page, booted in a fresh context: its timings, through `page_state`."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(url, timeout=30_000)
        state = wait_booted(page, 120_000)
        if state.app != "ready":
            raise RuntimeError(f"{url}: {state.status}")
        return state.timings
    finally:
        context.close()


def cold_load_bare(browser: Browser, url: str) -> dict[str, float]:
    """The bare Pyodide page, booted in a fresh context: its timings."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(url, timeout=30_000)
        page.locator('#app[data-state="ready"], #app[data-state="error"]').wait_for(timeout=120_000)
        if page.get_attribute("#app", "data-state") != "ready":
            raise RuntimeError(f"{url}: {page.inner_text('#status')}")
        timings: dict[str, float] = page.evaluate(BARE_TIMINGS)
        return timings
    finally:
        context.close()


def round_trips(browser: Browser, url: str, count: int) -> tuple[list[float], list[float]]:
    """`count` window.lab.send round trips from Python of `hello` (answered by Python in the
    page's worker) and of `page_state` (answered by the page itself), interleaved (ms)."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(url, timeout=30_000)
        wait_booted(page, 120_000)
        python, page_only = [], []
        for _ in range(count):
            t = time.perf_counter()
            send(page, Hello())
            python.append((time.perf_counter() - t) * 1e3)
            t = time.perf_counter()
            send(page, PageStateRequest())
            page_only.append((time.perf_counter() - t) * 1e3)
        return python, page_only
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
                app = cold_load_app(browser, url)
                app_ready.append(app.python_ready_ms or 0.0)
                app_table.append(app.first_table_ms or 0.0)
                bare = cold_load_bare(browser, url + "bench/bare.html")
                bare_ready.append(bare["python_ready_ms"])
            trips, page_trips = round_trips(browser, url, args.round_trips)
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
    page_median = statistics.median(page_trips)
    print(
        f"window.lab.send round trip from Python ('hello', {len(trips)} calls): median "
        f"{trip_median:.3f} ms, p90 {statistics.quantiles(trips, n=10)[-1]:.3f} ms"
    )
    print(
        f"  of which the page's JS -> Python -> JS (minus 'page_state', answered by the page,"
        f" median {page_median:.3f} ms): {trip_median - page_median:.3f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
