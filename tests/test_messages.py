"""The one message module: generated exports match the records, every boundary validates."""

import json
from pathlib import Path

import jsonschema
import pytest
from asyncrun import run

from pyapp.browser import bridge, messages
from pyapp.browser.session import Context

ROOT = Path(__file__).resolve().parents[1]


def test_generated_exports_match_the_records():
    """exports/messages.schema.json and site/lab_protocol.js are generated, never edited."""
    schema = json.loads((ROOT / "exports" / "messages.schema.json").read_text(encoding="utf-8"))
    assert schema == messages.messages_schema(), "run: python -m pyapp schema"
    js = (ROOT / "site" / "lab_protocol.js").read_text(encoding="utf-8")
    assert js == messages.js_module(), "run: python -m pyapp schema"
    hosting = (ROOT / "docs" / "hosting.md").read_text(encoding="utf-8")
    assert messages.markdown_tables() in hosting, "run: python -m pyapp schema"
    for record in (*messages.REQUESTS, *messages.EVENTS):
        assert f"| `{record.TYPE}` |" in hosting


def test_every_request_type_has_one_handler():
    assert set(bridge.HANDLERS) == set(messages.REQUEST_TYPES)


def validator():
    schema = messages.messages_schema()
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
            trial_json="{}",
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
    context = Context(adapter=lambda: None, notify=lambda event: None, cancel_requested=bool)
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
