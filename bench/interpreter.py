"""Benchmark: the interpreter and the supplied-program harness.

Prints, measured in this one run:
- the median time to parse + execute + cross-check a 127-node (63-operation) tree;
- generation + supplied-program throughput (tasks/s) at about 1k, 10k and 100k tasks,
  and the scaling ratio of time per task at 100k vs 1k (≈1 means linear scaling).

Usage: .venv/bin/python bench/interpreter.py [--quick]
No assertions: these machines are shared and noisy; read the ratios.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

# This file is named like the package it measures: keep its own folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import interpreter  # noqa: E402
from interpreter import Op, Ref  # noqa: E402
from pyapp.conditions.interpret import run_trial  # noqa: E402
from pyapp.tasks.taskset import TaskParams, generate  # noqa: E402


def full_tree(depth: int, names: list[str]) -> interpreter.Node:
    """A complete binary tree of `depth` levels (2**depth - 1 nodes)."""
    counter = iter(range(10**6))

    def build(level: int) -> interpreter.Node:
        if level == 1:
            return Ref(names[next(counter) % len(names)])
        op = ("add", "sub", "mul")[next(counter) % 3]
        return Op(op, (build(level - 1), build(level - 1)))

    return build(depth)


def bench_tree(repeats: int) -> None:
    names = [f"r{i}" for i in range(16)]
    registers = {name: (i % 3) - 1 for i, name in enumerate(names)}  # -1, 0, 1: stays safe
    tree = full_tree(7, names)
    text = interpreter.canonical_program_text(tree)
    assert interpreter.count_nodes(tree) == 127 and interpreter.count_operations(tree) == 63
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        node = interpreter.parse_program(text)
        execution = interpreter.execute(node, registers)
        exact = interpreter.evaluate_exact(node, registers)
        samples.append(time.perf_counter_ns() - start)
        assert execution.value == exact
    median_us = statistics.median(samples) / 1e3
    print(
        f"127-node tree ({len(text)} bytes): parse+execute+cross-check median {median_us:.1f} µs"
        f" over {repeats} runs"
    )


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


def bench_throughput(targets: list[int]) -> None:
    per_task: dict[int, float] = {}
    for target in targets:
        params = scaled(target)
        start = time.perf_counter()
        tasks = generate(params)
        generated = time.perf_counter()
        correct = sum(run_trial(task).correct for task in tasks)
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
