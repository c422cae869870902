"""The requests the page answers itself (`PAGE_REQUESTS`: page_state, model_choose,
sweep_stop, model_direct, page_stored, model_synthetic; site/entry.js): their records and
schema, Python refusing them, and the Python side every driver uses (`pyapp.sweep.panel`: one
window.lab.send call, waiting by polling page_state), the sweep CLI's model loading included.
The page answering them in Chromium: tests/browser/test_page_answers.py."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import jsonschema
import pytest
from test_sweep_driver import driver_for

from pyapp.browser import bridge
from pyapp.protocol import ErrorBody, ModelChosen, PageState, exports, messages
from pyapp.records import ScriptedAdapter
from pyapp.sweep import SetupError, SweepError, panel

NO_LOAD_YET = {  # what site/model_client.js provenance() says before any load
    "model_id": "none", "revision": "none", "revision_served": None,
    "revision_served_note": None, "dtype": "none", "chat_template_options": {},
    "source": "bundled-fixture", "evidence": "fixture", "backend_requested": "wasm",
    "backend_actual": None, "adapter": None, "transformers_js_version": None,
    "onnxruntime_version": None, "threads": None, "wasm": None,
    "cross_origin_isolated": True, "user_agent": "HeadlessChrome", "flops": None, "loads": [],
    "config_sha256": None, "subject_recipe": None,
}  # fmt: skip


def models_state(**changes: Any) -> dict[str, Any]:
    """The Models panel as site/panel_driver.js reports it (a fresh page by default)."""
    state = {
        "state": "idle", "catalogue_ready": True, "backend_checked": True,
        "backend_status": "WebGPU is not available (this browser has no navigator.gpu).",
        "choice": "fixture", "backend": "wasm", "dtypes": ["q8", "fp32"], "dtype": "q8",
        "consent_open": False, "consent_details": "", "status": "No model loaded.",
        "provenance": NO_LOAD_YET, "synthetic": None,
    }  # fmt: skip
    return {**state, **changes}


def page_state_json(**models: Any) -> dict[str, Any]:
    return {
        "app": "ready",
        "status": "Ready.",
        "models": models_state(**models),
        "experiment": "idle",
        "sweep_running": False,
        "trials": 0,
        "timings": {"python_ready_ms": 812.5, "first_table_ms": None},
    }


SAMPLE_RESULTS = {
    "page_state": page_state_json(),
    "model_choose": {"outcome": "consent", "why": None, "models": models_state(consent_open=True)},
    "sweep_stop": {"running": True},
    "model_direct": {"completion": None, "worker_ms": None, "client_ms": 1.5,
                     "error": {"code": "not_loaded", "message": "no model"}},
    "page_stored": {
        "sweep": {"run_id": "r1", "in_flight": "model-only/g1", "phase": "measure",
                  "finished": False, "updated_at": "2026-12-02T07:00:00.000Z",
                  "summary": None, "header_json": "{}", "changes_json": [],
                  "trials_json": []},
        "ledger": [{"key": "m@main|model-only", "model_id": "m", "revision": "main",
                    "condition": "model-only", "task_ids": ["a", "b"]}],
    },
    "model_synthetic": {"spec": None, "provenance": None, "note": None},
}  # fmt: skip
SAMPLE_REQUESTS = {
    "page_state": messages.PageStateRequest(),
    "model_choose": messages.ModelChoose(key="fixture", backend="wasm", dtype="fp32"),
    "sweep_stop": messages.SweepStop(),
    "model_direct": messages.ModelDirect(caps={"max_new_tokens": 1}, prompt="Say hello."),
    "page_stored": messages.PageStoredRequest(),
    "model_synthetic": messages.ModelSynthetic(spec="correlated:rho=0.9"),
}


def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(exports.messages_schema())


def test_every_page_request_is_a_request_the_page_names() -> None:
    assert set(SAMPLE_REQUESTS) == {r.TYPE for r in messages.PAGE_REQUESTS}
    assert set(messages.PAGE_REQUESTS) <= set(messages.REQUESTS)
    assert exports.constants()["PAGE_REQUEST_TYPES"] == list(SAMPLE_REQUESTS)
    assert not set(messages.PAGE_REQUESTS) & set(bridge.HANDLERS)


@pytest.mark.parametrize("kind", sorted(SAMPLE_REQUESTS))
def test_page_requests_and_their_replies_fit_the_schema_and_the_records(kind: str) -> None:
    sent = messages.request_message(SAMPLE_REQUESTS[kind], 7)
    check = validator()
    check.validate(sent)
    assert messages.parse_request(sent) == SAMPLE_REQUESTS[kind]
    reply = {"type": kind, "id": 7, "ok": True, "result": SAMPLE_RESULTS[kind]}
    check.validate(reply)
    record = messages.parse_result(kind, SAMPLE_RESULTS[kind])
    assert isinstance(record, SAMPLE_REQUESTS[kind].RESULT)


def test_a_bad_page_reply_is_refused_by_the_schema_and_the_record() -> None:
    wrong = page_state_json(state="sleeping")
    with pytest.raises(jsonschema.ValidationError):
        validator().validate({"type": "page_state", "id": 1, "ok": True, "result": wrong})
    with pytest.raises(messages.RequestError):
        messages.parse_result("page_state", wrong)
    with pytest.raises(messages.RequestError):
        messages.parse_request({"type": "model_choose", "id": 1, "backend": "wasm"})  # no key


@pytest.mark.parametrize("kind", sorted(SAMPLE_REQUESTS))
def test_python_refuses_what_the_page_answers(kind: str) -> None:
    sent = json.dumps(messages.request_message(SAMPLE_REQUESTS[kind], 1))
    reply = json.loads(bridge.handle(sent))
    assert reply["ok"] is False and reply["error"]["code"] == "unknown_type"
    assert "answered by the page" in reply["error"]["message"]
    validator().validate(reply)


class ScriptedPage:
    """A page that answers window.lab.send from scripted results per request type, records
    what was sent, and counts clicks on "Download and load"."""

    def __init__(self, answers: dict[str, list[dict[str, Any] | None]]) -> None:
        self.answers = answers
        self.sent: list[dict[str, Any]] = []
        self.consents = 0
        self.waits = 0

    def evaluate(self, script: str, arg: str) -> str | None:
        assert script == panel.SEND, script
        message = json.loads(arg)
        self.sent.append(message)
        queue = self.answers[message["type"]]
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if answer is None:
            return None  # no entry point yet
        if "code" in answer:
            return json.dumps({**message, "ok": False, "error": answer})
        return json.dumps({"type": message["type"], "id": message["id"], "ok": True,
                           "result": answer})  # fmt: skip

    def wait_for_timeout(self, ms: float) -> None:
        self.waits += 1

    def get_by_role(self, role: str, name: str) -> Any:
        assert (role, name) == ("button", "Download and load")
        page = self

        class Button:
            def click(self) -> None:
                page.consents += 1

        return Button()


def test_send_returns_the_record_and_refusals_raise_with_the_code() -> None:
    page = ScriptedPage({"page_state": [page_state_json()],
                         "sweep_stop": [{"code": "page_refused", "message": "busy"}]})  # fmt: skip
    state = panel.send(page, messages.PageStateRequest())  # type: ignore[arg-type]
    assert isinstance(state, PageState) and state.models.dtypes == ("q8", "fp32")
    assert state.models.provenance.model_id == "none"
    refused = panel.ask(page, messages.SweepStop())  # type: ignore[arg-type]
    assert refused == ErrorBody(code="page_refused", message="busy")
    with pytest.raises(SweepError) as raised:
        panel.send(page, messages.SweepStop())  # type: ignore[arg-type]
    assert raised.value.code == "page_refused" and "page_refused: busy" in raised.value.message


def test_a_reply_to_another_request_or_of_the_wrong_shape_is_a_page_failure() -> None:
    sent = messages.PageStateRequest()
    other = json.dumps({"type": "page_state", "id": 99, "ok": True, "result": page_state_json()})
    with pytest.raises(SweepError) as raised:
        panel.reply_of(sent, 1, other)
    assert raised.value.code == "page_failed" and "mismatch" in raised.value.message
    bad = json.dumps({"type": "page_state", "id": 1, "ok": True, "result": {"app": "ready"}})
    with pytest.raises(SweepError) as raised:
        panel.reply_of(sent, 1, bad)
    assert raised.value.code == "page_failed"


def test_waiting_polls_page_state_until_the_page_gets_there() -> None:
    page = ScriptedPage({"page_state": [None, page_state_json(state="loading"),
                                        page_state_json(state="loaded")]})  # fmt: skip
    assert panel.wait_models(page, "loaded failed", 60_000) == "loaded"  # type: ignore[arg-type]
    assert len(page.sent) == 3 and page.waits == 2


def test_a_wait_past_its_deadline_says_where_the_page_stood() -> None:
    page = ScriptedPage({"page_state": [page_state_json(state="loading")]})
    with pytest.raises(SweepError) as raised:
        panel.wait_models(page, "loaded", -1)  # type: ignore[arg-type]  # already past
    assert raised.value.code == "page_timeout" and "ready: Ready." in raised.value.message


def test_load_from_catalogue_chooses_by_message_and_consents_by_click() -> None:
    shown: list[int] = []
    page = ScriptedPage({
        "page_state": [page_state_json(), page_state_json(state="loaded")],
        "model_choose": [SAMPLE_RESULTS["model_choose"]],
    })  # fmt: skip
    ended = panel.load_from_catalogue(
        page,  # type: ignore[arg-type]
        60_000,
        dtype="fp32",
        before_consent=lambda: shown.append(page.consents),
    )
    assert ended == "loaded" and shown == [0] and page.consents == 1
    (chose,) = [m for m in page.sent if m["type"] == "model_choose"]
    assert (chose["key"], chose["backend"], chose["dtype"]) == ("fixture", "wasm", "fp32")


def test_the_cli_loads_its_model_through_messages_and_one_consent_click(tmp_path) -> None:
    driver, _ = driver_for(tmp_path, ScriptedAdapter(lambda prompt: "1"))
    details = "Model: fixture/tiny-chat\nBackend: WASM (CPU)"
    loaded = {**NO_LOAD_YET, "model_id": "fixture/tiny-chat"}
    page = ScriptedPage({
        "page_state": [page_state_json(), page_state_json(state="loaded", provenance=loaded,
                                                          status="Loaded fixture/tiny-chat")],
        "model_choose": [{"outcome": "consent", "why": None,
                          "models": models_state(consent_open=True, consent_details=details)}],
    })  # fmt: skip
    driver.page = page
    session = driver.load_model()
    assert page.consents == 1 and session["dialog"] == details
    assert session["provenance"]["model_id"] == "fixture/tiny-chat"
    assert session["status"] == "Loaded fixture/tiny-chat"
    chosen = messages.parse_request(next(m for m in page.sent if m["type"] == "model_choose"))
    assert isinstance(chosen, messages.ModelChoose) and chosen.key == "fixture"


def test_a_dtype_the_panel_does_not_offer_is_a_setup_error(tmp_path) -> None:
    driver, _ = driver_for(tmp_path, ScriptedAdapter(lambda prompt: "1"))
    driver.options = replace(driver.options, dtype="q4f16")
    message = "dtype q4f16 is not offered for fixture/tiny-chat on wasm: the panel offers q8"
    driver.page = ScriptedPage({
        "page_state": [page_state_json()],
        "model_choose": [{"outcome": "not_offered", "why": message, "models": models_state()}],
    })  # fmt: skip
    with pytest.raises(SetupError) as raised:
        driver.load_model()
    assert raised.value.code == "bad_dtype" and message in raised.value.message
    assert driver.page.consents == 0


def test_stored_and_use_synthetic_are_one_request_each() -> None:
    page = ScriptedPage({"page_stored": [SAMPLE_RESULTS["page_stored"]],
                         "model_synthetic": [{"code": "bad_synthetic_spec", "message": "no"},
                                             SAMPLE_RESULTS["model_synthetic"]]})  # fmt: skip
    held = panel.stored(page)  # type: ignore[arg-type]
    assert held.sweep is not None and held.sweep.in_flight == "model-only/g1"
    assert held.ledger[0].task_ids == ("a", "b") and held.sweep.header_json == "{}"
    with pytest.raises(SweepError) as raised:
        panel.use_synthetic(page, "nonsense")  # type: ignore[arg-type]
    assert "bad_synthetic_spec" in raised.value.message
    assert panel.use_synthetic(page, None).spec is None  # type: ignore[arg-type]
    assert [m["type"] for m in page.sent] == ["page_stored", "model_synthetic", "model_synthetic"]
    assert page.sent[1]["spec"] == "nonsense" and page.sent[2]["spec"] is None


def test_model_chosen_is_typed() -> None:
    chosen = messages.parse_result("model_choose", SAMPLE_RESULTS["model_choose"])
    assert isinstance(chosen, ModelChosen) and chosen.models.consent_open
