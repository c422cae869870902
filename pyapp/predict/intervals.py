"""The two named intervals of the study's figures, each computed here and nowhere else.

| name (`method`)                 | over           | how                                      |
|---------------------------------|----------------|------------------------------------------|
| percentile bootstrap over tasks | held-out tasks | `resamples` resamples of the tasks with  |
|                                 |                | replacement, within each stratum (a      |
|                                 |                | rung), seeded (`seed`); the 2.5th and    |
|                                 |                | 97.5th percentiles of the statistic      |
| Student-t across seeds          | seeds          | the statistic per seed; mean ± t·sd/√k   |

Both are descriptive 95 % intervals, not tests. Resamples and seed are recorded with every
bootstrap interval, so the same tasks give the same interval anywhere (Python's `random`
with a fixed seed: the same draws under CPython and Pyodide). A statistic that is undefined
in a resample or a seed (0/0: a skill score whose outcomes and forecasts are all equal) is
dropped there and counted (`dropped`); a skill score that tends to −∞ in a resample (every
outcome equal there, so climatology is perfect, and the forecast misses) counts as −∞, and
the interval is then *unbounded below* (`low` null, `unbounded_below`), never clipped to a
number the data do not give.

| function          | empty input                                              |
|-------------------|----------------------------------------------------------|
| percentile        | no values: ValueError (callers check first)              |
| bootstrap         | no tasks: an interval with no bounds and a note          |
| across_seeds      | fewer than two seeds with a value: no bounds and a note  |
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from pyapp.predict.skill import mean_interval

BOOTSTRAP: Literal["percentile bootstrap over tasks"] = "percentile bootstrap over tasks"
ACROSS_SEEDS: Literal["Student-t across seeds"] = "Student-t across seeds"
Method = Literal["percentile bootstrap over tasks", "Student-t across seeds"]

DEFAULT_RESAMPLES = 2000
"""Bootstrap resamples unless a command is told otherwise (`--resamples`)."""
DEFAULT_BOOTSTRAP_SEED = 34
"""The bootstrap's seed unless a command is told otherwise (`--bootstrap-seed`)."""
RUN_RESAMPLES = 1000
"""Resamples for one run's lines (`score`, the report, Compare, the page's step 4): fewer,
so that the page stays quick; the study uses `DEFAULT_RESAMPLES`."""


@dataclass(frozen=True)
class NamedInterval:
    """A 95 % interval and the method that made it."""

    method: Method
    """`percentile bootstrap over tasks` or `Student-t across seeds`."""
    low: float | None
    """Lower end; null when there is no interval (see `note`) or it is unbounded below."""
    high: float | None
    """Upper end; null when there is no interval (see `note`)."""
    n: int
    """Tasks resampled (bootstrap) or seeds with a value (Student-t)."""
    resamples: int | None
    """Bootstrap: how many resamples; null for Student-t."""
    seed: int | None
    """Bootstrap: the seed of its draws; null for Student-t."""
    dropped: int
    """Resamples (bootstrap) or seeds (Student-t) where the statistic is undefined (0/0),
    left out."""
    unbounded_below: bool
    """Some resamples give −∞ (every outcome equal there: climatology is perfect and the
    forecast misses), so the interval reaches below any number."""
    note: str | None
    """Why there is no interval, or what bounds it, in words; null when it is ordinary."""

    @property
    def width(self) -> float | None:
        """high − low; None when there is no finite interval."""
        if self.low is None or self.high is None:
            return None
        return self.high - self.low


def percentile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile (0 ≤ q ≤ 1) of sorted values, linearly interpolated between order
    statistics (numpy's default); −∞ is an ordinary value here."""
    if not ordered:
        raise ValueError("no values")
    position = q * (len(ordered) - 1)
    below, above = math.floor(position), math.ceil(position)
    low, high = ordered[below], ordered[above]
    if below == above or low == high or math.isinf(low):
        return low
    return low + (high - low) * (position - below)


def resample_indices(
    strata: Sequence[Sequence[int]], resamples: int, seed: int
) -> Iterator[list[int]]:
    """`resamples` lists of task indices, each drawn with replacement within every stratum
    (as many from a stratum as it holds), from one seeded generator."""
    rng = random.Random(seed)
    for _ in range(resamples):
        drawn: list[int] = []
        for members in strata:
            drawn += rng.choices(members, k=len(members))
        yield drawn


def bootstrap(
    values: Sequence[float | None],
    n: int,
    resamples: int,
    seed: int,
    bounds: tuple[float, float] = (-math.inf, math.inf),
) -> NamedInterval:
    """The percentile interval of a statistic's values over the resamples (`values`, one per
    resample, None where it is undefined), clipped to `bounds` (a Brier score lies in [0, 1])."""
    kept = sorted(v for v in values if v is not None)
    dropped = len(values) - len(kept)
    if n == 0 or not kept:
        why = "no tasks" if n == 0 else "the statistic is undefined in every resample"
        return NamedInterval(BOOTSTRAP, None, None, n, resamples, seed, dropped, False, why)
    low, high = percentile(kept, 0.025), percentile(kept, 0.975)
    unbounded = math.isinf(low) and low < 0
    notes = []
    if unbounded:
        notes.append(
            "unbounded below: in some resamples every outcome is equal, where climatology is "
            "perfect and any miss scores −∞"
        )
    if dropped:
        notes.append(f"{dropped} of {resamples} resamples undefined (0/0) and left out")
    return NamedInterval(
        BOOTSTRAP,
        None if unbounded else max(bounds[0], low),
        None if math.isinf(high) else min(bounds[1], high),
        n,
        resamples,
        seed,
        dropped,
        unbounded,
        "; ".join(notes) or None,
    )


def across_seeds(
    values: Sequence[float | None], bounds: tuple[float, float] = (-math.inf, math.inf)
) -> NamedInterval:
    """The mean of the per-seed values with its 95 % Student-t interval over seeds
    (`pyapp.predict.skill.mean_interval`); seeds where the statistic is undefined or
    infinite are dropped and counted."""
    kept = [v for v in values if v is not None and math.isfinite(v)]
    dropped = len(values) - len(kept)
    interval = mean_interval(kept, bounds)
    note = None
    if interval is None or interval.low is None:
        note = f"{len(kept)} seed{'' if len(kept) == 1 else 's'} with a value: needs two or more"
    elif dropped:
        note = f"{dropped} seed(s) where it is undefined left out"
    low = None if interval is None else interval.low
    high = None if interval is None else interval.high
    return NamedInterval(ACROSS_SEEDS, low, high, len(kept), None, None, dropped, False, note)


def bootstrap_statistics(
    strata: Sequence[Sequence[int]],
    statistics: Callable[[Sequence[int]], Sequence[float | None]],
    resamples: int,
    seed: int,
) -> list[list[float | None]]:
    """Each statistic's value in every resample: `statistics(indices)` returns all of them
    at once, so that they are computed on the same draws (paired)."""
    columns: list[list[float | None]] = []
    for drawn in resample_indices(strata, resamples, seed):
        row = statistics(drawn)
        if not columns:
            columns = [[] for _ in row]
        for column, value in zip(columns, row, strict=True):
            column.append(value)
    return columns
