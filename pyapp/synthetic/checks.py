"""Checks that can fail: each expectation of the validation as a test with an interval.

The unit of replication is the task seed: every statistic is a mean over seeds of a
per-seed value (a seed's held-out trials share one frozen profile, so they are not
independent of each other), with a 95% percentile bootstrap interval over seeds
(`BOOTSTRAP_RESAMPLES` resamples from the fixed seed `BOOTSTRAP_SEED`: the same run gives
the same interval). Three kinds of check:

- `direction`: the statistic is expected to be on one side of zero by about `effect`; it
  *holds* only when the interval excludes zero on that side.
- `equivalence`: the statistic is expected to be zero up to the margin; it holds (e.g.
  "calibrated") only when the whole interval lies inside (−margin, +margin).
- `report`: printed with its interval, no claim (e.g. the gain from shrinkage).

Power is computed from the run's own between-seed standard deviation s: with n seeds the
standard error is s/√n; a direction check has power Φ(|δ|/se − 1.96) at its stated effect
δ, an equivalence check Φ((m − g)/se − 1.96) + Φ((m + g)/se − 1.96) − 1 at its expected
value g. `seeds_for_80` is the smallest n with power ≥ 0.8 at the same s.

The margins and effect sizes are fixed here, before any number is run; docs/validation.md
prints them with their justification (`report.MARGINS_TEXT`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from statistics import NormalDist, fmean, stdev
from typing import Literal

from pyapp.synthetic.validation import Point, StructureResult

MARGIN_P = 0.03
"""Equivalence margin for mean p − observed (probability)."""
MARGIN_BRIER = 0.01
"""Equivalence margin, and the stated effect, for a Brier difference."""
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 27
POWER_TARGET = 0.8
STATE_INFORMATIVE = ("size-dependent", "carry")
"""Structures under which the state-aware predictor's features (operand and result digit
counts) carry information about a step's error rate: the digits of an operand decide its
error rate (`size`) or bound its carries (`carry`)."""

Kind = Literal["direction", "equivalence", "report"]
_Z = NormalDist()


@dataclass(frozen=True)
class Check:
    """One expectation, its statistic over seeds, its interval and its verdict."""

    structure: str
    preset: str
    statistic: str
    """What is measured, in words (stable across runs: the report's row key)."""
    kind: Kind
    claim: str
    """The expectation in words."""
    effect: float
    """Stated effect size δ (direction) or margin m (equivalence); 0 for a report."""
    expected: float | None
    """The statistic's expected value from the structure itself (Monte Carlo truth and the
    binomial profile), where one is known."""
    estimate: float
    low: float
    high: float
    seeds: int
    sd: float
    power: float | None
    seeds_for_80: int | None
    holds: bool | None
    """null for a report."""


@cache
def _resamples(n: int) -> tuple[tuple[int, ...], ...]:
    """The bootstrap's resampled seed indices for n seeds (fixed seed: reproducible)."""
    rng = random.Random(BOOTSTRAP_SEED)
    return tuple(tuple(rng.randrange(n) for _ in range(n)) for _ in range(BOOTSTRAP_RESAMPLES))


def bootstrap_interval(values: Sequence[float]) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean, over the values (seeds)."""
    n = len(values)
    if n < 2 or max(values) == min(values):
        return (values[0], values[0]) if values else (math.nan, math.nan)
    means = sorted(math.fsum([values[i] for i in row]) / n for row in _resamples(n))
    return means[int(0.025 * BOOTSTRAP_RESAMPLES)], means[int(0.975 * BOOTSTRAP_RESAMPLES) - 1]


def power_of(kind: Kind, effect: float, expected: float | None, sd: float, n: int) -> float:
    """Power at the stated effect (direction) or the expected value (equivalence)."""
    if kind == "report" or n < 2:
        return math.nan
    se = sd / math.sqrt(n)
    if se == 0:
        return 1.0 if kind == "direction" or abs(expected or 0.0) < effect else 0.0
    if kind == "direction":
        return _Z.cdf(abs(effect) / se - 1.96)
    g = expected or 0.0
    return max(0.0, _Z.cdf((effect - g) / se - 1.96) + _Z.cdf((effect + g) / se - 1.96) - 1)


def seeds_needed(kind: Kind, effect: float, expected: float | None, sd: float) -> int | None:
    """Smallest number of seeds with power ≥ 0.8 at this between-seed sd (null: > 10⁶)."""
    if kind == "report":
        return None
    low, high = 2, 1_000_000
    if power_of(kind, effect, expected, sd, high) < POWER_TARGET:
        return None
    while low < high:
        mid = (low + high) // 2
        if power_of(kind, effect, expected, sd, mid) >= POWER_TARGET:
            high = mid
        else:
            low = mid + 1
    return low


def make_check(
    r: StructureResult,
    statistic: str,
    kind: Kind,
    claim: str,
    effect: float,
    expected: float | None,
    per_seed: Sequence[float],
) -> Check | None:
    if not per_seed:
        return None
    n = len(per_seed)
    sd = stdev(per_seed) if n > 1 else 0.0
    estimate = fmean(per_seed)
    low, high = bootstrap_interval(per_seed)
    holds: bool | None = None
    if kind == "direction":
        holds = low > 0 if effect > 0 else high < 0
    elif kind == "equivalence":
        holds = -effect < low and high < effect
    power = power_of(kind, effect, expected, sd, n)
    return Check(
        structure=r.spec.structure,
        preset=r.preset,
        statistic=statistic,
        kind=kind,
        claim=claim,
        effect=effect,
        expected=expected,
        estimate=estimate,
        low=low,
        high=high,
        seeds=n,
        sd=sd,
        power=None if math.isnan(power) else power,
        seeds_for_80=seeds_needed(kind, effect, expected, sd),
        holds=holds,
    )


def outcome(c: Check) -> str:
    """`holds`; `contradicted` (the interval lies wholly on the wrong side of zero, or wholly
    outside the margin); `inconclusive` (neither: too few seeds to decide); `report`."""
    if c.holds is None:
        return "report"
    if c.holds:
        return "holds"
    if c.kind == "direction":
        wrong = c.high <= 0 if c.effect > 0 else c.low >= 0
    else:
        wrong = c.low >= c.effect or c.high <= -c.effect
    return "contradicted" if wrong else "inconclusive"


def per_seed(points: Sequence[Point], value: Callable[[Point], float]) -> dict[int, float]:
    """Seed → mean of `value` over that seed's points."""
    by_seed: dict[int, list[float]] = {}
    for p in points:
        by_seed.setdefault(p.seed, []).append(value(p))
    return {seed: fmean(values) for seed, values in sorted(by_seed.items())}


def paired(a: dict[int, float], b: dict[int, float]) -> list[float]:
    return [a[s] - b[s] for s in a if s in b]


def _target(condition: str) -> str:
    return "all_steps" if condition == "controlled-chain" else "final"


def calibration_checks(r: StructureResult) -> list[Check]:
    """Per condition and target: the product's mean p − observed against its expectation."""
    found = []
    for (_, _, condition, predictor, target), points in r.points.items():
        if predictor != "product":
            continue
        if target != _target(condition) and r.spec.compensation == 0:
            continue  # a chain's final verdicts are its all-step ones: one row, not two
        known = [p for p in points if p.truth is not None and p.expected is not None]
        expected = fmean([(p.expected or 0.0) - (p.truth or 0.0) for p in known]) if known else None
        gap = per_seed(points, lambda p: p.predicted - float(p.outcome))
        what = f"{condition} ({target}): product mean p − observed"
        if expected is not None and abs(expected) >= MARGIN_P:
            side = "too optimistic" if expected > 0 else "too pessimistic"
            check = make_check(
                r,
                what,
                "direction",
                f"{side} by about {expected:+.3f}",
                expected,
                expected,
                list(gap.values()),
            )
        else:
            check = make_check(
                r,
                what,
                "equivalence",
                f"calibrated within ±{MARGIN_P}",
                MARGIN_P,
                expected,
                list(gap.values()),
            )
        if check:
            found.append(check)
        if r.spec.structure == "independent" and target == _target(condition):
            corrected = per_seed(
                [p for p in points if p.expected is not None and p.ideal is not None],
                lambda p: p.predicted - ((p.expected or 0.0) - (p.ideal or 0.0)) - p.outcome,
            )
            check = make_check(
                r,
                f"{condition} ({target}): product mean p − plug-in bias − observed",
                "equivalence",
                f"calibrated within ±{MARGIN_P} once its known plug-in bias is removed",
                MARGIN_P,
                0.0,
                list(corrected.values()),
            )
            if check:
                found.append(check)
    return found


def predictor_checks(r: StructureResult) -> list[Check]:
    """Shrinkage gain (report) and state gain (direction or equivalence) per condition."""
    found = []
    conditions = dict.fromkeys(key[2] for key in r.points)
    for condition in conditions:
        target = _target(condition)

        def brier(predictor: str, c: str = condition, t: str = target) -> dict[int, float]:
            points = r.points.get((r.spec.structure, r.preset, c, predictor, t), [])
            return per_seed(points, lambda p: (p.predicted - float(p.outcome)) ** 2)

        product, shrunk, aware = brier("product"), brier("product-shrunk"), brier("state-aware")
        check = make_check(
            r,
            f"{condition} ({target}): Brier product − product-shrunk (gain from shrinkage)",
            "report",
            "no claim: the part of a gain that is the prior's shrinkage",
            0.0,
            None,
            paired(product, shrunk),
        )
        if check:
            found.append(check)
        statistic = f"{condition} ({target}): Brier product-shrunk − state-aware (gain from state)"
        if r.spec.structure in STATE_INFORMATIVE and r.preset != "design":
            kind: Kind = "direction"
            claim = "state helps: state-aware better than the product with the same prior"
        elif r.spec.structure in STATE_INFORMATIVE:
            kind, claim = "report", "no claim: 6 probes per op from a narrow size range"
        else:
            kind = "equivalence"
            claim = f"state carries no information: no gain within ±{MARGIN_BRIER}"
        check = make_check(
            r,
            statistic,
            kind,
            claim,
            MARGIN_BRIER if kind != "report" else 0.0,
            0.0 if kind == "equivalence" else None,
            paired(shrunk, aware),
        )
        if check:
            found.append(check)
    return found


def cancelling_checks(r: StructureResult) -> list[Check]:
    """Under `cancelling`, chains' final answers are right more often than all their steps."""
    key = (r.spec.structure, r.preset, "controlled-chain", "product")
    final, steps = r.points.get((*key, "final"), []), r.points.get((*key, "all_steps"), [])
    if r.spec.compensation == 0 or not final or not steps:
        return []
    known = [p for p in final if p.truth is not None]
    known_steps = [p for p in steps if p.truth is not None]
    expected = (
        fmean([p.truth or 0.0 for p in known]) - fmean([p.truth or 0.0 for p in known_steps])
        if known and known_steps
        else MARGIN_P
    )
    difference = paired(
        per_seed(final, lambda p: float(p.outcome)), per_seed(steps, lambda p: float(p.outcome))
    )
    check = make_check(
        r,
        "controlled-chain: final rate − all-step rate",
        "direction",
        f"errors cancel: final right more often than all steps, by about {expected:+.3f}",
        max(expected, 1e-9),
        expected,
        difference,
    )
    return [check] if check else []


def all_checks(results: Sequence[StructureResult]) -> list[Check]:
    """Every check of every structure and preset, in a stable order."""
    found = []
    for r in results:
        found += calibration_checks(r) + cancelling_checks(r) + predictor_checks(r)
    return found
