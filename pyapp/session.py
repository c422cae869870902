"""The browser worker's experiment session: the bridge requests that drive a sweep.

The page never re-implements the protocol: it sends these requests and draws what comes
back. After every trial the session tells the page (`notify`) and hands it the whole trace,
which the page persists (IndexedDB); after a reload the page sends that trace back with
`sweep_resume`, naming the trial that was in flight, and the sweep continues with the next
unobserved trial.

| request            | fields                                              | result           |
|--------------------|-----------------------------------------------------|------------------|
| `sweep_start`      | seed, params?, conditions, environment?,            | state            |
|                    | previously_observed? {condition: [task ids]}        |                  |
| `sweep_resume`     | trace, in_flight? (trial id), previously_observed?  | state            |
| `sweep_run`        | phase (`measure` / `heldout` / `all`)               | state, cancelled |
| `sweep_freeze`     | —                                                   | frozen, predictions |
| `sweep_state`      | —                                                   | state            |
| `sweep_trace`      | —                                                   | trace            |
| `sweep_predictions`| —                                                   | predictions      |
| `journal_generate` | prompt                                              | entry            |

Notifications (`notify(event)`): `{"event": "trial_start", "trial_id", "condition",
"task_id", "index", "total", "phase"}` before each trial and `{"event": "trial_done",
"trial": ..., "index", "total", "phase", "trace": ...}` after it; a trial the user's Cancel
cut short is not an observation: `{"event": "trial_interrupted", "trial_id", "trace"}` (the
trace records it under `interruptions`, and it is re-attempted later).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pyapp.conditions.model import WHOLE_TASK_CAPS, ModelAdapter
from pyapp.conditions.run import MODEL_CONDITIONS, CancelToken
from pyapp.experiment.phases import (
    Phase,
    ProtocolError,
    Sweep,
    freeze,
    plan,
    record_interruption,
    run_phase,
)
from pyapp.predict.predictor import predict, score_trace
from pyapp.records.base import JSON, RecordError, from_json, to_json
from pyapp.records.trace import BrowserInfo, Condition, JournalEntry, Trace, Trial
from pyapp.tasks.taskset import Task

ALL_CONDITIONS: tuple[Condition, ...] = ("supplied-program", *MODEL_CONDITIONS)

Notify = Callable[[dict[str, JSON]], Awaitable[None] | None]


@dataclass
class Context:
    """What the session needs from the browser: the loaded model, a way to tell the page,
    and the page's Cancel flag."""

    adapter: Callable[[], ModelAdapter | None]
    notify: Notify
    cancel_requested: Callable[[], bool]


