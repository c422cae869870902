"""The browser session requests, driven natively through `bridge.handle_async` with a
scripted adapter (a test fixture) standing in for the model worker."""

import json

import pytest
from asyncrun import run
from test_integrity import as_trace_1
from test_predict import known_model
from tracecheck import assert_valid_trace

from pyapp.browser import Context, Session, bridge, resumed_trace
from pyapp.experiment import record_trace
from pyapp.protocol import parse_request
from pyapp.records import ScriptedAdapter, ScriptedReply, read_trace, to_json
from pyapp.verify import reproduce_predictions
from pyapp.verify.reproduce import reproduce


class Page:
    """What the main thread does: holds the model, stores each trial's JSON text as it
    arrives (one record per trial beside the header) and the header changes beside the
    header, has a Cancel."""

    def __init__(self, model=None):
        self.model = model
        self.events = []
        self.beside = []  # the texts beside each event (EventTexts as JSON)
        self.header_json = None
        self.changes_json = []
        self.trials_json = []
        self.cancel = False
        self.cancel_after = None

    @property
    def persisted(self):
        """The trace assembled on demand from what the page stored."""
        return to_json(resumed_trace(parse_request({"type": "sweep_resume", **self.stored()})))

    def stored(self):
        return {
            "header_json": self.header_json,
            "changes_json": list(self.changes_json),
            "trials_json": list(self.trials_json),
        }

    def context(self):
        def notify(event, texts):
            self.events.append(event)
            self.beside.append(texts)
            assert set(texts) == {"trial", "change", "receipt"}
            assert not json_documents_in(event)  # no document inside an event
            if texts["change"]:  # records that joined the header: stored beside it
                self.changes_json.append(texts["change"])
            if event["type"] == "trial_done":
                assert set(event) >= {"trial_id", "index", "total", "phase"}
                assert "trace" not in event  # a trial event carries that trial only
                self.trials_json.append(texts["trial"])
                if self.cancel_after is not None and event["index"] >= self.cancel_after:
                    self.cancel = True

        return Context(
            adapter=lambda: self.model, notify=notify, cancel_requested=lambda: self.cancel
        )


def call(page, type, **fields):
    request = json.dumps({"type": type, "id": 7, **fields})
    reply = json.loads(run(bridge.handle_async(request, page.context())))
    if type in ("sweep_start", "sweep_resume", "sweep_freeze") and reply["ok"]:
        page.header_json = header(page)  # the page stores the header at checkpoints
        page.changes_json = []
    return reply


