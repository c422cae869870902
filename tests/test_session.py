"""The browser session requests, driven natively through `bridge.handle_async` with a
scripted adapter (a test fixture) standing in for the model worker."""

import json

import pytest
from asyncrun import run
from test_predict import known_model
from tracecheck import assert_valid_trace

from pyapp import bridge
from pyapp.conditions.model import ScriptedAdapter, ScriptedReply
from pyapp.records.reproduce import reproduce, reproduce_predictions
from pyapp.session import Context, Session


class Page:
    """What the main thread does: holds the model, persists every trace, has a Cancel."""

    def __init__(self, model=None):
        self.model = model
        self.events = []
        self.persisted = None
        self.cancel = False
        self.cancel_after = None

    def context(self):
        def notify(event):
            self.events.append(event)
            if event["event"] == "trial_done":
                self.persisted = event["trace"]
                if self.cancel_after is not None and event["index"] >= self.cancel_after:
                    self.cancel = True

        return Context(
            adapter=lambda: self.model, notify=notify, cancel_requested=lambda: self.cancel
        )


def call(page, type, **fields):
    request = json.dumps({"type": type, "id": 7, **fields})
    return json.loads(run(bridge.handle_async(request, page.context())))


@pytest.fixture(autouse=True)
def fresh_session(monkeypatch):
    monkeypatch.setattr(bridge, "SESSION", Session())


def test_the_whole_loop_through_the_bridge():
    page = Page(ScriptedAdapter(known_model))
    conditions = ["model-only", "controlled-chain"]
    started = call(page, "sweep_start", seed=1729, conditions=conditions)
    assert started["ok"], started
    assert started["result"]["measure_left"] == 36 and started["result"]["evidence"] == "fixture"

    refused = call(page, "sweep_run", phase="heldout")
    assert refused["error"]["code"] == "not_frozen"
    assert call(page, "sweep_freeze")["error"]["code"] == "not_measured"

    measured = call(page, "sweep_run", phase="measure")
    assert measured["ok"] and measured["result"]["state"]["can_freeze"]
    starts = [e for e in page.events if e["event"] == "trial_start"]
    dones = [e for e in page.events if e["event"] == "trial_done"]
    assert len(starts) == len(dones) == 36 and dones[-1]["index"] == dones[-1]["total"] == 36
    assert_valid_trace(page.persisted)

    frozen = call(page, "sweep_freeze")["result"]
    assert [f["profile"]["condition"] for f in frozen["frozen"]] == conditions
    assert all(len(f["sha256"]) == 64 and not f["exploratory"] for f in frozen["frozen"])
    shown = {p["condition"]: p["predictions"] for p in frozen["predictions"]}
    assert [p["task_id"] for p in shown["controlled-chain"]] == ["recurrence-1", "recurrence-2"]
    assert call(page, "sweep_freeze")["error"]["code"] == "already_frozen"

    heldout = call(page, "sweep_run", phase="heldout")["result"]
    assert heldout["state"]["heldout_left"] == 0 and not heldout["cancelled"]
    again = call(page, "sweep_run", phase="heldout")["result"]
    assert again["state"]["trials"] == heldout["state"]["trials"]  # never twice

    trace = call(page, "sweep_trace")["result"]["trace"]
    predictions = call(page, "sweep_predictions")["result"]["predictions"]
    assert_valid_trace(trace)
    assert reproduce(trace) == [] and reproduce_predictions(trace, predictions) == []
    assert trace == page.persisted


