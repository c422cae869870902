"""The confirmatory tests, each defined here once: the one-sided bootstrap p-value, the exact
binomial test, Holm's correction and the model-identity residual permutation test.

| test                          | p-value                                                      |
|-------------------------------|--------------------------------------------------------------|
| one-sided percentile bootstrap| claim θ > m: (1 + #{θ*_b ≤ m}) / (B′ + 1) over the B′ resamples  |
|                               | where θ* is defined (−∞ counts); θ < m mirrored              |
| exact binomial                | claim rate > m: P(X ≥ k) under Binomial(n, m); < m: P(X ≤ k) |
| Holm                          | sorted p_(1) ≤ … ≤ p_(m): adjusted p_(i) = max_{j ≤ i}        |
|                               | min(1, (m − j + 1)·p_(j)); an inconclusive hypothesis enters  |
|                               | with p = 1 (the family is fixed before the data)             |
| residual permutation          | two subjects, the same held-out tasks: d_t = r_A,t − r_B,t    |
|                               | with r = outcome − frozen state-aware prediction; T = mean d; |
|                               | permuting the subject labels within each task (a stratum of   |
|                               | two) flips d_t's sign; p = (1 + #{|T*| ≥ |T|}) / (P + 1)       |

The bootstrap p-value is the one whose level-α test agrees with the one-sided percentile
interval (p ≤ α exactly when the α-quantile of θ* lies above m); the +1s make every p-value
a valid one for a Monte-Carlo test. Every draw is seeded (Python's `random`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from itertools import compress
from typing import Literal

Direction = Literal["greater", "less"]


def bootstrap_p(
    values: Sequence[float | None], margin: float, direction: Direction
) -> float | None:
    """The one-sided bootstrap p-value of the claim `θ direction margin` from θ's values over
    the resamples (None where undefined, left out); None when no resample has a value."""
    kept = [v for v in values if v is not None]
    if not kept:
        return None
    against = sum(1 for v in kept if (v <= margin if direction == "greater" else v >= margin))
    return (1 + against) / (len(kept) + 1)


def _log_pmf(k: int, n: int, p: float) -> float:
    return (
        math.lgamma(n + 1)
        - math.lgamma(k + 1)
        - math.lgamma(n - k + 1)
        + k * math.log(p)
        + (n - k) * math.log1p(-p)
    )


def exact_binomial_p(k: int, n: int, margin: float, direction: Direction) -> float:
    """P(X ≥ k) (claim: rate > margin) or P(X ≤ k) (claim: rate < margin) for X ~
    Binomial(n, margin); a margin at or beyond 0 or 1 is the degenerate binomial."""
    if not 0 <= k <= n:
        raise ValueError("need 0 <= k <= n")
    tail = range(k, n + 1) if direction == "greater" else range(0, k + 1)
    if margin <= 0 or margin >= 1:
        certain = 0 if margin <= 0 else n
        return 1.0 if certain in tail else 0.0
    return min(1.0, math.fsum(math.exp(_log_pmf(i, n, margin)) for i in tail))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input's order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: (p_values[i], i))
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def residual_permutation(
    differences: Sequence[float], permutations: int, seed: int
) -> tuple[float, float] | None:
    """The residual test over tasks: `differences[t]` = r_A,t − r_B,t. Returns (T, p): T the
    mean difference, p the two-sided permutation p-value (labels permuted within each task:
    each difference's sign flipped with probability ½, `permutations` times, seeded); None
    without tasks."""
    n = len(differences)
    if n == 0:
        return None
    total = math.fsum(differences)
    observed = abs(total) - 1e-9 * max(1.0, abs(total))  # ties count against the claim
    rng = random.Random(seed)
    at_least = 0
    for _ in range(permutations):
        kept = math.fsum(compress(differences, rng.choices((True, False), k=n)))
        if abs(2 * kept - total) >= observed:  # flipped sum = kept − (total − kept)
            at_least += 1
    return total / n, (1 + at_least) / (permutations + 1)
