"""A hung worker is not the model's timeout, and a reload is not the model's cost (issue 23 §1).

Reproducers, each failing on the code before this round:

* `fault=hang@N` (a worker that never answers and sends no token) ended in the client's hard
  stop, answered `ok: true` with failure `timeout`, and was scored as the model's timeout. Now
  the client judges the hard stop by token progress against the load's stall window: no token
  for longer than the window is the failure `stalled` (infrastructure), kept raw as an
  interruption with its judgement, never scored, attempted again.
* A model still producing tokens when its hard stop came is the model's `timeout` (scored).
* The reload after a hard stop was awaited inside the next call's clock, so it landed in that
  trial's `generation_ms` and in a chain's 90 s route budget. Now the client reports the wait
  (`timing.load_wait_ms`), the completion keeps it, and neither cost nor budget counts it.

site/model_client.js runs under Node on a fake clock (tests/model_client_clock_node.mjs):
nothing here waits for real time. The sweeps use a scripted adapter (a TEST FIXTURE) and a
virtual clock (`pyapp.records.clock.using`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from asyncrun import run
from nodescript import run_node_script
from test_integrity import answer
from test_model_messages import LOAD_RESULT, SPEC

from pyapp.browser import completion_from_reply
from pyapp.conditions import kind_of, run_chain, run_whole_task
from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.protocol import model_messages as mm
from pyapp.records import Caps, ScriptedAdapter, clock, to_json
from pyapp.tasks import TaskParams, generate
from pyapp.verify.reproduce import reproduce

ROOT = Path(__file__).resolve().parents[1]
CALL = Caps(max_input_tokens=512, max_new_tokens=32, max_output_bytes=1024, timeout_ms=15_000)
HARD_STOP_AT = CALL.timeout_ms + mm.GRACE_MS


def run_clock_client(scenarios: list[list[dict[str, Any]]], steps: list[float]) -> list[Any]:
    load_result = {**LOAD_RESULT, "warmup_step_ms": steps}
    results: list[Any] = run_node_script(
        "model_client_clock_node.mjs",
        {"spec": SPEC, "load_result": load_result, "scenarios": scenarios},
    )
    return results


def generate_step(worker: dict[str, Any]) -> dict[str, Any]:
    return {"generate": {"caps": to_json(CALL), "worker": worker}}


FAST_STEPS = [40.0, 5.0, 6.0]  # a small model: window = the floor
LOAD = {"load": {"ms": 500}}


def test_a_hung_worker_is_a_stall_not_the_models_timeout() -> None:
    [result] = run_clock_client([[LOAD, generate_step({"hang": True})]], FAST_STEPS)
    [reply] = result["replies"]
    mm.parse_reply(json.dumps(reply), "generate", 1)  # it fits the channel
    assert reply["ok"] is False and reply["error"]["code"] == "stalled"
    stop = reply["hard_stop"]
    assert stop["judged"] == "stalled"
    assert stop["window_ms"] == mm.STALL_FLOOR_MS  # 20 x 6 ms is under the floor
    assert stop["silent_ms"] == HARD_STOP_AT and stop["tokens"] == 0
    assert (stop["step_ms"], stop["floor_ms"], stop["step_factor"]) == (
        6.0,
        mm.STALL_FLOOR_MS,
        mm.STALL_STEP_FACTOR,
    )
    completion = completion_from_reply(json.dumps(reply), 1)
    assert completion.failure is not None and completion.failure.code == "stalled"
    assert kind_of("stalled") == "infrastructure"
    assert completion.hard_stop is not None and completion.hard_stop.judged == "stalled"
    # every load records its window and the warm-up steps it comes from
    loads = result["loads"]
    assert loads[0]["stall_window_ms"] == mm.STALL_FLOOR_MS
    assert loads[0]["warmup_step_ms"] == FAST_STEPS


def test_a_model_still_producing_tokens_at_its_hard_stop_is_the_models_timeout() -> None:
    slow = generate_step({"tokens_every_ms": 700})
    [result] = run_clock_client([[LOAD, slow]], FAST_STEPS)
    [reply] = result["replies"]
    assert reply["ok"] is True
    assert reply["result"]["finish_reason"] == "timeout"
    assert reply["result"]["failure"]["code"] == "timeout"
    stop = reply["hard_stop"]
    assert stop["judged"] == "timeout" and stop["silent_ms"] < 700 and stop["tokens"] > 20
    completion = completion_from_reply(json.dumps(reply), 1)
    assert completion.failure is not None and kind_of(completion.failure.code) == "outcome"


def test_the_window_comes_from_the_loads_warm_up_steps() -> None:
    """A slow model (1.2 s per decode step): its window is 20 x 1.2 s = 24 s, longer than a
    chain call's hard stop, so 16.5 s without a token is still its own timeout."""
    [result] = run_clock_client([[LOAD, generate_step({"hang": True})]], [9_000.0, 1_200.0])
    [reply] = result["replies"]
    assert reply["ok"] is True and reply["result"]["finish_reason"] == "timeout"
    assert reply["hard_stop"]["window_ms"] == 24_000 and reply["hard_stop"]["step_ms"] == 1_200
    assert result["loads"][0]["stall_window_ms"] == 24_000


