"""The sweep CLI's driver (pyapp/sweep/driver.py) without a browser: a stand-in page hands
every message the driver sends through window.lab.send straight to Python's bridge (the page's
entry point answers with Python's result unchanged) and relays Python's events back, as the
page does. A scripted adapter (a test fixture, not model evidence) stands in for the model.

What the real page and Chromium add is covered by tests/browser/test_sweep_cli.py and
tests/browser/test_faults.py; these check, in a second, that Python owns the order: the driver
sends one `sweep_run` of phase `all` and no `sweep_freeze`, writes the checkpoint at the
`frozen` event, stops on Ctrl-C between trials, and exits paused after three infrastructure
failures in a row."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from asyncrun import run
from test_predict import known_model

from pyapp.browser import Context, Session, bridge
from pyapp.records import ModelFailure, ScriptedAdapter, ScriptedReply
from pyapp.sweep import (
    SEND,
    Driver,
    Interrupted,
    ModelChoice,
    Options,
    Paused,
    RunFile,
    StopFlag,
    begin_session,
    read_sweep,
)

SMALL = {"primitives_per_op": 1, "probe_pairs": 1, "derivatives": 0, "determinants": 1}
CONDITIONS = ["model-only", "controlled-chain"]


class NativePage:
    """The page as the driver sees it (its `window.__sweep` calls and `sweep_stop` through
    window.lab.send), answered by Python."""

    def __init__(self, adapter: ScriptedAdapter) -> None:
        self.adapter = adapter
        self.driver: Driver | None = None
        self.sent: list[dict[str, Any]] = []
        self.slot: dict[str, Any] | None = None
        self.stop_asked = self.cancel = False
        self.on_trial_done: Any = None

    def relay(self, event: dict[str, Any], texts: dict[str, Any]) -> None:
        assert self.driver is not None
        self.driver.on_event(None, json.dumps(event), texts)
        if event["type"] == "trial_done":
            if self.on_trial_done:
                self.on_trial_done(event)
            if self.stop_asked:  # site/entry.js: the Cancel, right after a trial is done
                self.cancel = True

    def evaluate(self, script: str, arg: Any = None) -> Any:
        if "__sweep.call(" in script:
            self.sent.append(json.loads(arg))
            context = Context(
                adapter=lambda: self.adapter,
                notify=self.relay,
                cancel_requested=lambda: self.cancel,
            )
            self.slot = {"done": True, "reply": run(bridge.handle_async(arg, context))}
        elif "__sweep.callResult()" in script:
            return self.slot
        elif script == SEND:  # a request the page answers itself (site/entry.js)
            message = json.loads(arg)
            assert message["type"] == "sweep_stop", message
            self.stop_asked = True
            return json.dumps({**message, "ok": True, "result": {"running": True}})
        else:
            raise AssertionError(f"the driver ran {script!r}")
        return None

    def wait_for_function(self, *args: Any, **kwargs: Any) -> None:
        return None


def driver_for(tmp_path: Path, adapter: ScriptedAdapter) -> tuple[Driver, NativePage]:
    options = Options(
        model="fixture", backend="wasm", dtype=None, revision=None, seed=1729, params=SMALL,
        conditions=CONDITIONS, model_host=None, model_folder=None, chromium_flags=[],
        page_params={},
    )  # fmt: skip
    choice = ModelChoice(
        key="fixture", model_id="fixture/scripted", revision="none", fixture=True,
        download_mb=None, licence="test fixture",
    )  # fmt: skip
    run_file = RunFile(tmp_path / "run.json")
    args = argparse.Namespace(resume=False)
    begin_session(run_file, args, ["sweep"], options, choice, 0, None)
    driver = Driver(
        options, choice, tmp_path, run_file, consent=True, site=tmp_path, timeout_s=None,
        stop=StopFlag(),
    )  # fmt: skip
    page = NativePage(adapter)
    page.driver, driver.page = driver, page
    return driver, page


@pytest.fixture(autouse=True)
def fresh_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bridge, "SESSION", Session())


def test_the_cli_runs_pythons_one_all_phase_and_checkpoints_at_the_freeze(tmp_path: Path) -> None:
    driver, page = driver_for(tmp_path, ScriptedAdapter(known_model))
    at_first_heldout: list[Any] = []

    def watch(event: dict[str, Any]) -> None:
        if event["phase"] == "heldout" and not at_first_heldout:
            at_first_heldout.append(read_sweep(tmp_path))

    page.on_trial_done = watch
    state = driver.sweep(None, None)
    driver.trials.close()
    kinds = [m["type"] for m in page.sent]
    assert kinds.count("sweep_run") == 1 and "sweep_freeze" not in kinds
    (ran,) = [m for m in page.sent if m["type"] == "sweep_run"]
    assert ran["phase"] == "all"
    assert state.stage == "done" and state.heldout_left == 0
    # the frozen event wrote trace.json with the freezes (and predictions.json) before any
    # held-out trial was done
    (before,) = at_first_heldout
    assert before is not None and {f["condition"] for f in before["freezes"]} == set(CONDITIONS)
    assert all(t["task_id"] for t in before["trials"])
    trace = json.loads((tmp_path / "trace.json").read_text("utf-8"))
    assert trace["freezes"] == before["freezes"]
    lines = (tmp_path / "trials.jsonl").read_text("utf-8").splitlines()
    assert [json.loads(line) for line in lines] == trace["trials"]
    assert json.loads((tmp_path / "predictions.json").read_text("utf-8"))["conditions"]


def test_ctrl_c_stops_between_trials_with_a_checkpoint(tmp_path: Path) -> None:
    driver, page = driver_for(tmp_path, ScriptedAdapter(known_model))

    def ctrl_c(event: dict[str, Any]) -> None:
        if event["index"] == 3 and driver.stop.reason is None:
            driver.stop.reason = "SIGINT"
            driver.check_stop()  # what the driver's poll loop does while the page works

    page.on_trial_done = ctrl_c
    with pytest.raises(Interrupted) as stopped:
        driver.sweep(None, None)
    driver.trials.close()
    assert stopped.value.status == 130
    saved = read_sweep(tmp_path)
    # asked as trial 3 was done: the page cancels before trial 4 starts, nothing is cut short
    assert saved is not None and len(saved["trials"]) == 3
    assert saved["interruptions"] == [] and driver.run.data["in_flight"] is None


def test_three_infrastructure_failures_in_a_row_pause_the_cli(tmp_path: Path) -> None:
    crash = ModelFailure("worker_error", "the model worker crashed")
    adapter = ScriptedAdapter(lambda prompt, caps: ScriptedReply("", failure=crash))
    driver, _ = driver_for(tmp_path, adapter)
    with pytest.raises(Paused) as paused:
        driver.sweep(None, None)
    driver.trials.close()
    assert paused.value.status == 3 and "3 infrastructure failures in a row" in paused.value.message
    assert driver.run.data["paused"]["code"] == "worker_error"
    saved = read_sweep(tmp_path)
    assert saved is not None and saved["trials"] == []
    assert [i["code"] for i in saved["interruptions"]] == ["worker_error"] * 3
