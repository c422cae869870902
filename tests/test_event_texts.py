"""Issue 22 §3, "data crosses each boundary once": an event carries what changed and no
document inside it (the trial, the header's new records and the receipt travel beside it as
Python's text, `EventTexts`); the page stores the header once plus the change records, and
the trace is assembled by one implementation, Python's (`pyapp.records.stored`)."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_chain import ReloadingAdapter
from test_integrity import answer
from test_predict import known_model
from test_session import Page, call, document, json_documents_in

from pyapp.browser import Context
from pyapp.errors import RecordError
from pyapp.protocol import messages
from pyapp.records import (
    HeaderChange,
    ScriptedAdapter,
    ScriptedReply,
    Trial,
    chain,
    read_trace,
    stored_trace,
    to_json,
    with_change,
)
from pyapp.verify.reproduce import reproduce

ROOT = Path(__file__).resolve().parents[1]


def test_no_event_record_has_a_field_of_json_text() -> None:
    """The event records (and so the generated schema and site/lab_protocol.js) describe
    what travels: no `*_json` field, no field a document is nested in as text."""
    for record in messages.EVENTS:
        names = [f.name for f in dataclasses.fields(record)]
        assert not [n for n in names if n.endswith("_json")], record.__name__
    texts = {f.name for f in dataclasses.fields(messages.EventTexts)}
    assert texts == {"trial", "change", "receipt"}
    schema = json.loads((ROOT / "exports" / "messages.schema.json").read_text(encoding="utf-8"))
    for record in messages.EVENTS:
        assert not [p for p in schema["$defs"][record.__name__]["properties"] if "_json" in p]
    assert {"EventTexts", "HeaderChange"} <= set(schema["$defs"])


def cancelled_once_then(model):  # type: ignore[no-untyped-def]
    """A model the page's Cancel interrupts during its third generation (once)."""
    calls = {"n": 0}

    def reply(prompt, caps):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            page.cancel = True
            return ScriptedReply("", finish_reason="cancelled")
        return model(prompt, caps)

    page = Page(ScriptedAdapter(reply))
    return page


def test_every_event_of_a_run_holds_no_document_and_brings_only_what_changed() -> None:
    """A run with an interruption, a freeze inside `sweep_run` and a reload: no event holds a
    string that parses to a JSON document; the trial travels beside its trial_done; an
    interruption and a freeze bring their records only (never the header: no run, tasks or
    journal), a reload the model record; each change text is sent once."""
    page = cancelled_once_then(known_model)
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    assert call(page, "sweep_run", phase="measure")["result"]["cancelled"]
    page.cancel = False
    assert not call(page, "sweep_run", phase="all")["result"]["cancelled"]
    kinds = {e["type"] for e in page.events}
    assert kinds == {"trial_start", "trial_done", "trial_interrupted", "frozen"}
    assert not [d for e in page.events for d in json_documents_in(e)]
    for event, texts in zip(page.events, page.beside, strict=True):
        assert (texts["trial"] is not None) == (event["type"] == "trial_done")
        assert (texts["receipt"] is not None) == (event["type"] == "frozen")
        if event["type"] in ("trial_interrupted", "frozen"):
            change = json.loads(texts["change"])
            # not the header (a sealed run's draw joins it too; null here: unsealed)
            assert set(change) == {"model", "interruptions", "freezes", "draw"}
            assert change["draw"] is None
            made = change["interruptions"] if event["type"] == "trial_interrupted" else None
            assert made is None or [i["trial_id"] for i in made] == [event["trial_id"]]
            if event["type"] == "frozen":
                assert [f["condition"] for f in change["freezes"]] == event["conditions"]
    changes = [t["change"] for t in page.beside if t["change"]]
    assert len(changes) == len(set(changes)) == 2  # the interruption, the freeze: once each

    reloaded = Page(ReloadingAdapter(at=3))
    call(reloaded, "sweep_start", seed=1729, conditions=["model-only"])
    call(reloaded, "sweep_run", phase="measure")
    carried = [json.loads(t["change"]) for t in reloaded.beside if t["change"]]
    assert len(carried) == 1 and carried[0]["model"]["loads"][-1]["load_id"] == 2


def test_a_page_that_died_after_the_freeze_resumes_from_its_header_and_the_changes() -> None:
    """Phase `all` freezes inside the run: the page stored its header before the run and the
    freeze records beside it; a page that dies during the held-out trials resumes from
    exactly those texts, and Python's trace holds the freeze and reproduces."""
    page = Page(ScriptedAdapter(answer))
    context = page.context()

    def notify(event, texts):  # type: ignore[no-untyped-def]
        context.notify(event, texts)
        if event["type"] == "trial_done" and event["phase"] == "heldout":
            page.cancel = True  # the tab closes during the held-out trials

    closing = Context(adapter=context.adapter, notify=notify, cancel_requested=lambda: page.cancel)
    page.context = lambda: closing  # type: ignore[method-assign]
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    before = page.header_json
    assert call(page, "sweep_run", phase="all")["result"]["cancelled"]
    assert page.header_json == before and json.loads(before)["freezes"] == []
    assert len(page.changes_json) == 1  # the freeze, beside the header
    again = Page(ScriptedAdapter(answer))
    assert call(again, "sweep_resume", **page.stored())["ok"]
    resumed = document(again, "sweep_trace", "trace")
    assert [f["condition"] for f in resumed["freezes"]] == ["model-only"]
    assert len(resumed["trials"]) == len(page.trials_json) and reproduce(resumed) == []
    without = {**page.stored(), "changes_json": []}  # the old page's texts lack the freeze
    assert read_trace(json.loads(without["header_json"])).freezes == ()