def test_the_reload_wait_is_reported_apart_from_the_next_calls_time() -> None:
    scenario = [
        LOAD,
        {"reload_ms": 80_000},  # the reload after the hang takes 80 s
        generate_step({"hang": True}),
        generate_step({"reply_after_ms": 1_000, "tokens": 2}),
    ]
    [result] = run_clock_client([scenario], FAST_STEPS)
    hung, after = result["replies"]
    assert hung["error"]["code"] == "stalled" and hung["timing"]["load_wait_ms"] == 0
    timing = after["timing"]
    assert timing["load_wait_ms"] == 80_000
    assert timing["client_ms"] - timing["load_wait_ms"] == 1_000
    completion = completion_from_reply(json.dumps(after), 2)
    assert completion.failure is None and completion.load_wait_ms == 80_000
    assert [load["reason"] for load in result["loads"]] == ["consent", "reload-after-terminate"]


# ---- Python: what the sweep does with a stall, and with a wait ---------------------------


def stalled_completion(window_ms: float = 10_000.0) -> Any:
    """What the client answers for a hung worker (the shape the Node tests above check)."""
    reply = {
        "type": "generate",
        "id": 1,
        "ok": False,
        "error": {"code": "stalled", "message": "the model worker sent no token for 16500 ms"},
        "timing": {"worker_ms": None, "client_ms": 16_500.0, "load_wait_ms": 0},
        "hard_stop": {
            "judged": "stalled",
            "silent_ms": 16_500.0,
            "window_ms": window_ms,
            "tokens": 0,
            "step_ms": 6.0,
            "floor_ms": mm.STALL_FLOOR_MS,
            "step_factor": mm.STALL_STEP_FACTOR,
            "deadline_ms": 15_000,
        },
    }
    return completion_from_reply(json.dumps(reply), 1)


class HangingAdapter(ScriptedAdapter):
    """A scripted model whose worker hangs on the generations `hung` names (from 1)."""

    def __init__(self, hung: set[int]) -> None:
        super().__init__(answer)
        self.hung = hung
        self.count = 0

    async def generate(self, prompt, caps):  # type: ignore[no-untyped-def]
        self.count += 1
        if self.count in self.hung:
            self.calls.append((prompt, caps))
            return stalled_completion()
        return await super().generate(prompt, caps)


@pytest.mark.parametrize("condition", ["model-only", "controlled-chain"])
def test_a_stall_is_kept_raw_never_scored_attempted_again_and_the_sweep_finishes(
    condition: str,
) -> None:
    model = HangingAdapter(set())
    sweep = Sweep(params=TaskParams(), conditions=(condition,), model=model.provenance)
    assert run(run_phase(sweep, "measure", model)) == "finished"
    freeze(sweep)
    model.hung = {model.count + 1}  # the first held-out generation hangs
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    [interruption] = sweep.interruptions
    assert (interruption.reason, interruption.code) == ("infrastructure", "stalled")
    assert interruption.hard_stop is not None
    assert interruption.hard_stop.silent_ms > interruption.hard_stop.window_ms
    # attempted again and observed once; no scored trial carries the stall
    assert sum(t.trial_id == interruption.trial_id for t in sweep.trials) == 1
    assert all(t.failure is None or t.failure.code != "stalled" for t in sweep.trials)
    assert reproduce(to_json(sweep.trace())) == []


