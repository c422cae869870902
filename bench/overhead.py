"""Harness overhead: the ONE definition every bench uses (issue 22 §3).

For each trial but the last of a phase:

    harness_ms = (wall time from this trial's start to the next trial's start)
                 − the model worker's own generation time for this trial

The worker's own time is what the model worker measured around generation
(`completion.generation_ms`; for a controlled chain the sum over its calls' completions; 0
for the control, which calls no model). Everything else is harness: building the prompt,
the Python ⇄ page ⇄ model-worker bridge, reloads, parsing, interpretation, verification,
and, between trials, telling the page, storing the trial and drawing its row. The gap that
holds the freeze (the first trial of the held-out phase follows it) and any gap across a
pause are left out by the caller, who passes the gaps it measured.

`breakdown` splits each trial's harness time by stage, from the trial's own `timings`:

| stage         | what it is                                                            |
|---------------|-----------------------------------------------------------------------|
| construction  | `timings.construction_ms`: building the prompt or program input       |
| bridge        | Python → page → worker and back: `timings.generation_ms` − worker time, |
|               | plus each call's `completion.bridge_ms` (recorded apart since trace/3)  |
| load waits    | each call's `completion.load_wait_ms`: waiting for a (re)load           |
| parse         | `timings.parse_ms`                                                    |
| execution     | `timings.execution_ms` (the interpreter)                              |
| verification  | `timings.verification_ms` (chains)                                    |
| trial glue    | `timings.total_ms` − the phases above: the controller's own glue        |
| between       | the gap − `timings.total_ms`: the event to the page, storing, drawing  |

The stages add up to harness_ms exactly. `bench/harness.py` (one default sweep, gaps from
the trials' `started_at`) and `bench/scale.py` (2,000+ trials, gaps from the page's
`trial_start` events) both print `summary` of the same figure, with the machine's load.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Iterable, Mapping
from typing import Any

STAGES = (
    "construction",
    "bridge",
    "load waits",
    "parse",
    "execution",
    "verification",
    "trial glue",
    "between",
)
GOAL_MS = 5.0
"""Issue 22's target: the harness's own time per trial, median, at most 5 ms (and flat)."""


def _completions(trial: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    if trial.get("completion") is not None:
        return [trial["completion"]]
    if trial.get("chain") is not None:
        return [call["completion"] for call in trial["chain"]["calls"]]
    return []


def _sum(completions: list[Mapping[str, Any]], key: str) -> float:
    return sum(float(c.get(key) or 0.0) for c in completions)


def worker_ms(trial: Mapping[str, Any]) -> float:
    """The model worker's own generation time for `trial` (ms); 0 when no model ran."""
    return _sum(_completions(trial), "generation_ms")


def breakdown(gap_ms: float, trial: Mapping[str, Any]) -> dict[str, float]:
    """The trial's harness time by stage (they sum to `harness_ms(gap_ms, trial)`)."""
    t = trial["timings"]
    completions = _completions(trial)
    own = worker_ms(trial)
    phases = {
        "construction": float(t["construction_ms"] or 0.0),
        "bridge": float(t["generation_ms"] or 0.0) - own + _sum(completions, "bridge_ms"),
        "load waits": _sum(completions, "load_wait_ms"),
        "parse": float(t["parse_ms"] or 0.0),
        "execution": float(t["execution_ms"] or 0.0),
        "verification": float(t["verification_ms"] or 0.0),
    }
    phases["trial glue"] = float(t["total_ms"]) - sum(phases.values()) - own
    phases["between"] = gap_ms - float(t["total_ms"])
    return phases


def harness_ms(gap_ms: float, trial: Mapping[str, Any]) -> float:
    """The definition: start-to-next-start wall time minus the worker's own generation."""
    return gap_ms - worker_ms(trial)


def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load average unavailable"
    cpus = os.cpu_count()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min, {cpus} CPUs)"


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1)))]


def summary(pairs: Iterable[tuple[float, Mapping[str, Any]]], title: str) -> dict[str, float]:
    """Print the harness time per trial (median, mean, p90) and its median by stage, for
    (gap, trial) pairs; returns the figures."""
    rows = [(harness_ms(gap, trial), breakdown(gap, trial)) for gap, trial in pairs]
    if not rows:
        print(f"{title}: no trial gaps")
        return {}
    values = [h for h, _ in rows]
    median = statistics.median(values)
    print(
        f"{title}: {len(values)} trials, harness time per trial median {median:.2f} ms, "
        f"mean {statistics.fmean(values):.2f} ms, p90 {quantile(values, 0.9):.2f} ms "
        f"(goal ≤ {GOAL_MS:g} ms median: ratio {median / GOAL_MS:.2f}); {load_average()}"
    )
    stage_medians = {s: statistics.median(b[s] for _, b in rows) for s in STAGES}
    print(
        "  by stage (median ms): "
        + ", ".join(f"{s} {stage_medians[s]:.2f}" for s in STAGES)
        + "  (medians of parts need not add up to the median of the whole)"
    )
    return {"median_ms": median, "mean_ms": statistics.fmean(values), **stage_medians}
