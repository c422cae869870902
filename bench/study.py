"""The study's performance (issue 34): prints figures, asserts nothing.

    .venv/bin/python bench/study.py [--plan examples/study-subject.toml] [--jobs 2]
        [--browser-rung subject-ladder/1 --browser-seed 11] [--skip-browser]

1. The shipped subject study natively: `python -m pyapp matrix PLAN --out TMP` (the
   product's command, not a copy of it), then `python -m pyapp study TMP`. Prints the wall
   time of each, the trials and model calls the cells made (read from their traces), and
   trials/s. Issue 34's goal: the matrix finishes in <= 10 minutes on the 2-core machine.
2. One rung x one seed of the same plan in the page on WASM (`sweep --backend wasm`) and
   natively (`sweep --backend native`), back to back on the same machine: how many trials
   have the same verdict, correctness and reply texts in both, then trials/s of each per
   condition (the sum of the trials' `total_ms` by condition) and the browser/native
   ratio. The page run takes minutes (about 3,400 trials at a few trials/s).

The machine's load average is printed before and after: figures taken under load say so.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def pyapp(*args: str) -> float:
    """Run `python -m pyapp ARGS` from the repository root; its wall time in seconds."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pyapp", *args], cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"python -m pyapp {' '.join(args)} exited {done.returncode}")
    return time.perf_counter() - started


def trials_of(trace: Path) -> list[dict[str, Any]]:
    trials: list[dict[str, Any]] = json.loads(trace.read_text(encoding="utf-8"))["trials"]
    return trials


def calls_of(trial: dict[str, Any]) -> int:
    chain = trial.get("chain")
    return len(chain.get("calls", [])) if isinstance(chain, dict) else 1


def per_condition(trace: Path) -> dict[str, tuple[int, float]]:
    """Trials and the seconds their `total_ms` add up to, by condition."""
    table: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for trial in trials_of(trace):
        row = table[str(trial["condition"])]
        row[0] += 1
        row[1] += float(trial["timings"]["total_ms"]) / 1000
    return {k: (int(v[0]), v[1]) for k, v in sorted(table.items())}


def replies(trial: dict[str, Any]) -> tuple[str | None, ...]:
    """Every reply text a trial recorded: its completion's, or each chain call's."""
    chain = trial.get("chain")
    if isinstance(chain, dict):
        return tuple((c.get("completion") or {}).get("text") for c in chain.get("calls", []))
    return ((trial.get("completion") or {}).get("text"),)


def differences(native: Path, wasm: Path) -> tuple[int, list[str]]:
    """Trials compared by id (verdict, correctness, every reply text); the ids that differ."""
    a = {t["trial_id"]: t for t in trials_of(native)}
    b = {t["trial_id"]: t for t in trials_of(wasm)}
    differ = sorted(set(a) ^ set(b))
    for trial_id in sorted(set(a) & set(b)):
        x, y = a[trial_id], b[trial_id]
        if (x["outcome"], x["correct"], replies(x)) != (y["outcome"], y["correct"], replies(y)):
            differ.append(trial_id)
    return len(set(a) | set(b)), differ


def native_study(plan: Path, jobs: int, work: Path) -> None:
    out = work / "study"
    print(f"[study] load average before: {load()} ({os.cpu_count()} cores)")
    matrix_s = pyapp("matrix", str(plan), "--out", str(out), "--jobs", str(jobs))
    study_s = pyapp("study", str(out))
    traces = sorted((out / "cells").glob("*/trace.json"))
    trials = [t for trace in traces for t in trials_of(trace)]
    calls = sum(calls_of(t) for t in trials)
    print(f"[study] {plan.name}: {len(traces)} cells, {len(trials)} trials, {calls} model calls")
    print(
        f"[study] matrix {matrix_s:.1f} s wall ({len(trials) / matrix_s:.1f} trials/s, "
        f"{jobs} jobs; goal <= 600 s: ratio {matrix_s / 600:.2f}); study {study_s:.1f} s"
    )
    print(f"[study] load average after: {load()}")


def browser_native(rung: str, seed: int, work: Path) -> None:
    common = ["--model", "subject", "--preset", rung, "--seed", str(seed), "--consent"]
    conditions = ["--conditions", "model-only,model-program,controlled-chain"]
    runs = {}
    for backend in ("native", "wasm"):
        out = work / backend
        wall = pyapp("sweep", *common, *conditions, "--backend", backend, "--out", str(out))
        runs[backend] = per_condition(out / "trace.json")
        print(f"[page] {backend}: {rung} seed {seed}, whole command {wall:.1f} s")
    compared, differ = differences(work / "native" / "trace.json", work / "wasm" / "trace.json")
    shown = f": {', '.join(differ[:5])}" if differ else ""
    print(
        f"[page] identical verdicts and replies in {compared - len(differ)} of {compared} "
        f"trials{shown}"
    )
    print(f"[page] trials/s by condition ({rung}, seed {seed}); load average {load()}")
    for condition, (n, native_s) in runs["native"].items():
        m, wasm_s = runs["wasm"].get(condition, (0, 0.0))
        native_rate, wasm_rate = n / native_s, (m / wasm_s if wasm_s else 0.0)
        ratio = wasm_rate / native_rate if native_rate else 0.0
        print(
            f"  {condition:17s} native {native_rate:7.1f}/s  wasm {wasm_rate:7.1f}/s  "
            f"browser/native {ratio:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plan", type=Path, default=ROOT / "examples" / "study-subject.toml")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--browser-rung", default="subject-ladder/1")
    parser.add_argument("--browser-seed", type=int, default=11)
    parser.add_argument("--skip-browser", action="store_true")
    parser.add_argument("--skip-study", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-study-") as tmp:
        if not args.skip_study:
            native_study(args.plan, args.jobs, Path(tmp))
        if not args.skip_browser:
            browser_native(args.browser_rung, args.browser_seed, Path(tmp))


if __name__ == "__main__":
    main()
