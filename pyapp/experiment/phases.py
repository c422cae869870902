"""The measure → freeze → held-out protocol as a resumable state.

A `Sweep` holds everything done so far (trials, freeze records, interruptions); the page
persists it after every trial (IndexedDB) and hands it back after a reload, and the
protocol continues with the next unobserved trial. Phases:

1. `measure`: every selected condition over the profile tasks (single-primitive probes);
2. `freeze`: one frozen profile per model condition (its hash goes into the trace);
3. `heldout`: every model condition over its held-out tasks — refused before the freeze,
   and never twice for the same task under the same frozen profile.

The supplied-program control may run alongside; it is never profiled or predicted.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from typing import Literal

from pyapp.conditions.clock import ClockInfo
from pyapp.conditions.interpret import run_trial as run_control
from pyapp.conditions.model import ModelAdapter, ModelProvenance
from pyapp.conditions.run import MODEL_CONDITIONS, Cancelled, CancelToken, run_trial
from pyapp.predict.predictor import FrozenProfile, freeze_profile, heldout_tasks
from pyapp.records.trace import (
    BrowserInfo,
    Condition,
    FreezeRecord,
    Interruption,
    JournalEntry,
    Trace,
    Trial,
    make_trace,
)
from pyapp.tasks.taskset import Task, TaskParams, generate

Phase = Literal["measure", "heldout"]


class ProtocolError(Exception):
    """A step the protocol refuses (held-out before freeze, a second observation, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Sweep:
    """A run in progress: what has been observed so far, in order."""

    params: TaskParams
    conditions: tuple[Condition, ...]
    model: ModelProvenance
    trials: list[Trial] = field(default_factory=list)
    freezes: list[FreezeRecord] = field(default_factory=list)
    interruptions: list[Interruption] = field(default_factory=list)
    previously_observed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per condition: held-out task ids the browser's ledger saw in earlier sessions."""
    journal: list[JournalEntry] = field(default_factory=list)
    """Free exploration with the model; exported, never profiled or scored."""
    browser: BrowserInfo | None = None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    """Identifies the run across every persisted copy of its trace."""
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    """When the run started, UTC ISO 8601 (as in the trace's `run.created_at`)."""
    clock: ClockInfo | None = None
    """Measured once per sweep, so every persisted copy of the trace agrees."""

    @classmethod
    def from_trace(cls, trace: Trace) -> Sweep:
        """Continue a sweep from a persisted trace (after a reload or a crash)."""
        if trace.model is None:
            raise ProtocolError("no_model", "the persisted trace has no model session")
        return cls(
            params=trace.run.task_params,
            conditions=trace.run.conditions,
            model=trace.model,
            trials=list(trace.trials),
            freezes=list(trace.freezes),
            interruptions=list(trace.interruptions),
            journal=list(trace.journal),
            browser=trace.environment.browser,
            run_id=trace.run.run_id,
            created_at=trace.run.created_at,
            clock=trace.environment.clock,
        )

    @cached_property
    def tasks(self) -> tuple[Task, ...]:
        return generate(self.params)

    def frozen_conditions(self) -> set[str]:
        return {f.condition for f in self.freezes}

    def observed(self) -> set[str]:
        return {t.trial_id for t in self.trials}

    def trace(self) -> Trace:
        """The whole trace document (every trial: built on demand, never per trial)."""
        return self._document(tuple(self.trials))

    def header(self) -> Trace:
        """The trace without its trials (run, tasks, model, environment, freezes,
        interruptions, journal): what the page stores once beside one record per trial."""
        return self._document(())

    def _document(self, trials: tuple[Trial, ...]) -> Trace:
        trace = make_trace(
            self.params,
            self.tasks,
            trials,
            self.conditions,
            self.model,
            self.browser,
            tuple(self.freezes),
            tuple(self.interruptions),
            tuple(self.journal),
            self.clock,
        )
        self.clock = trace.environment.clock
        run = replace(trace.run, run_id=self.run_id, created_at=self.created_at)
        return replace(trace, run=run)


def plan(sweep: Sweep, phase: Phase) -> list[tuple[Condition, Task]]:
    """The (condition, task) pairs of a phase that have not been observed yet."""
    done = sweep.observed()
    pending: list[tuple[Condition, Task]] = []
    tasks = sweep.tasks
    for condition in sweep.conditions:
        if phase == "measure":
            chosen: Sequence[Task] = [t for t in tasks if t.split == "profile"]
        elif condition == "supplied-program":
            chosen = [t for t in tasks if t.split == "heldout"]
        else:
            chosen = heldout_tasks(tasks, condition)
        pending.extend((condition, t) for t in chosen if f"{condition}/{t.id}" not in done)
    return pending


def record_interruption(sweep: Sweep, trial_id: str) -> None:
    """The trial that was in flight when the page closed: never observed, re-attempted."""
    sweep.interruptions.append(
        Interruption(trial_id=trial_id, at=_now(), reason="page-closed", partial=None)
    )


def freeze(sweep: Sweep) -> list[FrozenProfile]:
    """Freeze one profile per model condition that is not frozen yet."""
    frozen = []
    for condition in sweep.conditions:
        if condition not in MODEL_CONDITIONS or condition in sweep.frozen_conditions():
            continue
        record = FreezeRecord(
            condition=condition,
            after_trials=len(sweep.trials),
            frozen_at=_now(),
            previously_observed=sweep.previously_observed.get(condition, ()),
            profile_sha256="",
        )
        profile = freeze_profile(sweep.trace(), record)
        sweep.freezes.append(replace(record, profile_sha256=profile.sha256))
        frozen.append(profile)
    return frozen


OnTrial = Callable[[Trial, int, int], Awaitable[None] | None]


async def run_phase(
    sweep: Sweep,
    phase: Phase,
    adapter: ModelAdapter,
    *,
    cancel: CancelToken | None = None,
    on_trial: OnTrial | None = None,
    before_trial: Callable[[Condition, Task, int, int], Awaitable[None] | None] | None = None,
    on_interrupted: Callable[[Trial], Awaitable[None] | None] | None = None,
) -> bool:
    """Run the unobserved trials of `phase`; returns False when cancelled."""
    if phase == "heldout":
        missing = [
            c
            for c in sweep.conditions
            if c in MODEL_CONDITIONS and c not in sweep.frozen_conditions()
        ]
        if missing:
            raise ProtocolError(
                "not_frozen", f"freeze the profile before held-out trials ({', '.join(missing)})"
            )
    pending = plan(sweep, phase)
    observed = sweep.observed()  # kept up to date here: no per-trial walk over the trials
    for index, (condition, task) in enumerate(pending):
        if cancel is not None and cancel.cancelled:
            return False
        if before_trial is not None:
            maybe = before_trial(condition, task, index, len(pending))
            if maybe is not None:
                await maybe
        if f"{condition}/{task.id}" in observed:
            raise ProtocolError("already_observed", f"{condition}/{task.id} was observed already")
        try:
            if condition == "supplied-program":
                trial = run_control(task)
            else:
                trial = await run_trial(task, condition, adapter, cancel)
        except Cancelled:
            return False
        if trial.outcome == "cancelled":
            # the user's Cancel cut this trial short: kept raw, never scored, re-attempted
            sweep.interruptions.append(
                Interruption(trial_id=trial.trial_id, at=_now(), reason="cancelled", partial=trial)
            )
            if on_interrupted is not None:
                maybe = on_interrupted(trial)
                if maybe is not None:
                    await maybe
            return False
        sweep.trials.append(trial)
        observed.add(trial.trial_id)
        if on_trial is not None:
            maybe = on_trial(trial, index + 1, len(pending))
            if maybe is not None:
                await maybe
    return True


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