class SessionError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Session:
    def __init__(self) -> None:
        self.sweep: Sweep | None = None
        self.journal: list[JournalEntry] = []

    # ---- helpers ---------------------------------------------------------------------

    def _sweep(self) -> Sweep:
        if self.sweep is None:
            raise SessionError("no_sweep", "start a sweep first")
        return self.sweep

    @staticmethod
    def _adapter(ctx: Context) -> ModelAdapter:
        adapter = ctx.adapter()
        if adapter is None:
            raise SessionError("not_loaded", "load a model (with consent) first")
        return adapter

    def state(self) -> dict[str, JSON]:
        sweep = self._sweep()
        measure_left = len(plan(sweep, "measure"))
        heldout_left = len(plan(sweep, "heldout"))
        frozen = sorted(sweep.frozen_conditions())
        model_conditions = [c for c in sweep.conditions if c in MODEL_CONDITIONS]
        return {
            "seed": sweep.params.seed,
            "conditions": list(sweep.conditions),
            "model_id": sweep.model.model_id,
            "evidence": sweep.model.evidence,
            "trials": len(sweep.trials),
            "measure_left": measure_left,
            "heldout_left": heldout_left,
            "frozen": frozen,
            "can_freeze": measure_left == 0 and len(frozen) < len(model_conditions),
            "can_run_heldout": all(c in frozen for c in model_conditions),
            "interruptions": len(sweep.interruptions),
            "journal": len(sweep.journal),
            "run_id": sweep.run_id,
        }

    # ---- requests --------------------------------------------------------------------

    def start(self, request: dict[str, Any], ctx: Context) -> JSON:
        from pyapp.bridge import task_params

        adapter = self._adapter(ctx)
        conditions = request.get("conditions") or list(ALL_CONDITIONS)
        if not isinstance(conditions, list) or any(c not in ALL_CONDITIONS for c in conditions):
            raise SessionError("bad_request", f"conditions must be a subset of {ALL_CONDITIONS}")
        browser = None
        if request.get("environment") is not None:
            try:
                browser = from_json(BrowserInfo, request["environment"])
            except RecordError as error:
                raise SessionError("bad_request", f"environment: {error}") from None
        seen = request.get("previously_observed") or {}
        if not isinstance(seen, dict):
            raise SessionError("bad_request", "previously_observed must be an object")
        ordered = tuple(c for c in ALL_CONDITIONS if c in conditions)
        self.sweep = Sweep(
            params=task_params(request),
            conditions=ordered,
            model=adapter.provenance,
            previously_observed={str(k): tuple(map(str, v)) for k, v in seen.items()},
            browser=browser,
            journal=list(self.journal),
        )
        return self.state()

    def resume(self, request: dict[str, Any]) -> JSON:
        try:
            trace: Trace = from_json(Trace, request.get("trace"))
        except RecordError as error:
            raise SessionError(
                "bad_request", f"the persisted trace is not valid: {error}"
            ) from None
        self.sweep = Sweep.from_trace(trace)
        seen = request.get("previously_observed") or {}
        if not isinstance(seen, dict):
            raise SessionError("bad_request", "previously_observed must be an object")
        self.sweep.previously_observed = {str(k): tuple(map(str, v)) for k, v in seen.items()}
        in_flight = request.get("in_flight")
        if isinstance(in_flight, str) and in_flight not in self.sweep.observed():
            record_interruption(self.sweep, in_flight)
        return self.state()

    async def run(self, request: dict[str, Any], ctx: Context) -> JSON:
        sweep = self._sweep()
        adapter = self._adapter(ctx)
        if adapter.provenance.model_id != sweep.model.model_id:
            raise SessionError(
                "model_changed",
                f"this sweep belongs to {sweep.model.model_id}; load it again to continue",
            )
        if adapter.provenance.chat_template_options != sweep.model.chat_template_options:
            raise SessionError(
                "model_changed",
                "this sweep was measured with chat-template options "
                f"{sweep.model.chat_template_options}; load the model with them to continue",
            )
        sweep.model = adapter.provenance  # reloads add load records
        phase = request.get("phase")
        phases: list[Phase]
        if phase == "all":
            phases = ["measure", "heldout"]
        elif phase in ("measure", "heldout"):
            phases = [phase]
        else:
            raise SessionError("bad_request", "phase must be measure, heldout or all")
        cancel = CancelToken(poll=ctx.cancel_requested)
        for current in phases:
            if current == "heldout" and phase == "all":
                freeze(sweep)

            async def before(
                condition: Condition, task: Task, index: int, total: int, current: Phase = current
            ) -> None:
                await _maybe(
                    ctx.notify(
                        {
                            "event": "trial_start",
                            "trial_id": f"{condition}/{task.id}",
                            "condition": condition,
                            "task_id": task.id,
                            "index": index,
                            "total": total,
                            "phase": current,
                        }
                    )
                )

            async def after(trial: Trial, done: int, total: int, current: Phase = current) -> None:
                await _maybe(
                    ctx.notify(
                        {
                            "event": "trial_done",
                            "trial": to_json(trial),
                            "index": done,
                            "total": total,
                            "phase": current,
                            "trace": to_json(sweep.trace()),
                        }
                    )
                )

            async def interrupted(trial: Trial) -> None:
                await _maybe(
                    ctx.notify(
                        {
                            "event": "trial_interrupted",
                            "trial_id": trial.trial_id,
                            "trace": to_json(sweep.trace()),
                        }
                    )
                )

            try:
                finished = await run_phase(
                    sweep,
                    current,
                    adapter,
                    cancel=cancel,
                    on_trial=after,
                    before_trial=before,
                    on_interrupted=interrupted,
                )
            except ProtocolError as error:
                raise SessionError(error.code, error.message) from None
            if not finished:
                return {"state": self.state(), "cancelled": True}
        return {"state": self.state(), "cancelled": False}

    def freeze(self) -> JSON:
        sweep = self._sweep()
        if plan(sweep, "measure"):
            raise SessionError("not_measured", "measure every profile task before freezing")
        profiles = freeze(sweep)
        if not profiles:
            raise SessionError("already_frozen", "every model condition is frozen already")
        tasks = [t for t in sweep.tasks]
        from pyapp.predict.predictor import heldout_tasks

        return {
            "frozen": [to_json(p) for p in profiles],
            "predictions": [
                {
                    "condition": p.profile.condition,
                    "predictions": [
                        to_json(predict(p, t)) for t in heldout_tasks(tasks, p.profile.condition)
                    ],
                }
                for p in profiles
            ],
            "state": self.state(),
        }

    def predictions(self) -> JSON:
        sweep = self._sweep()
        if not sweep.freezes:
            raise SessionError("not_frozen", "nothing is frozen yet")
        return {"predictions": to_json(score_trace(sweep.trace()))}

    async def journal_generate(self, request: dict[str, Any], ctx: Context) -> JSON:
        prompt = request.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise SessionError("bad_request", "prompt must be a non-empty string")
        adapter = self._adapter(ctx)
        completion = await adapter.generate(prompt, WHOLE_TASK_CAPS)
        entry = JournalEntry(
            at=datetime.now(UTC).isoformat(timespec="milliseconds"),
            prompt=prompt,
            caps=WHOLE_TASK_CAPS,
            completion=completion,
        )
        self.journal.append(entry)
        if self.sweep is not None:
            self.sweep.journal.append(entry)
        return {"entry": to_json(entry), "journal": len(self.journal)}

    async def dispatch(self, kind: str, request: dict[str, Any], ctx: Context) -> JSON:
        if kind == "sweep_start":
            return self.start(request, ctx)
        if kind == "sweep_resume":
            return self.resume(request)
        if kind == "sweep_run":
            return await self.run(request, ctx)
        if kind == "sweep_freeze":
            return self.freeze()
        if kind == "sweep_state":
            return self.state()
        if kind == "sweep_trace":
            return {"trace": to_json(self._sweep().trace())}
        if kind == "sweep_predictions":
            return self.predictions()
        if kind == "journal_generate":
            return await self.journal_generate(request, ctx)
        raise SessionError("unknown_type", f"unknown session request {kind!r}")


SESSION_TYPES = frozenset(
    {
        "sweep_start",
        "sweep_resume",
        "sweep_run",
        "sweep_freeze",
        "sweep_state",
        "sweep_trace",
        "sweep_predictions",
        "journal_generate",
    }
)


async def _maybe(value: Awaitable[None] | None) -> None:
    if value is not None:
        await value