class WaitingAdapter(ScriptedAdapter):
    """Each call first waits `wait_ms` for a reload, then generates for `gen_ms`, on a
    virtual clock; the completion reports the wait as the client does."""

    def __init__(self, wait_ms: float, gen_ms: float) -> None:
        super().__init__(answer)
        self.now_ns = 0
        self.wait_ms, self.gen_ms = wait_ms, gen_ms

    def clock(self) -> int:
        return self.now_ns

    async def generate(self, prompt, caps):  # type: ignore[no-untyped-def]
        self.now_ns += int((self.wait_ms + self.gen_ms) * 1e6)
        completion = await super().generate(prompt, caps)
        return replace(completion, load_wait_ms=self.wait_ms)


def test_a_reload_wait_is_not_the_trials_generation_cost() -> None:
    model = WaitingAdapter(wait_ms=40_000, gen_ms=250)
    task = next(t for t in generate(TaskParams()) if t.split == "heldout")
    with clock.using(model.clock):
        trial = run(run_whole_task(task, "model-only", model))
    assert trial.timings.generation_ms == 250
    assert trial.completion is not None and trial.completion.load_wait_ms == 40_000


def test_a_reload_wait_is_not_against_the_routes_budget() -> None:
    """Two chain calls each after a 50 s reload: 100 s of waiting, 2 s of the model's time.
    Before, the 90 s route budget ran out (a scored `route_timeout`)."""
    model = WaitingAdapter(wait_ms=50_000, gen_ms=1_000)
    task = next(t for t in generate(TaskParams()) if t.id == "recurrence-1")
    with clock.using(model.clock):
        trial = run(run_chain(task, model))
    assert trial.failure is None, trial.failure
    assert trial.chain is not None and len(trial.chain.calls) >= 2
    calls = trial.chain.calls
    assert all(c.generation_ms == 1_000 and c.completion.load_wait_ms == 50_000 for c in calls)
    assert trial.timings.generation_ms == 1_000 * len(calls)


def test_reproduce_holds_a_stall_to_its_numbers() -> None:
    """A stall edited into the model's timeout (or its silence shortened) is a mismatch."""
    model = HangingAdapter(set())
    sweep = Sweep(params=TaskParams(), conditions=("model-only",), model=model.provenance)
    run(run_phase(sweep, "measure", model))
    freeze(sweep)
    model.hung = {model.count + 1}
    run(run_phase(sweep, "heldout", model))
    document = to_json(sweep.trace())
    stop = document["interruptions"][0]["partial"]["completion"]["hard_stop"]
    stop["silent_ms"] = 4_000.0  # now inside the window: it would have been a timeout
    found = [m.where for m in reproduce(document)]
    assert "$.interruptions[0].partial.completion.hard_stop.judged" in found, found


def test_the_bridge_and_the_reload_wait_are_recorded_apart_per_call() -> None:
    """Through the production adapter: a round trip of 1,000 ms of which the main thread
    spent 990 ms, 500 of them waiting for a reload: the model's time is 490 ms."""
    from pyapp.browser import BrowserModelAdapter

    now = [0]
    reply = {
        "type": "generate",
        "id": 1,
        "ok": True,
        "result": {
            "text": "7",
            "finish_reason": "eos",
            "input_tokens": 9,
            "output_tokens": 1,
            "output_token_ids": [5],
            "generation_ms": 480.0,
            "time_to_first_token_ms": 5.0,
            "failure": None,
            "input_text": None,
            "input_sha256": None,
        },
        "timing": {"worker_ms": 485.0, "client_ms": 990.0, "load_wait_ms": 500.0},
    }

    def transport(request: str) -> str:
        now[0] += 1_000_000_000  # one second of round trip, on the virtual clock
        return json.dumps({**reply, "id": json.loads(request)["id"]})

    class Adapter(BrowserModelAdapter):
        provenance = ScriptedAdapter(answer).provenance  # type: ignore[assignment]

    adapter = Adapter(transport, clock=lambda: now[0] / 1e9)
    task = next(t for t in generate(TaskParams()) if t.split == "heldout")
    with clock.using(lambda: now[0]):
        trial = run(run_whole_task(task, "model-only", adapter))
    assert trial.completion is not None
    assert trial.completion.load_wait_ms == 500 and trial.completion.bridge_ms == 10
    assert trial.timings.generation_ms == 490
