"""The one message module: generated exports match the records, every boundary validates."""

import importlib.util
import json
from dataclasses import fields
from pathlib import Path
from typing import get_type_hints

import jsonschema
import pytest
from asyncrun import run
from test_predict import known_model

from pyapp.browser import Context, bridge
from pyapp.protocol import exports as message_exports
from pyapp.protocol import messages
from pyapp.protocol import results as message_results
from pyapp.records import NO_TRIALS, Caps, ScriptedAdapter, field_docs, from_json, to_json

ROOT = Path(__file__).resolve().parents[1]


def test_generated_exports_match_the_records():
    """exports/messages.schema.json and site/lab_protocol.js are generated, never edited."""
    schema = json.loads((ROOT / "exports" / "messages.schema.json").read_text(encoding="utf-8"))
    assert schema == message_exports.messages_schema(), "run: python -m pyapp schema"
    js = (ROOT / "site" / "lab_protocol.js").read_text(encoding="utf-8")
    assert js == message_exports.js_module(), "run: python -m pyapp schema"
    hosting = (ROOT / "docs" / "hosting.md").read_text(encoding="utf-8")
    assert message_exports.markdown_tables() in hosting, "run: python -m pyapp schema"
    for record in (*messages.REQUESTS, *messages.EVENTS):
        assert f"| `{record.TYPE}` |" in hosting


def test_every_request_type_has_one_handler_that_returns_its_result_record():
    """The handler table ties each request record to its handler, and the handler's
    annotation names the request's RESULT record (what the reply's `result` holds)."""
    assert set(bridge.HANDLERS) == set(messages.REQUESTS) - set(messages.PAGE_REQUESTS)
    for request, handler in bridge.HANDLERS.items():
        assert get_type_hints(handler)["return"] is request.RESULT, request.TYPE
        assert request.RESULT in message_results.RESULTS
    for record in message_results.RESULTS:
        documented = field_docs(record)
        assert record.__doc__ and all(f.name in documented for f in fields(record)), record


def validator():
    schema = message_exports.messages_schema()
    return jsonschema.Draft202012Validator(schema)


def test_requests_replies_and_events_fit_the_schema():
    check = validator()
    check.validate({"type": "hello", "id": 1})
    check.validate({"type": "sweep_run", "id": 2, "phase": "measure"})
    reply = json.loads(bridge.handle(json.dumps({"type": "hello", "id": 3})))
    check.validate(reply)
    refused = json.loads(bridge.handle(json.dumps({"type": "sweep_run", "id": 4})))
    assert refused["error"]["code"] == "bad_request" and "phase" in refused["error"]["message"]
    check.validate(refused)
    done = messages.event(
        messages.TrialDone(
            trial_id="model-only/add-1",
            condition="model-only",
            task_id="add-1",
            index=1,
            total=2,
            phase="measure",
            heldout_observed=False,
            summary=NO_TRIALS,
        )
    )
    check.validate(done)
    assert done["type"] == "trial_done"
    with pytest.raises(jsonschema.ValidationError):
        check.validate({"type": "sweep_run", "id": 5, "phase": "later"})


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        ({"type": "sweep_run", "id": 1, "phase": "later"}, "bad_request"),
        ({"type": "journal_generate", "id": 1}, "bad_request"),
        ({"type": "journal_generate", "id": 1, "prompt": 5}, "bad_request"),
        ({"type": "tasks", "id": 1, "seed": 1, "colour": "red"}, "bad_request"),
        ({"type": "teleport", "id": 1}, "unknown_type"),
        ({"id": 1}, "bad_request"),
    ],
)
def test_a_request_that_does_not_fit_is_refused_before_any_handler(request_, code):
    context = Context(adapter=lambda: None, notify=lambda event, texts: None, cancel_requested=bool)
    reply = json.loads(run(bridge.handle_async(json.dumps(request_), context)))
    assert reply["ok"] is False and reply["error"]["code"] == code, reply
    assert code in messages.FAILURE_CODES


def test_the_page_uses_the_generated_constants():
    """No hand-kept copy of a shared constant in the page's code."""
    for path in (ROOT / "site").glob("*.js"):
        if path.name == "lab_protocol.js":
            continue
        text = path.read_text(encoding="utf-8")
        assert '"test fixture — not model evidence"' not in text, path.name
        assert '["model-only", "model-program", "controlled-chain"]' not in text, path.name


# ---- every handler's actual reply against the schema (CPython, through the bridge) -------------


def scripted_transport(adapter):
    """The main thread's model client, as the worker's BrowserModelAdapter reaches it: a
    scripted adapter (a test fixture) answers `provenance` and `generate`."""

    def transport(request_json):
        request = json.loads(request_json)
        if request["type"] == "provenance":
            result = to_json(adapter.provenance)
        else:
            caps = from_json(Caps, request["caps"])
            completion = to_json(run(adapter.generate(request["prompt"], caps)))
            result = {**completion, "worker_ms": 1.0}
        return json.dumps(
            {"type": request["type"], "id": request["id"], "ok": True, "result": result}
        )

    return transport


