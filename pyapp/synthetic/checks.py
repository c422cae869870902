"""Checks that can fail: each statistic of a run against its committed expectation.

The unit of replication is the task seed: every statistic is a mean over seeds of a
per-seed value (`pyapp.synthetic.validation.observe_seed`), with a 95% normal interval over
seeds whose spread is the larger of the run's and the one planned before it (`Plan.sd`: the
pilot's between-seed standard deviation, and for a rate or a coverage at least the binomial
spread its expectation implies), so that a few seeds that happen to agree never make an
interval of width zero (`interval`).
Its expectation is the committed value for the same structure, preset and seed list
(`pyapp.synthetic.expectations`), never a number of the run. Each check has a **band**:

- a magnitude: expected ± (margin + the expectation's truncation bound), the margin of the
  statistic's family (`FAMILIES`) — a claimed effect of +0.3 is tested as [+0.27, +0.33], so
  an absent effect is contradicted, not "inconclusive";
- the gain from state, where state carries information (calibration presets): at least
  `MARGIN_GAIN` and at most the closed-form room above the Bayes floor (the same-prior
  product's expected Brier − E q(1 − q)); where it carries none: within ±`MARGIN_GAIN`.

Verdicts: **holds** (the interval lies inside the band), **consistent** (it overlaps the band
without lying inside: not contradicted, not shown either), **contradicted** (it misses the
band), **descriptive** (no verdict: the check cannot reach 80% power at an affordable number
of seeds — stated before the run, from the pilot's spread, in the expectations file).

**Power** is the probability of a contradiction when the statistic is off its expectation by
the family's stated deviation D (a bug a reader would act on): Φ((D − m)/se − 1.96), se from
the pilot's between-seed standard deviation and the run's seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist, fmean, stdev

from pyapp.synthetic.targets import STATE_INFORMATIVE as STATE_INFORMATIVE
from pyapp.synthetic.validation import StructureResult

POWER_TARGET = 0.8
MARGIN_GAIN = 0.01
"""The gain from state that changes no ranking a reader would act on (Brier)."""
_Z = NormalDist()


@dataclass(frozen=True)
class Family:
    """How the statistics of one kind are checked."""

    margin: float
    """Half-width of the band around the expectation (before the truncation bound)."""
    deviation: float
    """D: the deviation from the expectation the check must detect (its power)."""
    unit: str
    words: str
    """What the statistic is, in words."""


FAMILIES: dict[str, Family] = {
    "calibration": Family(0.03, 0.10, "", "product mean p − observed"),
    "brier": Family(0.02, 0.05, "", "product Brier score (`scores`)"),
    "reference-brier": Family(0.02, 0.05, "", "reference forecast's Brier (`skill`)"),
    "reference": Family(0.02, 0.06, "", "reference forecast: the pooled profile rate (`skill`)"),
    "cost": Family(5.0, 25.0, " ms", "product signed cost error (`scores.cost`)"),
    "rate": Family(0.03, 0.10, "", "profile rate"),
    "trials": Family(0.0, 1.0, "", "profile trials"),
    "coverage": Family(0.05, 0.15, "", "Wilson coverage of the true probe rate"),
    "cancel": Family(0.03, 0.10, "", "final rate − all-step rate"),
    "success": Family(0.03, 0.10, "", "a chain's success rate per composite family"),
    "state-gain": Family(MARGIN_GAIN, 0.03, "", "Brier product-shrunk − state-aware"),
    "constant": Family(
        0.03, 0.10, "", "share of seeds flagged: every held-out outcome equal (`flags_of`)"
    ),
    "skill": Family(
        0.05, 0.15, "", "product skill against climatology, pooled over seeds (`slice_figures`)"
    ),
}
"""Margins and stated deviations per statistic family (fixed before any run; the report
prints them with their reasons)."""


def family_of(statistic: str) -> str:
    """`model-only/final/rate:add` → `rate`."""
    return statistic.rsplit("/", 1)[1].split(":", 1)[0]


@dataclass(frozen=True)
class Plan:
    """A check's band and power, fixed before the run (the expectations file)."""

    expected: float
    low: float
    high: float
    claim: str
    pilot_sd: float
    """The between-seed standard deviation planned before the run (the pilot's, or the
    binomial floor of a rate or coverage)."""
    seeds_for_80: int | None
    """Seeds for 80% power at the stated deviation; null: more than `MAX_SEEDS`."""
    descriptive: bool


@dataclass(frozen=True)
class Check:
    """One statistic of one structure and preset, against its expectation."""

    structure: str
    preset: str
    statistic: str
    """`condition/target/name` (`pyapp.synthetic.targets.key`): the report's row key."""
    plan: Plan
    estimate: float
    low: float
    high: float
    seeds: int
    power: float | None
    verdict: str
    """`holds`, `consistent`, `contradicted` or `descriptive`."""


def interval(values: Sequence[float], planned_sd: float) -> tuple[float, float]:
    """95% normal interval of the mean over seeds, with the larger of the run's and the
    planned between-seed spread."""
    n = len(values)
    spread = max(stdev(values) if n > 1 else 0.0, planned_sd)
    half = 1.959963984540054 * spread / math.sqrt(n)
    mean = fmean(values)
    return mean - half, mean + half


def power_at(deviation: float, margin: float, sd: float, n: int) -> float:
    """P(the interval misses the band) when the statistic is off by `deviation`."""
    if n < 2:
        return 0.0
    se = sd / math.sqrt(n)
    if se == 0.0:
        return 1.0 if deviation > margin else 0.0
    return _Z.cdf((deviation - margin) / se - 1.96)


def seeds_for_80(deviation: float, margin: float, sd: float, most: int) -> int | None:
    """Smallest number of seeds with power ≥ 0.8 at this spread (None: over `most`)."""
    if power_at(deviation, margin, sd, most) < POWER_TARGET:
        return None
    low, high = 2, most
    while low < high:
        mid = (low + high) // 2
        if power_at(deviation, margin, sd, mid) >= POWER_TARGET:
            high = mid
        else:
            low = mid + 1
    return low


def verdict(low: float, high: float, band_low: float, band_high: float) -> str:
    if band_low <= low and high <= band_high:
        return "holds"
    if high < band_low or low > band_high:
        return "contradicted"
    return "consistent"


def check(
    structure: str, preset: str, statistic: str, plan: Plan, per_seed: Sequence[float]
) -> Check:
    n = len(per_seed)
    family = FAMILIES[family_of(statistic)]
    low, high = interval(per_seed, plan.pilot_sd)
    power = power_at(family.deviation, (plan.high - plan.low) / 2, plan.pilot_sd, n)
    return Check(
        structure=structure,
        preset=preset,
        statistic=statistic,
        plan=plan,
        estimate=fmean(per_seed),
        low=low,
        high=high,
        seeds=n,
        power=None if plan.descriptive else power,
        verdict="descriptive" if plan.descriptive else verdict(low, high, plan.low, plan.high),
    )


def result_checks(r: StructureResult, plans: dict[str, Plan]) -> list[Check]:
    """Every planned statistic of one structure and preset against its observed values; a
    planned statistic the run never produced is contradicted (it vanished)."""
    found = []
    for statistic, plan in plans.items():
        values = r.observed.get(statistic)
        if not values:
            missing = "descriptive" if plan.descriptive else "contradicted"
            nan = math.nan
            found.append(
                Check(r.spec.structure, r.preset, statistic, plan, nan, nan, nan, 0, None, missing)
            )
            continue
        found.append(check(r.spec.structure, r.preset, statistic, plan, list(values.values())))
    return found