def json_documents_in(value):
    """The strings anywhere in `value` that parse to a JSON object or array (a document
    nested as text)."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in json_documents_in(v)]
    if isinstance(value, list):
        return [s for v in value for s in json_documents_in(v)]
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return [value] if isinstance(json.loads(value), (dict, list)) else []
        except ValueError:
            return []
    return []


def header(page):
    request = json.dumps({"type": "sweep_header", "id": 8})
    return json.loads(run(bridge.handle_async(request, page.context())))["result"]["header_json"]


def document(page, type, key):
    """A whole document as Python wrote it (`sweep_trace`, `sweep_predictions`)."""
    reply = call(page, type)
    assert reply["ok"], reply
    return json.loads(reply["result"][f"{key}_json"])


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
    starts = [e for e in page.events if e["type"] == "trial_start"]
    dones = [e for e in page.events if e["type"] == "trial_done"]
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
    assert heldout["notice"] is None
    again = call(page, "sweep_run", phase="heldout")["result"]
    assert again["state"]["trials"] == heldout["state"]["trials"]  # never twice
    assert again["notice"].startswith("Refused: every held-out task has already been observed")

    trace = document(page, "sweep_trace", "trace")
    predictions = document(page, "sweep_predictions", "predictions")
    assert_valid_trace(trace)
    assert reproduce(trace) == [] and reproduce_predictions(trace, predictions) == []
    assert trace == page.persisted
    # each trial start says the model calls it is planned to make (the page's ETA counts a
    # group's trials left by them): a chain its route's, none where the family has no route
    made = {t["trial_id"]: len(t["chain"]["calls"]) if t["chain"] else 1 for t in trace["trials"]}
    starts = [e for e in page.events if e["type"] == "trial_start"]
    assert [e["calls"] for e in starts] == [made[e["trial_id"]] for e in starts]
    heldout_calls = {e["calls"] for e in starts if e["phase"] == "heldout"}
    assert 0 in heldout_calls and max(heldout_calls) > 1  # routeless families; routes
    # Python's counts travel with each trial and the state: the page draws them as they are
    dones = [e for e in page.events if e["type"] == "trial_done"]
    assert dones[-1]["summary"] == trace["summary"] == again["state"]["summary"]
    assert [e["summary"]["trials"] for e in dones] == list(range(1, len(dones) + 1))
    # ... and which trials a ledger records (the CLI's file, the page's IndexedDB)
    # by content (pyapp.predict.exploratory): the key the page stores is the one the file holds
    ledgered = record_trace({"schema_version": "sweep-ledger/2", "entries": []}, read_trace(trace))
    expected = {(e["condition"], k) for e in ledgered["entries"] for k in e["tasks"]}
    observed = {(e["condition"], e["heldout_content"]) for e in dones if e["heldout_observed"]}
    assert observed == expected
    assert all(e["heldout_content"] is None for e in dones if not e["heldout_observed"])


def test_run_all_announces_the_freeze_with_its_predictions_before_heldout():
    """Phase `all`: Python orders measure → freeze → held-out; its `frozen` event carries what
    `sweep_freeze` would answer as predictions, before the first held-out trial starts."""
    page = Page(ScriptedAdapter(known_model))
    conditions = ["model-only", "controlled-chain"]
    call(page, "sweep_start", seed=1729, conditions=conditions)
    done = call(page, "sweep_run", phase="all")["result"]
    assert done["state"]["heldout_left"] == 0 and not done["cancelled"]
    kinds = [(e["type"], e.get("phase")) for e in page.events]
    at = kinds.index(("frozen", None))
    assert kinds.count(("frozen", None)) == 1
    assert all(phase == "measure" for kind, phase in kinds[:at])
    assert kinds[at + 1] == ("trial_start", "heldout")
    frozen = page.events[at]
    shown = {p["condition"]: p["predictions"] for p in frozen["predictions"]}
    assert sorted(shown) == sorted(conditions)
    assert [p["task_id"] for p in shown["controlled-chain"]] == ["recurrence-1", "recurrence-2"]
    predicted = {f"{c}/{p['task_id']}" for c, ps in shown.items() for p in ps}
    heldout_starts = [e["trial_id"] for e in page.events if e.get("phase") == "heldout"]
    assert predicted and predicted <= set(heldout_starts)
    beside = page.beside[at]  # the freeze records and the receipt, beside the event
    assert [f["condition"] for f in json.loads(beside["change"])["freezes"]] == sorted(
        frozen["conditions"], key=conditions.index
    )
    assert json.loads(beside["receipt"])["freezes"] and beside["trial"] is None


def test_reload_mid_sweep_resumes_with_the_next_unobserved_trial(monkeypatch):
    page = Page(ScriptedAdapter(known_model))
    page.cancel_after = 4  # the tab "closes" after four trials
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    result = call(page, "sweep_run", phase="measure")["result"]
    assert result["cancelled"] and result["state"]["trials"] == 4
    # the crash hits while the fifth trial is in flight: the page had stored its trial_start
    in_flight = "model-only/mul-1"
    assert [e["trial_id"] for e in page.events if e["type"] == "trial_start"][-1] == (
        "model-only/sub-2"
    )

    monkeypatch.setattr(bridge, "SESSION", Session())  # a fresh worker after the reload
    page2 = Page(ScriptedAdapter(known_model))
    resumed = call(page2, "sweep_resume", **page.stored(), in_flight=in_flight)
    assert resumed["ok"] and resumed["result"]["trials"] == 4
    assert resumed["result"]["interruptions"] == 1 and resumed["result"]["measure_left"] == 14
    done = call(page2, "sweep_run", phase="all")["result"]
    assert not done["cancelled"] and done["state"]["heldout_left"] == 0
    trace = document(page2, "sweep_trace", "trace")
    assert trace["run"]["run_id"] == page.persisted["run"]["run_id"]
    assert trace["trials"][:4] == page.persisted["trials"]
    assert len({t["trial_id"] for t in trace["trials"]}) == len(trace["trials"]) == 24
    assert [i["trial_id"] for i in trace["interruptions"]] == ["model-only/mul-1"]
    assert reproduce(trace) == []


def test_a_trace_1_sweep_stored_by_indexeddb_version_1_resumes_upgraded():
    """What site/store.js converts from version 1 (a trace/1 header without trials, one text
    per trial) resumes: Python upgrades it, hands back its own texts (`sweep_trace` split) for
    the page to store again, and the continued sweep re-derives (issue 13)."""
    page = Page(ScriptedAdapter(known_model))
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    call(page, "sweep_run", phase="measure")
    call(page, "sweep_freeze")
    page.cancel_after = 2  # two of the six held-out trials
    assert call(page, "sweep_run", phase="heldout")["result"]["cancelled"]
    old = as_trace_1(document(page, "sweep_trace", "trace"))
    assert old["freezes"] and len(old["trials"]) == 20
    zero = {"trials": 0, "correct": 0, "incorrect": 0, "failed": 0, "model_evidence_trials": 0}
    stored = {
        "header_json": json.dumps({**old, "trials": [], "summary": zero}),
        "trials_json": [json.dumps(trial) for trial in old["trials"]],
    }

    page2 = Page(ScriptedAdapter(known_model))
    assert call(page2, "sweep_resume", **stored)["result"]["trials"] == 20
    assert json.loads(header(page2))["schema_version"] == "trace/4"
    split = call(page2, "sweep_trace", split=True)["result"]
    assert split["trace_json"] is None and len(split["trials_json"]) == 20  # TraceText, split
    upgraded = [json.loads(text) for text in split["trials_json"]]
    assert [t["sequence"] for t in upgraded] == sorted(t["sequence"] for t in upgraded)
    assert [t["trial_id"] for t in upgraded] == [t["trial_id"] for t in old["trials"]]
    page2.trials_json = list(split["trials_json"])
    done = call(page2, "sweep_run", phase="all")["result"]
    assert not done["cancelled"] and done["state"]["heldout_left"] == 0
    trace = document(page2, "sweep_trace", "trace")
    assert trace["trials"][0]["started_at"] is None and trace["trials"][-1]["started_at"]
    assert reproduce(trace) == [] and trace == page2.persisted


def test_journal_is_exported_and_never_scored():
    page = Page(ScriptedAdapter(known_model))
    entry = call(page, "journal_generate", prompt="What is 2 + 2?")["result"]["entry"]
    assert entry["completion"]["text"] == "7" and entry["prompt"] == "What is 2 + 2?"
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    call(page, "sweep_run", phase="all")
    trace = document(page, "sweep_trace", "trace")
    assert [j["prompt"] for j in trace["journal"]] == ["What is 2 + 2?"]
    predictions = document(page, "sweep_predictions", "predictions")
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
    bad_trace = call(page, "sweep_resume", trace_json='{"nope": 1}')
    assert bad_trace["error"]["code"] == "bad_request"
    no_text = call(page, "sweep_resume", header_json="{}", trials_json=[{"trial_id": 1}])
    assert no_text["error"]["code"] == "bad_request"
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
    interrupted = [e for e in page.events if e["type"] == "trial_interrupted"]
    assert [e["trial_id"] for e in interrupted] == ["model-only/sub-1"]
    change = page.beside[page.events.index(interrupted[0])]["change"]
    stored = json.loads(change)["interruptions"]  # the interruption only, not the header
    assert json.loads(change)["freezes"] == [] and json.loads(change)["model"] is None
    assert stored[0]["reason"] == "cancelled" and stored[0]["partial"]["outcome"] == "cancelled"

    page.cancel = False
    done = call(page, "sweep_run", phase="all")["result"]
    assert not done["cancelled"]
    trace = document(page, "sweep_trace", "trace")
    ids = [t["trial_id"] for t in trace["trials"]]
    assert ids.count("model-only/sub-1") == 1 and len(ids) == len(set(ids)) == 24
    assert all(t["outcome"] != "cancelled" for t in trace["trials"])
    assert_valid_trace(trace)
    assert reproduce(trace) == []
    trace["interruptions"][0]["partial"]["outcome"] = "correct"
    assert any("interruptions[0].partial" in str(m) for m in reproduce(trace))


def test_each_events_answer_serves_the_next_cancel_check():
    """Issue 22 §3: the page answers each event at once with its Cancel flag, and that answer
    serves Python's next Cancel check: a whole-task run asks the page one cancel question
    (before its first trial, which no answer precedes); a chain asks that and once per model
    call (its route checks before each call, after the check the event's answer served);
    an answer `true` stops the run before the next trial (none is cut short)."""
    asked = []
    page = Page(ScriptedAdapter(known_model))
    context = page.context()
    told = context.notify

    def notify(event, texts):
        told(event, texts)
        return json.dumps({"cancel": page.cancel, "model_version": None})  # the page's answer

    def cancel_requested():
        asked.append(True)
        return page.cancel

    answering = Context(adapter=context.adapter, notify=notify, cancel_requested=cancel_requested)
    page.context = lambda: answering
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    assert call(page, "sweep_run", phase="measure")["result"]["state"]["measure_left"] == 0
    assert len(asked) == 1

    call(page, "sweep_start", seed=1729, conditions=["controlled-chain"])
    page.events.clear()
    page.beside.clear()
    asked.clear()
    call(page, "sweep_run", phase="measure")
    calls = [
        len(json.loads(texts["trial"])["chain"]["calls"])
        for e, texts in zip(page.events, page.beside, strict=True)
        if e["type"] == "trial_done"
    ]
    assert len(asked) == 1 + sum(calls) and sum(calls) > 0

    asked.clear()
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    page.cancel_after = 3  # the page's Cancel is set as it takes the third trial
    ended = call(page, "sweep_run", phase="measure")["result"]
    assert ended["cancelled"] and ended["state"]["trials"] == 3 and len(asked) == 1
    assert ended["state"]["interruptions"] == 0  # stopped between trials


def counting_transport(scripted):
    """A page's model client over `scripted`, as BrowserModelAdapter's transport: answers
    `generate` and `provenance`, and lists the ids of the provenance requests it was asked."""
    from pyapp.records import Caps, from_json

    asked = []

    def transport(request_json):
        request = json.loads(request_json)
        if request["type"] == "provenance":
            asked.append(request["id"])
            result = {"ok": True, "result": to_json(scripted.provenance)}
            return json.dumps({"type": "provenance", "id": request["id"], **result})
        caps = from_json(Caps, request["caps"])
        completion = run(scripted.generate(request["prompt"], caps))
        timing = {"worker_ms": 1.0, "client_ms": 1.5}
        reply = {"ok": True, "result": to_json(completion), "timing": timing}
        return json.dumps({"type": "generate", "id": request["id"], **reply})

    return transport, asked


def test_a_run_asks_the_provenance_only_when_the_page_says_the_model_changed():
    """The page's answers carry its model client's version: while it stays the same, the
    trials of a run make no provenance call; a new version makes the next trial ask."""
    from pyapp.browser import BrowserModelAdapter

    transport, asked = counting_transport(ScriptedAdapter(known_model))
    adapter = BrowserModelAdapter(transport)
    page = Page(adapter)
    context = page.context()
    version = [1]

    def notify(event, texts):
        context.notify(event, texts)
        if event["type"] == "trial_done" and event["index"] == 9:
            version[0] += 1  # e.g. a reload after this trial
        return json.dumps({"cancel": False, "model_version": version[0]})

    answering = Context(adapter=context.adapter, notify=notify, cancel_requested=lambda: False)
    page.context = lambda: answering
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    asked.clear()
    done = call(page, "sweep_run", phase="measure")["result"]
    assert done["state"]["trials"] == 18
    # the run's start (no answer yet), the first trial (its answer follows that read), and
    # the trial after the version changed: never once per trial
    assert len(asked) == 3, asked
    assert adapter.page_model_version is None  # outside a run, nothing says it
