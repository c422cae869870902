"""Benchmark: the interpreter, natively and under Pyodide, and the supplied-program harness.

Prints, measured in this one run:
- the time to parse + execute + cross-check a 127-node (63-operation) tree: median and
  minimum in this CPython, then the same function run under Pyodide 314 (CPython 3.14 in
  WebAssembly, in Node.js, offline, from this checkout's files), and their ratio;
  the goals are <= 0.25 ms natively and <= 1 ms in Pyodide;
- generation + supplied-program throughput (tasks/s) at about 1k, 10k and 100k tasks,
  and the scaling ratio of time per task at 100k vs 1k (≈1 means linear scaling).

Usage: .venv/bin/python bench/interpreter.py [--quick]
Needs `node` on PATH and `node_modules/pyodide` (`npm ci`, done by `scripts/lab`).
No assertions: these machines are shared and noisy; read the ratios.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

# This file is named like the package it measures: keep its own folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
ROOT = _HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import interpreter  # noqa: E402
from interpreter import Op, Ref  # noqa: E402

GOAL_NATIVE_MS = 0.25
GOAL_PYODIDE_MS = 1.0
WARM_UP = 50


def full_tree(depth: int, names: list[str]) -> interpreter.Node:
    """A complete binary tree of `depth` levels (2**depth - 1 nodes), ops and names cycling."""
    counter = iter(range(10**6))

    def build(level: int) -> interpreter.Node:
        if level == 1:
            return Ref(names[next(counter) % len(names)])
        op = interpreter.OPS[next(counter) % 3]
        return Op(op, (build(level - 1), build(level - 1)))

    return build(depth)


def tree_samples(repeats: int) -> list[int]:
    """Nanoseconds to parse, execute and cross-check the 127-node tree, `repeats` times
    after a warm-up. Runs unchanged under CPython and under Pyodide."""
    names = [f"r{i}" for i in range(16)]
    registers = {name: (i % 3) - 1 for i, name in enumerate(names)}  # -1, 0, 1: stays safe
    text = interpreter.canonical_program_text(full_tree(7, names))
    program = interpreter.parse_program(text)
    assert len(program.code) == 127 and len(program.paths) == 127
    expected = interpreter.execute(program, registers)
    assert len(expected.steps) == 63
    samples = []
    for index in range(WARM_UP + repeats):
        start = time.perf_counter_ns()
        # parse + validate, then execute: binary64 and exact int for every intermediate
        execution = interpreter.execute(interpreter.parse_program(text), registers)
        elapsed = time.perf_counter_ns() - start
        assert execution == expected
        if index >= WARM_UP:
            samples.append(elapsed)
    return samples


def pyodide_tree_samples(repeats: int) -> tuple[str, list[int]]:
    """`tree_samples` run under Pyodide in Node; (Pyodide's Python version, samples)."""
    node = shutil.which("node")
    if node is None or not (ROOT / "node_modules" / "pyodide" / "pyodide.mjs").exists():
        raise SystemExit("Pyodide figure: needs `node` and node_modules/pyodide (run npm ci)")
    completed = subprocess.run(
        [
            node,
            str(_HERE / "in_pyodide.mjs"),
            str(ROOT),
            "bench/interpreter.py",
            "tree_samples",
            json.dumps([repeats]),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if completed.returncode != 0:
        raise SystemExit(f"Pyodide run failed:\n{completed.stderr.strip()}")
    answer = json.loads(completed.stdout)
    return answer["python"], answer["result"]


def bench_tree(repeats: int) -> None:
    native = tree_samples(repeats)
    version, in_pyodide = pyodide_tree_samples(repeats)
    native_ms = statistics.median(native) / 1e6
    pyodide_ms = statistics.median(in_pyodide) / 1e6
    print(f"127-node tree: parse + execute + cross-check, median of {repeats} runs")
    print(
        f"  native  (CPython {sys.version.split()[0]}): {native_ms:.3f} ms"
        f" (min {min(native) / 1e6:.3f})   goal <= {GOAL_NATIVE_MS} ms"
    )
    print(
        f"  Pyodide (CPython {version}, Node):  {pyodide_ms:.3f} ms"
        f" (min {min(in_pyodide) / 1e6:.3f})   goal <= {GOAL_PYODIDE_MS} ms"
    )
    print(f"  ratio Pyodide / native: {pyodide_ms / native_ms:.2f}")


def bench_throughput(targets: list[int]) -> None:
    from pyapp.conditions import run_control_trial
    from pyapp.tasks import TaskParams, generate

    def scaled(target: int) -> TaskParams:
        k = max(1, round(target / 24))
        return TaskParams(
            seed=1729,
            primitives_per_op=2 * k,
            recurrence_steps=(2, 3) * k,
            determinants=2 * k,
            derivatives=2 * k,
            probe_pairs=6 * k,
        )

    per_task: dict[int, float] = {}
    for target in targets:
        start = time.perf_counter()
        tasks = generate(scaled(target))
        generated = time.perf_counter()
        correct = sum(run_control_trial(task).correct for task in tasks)
        end = time.perf_counter()
        assert correct == len(tasks)
        per_task[target] = (end - start) / len(tasks)
        print(
            f"{len(tasks):>7} tasks: generate {generated - start:7.2f} s, supplied-program "
            f"{end - generated:7.2f} s, {len(tasks) / (end - start):9.0f} tasks/s"
        )
    first, last = targets[0], targets[-1]
    print(
        f"scaling ratio (time per task at {last} / at {first}): "
        f"{per_task[last] / per_task[first]:.2f}  (1.00 = linear)"
    )


def main() -> None:
    quick = "--quick" in sys.argv
    bench_tree(200 if quick else 2000)
    bench_throughput([1_000, 10_000] if quick else [1_000, 10_000, 100_000])


if __name__ == "__main__":
    main()
