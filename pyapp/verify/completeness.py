"""Whether a run observed every held-out task its freezes listed (issue 37 §1).

A frozen profile lists the held-out tasks it predicts (its `heldout_task_ids`, hashed with
it, and named again by a freeze receipt). Every held-out task is observed once per condition
after the freeze (a chain's unsupported routes too, with zero calls). A trace whose last
held-out trials are missing still re-derives record by record — deleting trials at the tail
of the chain leaves a valid chain, and the scores are then computed on fewer tasks — so
`reproduce` counts them: per condition, the held-out tasks against the trials present, each
missing one named. A run that ended early (a cancelled or paused sweep, a
closed page) says so instead of passing as complete; so does a model condition the run lists
but never froze. Nothing here can tell a run that stopped from trials removed afterwards: a
receipt does not either (it is made before the held-out trials).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyapp.conditions import MODEL_CONDITIONS
from pyapp.predict import tasks_of_trace
from pyapp.records import Trace

SHOWN = 12
"""Most missing task ids named on one line (the count is always given)."""


@dataclass(frozen=True)
class Gap:
    """The held-out tasks of one condition that have no trial."""

    condition: str
    """The condition."""
    listed: tuple[str, ...]
    """Its held-out tasks (and those a receipt lists for it, when one was given)."""
    missing: tuple[str, ...]
    """Those with no trial after the freeze, in the listed order."""

    def line(self) -> str:
        shown = ", ".join(self.missing[:SHOWN])
        more = f", … ({len(self.missing) - SHOWN} more)" if len(self.missing) > SHOWN else ""
        return (
            f"{len(self.missing)} of {len(self.listed)} held-out tasks of {self.condition} have "
            f"no trial: {shown}{more}"
        )


def gaps(trace: Trace, listed: dict[str, tuple[str, ...]] | None = None) -> list[Gap]:
    """Per condition of the run, its held-out tasks that have no trial (after its freeze, for
    a model condition): every held-out task is attempted once per condition — a chain's
    unsupported routes too, recorded with zero calls. A model condition without a freeze is
    left to `incomplete`. `listed`: condition → held-out task ids named elsewhere too (a
    receipt's), counted as well."""
    tasks = tasks_of_trace(trace)
    heldout = [t.id for t in tasks if t.split == "heldout"]
    freezes = {f.condition: f for f in trace.freezes}
    found = []
    for condition in trace.run.conditions:
        record = freezes.get(condition)
        if condition in MODEL_CONDITIONS and record is None:
            continue
        after = record.after_trials if record is not None else 0
        ids = heldout + [i for i in (listed or {}).get(condition, ()) if i not in heldout]
        observed = {t.task_id for t in trace.trials[after:] if t.condition == condition}
        missing = tuple(i for i in ids if i not in observed)
        if missing:
            found.append(Gap(condition, tuple(ids), missing))
    return found


def incomplete(trace: Trace, listed: dict[str, tuple[str, ...]] | None = None) -> list[str]:
    """One line per way the run is not complete (empty: every listed held-out task of every
    frozen profile has its trial, and every model condition it lists was frozen)."""
    lines = [gap.line() for gap in gaps(trace, listed)]
    frozen = {f.condition for f in trace.freezes}
    if trace.model is not None:
        lines += [
            f"{condition} has no frozen profile: the run ended before its freeze (nothing of "
            "it was predicted or scored)"
            for condition in trace.run.conditions
            if condition in MODEL_CONDITIONS and condition not in frozen
        ]
    if lines:
        lines.append(_ending(trace))
    return lines


def _ending(trace: Trace) -> str:
    """How the run ended, in one line, as far as the trace can tell."""
    last_trial = max((t.sequence for t in trace.trials), default=-1)
    open_ = [
        i
        for i in trace.interruptions
        if i.sequence > last_trial
        and not any(t.trial_id == i.trial_id and t.sequence > i.sequence for t in trace.trials)
    ]
    if open_:
        last = open_[-1]
        code = f" ({last.code})" if last.code else ""
        how = f"after an interruption of {last.trial_id}: {last.reason}{code}"
    else:
        how = "with no interruption recorded after its last trial (stopped, or trials removed)"
    return f"the run ended early, {how}: it is not complete, and its scores cover fewer tasks"
