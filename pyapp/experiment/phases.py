"""The measure → freeze → held-out protocol as a resumable state.

A `Sweep` holds everything done so far (trials, freeze records, interruptions); the page
persists it after every trial (IndexedDB) and hands it back after a reload, and the
protocol continues with the next unobserved trial. Phases:

1. `measure`: every selected condition over the profile tasks (single-primitive probes);
2. `freeze`: one frozen profile per model condition (its hash goes into the trace); a
   sealed sweep (`sealed`) then draws its held-out tasks (`HeldoutDraw`, from the seed the
   freezes seal: `pyapp.predict.sealing`), with the checks that need their contents;
3. `heldout`: every model condition over its held-out tasks — refused before the freeze
   (and before a sealed sweep's draw), and never twice for the same task under the same
   frozen profile.

The supplied-program control may run alongside; it is never profiled or predicted.

A trial whose failure is of kind `infrastructure` (`pyapp.conditions.failures`) is not an
observation: it is kept raw under `interruptions` and attempted again at once; after
`PAUSE_AFTER` consecutive ones the sweep pauses (resumable) instead of looping. A sweep is
bound to the model identity it started with (`identity_difference`): every trial records
the load it ran under, and a load of another identity is refused (`model_changed`).
Trials, interruptions, freezes, journal entries and model loads share one sequence counter
(the timeline) and form one hash chain (`pyapp.records.chain`): the sweep stamps each record
with its `sequence` and the hash of the record before it as it is appended, so a resumed
sweep continues the chain from its persisted records. Loads and journal entries made
before the sweep started are chained at its start (loads first).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from pyapp.conditions import (
    MODEL_CONDITIONS,
    CancelToken,
    chain_capacity_problem,
    kind_of,
    run_control_trial,
    run_trial,
)
from pyapp.errors import Cancelled, PhaseError
from pyapp.predict import FrozenProfile, freeze_condition, make_draw
from pyapp.records import (
    DEFAULT_CHAIN_PROTOCOL,
    BrowserInfo,
    ChainProtocol,
    ClockInfo,
    Condition,
    FreezeRecord,
    HardStop,
    HeldoutDraw,
    Interruption,
    JournalEntry,
    ModelAdapter,
    ModelLoad,
    ModelProvenance,
    StudySeal,
    Trace,
    Trial,
    chain,
    current_load_id,
    identity_difference,
    identity_sha256,
    is_sealed,
    make_trace,
    protocol_of,
    terms_for,
)
from pyapp.tasks import Task, TaskParams, generate, sealed_tasks

_R = TypeVar("_R")
Phase = Literal["measure", "heldout"]
PhaseEnd = Literal["finished", "cancelled", "paused"]
PAUSE_AFTER = 3
"""Consecutive infrastructure interruptions after which a sweep pauses."""


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
    faults: tuple[str, ...] = ()
    """Fault-injection hooks the page ran with (recorded in the trace's run)."""
    protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL
    """The controlled chain's protocol, chosen at the start (recorded in the trace's
    `run.terms` and every freeze)."""
    sealed: bool = False
    """A sealed sweep: its held-out tasks are drawn once every profile is frozen, from the
    held-out draw seed the freezes seal (recorded in `run.terms.sealed`)."""
    draw: HeldoutDraw | None = None
    """A sealed sweep's held-out draw, once made (the trace's `draw`)."""
    awaits_study_seal: bool = False
    """A sealed sweep whose held-out draw waits for a study-level seal (`study_seal`): one
    seed shared with the study's other runs of its task seed, made once all their profiles
    are frozen (`pyapp.predict.sealing.study_draw_seed`). Until it is given, the sweep
    stops at its freeze (`awaiting_study_seal`)."""
    study_seal: StudySeal | None = None
    """The study-level seal, once the study has made it (it must list this sweep's own)."""
    ledger_keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per condition: the content keys a ledger holds for this model (a sealed sweep maps
    them onto its held-out tasks at the draw; an unsealed one at the start, into
    `previously_observed`)."""
    paused: Interruption | None = None
    """The interruption that paused the sweep (the last of `PAUSE_AFTER` in a row); null
    while it is not paused."""
    _chain: tuple[int, str] | None = field(default=None, repr=False, compare=False)
    """The latest sequence number and chain head (computed once, then kept as records are
    appended: no walk per trial)."""
    _bound: tuple[ModelProvenance, ModelProvenance] | None = field(
        default=None, repr=False, compare=False
    )
    """The provenance `bind` took last and the model it left: binding that same (frozen)
    object again while the model is still that one changes nothing (the page's adapter hands
    out one provenance object while its model client stays the same): it is not compared
    again."""
    _ran_under: tuple[ModelProvenance, int | None, str] | None = field(
        default=None, repr=False, compare=False
    )
    """The model, its current load id and its identity hash (`run_under`), kept while the
    model stays the same object."""

    def __post_init__(self) -> None:
        problem = (
            chain_capacity_problem(self.params, self.protocol)
            if "controlled-chain" in self.conditions
            else None
        )
        if problem is not None:  # protocol capacity is never the model's failure: refused
            raise PhaseError("bad_params", problem.message)
        self.model = replace(self.model, loads=self._stamped_loads(self.model.loads))
        self.journal = [e if e.sequence is not None else self.stamp(e) for e in self.journal]

    @classmethod
    def from_trace(cls, trace: Trace) -> Sweep:
        """Continue a sweep from a persisted trace (after a reload or a crash)."""
        if trace.model is None:
            raise PhaseError("no_model", "the persisted trace has no model session")
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
            faults=trace.run.faults,
            protocol=protocol_of(trace.run.terms),
            sealed=is_sealed(trace.run.terms),
            draw=trace.draw,
        )

    _tasks: tuple[object, tuple[Task, ...]] | None = field(default=None, repr=False, compare=False)

    @property
    def tasks(self) -> tuple[Task, ...]:
        """The task set: generated once (a sealed sweep's: its profile tasks until the draw,
        then with the drawn held-out tasks)."""
        key = None if self.draw is None else self.draw.draw_seed
        if self._tasks is None or self._tasks[0] != key:
            tasks = sealed_tasks(self.params, key) if self.sealed else generate(self.params)
            self._tasks = (key, tasks)
        return self._tasks[1]

    def frozen_conditions(self) -> set[str]:
        return {f.condition for f in self.freezes}

    def observed(self) -> set[str]:
        return {t.trial_id for t in self.trials}

    def _head(self) -> tuple[int, str]:
        if self._chain is None:
            self._chain = chain.head(self, self.run_id, self.created_at)
        return self._chain

    def next_sequence(self) -> int:
        """The next number of the timeline shared by every record of the sweep."""
        return self._head()[0] + 1

    def link(self) -> dict[str, Any]:
        """The next record's `sequence` and `prev_sha256` (the chain head)."""
        sequence, head = self._head()
        return {"sequence": sequence + 1, "prev_sha256": head}

    def appended(self, record: object) -> None:
        """The chain moves on: `record` (stamped with `link()`) is now the latest."""
        sequence = getattr(record, "sequence", None)
        assert isinstance(sequence, int)
        self._chain = (sequence, chain.sha256_of(record))

    def stamp(self, record: _R) -> _R:
        """`record` with its place in the chain; the chain moves on to it."""
        stamped = replace(record, **self.link())  # type: ignore[type-var]
        self.appended(stamped)
        return stamped

    def _stamped_loads(self, loads: tuple[ModelLoad, ...]) -> tuple[ModelLoad, ...]:
        """Every load the sweep took (each keeps its place in the chain), then those of
        `loads` new to it, stamped. A page reloaded mid-sweep numbers its loads from 1 again:
        a load is new unless one the sweep took records the same load (every field but its
        number and chain link), and a new load whose number is taken gets the next free one."""
        kept = [load for load in self.model.loads if load.sequence is not None]
        seen = {_load_content(load) for load in kept}
        for load in loads:
            if _load_content(load) in seen:
                continue
            ids = {k.load_id for k in kept}
            number = load.load_id if load.load_id not in ids else max(ids) + 1
            kept.append(self.stamp(replace(load, load_id=number)))
            seen.add(_load_content(load))
        return tuple(kept)

    def bind(self, loaded: ModelProvenance) -> None:
        """Take the loaded model's provenance (new load records) if it is the sweep's
        identity; refuse it otherwise. A revision served that the new load does not know
        (e.g. from the browser cache) keeps the one already recorded. While no model is
        loaded, only the load records are taken."""
        if self._bound is not None and self._bound[0] is loaded and self._bound[1] is self.model:
            return  # bound already, and nothing changed the model since
        self._bind(loaded)
        self._bound = (loaded, self.model)

    def _bind(self, loaded: ModelProvenance) -> None:
        if loaded.backend_actual is None:
            # no model is loaded right now (a reload failed or is under way): nothing to
            # compare; the load records are kept and the generation fails as `not_loaded`
            self.model = replace(self.model, loads=self._stamped_loads(loaded.loads))
            return
        differ = identity_difference(self.model, loaded)
        if differ:
            raise PhaseError(
                "model_changed",
                f"this sweep is bound to {self.model.model_id} ({self.model.revision}, "
                f"{self.model.dtype}, {self.model.backend_actual}); the loaded model differs "
                f"in {'; '.join(differ)}. Load the sweep's model again to continue, or start "
                "a new sweep for this one.",
            )
        served = loaded.revision_served or self.model.revision_served
        loads = self._stamped_loads(loaded.loads)
        self.model = replace(loaded, revision_served=served, loads=loads)

    def run_under(self) -> tuple[int | None, str]:
        """The load id and identity hash a model trial records now (`current_load_id`,
        `identity_sha256` of the bound model), worked out once per model."""
        if self._ran_under is None or self._ran_under[0] is not self.model:
            model = self.model
            self._ran_under = (model, current_load_id(model), identity_sha256(model))
        return self._ran_under[1], self._ran_under[2]

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
            self.faults,
            terms_for(self.protocol, self.sealed),
            self.draw,
        )
        self.clock = trace.environment.clock
        run = replace(trace.run, run_id=self.run_id, created_at=self.created_at)
        return replace(trace, run=run)


