"""The one JavaScript envelope (site/common/envelope.js) on the model channel: both ends of the
channel — site/model_worker/model_worker.js and site/model_client.js — build every reply and
event through it (no `{type, id, ok, ...}` written by hand), and what it builds with the
channel's generated table (MODEL_CHANNEL) fits the generated protocol (site/common/model_check.js,
from site/common/model_protocol.js) and Python's records (`pyapp.protocol.model_messages`); a
type the protocol lacks throws. The page ⇄ Python side: tests/site/test_envelope.py; and no
second envelope module is left (`test_one_envelope_module`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from nodescript import run_node_script

from pyapp.protocol import model_messages

ROOT = Path(__file__).resolve().parents[1]
WORKERS = ("site/model_worker/model_worker.js", "site/model_client.js")
IMPORT = re.compile(r'import \{[^}]*\} from "\.\.?/common/envelope\.js";')

HAND_REPLY = re.compile(
    r"\{[^{}]*\bok\s*:\s*(?:true|false)\b[^{}]*\b(?:result|error)\b"  # ok beside result/error
    r"|\btype\b[^{}()]*\bok\s*:\s*(?:true|false)\b"  # or after the type, in one literal
)
"""A reply envelope written as an object literal."""
EVENT_TYPES = "PROGRESS|FIRST_TOKEN|TOKENS|STATE|LOAD_DONE"
EVENT_NAMES = "progress|first_token|tokens|state|load_done"
HAND_EVENT = re.compile(
    rf"\{{\s*type\s*:\s*(?:MODEL_TYPE\.(?:{EVENT_TYPES})\b|[\"'](?:{EVENT_NAMES})[\"'])"
    r"|\bpostMessage\(\s*\{"
)
"""An event written as an object literal, or any literal posted by hand."""


def strip_comments(js: str) -> str:
    return re.sub(r"//[^\n]*", "", js)


def hand_built(js: str) -> list[str]:
    """Every reply or event envelope the text writes itself."""
    code = strip_comments(js)
    return [m.group(0) for m in (*HAND_REPLY.finditer(code), *HAND_EVENT.finditer(code))]


def test_the_checker_catches_what_it_must() -> None:
    caught = [
        "self.postMessage({ type, id, ok: true, result, ...extra });",
        "return {\n type: typeof type,\n id: null,\n ok: false,\n error: { code, message } };",
        "settle({\n type: MODEL_TYPE.GENERATE,\n id,\n ok: true,\n ...(j ? { h: j } : {}),",
        "JSON.stringify({ type, id, ok: true, result: this.provenance() })",
        "self.postMessage({ type: MODEL_TYPE.FIRST_TOKEN, id: request.id });",
        "this.emit({ type: MODEL_TYPE.LOAD_DONE, record, result: null });",
        "this.emit({ type: 'state', state });",
    ]
    for text in caught:
        assert hand_built(text), text
    fine = [
        "self.postMessage(okReply(type, id, result, extra));",
        "const record = { load_id: 1, reason, ok: false, error_code: code, error_message: m };",
        "const record = { load_id: 1, ok: answer.ok === true, error_code: null };",
        "this.emit(panelEvent(MODEL_TYPE.STATE, { state, ...detail }));",
        "// a comment: { type, id, ok: true, result }",
    ]
    for text in fine:
        assert hand_built(text) == [], text


@pytest.mark.parametrize("path", WORKERS)
def test_both_ends_build_every_reply_and_event_through_the_envelope(path: str) -> None:
    js = (ROOT / path).read_text("utf-8")
    assert IMPORT.search(js), f"{path} does not import common/envelope.js"
    assert hand_built(js) == []
    assert re.search(r"\b(?:okReply|failedReply)\(", js)  # it does build replies with it
    assert re.search(r"\bchannelEvent\(MODEL_CHANNEL, ", js)  # and events


def run_node(cases: dict[str, Any]) -> Any:
    return run_node_script("model_envelope_node.mjs", cases)


LOAD_RECORD = {
    "load_id": 1, "reason": "consent", "ok": False, "error_code": "load_failed",
    "error_message": "gone", "backend_requested": "wasm", "backend_actual": None,
    "download_bytes": 0, "download_ms": None, "setup_ms": None, "compilation_ms": None,
}  # fmt: skip


PROGRESS = {"file": "a.onnx", "status": "done", "loaded": 9, "total": 9}


def test_what_the_envelope_builds_fits_the_protocol_and_pythons_records() -> None:
    cases = {
        "replies": [
            ["interrupt", 3, True, {"interrupted": True}, {"elapsed_ms": 1.5}],
            ["generate", 4, False, ["not_loaded", "no model"], {}],
            ["generate", "x", False, ["bad_request", "not a request"], {}],  # id not echoed
            ["no_such_request", 5, True, {}, {}],
        ],
        "events": [
            ["client", "first_token", {"id": 4}],
            ["client", "tokens", {"id": 4, "tokens": 2}],
            ["client", "progress", {"id": 1, **PROGRESS}],
            ["panel", "state", {"state": "loading", "reason": "consent"}],
            ["panel", "load_done", {"record": LOAD_RECORD, "result": None}],
            ["client", "state", {"id": 1, "state": "loading"}],  # a panel event, not the worker's
            ["panel", "first_token", {}],  # a worker event, not the panel's
        ],
    }
    answer = run_node(cases)
    *replies, unknown = answer["replies"]
    assert all(r.get("problem") is None and "message" in r for r in replies), replies
    interrupted, refused, malformed = (r["message"] for r in replies)
    assert interrupted == {"type": "interrupt", "id": 3, "ok": True,
                           "result": {"interrupted": True}, "elapsed_ms": 1.5}  # fmt: skip
    reply = model_messages.parse_reply(json.dumps(refused), "generate", 4)
    assert not reply.ok and reply.error is not None and reply.error.code == "not_loaded"
    assert malformed["id"] is None and malformed["error"]["code"] == "bad_request"
    assert "no_such_request" in unknown["thrown"]

    *events, worker_state, panel_token = answer["events"]
    assert all(e.get("problem") is None and "message" in e for e in events), events
    for built in events:
        record = model_messages.parse_message(built["message"])
        assert built["message"]["type"] == record.TYPE
    assert "state is not an event to the client" in worker_state["thrown"]
    assert "first_token is not an event to the panel" in panel_token["thrown"]


def test_one_envelope_module() -> None:
    """Both channels build and read replies in site/common/envelope.js: no other module of the
    page or its workers defines a reply or event builder of its own."""
    builders = re.compile(r"export function (okReply|failedReply|readReply|\w*Event)\b")
    found = {
        str(p.relative_to(ROOT)): builders.findall(p.read_text("utf-8"))
        for p in sorted((ROOT / "site").rglob("*.js"))
    }
    assert {p: f for p, f in found.items() if f} == {
        "site/common/envelope.js": ["okReply", "failedReply", "channelEvent", "readReply"]
    }
