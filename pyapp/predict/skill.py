"""What a Brier score means: skill against a reference forecast, its decomposition, intervals,
and the difference between the two predictors — pure functions over lists, one definition
used by the predictions document, `score`, `report`, the page and Compare.

The reference forecast is the profile's **pooled success rate**: all successes of the frozen
profile's ops over all their trials, one probability for every held-out task (docs/predictor.md
says why). It is a function of the frozen profile alone, so it is fixed when the profile is
frozen, before any held-out observation.

| function          | what                                               | empty input       |
|-------------------|----------------------------------------------------|-------------------|
| pooled_rate       | Σ successes / Σ trials of the profile's ops        | no trials: None   |
| brier_skill       | 1 − BS / BS_reference                              | BS_ref 0: None    |
| decomposition     | reliability − resolution + uncertainty = Brier     | no pairs: None    |
| mean_interval     | mean and 95 % Student-t interval                   | n < 2: no bounds  |
| paired_difference | per task BS(product) − BS(state-aware), paired     | no pairs: None    |
| climatology_brier | Brier of each task's stratum base rate (climatology) | no pairs: None    |
| binned_decomposition | reliability, resolution, uncertainty in 10 bins | no pairs: None    |

Climatology — the held-out base rate of the tasks scored, the standard no-skill reference
of forecast verification — is the study's reference (`pyapp.predict.slices`): a skill
against it is undefined when every outcome is equal (`climatology_brier` is 0 then); pooled
over the rungs of a ladder each task's reference is its own rung's base rate.

Intervals are Student-t over held-out tasks (within one run) or over runs (across runs,
`across_runs`), clipped to the range the quantity can take: descriptive, not a test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# Two-sided 95 % quantiles of Student's t by degrees of freedom (1-30); 1.96 beyond.
_T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip

REFERENCE = "the profile's pooled success rate (all ops' successes / trials)"
"""What the reference forecast of every skill score is."""


@dataclass(frozen=True)
class Interval:
    """A mean with its 95 % interval."""

    mean: float
    """The mean."""
    low: float | None
    """Lower end of the 95 % Student-t interval; null with fewer than two values."""
    high: float | None
    """Upper end; null with fewer than two values."""
    n: int
    """How many values (held-out tasks, or runs)."""


@dataclass(frozen=True)
class Decomposition:
    """Murphy's decomposition of a Brier score, grouping tasks by their forecast value:
    Brier = reliability − resolution + uncertainty (exactly)."""

    reliability: float
    """Mean squared gap between each forecast value and the observed rate of its tasks (0 is
    perfectly calibrated)."""
    resolution: float
    """How far the groups' observed rates spread around the overall rate (higher is better)."""
    uncertainty: float
    """ō(1 − ō) of the observed outcomes: the Brier score of always forecasting ō."""


@dataclass(frozen=True)
class PredictorSkill:
    """One predictor's Brier score, said so that it means something."""

    brier: Interval | None
    """The Brier score with its 95 % interval over held-out tasks; null without pairs."""
    brier_reference: float | None
    """The reference forecast's Brier score on the same tasks."""
    skill: float | None
    """Brier skill score 1 − Brier / Brier_reference (1 perfect, 0 no better than the
    reference, negative worse); null when the reference scores 0 or nothing was scored."""
    decomposition: Decomposition | None
    """Reliability, resolution and uncertainty; null without pairs."""


@dataclass(frozen=True)
class SkillScores:
    """The skill of both predictors of one condition and the difference between them, against
    final correctness (the product's naive proxy)."""

    reference: str
    """What the reference forecast is."""
    reference_probability: float | None
    """The reference forecast: the frozen profile's pooled success rate."""
    product: PredictorSkill
    """The product predictor."""
    state_aware: PredictorSkill | None
    """The state-aware predictor; null where the document has none."""
    difference: Interval | None
    """Brier(product) − Brier(state-aware), paired over the held-out tasks both scored, with
    its 95 % paired interval (negative: the product did better); null without pairs."""


def pooled_rate(successes: Sequence[int], trials: Sequence[int]) -> float | None:
    total = sum(trials)
    return None if total == 0 else sum(successes) / total


def _t95(df: int) -> float:
    return _T95[df - 1] if 1 <= df <= len(_T95) else 1.959963984540054


def mean_interval(
    values: Sequence[float], bounds: tuple[float, float] = (-math.inf, math.inf)
) -> Interval | None:
    """The mean and its 95 % Student-t interval (None for no values), clipped to `bounds`,
    the range the mean can take (a Brier score is in [0, 1]: with six tasks the t interval
    would otherwise reach below 0)."""
    n = len(values)
    if n == 0:
        return None
    mean = math.fsum(values) / n
    if n < 2:
        return Interval(mean, None, None, n)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = _t95(n - 1) * sd / math.sqrt(n)
    low, high = bounds
    return Interval(mean, max(low, mean - half), min(high, mean + half), n)


def squared_errors(probabilities: Sequence[float], outcomes: Sequence[bool]) -> list[float]:
    if len(probabilities) != len(outcomes):
        raise ValueError("probabilities and outcomes differ in length")
    return [(p - (1.0 if o else 0.0)) ** 2 for p, o in zip(probabilities, outcomes, strict=True)]


def brier_skill(brier: float | None, reference: float | None) -> float | None:
    if brier is None or reference is None or reference == 0:
        return None
    return 1.0 - brier / reference