def _load_content(load: ModelLoad) -> tuple[object, ...]:
    """A load record without its number and its place in the chain."""
    return (
        load.reason,
        load.ok,
        load.error_code,
        load.error_message,
        load.backend_requested,
        load.backend_actual,
        load.download_bytes,
        load.download_ms,
        load.setup_ms,
    )


def plan(sweep: Sweep, phase: Phase) -> list[tuple[Condition, Task]]:
    """The (condition, task) pairs of a phase that have not been observed yet."""
    done = sweep.observed()
    pending: list[tuple[Condition, Task]] = []
    tasks = sweep.tasks
    if phase == "heldout" and sweep.sealed and sweep.draw is None:
        # not drawn yet: the held-out tasks' ids and families (the same in every draw) stand
        # in for counting; `run_phase` draws before it runs any
        tasks = generate(sweep.params)
    for condition in sweep.conditions:
        # every held-out task, chains included: a task without a controlled route is
        # recorded as `unsupported` with zero model calls (never predicted or scored)
        split = "profile" if phase == "measure" else "heldout"
        chosen: Sequence[Task] = [t for t in tasks if t.split == split]
        pending.extend((condition, t) for t in chosen if f"{condition}/{t.id}" not in done)
    return pending


def record_interruption(sweep: Sweep, trial_id: str) -> None:
    """The trial that was in flight when the page closed: never observed, re-attempted."""
    interruption = Interruption(
        trial_id=trial_id,
        at=_now(),
        reason="page-closed",
        code=None,
        message=None,
        partial=None,
        **sweep.link(),
    )
    sweep.interruptions.append(interruption)
    sweep.appended(interruption)