def test_one_rule_applies_a_change_and_a_bad_change_is_refused() -> None:
    page = Page(ScriptedAdapter(known_model))
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    call(page, "sweep_run", phase="all")
    whole = read_trace(document(page, "sweep_trace", "trace"))
    header = read_trace(json.loads(page.header_json))
    change = HeaderChange(model=None, interruptions=(), freezes=whole.freezes)
    assert with_change(header, change).freezes == whole.freezes
    texts = [json.dumps(to_json(change))]
    assert stored_trace(page.header_json, page.trials_json, texts) == stored_trace(
        page.header_json, page.trials_json, page.changes_json
    )
    with pytest.raises(RecordError):
        stored_trace(page.header_json, page.trials_json, ['{"freezes": 3}'])
    refused = call(page, "sweep_resume", **{**page.stored(), "changes_json": ["[]"]})
    assert refused["error"]["code"] == "bad_request"


def test_stored_texts_go_through_the_one_bounded_reader() -> None:
    """A stored text (IndexedDB's, or a trials.jsonl line) is read under the input limits
    of `pyapp.records.documents`: a repeated key, a NaN or a 41-digit number is refused
    (`json.loads` took the last key, NaN and the number as they were)."""
    page = Page(ScriptedAdapter(known_model))
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    call(page, "sweep_run", phase="measure")
    first = page.trials_json[0]
    assert first.startswith("{") and stored_trace(page.header_json, page.trials_json)
    for bad in (
        '{"trial_id": "x", ' + first[1:],  # a repeated key
        first[:-1] + ', "extra": NaN}',
        first[:-1] + ', "extra": ' + "9" * 41 + "}",
    ):
        with pytest.raises(RecordError, match="input limits"):
            stored_trace(page.header_json, [bad, *page.trials_json[1:]])
    refused = call(
        page, "sweep_resume", **{**page.stored(), "trials_json": [first[:-1] + ', "a": NaN}']}
    )
    assert refused["error"]["code"] == "bad_request"


def test_the_page_assembles_no_trace() -> None:
    """site/: no JavaScript builds a trace from a header and parsed trials (the one assembly
    is Python's; mid-run the page offers its texts). The page's stored sweep, as a driver reads
    it (`page_stored`), is those texts."""
    spread = re.compile(r"\.\.\.\s*header\b[^}\n]*\btrials\b")
    for path in sorted((ROOT / "site").glob("*.js")):
        text = path.read_text(encoding="utf-8")
        assert not spread.search(text), path.name
        assert "assemble(" not in text, path.name
    fields = {f.name for f in dataclasses.fields(messages.PageStoredRequest.RESULT)}
    assert fields == {"sweep", "ledger"}
    from pyapp.protocol import StoredSweep

    stored = {f.name for f in dataclasses.fields(StoredSweep)}
    assert {"header_json", "changes_json", "trials_json"} <= stored and "trace" not in stored


@pytest.mark.skipif(shutil.which("node") is None, reason="no node")
def test_what_a_javascript_round_trip_changes_is_the_text_not_the_record() -> None:
    """What breaks when the page re-serialises a document (JSON.parse, then JSON.stringify):
    the record read back is the same and its hash-chain link is the same (canonical JSON
    writes a whole float as an integer), but the text is not Python's (1.0 becomes 1, 1e-05
    becomes 0.00001): trials.jsonl would no longer hold what Python wrote. So a document
    travels beside the event as Python's text, which nothing re-writes."""
    page = Page(ScriptedAdapter(known_model))
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    call(page, "sweep_run", phase="measure")
    texts = page.trials_json[:6]
    script = "const fs=require('fs');for(const t of JSON.parse(fs.readFileSync(0,'utf8')))"
    script += "console.log(JSON.stringify(JSON.parse(t)))"
    out = subprocess.run(
        ["node", "-e", script], input=json.dumps(texts), capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert len(out) == len(texts)
    from pyapp.records import from_json

    for python_text, js_text in zip(texts, out, strict=True):
        ours, theirs = json.loads(python_text), json.loads(js_text)
        assert from_json(Trial, theirs) == from_json(Trial, ours)
        assert chain.sha256_of(from_json(Trial, theirs)) == chain.sha256_of(from_json(Trial, ours))
    assert any(p != j for p, j in zip(texts, out, strict=True))  # the text itself is not kept
    whole = re.compile(r": ?-?\d+\.0[,}\]]")
    assert any(whole.search(t) for t in texts) and not any(whole.search(j) for j in out)
