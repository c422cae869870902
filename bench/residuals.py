"""The model-identity residual test's size and power (issue 36): prints a table, asserts
nothing. The suite runs a 100-replication version of it (tests/test_confirm.py).

    .venv/bin/python bench/residuals.py [--replications 1000] [--permutations 499]

Two synthetic subjects answer the same n held-out tasks; each task has a frozen prediction
q ~ U(0.2, 0.7), the same for both (they share a profile). Subject A succeeds with
probability q, subject B with q + effect. The residual differences d = (o_A − q) − (o_B − q)
go through `pyapp.predict.confirm.residual_permutation` (the study's own function: labels
permuted within each task, two-sided). Each row: the share of replications with p ≤ α and
its 95 % Wilson interval — at effect 0 the test's size (should be about α), otherwise its
power. Seeded: the same arguments print the same table.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyapp.predict import residual_permutation


def differences(n: int, effect: float, rng: random.Random) -> list[float]:
    found = []
    for _ in range(n):
        q = rng.uniform(0.2, 0.7)
        found.append((float(rng.random() < q) - q) - (float(rng.random() < q + effect) - q))
    return found


def wilson(k: int, n: int) -> tuple[float, float]:
    z, p = 1.96, k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--permutations", type=int, default=499)
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args()
    print(f"replications {args.replications}, permutations {args.permutations}, α {args.alpha}")
    print("| tasks n | identity effect | rejections | rate [95 % Wilson] | reads as |")
    print("|---:|---:|---:|---|---|")
    started = time.perf_counter()
    for n in (100, 300):
        for effect in (0.0, 0.05, 0.1, 0.2):
            rng = random.Random(n * 1000 + int(effect * 100))
            k = 0
            for rep in range(args.replications):
                result = residual_permutation(differences(n, effect, rng), args.permutations, rep)
                assert result is not None
                k += result[1] <= args.alpha
            low, high = wilson(k, args.replications)
            what = "size" if effect == 0 else "power"
            rate = k / args.replications
            print(f"| {n} | {effect:g} | {k} | {rate:.3f} [{low:.3f}, {high:.3f}] | {what} |")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