def decomposition(probabilities: Sequence[float], outcomes: Sequence[bool]) -> Decomposition | None:
    """Murphy's decomposition, one group per distinct forecast value (so that it adds up to
    the Brier score exactly)."""
    n = len(probabilities)
    if n == 0:
        return None
    groups: dict[float, list[float]] = {}
    for p, o in zip(probabilities, outcomes, strict=True):
        groups.setdefault(p, []).append(1.0 if o else 0.0)
    base = math.fsum(1.0 if o else 0.0 for o in outcomes) / n
    reliability = math.fsum(len(g) * (p - math.fsum(g) / len(g)) ** 2 for p, g in groups.items())
    resolution = math.fsum(len(g) * (math.fsum(g) / len(g) - base) ** 2 for g in groups.values())
    return Decomposition(reliability / n, resolution / n, base * (1 - base))


def predictor_skill(
    probabilities: Sequence[float], outcomes: Sequence[bool], reference: float | None
) -> PredictorSkill:
    errors = squared_errors(probabilities, outcomes)
    brier = mean_interval(errors, (0.0, 1.0))
    ref = (
        None
        if reference is None or not outcomes
        else math.fsum(squared_errors([reference] * len(outcomes), outcomes)) / len(outcomes)
    )
    return PredictorSkill(
        brier=brier,
        brier_reference=ref,
        skill=brier_skill(None if brier is None else brier.mean, ref),
        decomposition=decomposition(probabilities, outcomes),
    )


def paired_difference(
    product: Sequence[float], state_aware: Sequence[float], outcomes: Sequence[bool]
) -> Interval | None:
    """Per task: squared error of the product minus that of the state-aware predictor; the
    mean and its 95 % paired interval."""
    a = squared_errors(product, outcomes)
    b = squared_errors(state_aware, outcomes)
    return mean_interval([x - y for x, y in zip(a, b, strict=True)], (-1.0, 1.0))


def across_runs(differences: Sequence[float]) -> Interval | None:
    """The difference between the predictors across runs (seeds): the mean of each run's
    mean difference with a 95 % Student-t interval over runs — the same definition as within
    a run, with runs in place of tasks."""
    return mean_interval(differences, (-1.0, 1.0))


CLIMATOLOGY = "climatology: the held-out base rate of the tasks scored"
"""What the study's reference forecast is (per rung, pooled over a ladder: `RUNG_AWARE`)."""
RUNG_AWARE = "rung-aware climatology: each task's reference is its own rung's held-out base rate"
"""The reference of a row pooled over the rungs of one ladder."""


def climatology_brier(outcomes: Sequence[bool], strata: Sequence[str]) -> float | None:
    """The Brier score of climatology: each task forecast at the base rate of its stratum
    (one stratum: the slice's base rate ō, and the score is ō(1 − ō)); 0 when every stratum's
    outcomes are equal; None without tasks."""
    if len(outcomes) != len(strata):
        raise ValueError("outcomes and strata differ in length")
    if not outcomes:
        return None
    counts: dict[str, list[int]] = {}
    for o, stratum in zip(outcomes, strata, strict=True):
        tally = counts.setdefault(stratum, [0, 0])
        tally[0] += 1
        tally[1] += 1 if o else 0
    total = math.fsum(k * (h / k) * (1 - h / k) for k, h in counts.values())
    return total / len(outcomes)


@dataclass(frozen=True)
class BinnedDecomposition:
    """Murphy's decomposition with forecasts grouped in equal-width bins (the reliability
    diagram's): Brier = reliability − resolution + uncertainty + within_bins."""

    bins: int
    """How many equal-width bins of [0, 1]."""
    reliability: float
    """Σ n_k (mean forecast_k − observed rate_k)² / n: 0 is calibrated."""
    resolution: float
    """Σ n_k (observed rate_k − ō)² / n: how far the bins' rates spread (higher is better)."""
    uncertainty: float
    """ō(1 − ō)."""
    within_bins: float
    """What binning leaves over (the forecasts' spread inside each bin), so that the four
    add up to the Brier score exactly."""


def binned_decomposition(
    probabilities: Sequence[float], outcomes: Sequence[bool], bins: int = 10
) -> BinnedDecomposition | None:
    """Reliability and resolution in `bins` equal-width bins; None without pairs. Unlike
    `decomposition` (one group per distinct forecast value: exact, but meaningless for a
    forecast that takes a new value on every task, as the state-aware one does)."""
    n = len(probabilities)
    if n == 0:
        return None
    if len(outcomes) != n:
        raise ValueError("probabilities and outcomes differ in length")
    groups: dict[int, list[tuple[float, float]]] = {}
    for p, o in zip(probabilities, outcomes, strict=True):
        groups.setdefault(min(int(p * bins), bins - 1), []).append((p, 1.0 if o else 0.0))
    base = math.fsum(1.0 if o else 0.0 for o in outcomes) / n
    reliability = resolution = 0.0
    for members in groups.values():
        k = len(members)
        mean_p = math.fsum(p for p, _ in members) / k
        rate = math.fsum(o for _, o in members) / k
        reliability += k * (mean_p - rate) ** 2
        resolution += k * (rate - base) ** 2
    brier = math.fsum(e for e in squared_errors(probabilities, outcomes)) / n
    uncertainty = base * (1 - base)
    rel, res = reliability / n, resolution / n
    return BinnedDecomposition(bins, rel, res, uncertainty, brier - (rel - res + uncertainty))
