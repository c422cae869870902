"""Sweep bench (issue 7): does `python -m pyapp sweep` add cost over the page itself?

The same full default sweep (seed 1729, all four conditions, default task parameters) of the
bundled TEST FIXTURE on WASM, two ways, in headless Debian Chromium against build/site:

* CLI: `python -m pyapp sweep --model fixture --backend wasm --consent --out TMP`, wall time
  of the whole command, and its own phase timings from run.json (boot, model load, sweep);
* page: a plain Playwright page (no request guard, no event hook, no files) that boots, loads
  the fixture through the Models panel and clicks "Run (measure, freeze, held-out)"; wall
  time from browser launch, and the same three phases.

The ratio CLI / page of the sweep phase is the figure to watch (≈ 1: the CLI adds nothing to
the trials); the whole-command ratio also counts Python start-up and the file checks.
Prints figures; asserts nothing. The fixture is a test fixture: these are pipeline timings,
not model evidence.

Usage: .venv/bin/python bench/sweep.py [--repeats 1] [--site build/site]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyapp.host import serve_in_thread  # noqa: E402  (after the path tweak)
from pyapp.sweep import CHROMIUM_ARGS, find_chromium, load_from_catalogue, wait_booted, wait_page  # noqa: E402  # noqa: E402

SWEEP_OVER = ("done", "error", "cancelled")
"""The Experiment section's states once a sweep is over (`page_state`)."""


def cli_sweep(site: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        started = time.monotonic()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pyapp",
                "sweep",
                "--model",
                "fixture",
                "--backend",
                "wasm",
                "--consent",
                "--site",
                str(site),
                "--out",
                str(out),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=1800,
        )
        wall = time.monotonic() - started
        if done.returncode != 0:
            raise RuntimeError(f"sweep failed ({done.returncode}): {done.stderr[-2000:]}")
        run = json.loads((out / "run.json").read_text(encoding="utf-8"))
        phases = run["sessions"][0]["timings_s"]
        return {"wall": wall, **phases, "trials": float(run["trials"])}


def page_sweep(site: Path) -> dict[str, float]:
    server, url = serve_in_thread(site)
    executable, _ = find_chromium()
    try:
        with sync_playwright() as playwright:
            started = time.monotonic()
            browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.set_default_timeout(120_000)
                t0 = time.monotonic()
                page.goto(url, timeout=60_000)
                wait_booted(page, 120_000)
                boot = time.monotonic() - t0
                t1 = time.monotonic()
                if load_from_catalogue(page, 120_000) != "loaded":
                    raise RuntimeError("the fixture did not load")
                load = time.monotonic() - t1
                t2 = time.monotonic()
                page.check("#sweep-run-through")  # measure, freeze, held-out: no pause
                page.click("#sweep-run-all")  # the page's own button, as a person runs a sweep
                over = wait_page(
                    page, lambda s: s.experiment in SWEEP_OVER, 1_800_000, "the sweep's end"
                )
                sweep = time.monotonic() - t2
                if over.experiment != "done":
                    raise RuntimeError(f"page sweep ended {over.experiment}: {over.status}")
                trials = over.trials
            finally:
                browser.close()
            wall = time.monotonic() - started
    finally:
        server.shutdown()
        server.server_close()
    return {"wall": wall, "boot": boot, "model_load": load, "sweep": sweep, "trials": trials}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--site", default=str(ROOT / "build" / "site"))
    args = parser.parse_args()
    site = Path(args.site)
    cli: list[dict[str, float]] = []
    page: list[dict[str, float]] = []
    for repeat in range(args.repeats):  # alternate, so drift hits both alike
        first, second = (page_sweep, cli_sweep) if repeat % 2 == 0 else (cli_sweep, page_sweep)
        for runner in (first, second):
            (page if runner is page_sweep else cli).append(runner(site))

    def median(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(row[key] for row in rows)

    print("Full default sweep of the TEST FIXTURE on WASM (pipeline timings, not model evidence)")
    print(f"repeats: {args.repeats}; trials per sweep: CLI {median(cli, 'trials'):.0f}, "
          f"page {median(page, 'trials'):.0f}")  # fmt: skip
    print(f"{'seconds (median)':<22}{'CLI':>10}{'page':>10}{'CLI/page':>10}")
    for key, label in (
        ("boot", "boot (to ready)"),
        ("model_load", "model load"),
        ("sweep", "sweep (all trials)"),
        ("wall", "whole run"),
    ):
        a, b = median(cli, key), median(page, key)
        print(f"{label:<22}{a:>10.2f}{b:>10.2f}{a / b:>10.2f}")
    print(
        "CLI 'whole run' also counts Python start-up and the end-of-run checks (schema, reproduce);"
        " page 'whole run' counts browser launch to the end of the sweep."
    )


if __name__ == "__main__":
    main()
