"""Pure metric functions over lists: Wilson intervals, Brier scores, cost errors,
calibration cells. Each one's behaviour on empty input is defined and tested.

| function            | empty input                                          |
|---------------------|------------------------------------------------------|
| wilson_interval     | 0 trials → (0.0, 1.0): no information                |
| brier_score         | no pairs → None                                      |
| cost_errors         | no pairs → CostErrors(n=0, all means None)           |
| calibration_cells   | no pairs → every cell with n = 0 and nulls           |
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z_95 = 1.959963984540054
"""The two-sided 95% normal quantile."""
METRIC_VERSION = "metrics/2"
"""The version of these functions' numbers that documents hold (the Wilson bounds of a
profile and of calibration cells). metrics/2: the Wilson bounds are exactly 0 at 0
successes and exactly 1 at k = n (the interval's closed form there; metrics/1 computed
them in floating point: a lower bound of 2.8e-17 at k = 0 for 180 values of n up to 1,000,
an upper bound of 0.9999999999999998 at k = n for 298, so a true rate of exactly 1 fell
outside). No document names its version: a freeze is re-derived under the version whose
profile has the hash it recorded (`pyapp.predict.freeze.frozen_as_recorded`), and a
predictions document under the version that re-derives it."""
OLDER_METRIC_VERSIONS = ("metrics/1",)
"""Older versions, still re-derived (documents made before metrics/2)."""
METRIC_VERSIONS = (METRIC_VERSION, *OLDER_METRIC_VERSIONS)


def wilson_interval(
    successes: int, trials: int, z: float = Z_95, version: str = METRIC_VERSION
) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (0, 1) when there are no trials.
    `version`: `METRIC_VERSIONS` (metrics/1: the bounds at k = 0 and k = n as computed
    before metrics/2)."""
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes}/{trials}")
    if version not in METRIC_VERSIONS:
        raise ValueError(f"unknown metric version {version!r}")
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    if version == "metrics/1":
        return low, high
    return (0.0 if successes == 0 else low), (1.0 if successes == trials else high)


def brier_score(probabilities: Sequence[float], outcomes: Sequence[bool]) -> float | None:
    """Mean squared difference between predicted probabilities and 0/1 outcomes."""
    if len(probabilities) != len(outcomes):
        raise ValueError("probabilities and outcomes differ in length")
    if not probabilities:
        return None
    for p in probabilities:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"probability {p} outside [0, 1]")
    errors = [p - float(o) for p, o in zip(probabilities, outcomes, strict=True)]
    return math.fsum(e * e for e in errors) / len(probabilities)


@dataclass(frozen=True)
class CostErrors:
    """Predicted vs observed cost (milliseconds)."""

    n: int
    """Pairs compared."""
    mean_absolute_error_ms: float | None
    """Mean |predicted − observed|."""
    mean_signed_error_ms: float | None
    """Mean (predicted − observed): positive means the prediction was too high."""
    mean_relative_error: float | None
    """Mean |predicted − observed| / observed over pairs with observed > 0."""


def cost_errors(predicted: Sequence[float], observed: Sequence[float]) -> CostErrors:
    if len(predicted) != len(observed):
        raise ValueError("predicted and observed differ in length")
    if not predicted:
        return CostErrors(0, None, None, None)
    diffs = [p - o for p, o in zip(predicted, observed, strict=True)]
    relative = [abs(p - o) / o for p, o in zip(predicted, observed, strict=True) if o > 0]
    return CostErrors(
        n=len(diffs),
        mean_absolute_error_ms=math.fsum(abs(d) for d in diffs) / len(diffs),
        mean_signed_error_ms=math.fsum(diffs) / len(diffs),
        mean_relative_error=math.fsum(relative) / len(relative) if relative else None,
    )


@dataclass(frozen=True)
class CalibrationCell:
    """Predictions falling in [low, high): how often they came true (descriptive only)."""

    low: float
    """Lower edge of the predicted-probability bin (inclusive)."""
    high: float
    """Upper edge (exclusive, except the last bin, which includes 1.0)."""
    n: int
    """Predictions in the bin."""
    mean_predicted: float | None
    """Mean predicted probability in the bin; null when empty."""
    observed_rate: float | None
    """Fraction that came true; null when empty."""
    wilson_low: float | None
    """Lower 95% Wilson bound of the observed rate; null when empty (metrics/1 said 0)."""
    wilson_high: float | None
    """Upper 95% Wilson bound of the observed rate; null when empty (metrics/1 said 1)."""


def calibration_cells(
    probabilities: Sequence[float],
    outcomes: Sequence[bool],
    bins: int = 5,
    version: str = METRIC_VERSION,
) -> tuple[CalibrationCell, ...]:
    """Predictions in `bins` equal bins of probability, each with its observed rate and its
    Wilson interval under the metric `version` (an empty bin has none under metrics/2; under
    metrics/1 it said [0, 1])."""
    if len(probabilities) != len(outcomes):
        raise ValueError("probabilities and outcomes differ in length")
    if bins < 1:
        raise ValueError("bins must be at least 1")
    members: list[list[tuple[float, bool]]] = [[] for _ in range(bins)]
    for p, o in zip(probabilities, outcomes, strict=True):
        members[min(int(p * bins), bins - 1)].append((p, o))
    cells = []
    for i, cell in enumerate(members):
        hits = sum(1 for _, o in cell if o)
        low: float | None
        high: float | None
        low, high = wilson_interval(hits, len(cell), version=version)
        if not cell and version != "metrics/1":
            low = high = None
        cells.append(
            CalibrationCell(
                low=i / bins,
                high=(i + 1) / bins,
                n=len(cell),
                mean_predicted=math.fsum(p for p, _ in cell) / len(cell) if cell else None,
                observed_rate=hits / len(cell) if cell else None,
                wilson_low=low,
                wilson_high=high,
            )
        )
    return tuple(cells)