def test_reload_mid_sweep_resumes_with_the_next_unobserved_trial(monkeypatch):
    page = Page(ScriptedAdapter(known_model))
    page.cancel_after = 4  # the tab "closes" after four trials
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    result = call(page, "sweep_run", phase="measure")["result"]
    assert result["cancelled"] and result["state"]["trials"] == 4
    # the crash hits while the fifth trial is in flight: the page had stored its trial_start
    in_flight = "model-only/mul-1"
    assert [e["trial_id"] for e in page.events if e["event"] == "trial_start"][-1] == (
        "model-only/sub-2"
    )

    monkeypatch.setattr(bridge, "SESSION", Session())  # a fresh worker after the reload
    page2 = Page(ScriptedAdapter(known_model))
    resumed = call(page2, "sweep_resume", trace=page.persisted, in_flight=in_flight)
    assert resumed["ok"] and resumed["result"]["trials"] == 4
    assert resumed["result"]["interruptions"] == 1 and resumed["result"]["measure_left"] == 14
    done = call(page2, "sweep_run", phase="all")["result"]
    assert not done["cancelled"] and done["state"]["heldout_left"] == 0
    trace = call(page2, "sweep_trace")["result"]["trace"]
    assert trace["run"]["run_id"] == page.persisted["run"]["run_id"]
    assert trace["trials"][:4] == page.persisted["trials"]
    assert len({t["trial_id"] for t in trace["trials"]}) == len(trace["trials"]) == 24
    assert [i["trial_id"] for i in trace["interruptions"]] == ["model-only/mul-1"]
    assert reproduce(trace) == []


def test_journal_is_exported_and_never_scored():
    page = Page(ScriptedAdapter(known_model))
    entry = call(page, "journal_generate", prompt="What is 2 + 2?")["result"]["entry"]
    assert entry["completion"]["text"] == "7" and entry["prompt"] == "What is 2 + 2?"
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    call(page, "sweep_run", phase="all")
    trace = call(page, "sweep_trace")["result"]["trace"]
    assert [j["prompt"] for j in trace["journal"]] == ["What is 2 + 2?"]
    predictions = call(page, "sweep_predictions")["result"]["predictions"]
    assert "What is 2 + 2?" not in json.dumps(predictions)
    assert reproduce(trace) == []


def test_requests_need_a_loaded_model_and_a_sweep():
    page = Page(model=None)
    assert call(page, "sweep_state")["error"]["code"] == "no_sweep"
    assert call(page, "sweep_start", seed=1)["error"]["code"] == "not_loaded"
    assert call(page, "journal_generate", prompt="hi")["error"]["code"] == "not_loaded"
    page.model = ScriptedAdapter(known_model)
    bad = call(page, "sweep_start", seed=1, conditions=["telepathy"])
    assert bad["error"]["code"] == "bad_request"
    assert call(page, "sweep_resume", trace={"nope": 1})["error"]["code"] == "bad_request"
    call(page, "sweep_start", seed=1, conditions=["model-only"])
    assert call(page, "sweep_run", phase="later")["error"]["code"] == "bad_request"
    page.model = ScriptedAdapter(known_model, name="another")
    assert call(page, "sweep_run", phase="measure")["error"]["code"] == "model_changed"


def test_plain_requests_still_pass_through_handle_async():
    reply = call(Page(), "hello")
    assert reply["ok"] and reply["result"]["generator_version"] == "tasks/1"


def test_a_cancelled_generation_is_an_interruption_not_an_observation():
    calls = {"n": 0}

    def cancelled_once(prompt, caps):
        calls["n"] += 1
        if calls["n"] == 3:  # the user presses Cancel while the third trial generates
            page.cancel = True
            return ScriptedReply("", finish_reason="cancelled")
        return known_model(prompt, caps)

    page = Page(ScriptedAdapter(cancelled_once))
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    result = call(page, "sweep_run", phase="measure")["result"]
    assert result["cancelled"] and result["state"]["trials"] == 2
    interrupted = [e for e in page.events if e["event"] == "trial_interrupted"]
    assert [e["trial_id"] for e in interrupted] == ["model-only/sub-1"]
    stored = interrupted[0]["trace"]["interruptions"]
    assert stored[0]["reason"] == "cancelled" and stored[0]["partial"]["outcome"] == "cancelled"

    page.cancel = False
    done = call(page, "sweep_run", phase="all")["result"]
    assert not done["cancelled"]
    trace = call(page, "sweep_trace")["result"]["trace"]
    ids = [t["trial_id"] for t in trace["trials"]]
    assert ids.count("model-only/sub-1") == 1 and len(ids) == len(set(ids)) == 24
    assert all(t["outcome"] != "cancelled" for t in trace["trials"])
    assert_valid_trace(trace)
    assert reproduce(trace) == []
    trace["interruptions"][0]["partial"]["outcome"] = "correct"
    assert any("interruptions[0].partial" in str(m) for m in reproduce(trace))