def glue_memory():
    """site/python_worker/lab_worker.py's own `memory` function (plain Python; natively no heap)."""
    spec = importlib.util.spec_from_file_location(
        "lab_worker", ROOT / "site" / "python_worker" / "lab_worker.py"
    )
    assert spec is not None and spec.loader is not None
    glue = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(glue)
    return glue._memory


def test_every_handlers_reply_fits_the_schema(monkeypatch):
    """Each request type is sent through `bridge.handle_async` and its real reply validated
    against exports/messages.schema.json's reply for that type — result record included —
    with every event the run sends. What needs the page's runtime (sympy's wheels) is a
    stand-in; `memory` is the worker glue's own function."""
    from pyapp.browser import BrowserModelAdapter, Session

    monkeypatch.setattr(bridge, "SESSION", Session())
    adapter = ScriptedAdapter(known_model)
    events = []

    async def load_sympy():
        return {"packages": ["mpmath", "sympy"], "load_ms": 0.0}

    context = Context(
        adapter=lambda: adapter,
        notify=lambda event, texts: events.append(event),
        cancel_requested=lambda: False,
        model_adapter=lambda: BrowserModelAdapter(scripted_transport(adapter)),
        load_sympy=load_sympy,
        memory=glue_memory(),
    )
    check = validator()
    results = {}

    def send(kind, **fields):
        reply = json.loads(
            run(bridge.handle_async(json.dumps({"type": kind, "id": kind, **fields}), context))
        )
        assert reply["ok"], reply
        check.validate(reply)
        name = message_exports.reply_name(messages.REQUEST_TYPES[kind])
        schema = {**message_exports.messages_schema(), "$ref": f"#/$defs/{name}"}
        jsonschema.Draft202012Validator(schema).validate(reply)
        results[kind] = reply["result"]
        return reply["result"]

    small = {"primitives_per_op": 1, "probe_pairs": 1, "derivatives": 0, "determinants": 1}
    send("hello")
    send("tasks", seed=7, params=small)
    send("run_supplied", seed=7, params=small)
    send("sympy_load")
    send("sympy_check", seed=7, params=small)
    send("memory")
    send("model_generate", prompt="Say hello.")
    send("journal_generate", prompt="Say hello again.")
    send("sweep_start", seed=7, params=small, conditions=["model-only", "controlled-chain"])
    send("sweep_run", phase="measure")
    send("sweep_freeze")
    send("sweep_run", phase="all")
    send("sweep_state")
    header = send("sweep_header")["header_json"]
    trace = send("sweep_trace")["trace_json"]
    predictions = send("sweep_predictions")["predictions_json"]
    trials = [json.dumps(t) for t in json.loads(trace)["trials"]]
    send("sweep_resume", header_json=header, trials_json=trials)
    send("trace_open", trace_json=trace, predictions_json=predictions)
    assembled = send("stored_trace", header_json=header, trials_json=trials)["trace_json"]
    assert json.loads(assembled) == json.loads(trace)  # Python's one assembly of the texts
    send("compare_runs", runs=[{"name": "a", "predictions_json": predictions}] * 2)
    assert "<!doctype html>" in send("run_report", trace_json=trace)["html"]
    remade = send("receipt_remake", trace_json=trace)
    assert remade["after_heldout"] and remade["name"].startswith("receipt-remade-after-heldout-")
    study = {"schema_version": "study/1", "kind": "composition-lab-study", "answer": ["a"]}
    study |= {"flags": [], "name": None, "cells_done": 0, "cells_planned": 0, "groups": []}
    assert send("study_open", study_json=json.dumps(study))["answer"] == ["a"]
    assert send("synthetic_select", spec="independent")["provenance"]["evidence"] == "synthetic"
    assert send("synthetic_select", spec=None) == {"spec": None, "provenance": None, "note": None}
    assert set(results) == set(messages.REQUEST_TYPES) - {r.TYPE for r in messages.PAGE_REQUESTS}
    assert results["memory"]["wasm_heap_bytes"] is None  # natively: no WebAssembly heap
    assert results["trace_open"]["ok"] and results["sweep_run"]["state"]["stage"] == "done"
    for sent in events:
        check.validate(sent)
    assert {e["type"] for e in events} == {"trial_start", "trial_done"}
    # phase `all` from a fresh sweep sends the `frozen` event, its predictions typed
    events.clear()
    send("sweep_start", seed=7, params=small, conditions=["model-only"])
    send("sweep_run", phase="all")
    for sent in events:
        check.validate(sent)
    (frozen,) = [e for e in events if e["type"] == "frozen"]
    assert frozen["predictions"][0]["predictions"][0]["task_id"]


def test_a_handler_that_answers_the_wrong_record_is_a_bug_not_a_reply(monkeypatch):
    monkeypatch.setitem(bridge.HANDLERS, messages.Hello, lambda request, ctx: {"python": "3"})
    reply = json.loads(bridge.handle(json.dumps({"type": "hello", "id": 1})))
    assert reply["ok"] is False and reply["error"]["code"] == "internal_error"
    assert "not a" in reply["error"]["message"] and "Versions" in reply["error"]["message"]
    validator().validate(reply)
