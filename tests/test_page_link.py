"""A run's events posted without waiting (pyapp.browser.page_link; issue 22 §3): the page's
shared flags serve every check, a synchronous call is made only as the run's end barrier,
and an unattached or troubled page is told each event as before."""

import importlib.util
import json
import re
from pathlib import Path

from test_predict import known_model
from test_session import Page, call, counting_transport

from pyapp.browser import BrowserModelAdapter, Context
from pyapp.protocol import EventAnswer
from pyapp.records import ScriptedAdapter

ROOT = Path(__file__).resolve().parent.parent


class PostingPage(Page):
    """A page that attached the shared flags: events arrive posted, in order."""

    def __init__(self, model=None):
        super().__init__(model)
        self.posted = []
        self.told = []
        self.asked = 0
        self.attached = True
        self.trouble_after = None  # a posted event after which the page reports trouble
        self.version = 4

    def context(self):
        record = super().context().notify

        def post(event, texts):
            self.posted.append(event["type"])
            record(event, texts)
            if self.trouble_after is not None and len(self.posted) >= self.trouble_after:
                self.attached = False

        def notify(event, texts):
            self.told.append(event["type"])
            if self.trouble_after is not None:
                raise RuntimeError("storing the sweep failed")  # thrown by the page's answer
            record(event, texts)
            return json.dumps({"cancel": self.cancel, "model_version": None})

        def flags():
            if not self.attached:
                return None
            return EventAnswer(cancel=self.cancel, model_version=self.version)

        def cancel_requested():
            self.asked += 1
            return self.cancel

        return Context(
            adapter=lambda: self.model,
            notify=notify,
            cancel_requested=cancel_requested,
            post=post,
            flags=flags,
        )


def test_a_run_posts_every_event_in_order_and_asks_the_page_once_at_its_end():
    page = PostingPage(ScriptedAdapter(known_model))
    call(page, "sweep_start", seed=1729, conditions=["model-only", "controlled-chain"])
    ended = call(page, "sweep_run", phase="measure")["result"]
    trials = ended["state"]["trials"]
    assert trials > 0 and ended["state"]["measure_left"] == 0
    assert page.told == [] and page.asked == 1  # the end's barrier only
    assert page.posted == ["trial_start", "trial_done"] * trials
    assert [e["type"] for e in page.events] == page.posted
    assert len(page.trials_json) == trials


def test_the_shared_cancel_flag_stops_the_run_between_trials():
    page = PostingPage(ScriptedAdapter(known_model))
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    page.cancel_after = 3  # the page's Cancel is set as it takes the third trial
    ended = call(page, "sweep_run", phase="measure")["result"]
    assert ended["cancelled"] and ended["state"]["trials"] == 3
    assert ended["state"]["interruptions"] == 0 and page.told == []


def test_an_unattached_page_is_told_each_event():
    page = PostingPage(ScriptedAdapter(known_model))
    page.attached = False
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    ended = call(page, "sweep_run", phase="measure")["result"]
    assert page.posted == [] and page.told == ["trial_start", "trial_done"] * 18
    assert ended["state"]["trials"] == 18


def test_a_page_in_trouble_is_told_the_next_event_and_its_failure_stops_the_run():
    page = PostingPage(ScriptedAdapter(known_model))
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    page.trouble_after = 4  # the fourth posted event failed to store on the page
    reply = call(page, "sweep_run", phase="measure")
    assert not reply["ok"] and "storing the sweep failed" in reply["error"]["message"]
    assert page.posted == ["trial_start", "trial_done"] * 2 and page.told == ["trial_start"]
    assert page.asked == 2  # the check before the next trial, then the end's barrier


def test_the_shared_model_version_spares_the_provenance_calls():
    transport, asked = counting_transport(ScriptedAdapter(known_model))
    adapter = BrowserModelAdapter(transport)
    page = PostingPage(adapter)
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    asked.clear()
    done = call(page, "sweep_run", phase="measure")["result"]
    assert done["state"]["trials"] == 18 and page.told == []
    # the run's start (no flags read yet) and the first trial (the flags follow that read)
    assert len(asked) == 2, asked
    page.version += 1  # e.g. a reload: the next run's first trial asks again
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    asked.clear()
    call(page, "sweep_run", phase="measure")
    assert len(asked) == 2, asked


def test_the_flag_slots_agree_with_the_page():
    spec = importlib.util.spec_from_file_location(
        "lab_worker", ROOT / "site" / "python_worker" / "lab_worker.py"
    )
    assert spec is not None and spec.loader is not None
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    text = (ROOT / "site" / "experiment_channel.js").read_text(encoding="utf-8")
    found = re.search(r"export const FLAG = Object\.freeze\((\{[^}]*\})\)", text)
    assert found is not None
    slots = dict(re.findall(r"(\w+): (\d+)", found.group(1)))
    assert {name: int(slot) for name, slot in slots.items()} == worker.FLAG