def stall_of(trial: Trial) -> HardStop | None:
    """The client's judgement of the hard stop that ended a trial's (last) call."""
    if trial.completion is not None:
        return trial.completion.hard_stop
    calls = trial.chain.calls if trial.chain is not None else ()
    return calls[-1].completion.hard_stop if calls else None


def interrupt(sweep: Sweep, trial: Trial) -> Interruption:
    """Keep a trial that is not an observation (Cancel, infrastructure) under
    `interruptions`, raw and never scored; it is attempted again."""
    assert trial.failure is not None
    code = trial.failure.code
    interruption = Interruption(
        trial_id=trial.trial_id,
        sequence=trial.sequence,
        at=_now(),
        reason="cancelled" if kind_of(code) == "cancelled" else "infrastructure",
        code=code,
        message=trial.failure.message,
        partial=trial,
        prev_sha256=trial.prev_sha256,
        hard_stop=stall_of(trial) if code == "stalled" else None,
    )
    sweep.interruptions.append(interruption)
    sweep.appended(interruption)
    return interruption


def freeze(sweep: Sweep) -> list[FrozenProfile]:
    """Freeze one profile per model condition that is not frozen yet."""
    frozen = []
    for condition in sweep.conditions:
        if condition not in MODEL_CONDITIONS or condition in sweep.frozen_conditions():
            continue
        link = sweep.link()
        frozen_at = _now()
        record, profile = freeze_condition(
            sweep.trace(),
            condition,
            sequence=link["sequence"],
            prev_sha256=link["prev_sha256"],
            frozen_at=frozen_at,
            previously_observed=sweep.previously_observed.get(condition, ()),
        )
        sweep.freezes.append(record)
        sweep.appended(record)
        frozen.append(profile)
    draw(sweep)
    return frozen


