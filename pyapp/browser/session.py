"""The browser worker's experiment session: the requests that drive a sweep.

The page never re-implements the protocol: it sends the `sweep_*` and `journal_generate`
requests (`pyapp.protocol.messages`, one record each; `pyapp.browser.bridge.HANDLERS` routes
them here) and draws what comes back: `SweepState` says what may run next. Python orders
the protocol (measure → freeze → held-out, `pyapp.experiment.phases`).

An event carries what changed and no document inside it: the trial a `trial_done` reports,
and the records that joined the header with an event (a reload's load records, an
interruption, the freezes: one `HeaderChange`), travel beside it as Python's own JSON text
(`EventTexts`), which the page stores as it is (IndexedDB: one record per trial, and the
changes beside the sweep's header until it next has the header whole); so a float such as
1.0 stays 1.0 whatever JavaScript does with numbers. The whole trace is assembled only when
someone asks for it, by Python, from the stored texts (`pyapp.records.stored.stored_trace`:
`sweep_trace` for a download, `sweep_resume` after a reload). The header is the trace
without its trials (run, tasks, model, environment, freezes, interruptions, journal).

A synthetic validation model (`synthetic_select`, `pyapp.synthetic`) runs here, in the worker,
instead of the page's loaded model: the same `SyntheticAdapter` as `python -m pyapp simulate`,
told of each trial before it runs and timed by its own virtual clock, exactly as there, so a
page run and a native run of the same spec, seed and parameters record the same trials. Its
trials say evidence `synthetic`: never model evidence.

Events, sent through `PageLink` (`pyapp.browser.page_link`: posted, or told) during
`sweep_run`: `trial_start` before each trial, `trial_done` after it; a trial the user's
Cancel or an infrastructure failure (a failure code of kind `infrastructure`) cut short is
not an observation but a `trial_interrupted` with its code (the header records it under
`interruptions`; it is attempted again); a freeze made inside `sweep_run` (phase `all`) is
announced as `frozen`. Three infrastructure interruptions in a row pause the sweep:
`sweep_run` answers `cancelled: false` with `state.paused` naming the cause; another
`sweep_run` resumes.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from typing import Literal

from pyapp.browser.page_link import Context as Context  # re-exported: the handlers' context
from pyapp.browser.page_link import PageLink
from pyapp.conditions import (
    ALL_CONDITIONS,
    MODEL_CONDITIONS,
    CancelToken,
    chain_capacity_problem,
    exact_op,
    plan_route,
    resolve_operand,
)
from pyapp.errors import PhaseError, RecordError
from pyapp.experiment import (
    PAUSE_AFTER,
    Phase,
    Sweep,
    awaiting_study_seal,
    draw,
    freeze,
    ledger_task_ids,
    plan,
    record_interruption,
    run_phase,
    seen_in,
)
from pyapp.predict import (
    FrozenProfile,
    content_sha256,
    heldout_draw_seed,
    heldout_tasks,
    keys_by_condition,
    predict_product,
    predict_state_aware,
    score_trace,
)
from pyapp.protocol import (
    EventTexts,
    FreezeDone,
    Frozen,
    HeldoutPredictions,
    JournalGenerate,
    JournalKept,
    PauseCause,
    PlanLeft,
    PredictionsText,
    RequestError,
    RunEnded,
    Stage,
    SweepResume,
    SweepRun,
    SweepStart,
    SweepState,
    SyntheticChosen,
    SyntheticSelect,
    TraceText,
    TrialDone,
    TrialInterrupted,
    TrialStart,
    event,
)
from pyapp.records import (
    CONDITIONS,
    DEFAULT_CHAIN_PROTOCOL,
    EVIDENCE_NOTES,
    JSON,
    VIRTUAL_CLOCK,
    WHOLE_TASK_CAPS,
    BrowserInfo,
    Caps,
    ChainProtocol,
    Completion,
    Condition,
    JournalEntry,
    Mark,
    ModelAdapter,
    SpecError,
    SyntheticSpec,
    Trace,
    Trial,
    chain_protocol,
    clock,
    counted,
    document_text,
    from_json,
    header_change,
    line_text,
    stored_trace,
    summarise,
    task_params,
    to_json,
    unpinned,
)
from pyapp.synthetic import SyntheticAdapter, parse_spec, synthetic_provenance, written_name
from pyapp.tasks import Task, TaskParams
from pyapp.verify import make_receipt


def request_task_params(seed: int | None, params: dict[str, JSON] | None) -> TaskParams:
    """TaskParams from a request's `seed` and optional `params` (`pyapp.records.params`'s
    one reader), refused as a request error (`bad_params`)."""
    try:
        return task_params(seed, params)
    except RecordError as error:
        raise RequestError("bad_params", str(error)) from None


def browser_info(environment: dict[str, JSON] | None) -> BrowserInfo | None:
    """The browser a request describes (BrowserInfo JSON), checked; None when absent."""
    if environment is None:
        return None
    try:
        info: BrowserInfo = from_json(BrowserInfo, environment)
    except RecordError as error:
        raise RequestError("bad_request", f"environment: {error}") from None
    return info


def _previously(request: SweepStart | SweepResume, sweep: Sweep) -> dict[str, tuple[str, ...]]:
    """The sweep's held-out task ids the ledgers' keys name (the one rule:
    `pyapp.predict.exploratory`, through `pyapp.experiment.ledger.seen_in`): the keys given
    for this model (`previously_observed`) and those of the page's ledger entries that are
    this model however spelled (`keys_by_condition`). The keys are kept on the sweep
    (`ledger_keys`): a sealed sweep has no held-out tasks until its draw, which matches
    them then."""
    keys = {str(k): list(map(str, v)) for k, v in (request.previously_observed or {}).items()}
    model = sweep.model
    if request.ledger and model is not None:
        entries = [to_json(entry) for entry in request.ledger]
        mine = keys_by_condition(entries, model.model_id, model.revision, model.revision_served)
        for condition, found in mine.items():
            keys[condition] = list(dict.fromkeys([*keys.get(condition, []), *found]))
    sweep.ledger_keys = {c: tuple(k) for c, k in keys.items()}
    return seen_in(keys, sweep.tasks, sweep.conditions, sweep.protocol)


def _chain_protocol(name: str | None) -> ChainProtocol:
    """The protocol a start request chose (null: the design's); an unknown name is refused."""
    try:
        return DEFAULT_CHAIN_PROTOCOL if name is None else chain_protocol(name)
    except KeyError as error:
        raise RequestError("bad_request", f"chain_protocol: {error.args[0]}") from None


class Session:
    def __init__(self) -> None:
        self.sweep: Sweep | None = None
        self.journal: list[JournalEntry] = []
        self.synthetic: SyntheticSpec | None = None
        """The synthetic model sweeps use instead of the loaded model (`synthetic_select`)."""
        self._synthetic: SyntheticAdapter | None = None
        self._page_has: Mark | None = None
        """How far the header the page holds goes, during a run (`HeaderChange`): an event
        that adds records to it carries those records only."""

    # ---- helpers ---------------------------------------------------------------------

    def _sweep(self) -> Sweep:
        if self.sweep is None:
            raise RequestError("no_sweep", "start a sweep first")
        return self.sweep

    def _adapter(self, ctx: Context, seed: int) -> ModelAdapter:
        """The selected synthetic model (for task seed `seed`), or the page's loaded model."""
        if self.synthetic is not None:
            adapter = self._synthetic
            if adapter is None or adapter.spec != self.synthetic or adapter.task_seed != seed:
                adapter = self._synthetic = SyntheticAdapter(self.synthetic, seed)
            return adapter
        loaded = ctx.adapter()
        if loaded is None:
            raise RequestError("not_loaded", "load a model (with consent) first")
        return loaded

    def state(self) -> SweepState:
        sweep = self._sweep()
        phases: tuple[Literal["measure", "heldout"], ...] = ("measure", "heldout")
        plans = {phase: plan(sweep, phase) for phase in phases}
        measure_left, heldout_left = len(plans["measure"]), len(plans["heldout"])
        left = tuple(
            PlanLeft(
                phase=phase,
                condition=c,
                trials=n,
                calls=sum(model_calls(condition, t) for condition, t in pending if condition == c),
                answer=ANSWER_KINDS.get(c, "none"),
                # held-out answers' lengths stay out of the page until each is observed
                work=None
                if phase != "measure"
                or None in (sizes := [answer_tokens(k, t) for k, t in pending if k == c])
                else sum(s or 0 for s in sizes),
            )
            for phase, pending in plans.items()
            for c in sweep.conditions
            if (n := sum(1 for condition, _ in pending if condition == c))
        )
        frozen = sorted(sweep.frozen_conditions())
        model_conditions = [c for c in sweep.conditions if c in MODEL_CONDITIONS]
        all_frozen = all(c in frozen for c in model_conditions)
        stage: Stage = "idle"
        if measure_left == 0 and heldout_left == 0 and all_frozen:
            stage = "done"
        elif frozen and all_frozen:
            stage = "frozen"
        elif measure_left == 0:
            stage = "measured"
        return SweepState(
            seed=sweep.params.seed,
            conditions=tuple(sweep.conditions),
            model_id=sweep.model.model_id,
            evidence=sweep.model.evidence,
            trials=len(sweep.trials),
            measure_left=measure_left,
            heldout_left=heldout_left,
            frozen=tuple(frozen),
            can_freeze=measure_left == 0 and len(frozen) < len(model_conditions),
            can_run_heldout=all_frozen,
            stage=stage,
            interruptions=len(sweep.interruptions),
            paused=None
            if sweep.paused is None
            else PauseCause(
                code=sweep.paused.code,
                message=sweep.paused.message,
                trial_id=sweep.paused.trial_id,
                in_a_row=PAUSE_AFTER,
            ),
            unpinned=unpinned(sweep.model),
            journal=len(sweep.journal),
            run_id=sweep.run_id,
            summary=summarise(tuple(sweep.trials)),
            left=left,
            chain_protocol=sweep.protocol.version,
            sealed=sweep.sealed,
            draw_seed=None if sweep.draw is None else sweep.draw.draw_seed,
            awaiting_study_seal=heldout_draw_seed(sweep.trace())
            if all_frozen and model_conditions and awaiting_study_seal(sweep)
            else None,
        )

    # ---- requests --------------------------------------------------------------------

    def select_synthetic(self, request: SyntheticSelect) -> SyntheticChosen:
        """Use a synthetic model from now on (or, `spec` null, the loaded model again)."""
        if request.spec is None:
            self.synthetic = self._synthetic = None
            return SyntheticChosen(spec=None, provenance=None, note=None)
        try:
            spec = parse_spec(request.spec)
        except SpecError as error:
            raise RequestError("bad_synthetic_spec", str(error)) from None
        self.synthetic = spec
        return SyntheticChosen(
            spec=written_name(spec),
            provenance=synthetic_provenance(spec),
            note=EVIDENCE_NOTES["synthetic"],
        )

    def start(self, request: SweepStart, ctx: Context) -> SweepState:
        params = request_task_params(request.seed, request.params)
        adapter = self._adapter(ctx, params.seed)
        conditions = request.conditions or list(ALL_CONDITIONS)
        if any(c not in ALL_CONDITIONS for c in conditions):
            raise RequestError("bad_request", f"conditions must be a subset of {ALL_CONDITIONS}")
        browser = browser_info(request.environment)
        ordered = tuple(c for c in ALL_CONDITIONS if c in conditions)
        protocol = _chain_protocol(request.chain_protocol)
        problem = (
            chain_capacity_problem(params, protocol) if "controlled-chain" in ordered else None
        )
        if problem is not None:  # refused before the sweep starts, naming the parameter
            raise RequestError("bad_params", problem.message)
        self.sweep = Sweep(
            params=params,
            conditions=ordered,
            model=adapter.provenance,
            browser=browser,
            journal=list(self.journal),
            faults=tuple(request.faults or ()),
            protocol=protocol,
            sealed=bool(request.sealed) or request.study_seal is not None,
            awaits_study_seal=request.study_seal is not None,
            study_seal=None if request.study_seal is None else request.study_seal.seal,
            # a synthetic model's timings are its cost model's, on its virtual clock
            clock=VIRTUAL_CLOCK if isinstance(adapter, SyntheticAdapter) else None,
        )
        self.sweep.previously_observed = _previously(request, self.sweep)
        return self.state()

    def resume(self, request: SweepResume) -> SweepState:
        try:
            self.sweep = Sweep.from_trace(resumed_trace(request))
        except PhaseError as error:
            raise RequestError(error.code, error.message) from None
        if request.study_seal is not None:
            if not self.sweep.sealed:
                raise RequestError("bad_request", "an unsealed sweep takes no study seal")
            self.sweep.awaits_study_seal = True
            self.sweep.study_seal = request.study_seal.seal
        self.sweep.previously_observed = _previously(request, self.sweep)
        if self.sweep.study_seal is not None:
            try:  # frozen already and the seal given: the draw (its ledger checks) is made now
                draw(self.sweep)
            except PhaseError as error:
                raise RequestError(error.code, error.message) from None
        in_flight = request.in_flight
        if in_flight is not None and in_flight not in self.sweep.observed():
            record_interruption(self.sweep, in_flight)
        return self.state()

    async def run(self, request: SweepRun, ctx: Context) -> RunEnded:
        sweep = self._sweep()
        adapter = self._adapter(ctx, sweep.params.seed)
        # the page holds the header as it stands (it stores it whenever a request changed
        # it): the run's events carry what joins it from now on
        self._page_has = (
            sweep.model,
            len(sweep.interruptions),
            len(sweep.freezes),
            sweep.draw is not None,
        )
        try:
            sweep.bind(adapter.provenance)  # same identity: reloads add load records
        except PhaseError as error:
            raise RequestError(error.code, error.message) from None
        with _timed_by(adapter), PageLink(ctx, adapter) as page:
            return await self._run(sweep, request.phase, adapter, page)

    async def _run(
        self,
        sweep: Sweep,
        phase: Literal["measure", "heldout", "all"],
        adapter: ModelAdapter,
        page: PageLink,
    ) -> RunEnded:
        phases: list[Phase] = ["measure", "heldout"] if phase == "all" else [phase]
        cancel = CancelToken(poll=page.cancel_requested)
        synthetic = adapter if isinstance(adapter, SyntheticAdapter) else None
        observed_before = len(sweep.trials)
        counts = [summarise(tuple(sweep.trials))]  # kept as trials arrive: constant per trial
        ledgered = {c: ledger_task_ids(sweep.tasks, c, sweep.protocol) for c in sweep.conditions}
        by_id = {t.id: t for t in sweep.tasks}
        for current in phases:
            profiles = freeze(sweep) if current == "heldout" and phase == "all" else []
            if profiles:
                frozen = Frozen(
                    conditions=tuple(p.profile.condition for p in profiles),
                    predictions=_predicted(sweep, profiles),
                )
                texts = EventTexts(change=self._change(sweep), receipt=receipt_json(sweep))
                await page.tell(event(frozen), texts)
            if current == "heldout" and awaiting_study_seal(sweep):
                waiting = (
                    "Stopped at the freeze: the held-out tasks are drawn once the study's seal"
                    " of this task seed is made; resume with it."
                )
                return RunEnded(state=self.state(), cancelled=False, notice=waiting)

            async def before(
                condition: Condition, task: Task, index: int, total: int, current: Phase = current
            ) -> None:
                if synthetic is not None:  # as `simulate` does: its draws are keyed by the trial
                    synthetic.begin_trial(condition, task, index, total)
                start = TrialStart(
                    trial_id=f"{condition}/{task.id}",
                    condition=condition,
                    task_id=task.id,
                    index=index,
                    total=total,
                    phase=current,
                    answer_tokens=answer_tokens(condition, task) if current == "measure" else None,
                    calls=model_calls(condition, task),
                )
                await page.tell(event(start))

            async def after(trial: Trial, done: int, total: int, current: Phase = current) -> None:
                counts[0] = counted(counts[0], trial)
                finished = TrialDone(
                    trial_id=trial.trial_id,
                    condition=trial.condition,
                    task_id=trial.task_id,
                    index=done,
                    total=total,
                    phase=current,
                    heldout_observed=trial.task_id in ledgered[trial.condition],
                    summary=counts[0],
                    heldout_content=content_sha256(by_id[trial.task_id])
                    if trial.task_id in ledgered[trial.condition]
                    else None,
                )
                texts = EventTexts(trial=line_text(trial), change=self._change(sweep))
                await page.tell(event(finished), texts)

            async def interrupted(trial: Trial) -> None:
                cut = TrialInterrupted(
                    trial_id=trial.trial_id,
                    code=trial.failure.code if trial.failure else None,
                )
                await page.tell(event(cut), EventTexts(change=self._change(sweep)))

            try:
                end = await run_phase(
                    sweep,
                    current,
                    adapter,
                    cancel=cancel,
                    on_trial=after,
                    before_trial=before,
                    on_interrupted=interrupted,
                )
            except PhaseError as error:
                raise RequestError(error.code, error.message) from None
            if end != "finished":
                return RunEnded(state=self.state(), cancelled=end == "cancelled", notice=None)
        notice = None
        if phase == "heldout" and len(sweep.trials) == observed_before:
            notice = (
                "Refused: every held-out task has already been observed and scored once under"
                " this frozen profile. No new trial was made (each held-out task is scored once"
                " per frozen profile)."
            )
        return RunEnded(state=self.state(), cancelled=False, notice=notice)

    def freeze(self) -> FreezeDone:
        sweep = self._sweep()
        if plan(sweep, "measure"):
            raise RequestError("not_measured", "measure every profile task before freezing")
        profiles = freeze(sweep)
        if not profiles:
            raise RequestError("already_frozen", "every model condition is frozen already")
        return FreezeDone(
            frozen=tuple(profiles),
            predictions=_predicted(sweep, profiles),
            header_json=self.header_json(),
            state=self.state(),
            receipt_json=receipt_json(sweep),
        )

    def predictions(self) -> PredictionsText:
        sweep = self._sweep()
        if not sweep.freezes:
            raise RequestError("not_frozen", "nothing is frozen yet")
        return PredictionsText(
            predictions_json=document_text(score_trace(sweep.trace()), "predictions")
        )

    def header_json(self) -> str:
        """The sweep's header as JSON text (compact: it travels after every checkpoint)."""
        return line_text(self._sweep().header())

    def _change(self, sweep: Sweep) -> str | None:
        """The records that joined the header since the page last had it (or was sent a
        change), as Python's text of one `HeaderChange`; None when none did."""
        if self._page_has is None:
            return None
        change = header_change(
            self._page_has, sweep.model, sweep.interruptions, sweep.freezes, sweep.draw
        )
        if change.empty:
            return None
        self._page_has = (
            sweep.model,
            len(sweep.interruptions),
            len(sweep.freezes),
            sweep.draw is not None,
        )
        return line_text(change)

    async def journal_generate(self, request: JournalGenerate, ctx: Context) -> JournalKept:
        prompt = request.prompt
        if not prompt.strip():
            raise RequestError("bad_request", "prompt must be a non-empty string")
        if self.synthetic is not None:
            raise RequestError(
                "bad_request",
                "a synthetic model answers the protocol's trials only: load a model for the "
                "journal",
            )
        adapter = self._adapter(ctx, 0)
        at = datetime.now(UTC).isoformat(timespec="milliseconds")
        completion = await adapter.generate(prompt, WHOLE_TASK_CAPS)
        entry = self.record_exploration(prompt, WHOLE_TASK_CAPS, completion, at)
        return JournalKept(entry=entry, journal=len(self.journal))

    def record_exploration(
        self, prompt: str, caps: Caps, completion: Completion, at: str | None = None
    ) -> JournalEntry:
        """Every model call outside a sweep trial (the Journal, the Models panel's "Try a
        prompt") goes into the journal: exported with the trace, never profiled or scored."""
        entry = JournalEntry(
            at=at or datetime.now(UTC).isoformat(timespec="milliseconds"),
            prompt=prompt,
            caps=caps,
            completion=completion,
        )
        self.journal.append(entry)
        if self.sweep is not None:
            entry = self.sweep.stamp(entry)  # the sweep's copy joins its hash chain
            self.sweep.journal.append(entry)
        return entry

    def trace_text(self, split: bool = False) -> TraceText:
        """The whole trace as Python's JSON text (a download), or (`split`) its header and
        one text per trial (what the page stores)."""
        sweep = self._sweep()
        if split:
            return TraceText(
                trace_json=None,
                header_json=self.header_json(),
                trials_json=tuple(line_text(trial) for trial in sweep.trials),
            )
        return TraceText(
            trace_json=document_text(sweep.trace(), "trace"), header_json=None, trials_json=None
        )


def resumed_trace(request: SweepResume) -> Trace:
    """The trace a `sweep_resume` request hands back: `header_json` with one JSON text per
    trial in `trials_json` (the page's IndexedDB records, the CLI's trials.jsonl) and the
    changes stored since the header (`changes_json`), or one `trace_json`; assembled by the
    one rule (`pyapp.records.stored.stored_trace`). Python's own text: numbers keep their
    types."""
    try:
        if request.header_json is not None:
            trials, changes = request.trials_json or (), request.changes_json or ()
            return stored_trace(request.header_json, trials, changes)
        return stored_trace(request.trace_json, None)
    except RecordError as error:
        raise RequestError("bad_request", f"the persisted trace is not valid: {error}") from None


def _predicted(sweep: Sweep, profiles: list[FrozenProfile]) -> tuple[HeldoutPredictions, ...]:
    """Per frozen profile, what both predictors say for each held-out task of its condition
    (the state-aware one from its frozen fit)."""

    shown = []
    for p in profiles:
        condition = p.profile.condition
        tasks = heldout_tasks(sweep.tasks, condition, sweep.protocol)
        fit = p.state_aware
        shown.append(
            HeldoutPredictions(
                condition=condition,
                predictions=tuple(predict_product(p, t) for t in tasks),
                state_aware=()
                if fit is None
                else tuple(predict_state_aware(fit, t, condition, sweep.protocol) for t in tasks),
            )
        )
    return tuple(shown)


ANSWER_KINDS: dict[str, Literal["integer", "program", "none"]] = {
    c.name: c.answer for c in CONDITIONS
}
"""What each condition's model writes (the page's ETA: `PlanLeft.answer`)."""


def model_calls(condition: str, task: Task) -> int:
    """The model calls one trial will make: a chain its route's (none without a route), a
    whole-task model condition one, the control none."""
    if condition == "controlled-chain":
        return len(plan_route(task) or ())
    return 1 if condition in MODEL_CONDITIONS else 0


def answer_tokens(condition: str, task: Task) -> int | None:
    """The answer tokens one trial's model calls are to write, known before it runs: the exact
    answers' characters (digits and sign; the reference subject writes one token per digit,
    the sign its own, and a tokenizer that groups digits writes a number proportional to
    them: the ETA only scales by a time per token it measures) — a model-only trial's answer,
    a chain's every planned step on the exact operands (none without a route); None where the
    length is not known in advance (a program) or no call is made (the control)."""
    if condition == "controlled-chain":
        outputs: list[int] = []
        for call in plan_route(task) or ():
            left = resolve_operand(call.left, task.registers, outputs)
            right = resolve_operand(call.right, task.registers, outputs)
            outputs.append(exact_op(call.op, left, right))
        return sum(len(str(value)) for value in outputs)
    if condition == "model-only":
        return len(str(task.answer))
    return None


def receipt_json(sweep: Sweep) -> str:
    """The freeze receipt of the sweep as it stands (just after a freeze), as JSON text."""

    return document_text(make_receipt(sweep.trace()), "receipt")


def _timed_by(adapter: ModelAdapter) -> AbstractContextManager[None]:
    """A synthetic model's virtual clock times its trials (as in `simulate`); any other
    model's trials are timed by the real clock."""
    if isinstance(adapter, SyntheticAdapter):
        return clock.using(adapter.clock.now_ns)
    return nullcontext()
