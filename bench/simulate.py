"""Throughput of `python -m pyapp simulate` on one core, with every file written.

Runs the command in this process (one core: the protocol is single-threaded) for a range of
seeds into a temporary folder — every seed's trace.json and predictions.json plus
summary.json — and prints trials per second of wall time and per second of this process's
CPU time (the latter is what the goal of 1,000 trials/s on one core means on a shared,
loaded machine), and their ratio to that goal.

Usage:
    .venv/bin/python bench/simulate.py                      # size-dependent, seeds 1..100
    .venv/bin/python bench/simulate.py --model depth --seeds 1..300

Synthetic: never model evidence.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyapp.cli.main import main as cli  # noqa: E402

GOAL = 1000.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="size-dependent")
    parser.add_argument("--seeds", default="1..100")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "sim"
        wall, cpu = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(io.StringIO()):
            code = cli(
                ["simulate", "--model", args.model, "--seeds", args.seeds, "--out", str(out)]
            )
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if code != 0:
            return code
        trials = json.loads((out / "summary.json").read_text(encoding="utf-8"))["trials"]
        files = sum(1 for _ in out.rglob("*.json"))
    print(
        f"simulate --model {args.model} --seeds {args.seeds}: {trials} trials, {files} files "
        f"written; {wall:.1f} s wall ({trials / wall:.0f} trials/s), {cpu:.1f} s CPU "
        f"({trials / cpu:.0f} trials/CPU-s: {trials / cpu / GOAL:.2f}x the goal of "
        f"{GOAL:.0f}/s on one core)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