def draw(sweep: Sweep) -> HeldoutDraw | None:
    """A sealed sweep's held-out draw, made once every model condition is frozen (None when
    the sweep is unsealed, drawn already, or not frozen yet)."""
    if not sweep.sealed or sweep.draw is not None:
        return None
    if any(c in MODEL_CONDITIONS and c not in sweep.frozen_conditions() for c in sweep.conditions):
        return None
    if awaiting_study_seal(sweep):
        return None
    link = sweep.link()
    try:
        record = make_draw(
            sweep.trace(),
            sweep.ledger_keys,
            sequence=link["sequence"],
            prev_sha256=link["prev_sha256"],
            drawn_at=_now(),
            study_seal=sweep.study_seal,
        )
    except ValueError as error:  # a study seal that does not list this sweep's profiles
        raise PhaseError("bad_study_seal", str(error)) from None
    sweep.draw = record
    sweep.appended(record)
    return record


def awaiting_study_seal(sweep: Sweep) -> bool:
    """The sweep's held-out draw waits for a study-level seal it has not been given (an
    undrawn sweep that awaits one: `Sweep.awaits_study_seal`)."""
    return sweep.sealed and sweep.draw is None and sweep.awaits_study_seal and not sweep.study_seal


OnTrial = Callable[[Trial, int, int], Awaitable[None] | None]
BeforeTrial = Callable[[Condition, Task, int, int], Awaitable[None] | None]
OnInterrupted = Callable[[Trial], Awaitable[None] | None]


async def _maybe(value: Awaitable[None] | None) -> None:
    if value is not None:
        await value


async def attempt(
    sweep: Sweep,
    condition: Condition,
    task: Task,
    adapter: ModelAdapter,
    cancel: CancelToken | None,
) -> Trial:
    """One attempt of one trial, stamped with its place in the timeline and, for a model
    condition, the load and identity it ran under (the adapter's model is bound first)."""
    if condition == "supplied-program":
        return replace(run_control_trial(task), **sweep.link())
    sweep.bind(adapter.provenance)
    load_id, identity = sweep.run_under()
    trial = await run_trial(task, condition, adapter, cancel, sweep.protocol)
    return replace(trial, load_id=load_id, model_identity=identity, **sweep.link())


async def run_phase(
    sweep: Sweep,
    phase: Phase,
    adapter: ModelAdapter,
    *,
    cancel: CancelToken | None = None,
    on_trial: OnTrial | None = None,
    before_trial: BeforeTrial | None = None,
    on_interrupted: OnInterrupted | None = None,
) -> PhaseEnd:
    """Run the unobserved trials of `phase`: `finished`, `cancelled` (the user's Cancel) or
    `paused` (`PAUSE_AFTER` infrastructure interruptions in a row; `sweep.paused` says why).
    An infrastructure interruption is attempted again at once."""
    if phase == "heldout":
        missing = [
            c
            for c in sweep.conditions
            if c in MODEL_CONDITIONS and c not in sweep.frozen_conditions()
        ]
        if missing:
            raise PhaseError(
                "not_frozen", f"freeze the profile before held-out trials ({', '.join(missing)})"
            )
        if awaiting_study_seal(sweep):
            raise PhaseError(
                "awaiting_study_seal",
                "every profile is frozen; the held-out tasks are drawn once the study's seal "
                "of this task seed is made (from every run of the seed in the study)",
            )
        if sweep.sealed and sweep.draw is None:
            draw(sweep)  # every profile is frozen: the held-out tasks are drawn now
    sweep.paused = None
    pending = plan(sweep, phase)
    observed = sweep.observed()  # kept up to date here: no per-trial walk over the trials
    index = in_a_row = 0
    while index < len(pending):
        condition, task = pending[index]
        if cancel is not None and cancel.cancelled:
            return "cancelled"
        await _maybe(before_trial and before_trial(condition, task, index, len(pending)))
        if f"{condition}/{task.id}" in observed:
            raise PhaseError("already_observed", f"{condition}/{task.id} was observed already")
        try:
            trial = await attempt(sweep, condition, task, adapter, cancel)
        except Cancelled:
            return "cancelled"
        kind = kind_of(trial.failure.code) if trial.failure is not None else "outcome"
        if kind in ("cancelled", "infrastructure"):
            # not an observation: kept raw, never scored, attempted again
            interruption = interrupt(sweep, trial)
            await _maybe(on_interrupted and on_interrupted(trial))
            if kind == "cancelled":
                return "cancelled"
            in_a_row += 1
            if in_a_row >= PAUSE_AFTER:
                sweep.paused = interruption
                return "paused"
            continue
        in_a_row = 0
        sweep.trials.append(trial)
        sweep.appended(trial)
        observed.add(trial.trial_id)
        index += 1
        await _maybe(on_trial and on_trial(trial, index, len(pending)))
    return "finished"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
