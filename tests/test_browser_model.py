"""pyapp.browser.model under CPython: requests, reply validation, failures, timing, and the
adapter driven by a fake transport (the browser path is in tests/browser/test_models.py)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from asyncrun import run

from pyapp.browser import (
    BrowserModelAdapter,
    completion_from_reply,
    generate_request,
    handle_model_generate,
    parse_provenance,
    read_generate_reply,
)
from pyapp.errors import RecordError, ReplyError
from pyapp.protocol import parse_reply
from pyapp.records import CHAIN_CALL_CAPS, Caps, ModelAdapter, finish_for, to_json

CAPS = Caps(max_input_tokens=64, max_new_tokens=8, max_output_bytes=100, timeout_ms=1000)

COMPLETION: dict[str, Any] = {
    "text": "Hello.",
    "finish_reason": "eos",
    "input_tokens": 17,
    "output_tokens": 3,
    "output_token_ids": [42, 349, 2],
    "generation_ms": 16.7,
    "time_to_first_token_ms": 7.0,
    "failure": None,
    "input_text": "<|im_start|>user\nSay hello.<|im_end|>\n<|im_start|>assistant\n",
    "input_sha256": "136a9b3c9654a386efbd3c95baf0646278d71a57f79a1488e761c7509bf8fcd8",
}

LOAD: dict[str, Any] = {
    "load_id": 1,
    "reason": "consent",
    "ok": True,
    "error_code": None,
    "error_message": None,
    "backend_requested": "wasm",
    "backend_actual": "wasm",
    "download_bytes": 830_000,
    "download_ms": 120.5,
    "setup_ms": 1256.75,
    "compilation_ms": None,
}

PROVENANCE: dict[str, Any] = {
    "model_id": "fixture/tiny-chat",
    "revision": "bundled",
    "revision_served": None,
    "revision_served_note": None,
    "chat_template_options": {},
    "dtype": "fp32",
    "source": "bundled-fixture",
    "evidence": "fixture",
    "backend_requested": "wasm",
    "backend_actual": "wasm",
    "adapter": None,
    "transformers_js_version": "4.3.2",
    "onnxruntime_version": "1.31.0-dev",
    "threads": 1,
    "wasm": {"threads": 1, "simd": True, "cross_origin_isolated": True, "threads_allowed": True},
    "cross_origin_isolated": True,
    "user_agent": "HeadlessChrome",
    "flops": None,
    "loads": [LOAD],
    "config_sha256": "ac08f6c43634e14258f8834da0c45ea882226099d17be6f21e78e4094d620ab3",
    "synthetic": None,
    "subject_recipe": None,
}


def ok(kind: str, request_id: int, result: Any, **extra: Any) -> str:
    return json.dumps({"type": kind, "id": request_id, "ok": True, "result": result, **extra})


def err(kind: str, request_id: int, code: str, message: str = "why") -> str:
    return json.dumps(
        {"type": kind, "id": request_id, "ok": False, "error": {"code": code, "message": message}}
    )


class FakeMainThread:
    """Answers like site/model_client.js: generate and provenance, recording requests."""

    def __init__(self, completion: dict[str, Any] | None = None, *, awaitable: bool = False):
        self.completion = completion or COMPLETION
        self.awaitable = awaitable
        self.requests: list[dict[str, Any]] = []

    def answer(self, request_json: str) -> str:
        request = json.loads(request_json)
        self.requests.append(request)
        if request["type"] == "provenance":
            return ok("provenance", request["id"], PROVENANCE)
        timing = {"worker_ms": 20.0, "client_ms": 22.0}
        return ok("generate", request["id"], self.completion, timing=timing)

    def __call__(self, request_json: str) -> Any:
        if not self.awaitable:
            return self.answer(request_json)

        async def later() -> str:
            return self.answer(request_json)

        return later()


def test_generate_request_carries_the_caps() -> None:
    request = generate_request(7, "Say hello.", CHAIN_CALL_CAPS)
    assert request == {
        "type": "generate",
        "id": 7,
        "prompt": "Say hello.",
        "caps": {
            "max_input_tokens": 512,
            "max_new_tokens": 32,
            "max_output_bytes": 1024,
            "timeout_ms": 15_000,
        },
    }


def test_completion_is_validated_field_by_field() -> None:
    completion = completion_from_reply(ok("generate", 1, COMPLETION), 1)
    assert completion.text == "Hello."
    assert completion.finish_reason == "eos"
    assert completion.output_token_ids == (42, 349, 2)
    assert completion.failure is None


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"finish_reason": "stopped"}, "finish_reason"),
        ({"output_tokens": "3"}, "output_tokens"),
        ({"output_tokens": 4}, "does not match"),
        ({"extra": 1}, "unexpected keys"),
        ({"finish_reason": None}, "must say why"),
    ],
)
def test_malformed_completion_becomes_bad_reply(change: dict[str, Any], fragment: str) -> None:
    completion = completion_from_reply(ok("generate", 1, {**COMPLETION, **change}), 1)
    assert completion.finish_reason == "error"
    assert completion.failure is not None
    assert completion.failure.code == "bad_reply"
    assert fragment in completion.failure.message


def test_missing_key_is_refused() -> None:
    data = dict(COMPLETION)
    del data["time_to_first_token_ms"]
    completion = completion_from_reply(ok("generate", 1, data), 1)
    assert completion.failure is not None and "missing keys" in completion.failure.message


@pytest.mark.parametrize(
    ("reply", "fragment"),
    [
        ("not json", "not JSON"),
        ("[1]", "JSON object"),
        (ok("provenance", 1, {}), "does not answer"),
        (ok("generate", 2, COMPLETION), "id 2"),
        (json.dumps({"type": "generate", "id": 1, "ok": "yes"}), "boolean 'ok'"),
        (json.dumps({"type": "generate", "id": 1, "ok": True}), "without a result"),
        (json.dumps({"type": "generate", "id": 1, "ok": False, "error": "x"}), "code, message"),
    ],
)
def test_protocol_violations(reply: str, fragment: str) -> None:
    with pytest.raises(ReplyError, match=fragment):
        parse_reply(reply, "generate", 1)
    completion = completion_from_reply(reply, 1)
    assert completion.failure is not None and completion.failure.code == "bad_reply"


@pytest.mark.parametrize(
    ("code", "finish"),
    [
        ("not_loaded", None),
        ("input_budget", None),
        ("busy", None),
        ("bad_request", None),
        ("timeout", "timeout"),
        ("cancelled", "cancelled"),
        ("terminated", "error"),
        ("worker_error", "error"),
    ],
)
def test_failed_replies_keep_their_code(code: str, finish: str | None) -> None:
    assert finish_for(code) == finish
    completion = completion_from_reply(err("generate", 3, code, "because"), 3)
    assert completion.finish_reason == finish
    assert completion.failure is not None
    assert (completion.failure.code, completion.failure.message) == (code, "because")
    assert completion.text == "" and completion.output_tokens is None


def test_input_budget_completion_from_the_worker_passes() -> None:
    data = {
        **COMPLETION,
        "text": "",
        "finish_reason": None,
        "output_tokens": None,
        "output_token_ids": None,
        "generation_ms": None,
        "time_to_first_token_ms": None,
        "failure": {"code": "input_budget", "message": "prompt has 99 tokens, over 64"},
    }
    completion = completion_from_reply(ok("generate", 1, data), 1)
    assert completion.finish_reason is None
    assert completion.failure is not None and completion.failure.code == "input_budget"
    assert completion.input_tokens == 17


def test_timing_and_bridge_overhead() -> None:
    reply = ok("generate", 1, COMPLETION, timing={"worker_ms": 20.0, "client_ms": 22.5})
    completion, timing = read_generate_reply(reply, 1, 30.0)
    assert completion.text == COMPLETION["text"] and completion.failure is None
    assert (timing.worker_ms, timing.client_ms) == (20.0, 22.5)
    assert timing.bridge_overhead_ms == pytest.approx(10.0)
    _, bare = read_generate_reply(ok("generate", 1, COMPLETION), 1, 30.0)
    assert bare.worker_ms is None and bare.bridge_overhead_ms is None
    broken, none = read_generate_reply("garbage", 1, 5.0)
    assert none.round_trip_ms == 5.0 and none.worker_ms is None
    assert broken.failure is not None and broken.failure.code == "bad_reply"


def test_provenance_round_trips_and_is_strict() -> None:
    provenance = parse_provenance(PROVENANCE)
    assert provenance.evidence == "fixture"
    assert provenance.loads[0].setup_ms == 1256.75
    # a load's place in the trace's chain is stamped by the sweep, not the worker: null here
    unchained = [
        {
            **load,
            "sequence": None,
            "prev_sha256": None,
            "warmup_step_ms": None,
            "stall_window_ms": None,
        }
        for load in PROVENANCE["loads"]
    ]
    assert to_json(provenance) == {**PROVENANCE, "loads": unchained}
    older = {k: v for k, v in PROVENANCE.items() if k not in ("config_sha256", "subject_recipe")}
    assert parse_provenance(older).config_sha256 is None  # traces before it
    assert parse_provenance(older).subject_recipe is None
    without = {k: v for k, v in PROVENANCE.items() if k != "synthetic"}  # what the page sends
    assert parse_provenance(without).synthetic is None
    with pytest.raises(RecordError):
        parse_provenance({**PROVENANCE, "flops": 0})
    with pytest.raises(RecordError):
        parse_provenance({**PROVENANCE, "loads": [{**LOAD, "reason": "whim"}]})
    gpu = {
        "vendor": "google",
        "architecture": "swiftshader",
        "description": None,
        "is_fallback_adapter": True,
        "shader_f16": False,
    }
    assert parse_provenance({**PROVENANCE, "adapter": gpu}).adapter is not None


@pytest.mark.parametrize("awaitable", [False, True])
def test_adapter_generates_through_the_transport(awaitable: bool) -> None:
    main = FakeMainThread(awaitable=awaitable)
    ticks = iter([1.0, 1.05])
    adapter = BrowserModelAdapter(main, clock=lambda: next(ticks))
    completion = run(adapter.generate("Say hello.", CAPS))
    assert completion.text == "Hello." and completion.finish_reason == "eos"
    assert main.requests[0]["type"] == "generate"
    assert main.requests[0]["caps"]["max_new_tokens"] == 8
    assert adapter.last_timing is not None
    assert adapter.last_timing.round_trip_ms == pytest.approx(50.0)
    assert adapter.last_timing.bridge_overhead_ms == pytest.approx(30.0)


def test_adapter_is_a_model_adapter_with_provenance() -> None:
    adapter: ModelAdapter = BrowserModelAdapter(FakeMainThread())
    assert adapter.provenance.model_id == "fixture/tiny-chat"


def test_request_ids_increase_and_must_match() -> None:
    main = FakeMainThread()
    adapter = BrowserModelAdapter(main)
    run(adapter.generate("a", CAPS))
    run(adapter.generate("b", CAPS))
    assert [r["id"] for r in main.requests] == [1, 2]

    def wrong_id(request_json: str) -> str:
        return ok("generate", 999, COMPLETION)

    completion = run(BrowserModelAdapter(wrong_id).generate("a", CAPS))
    assert completion.failure is not None and completion.failure.code == "bad_reply"


def test_provenance_needs_a_synchronous_transport() -> None:
    adapter = BrowserModelAdapter(FakeMainThread(awaitable=True))
    with pytest.raises(TypeError, match="synchronously"):
        _ = adapter.provenance


def test_handle_model_generate() -> None:
    adapter = BrowserModelAdapter(FakeMainThread())
    caps = to_json(CAPS)
    result: Any = to_json(run(handle_model_generate(adapter, {"prompt": "hi", "caps": caps})))
    assert result["completion"]["text"] == "Hello."
    assert result["provenance"]["model_id"] == "fixture/tiny-chat"
    assert result["timing"]["worker_ms"] == 20.0
    with pytest.raises(ValueError, match="prompt"):
        run(handle_model_generate(adapter, {"prompt": 3}))
    with pytest.raises(ValueError, match="caps"):
        run(handle_model_generate(adapter, {"prompt": "x", "caps": {"max_new_tokens": 1}}))


def test_a_bridge_that_raises_is_a_bridge_error_never_a_crash() -> None:
    def broken(request_json: str) -> str:
        raise RuntimeError("the sync channel is gone")

    completion = run(BrowserModelAdapter(broken).generate("hi", CAPS))
    assert completion.failure is not None and completion.failure.code == "bridge_error"
    assert completion.finish_reason == "error"
    assert "sync channel is gone" in completion.failure.message


def test_the_chat_templated_input_must_carry_its_own_hash() -> None:
    assert (
        completion_from_reply(ok("generate", 1, COMPLETION), 1).input_sha256
        == (COMPLETION["input_sha256"])
    )
    wrong = {**COMPLETION, "input_sha256": "0" * 64}
    completion = completion_from_reply(ok("generate", 1, wrong), 1)
    assert completion.failure is not None and completion.failure.code == "bad_reply"
    assert "input_sha256" in completion.failure.message


def test_the_input_hash_counts_a_lone_surrogate_as_the_browser_does() -> None:
    from pyapp.records import text_sha256

    # TextEncoder turns a lone surrogate into U+FFFD (EF BF BD)
    assert text_sha256("a\ud800b") == hashlib.sha256(b"a\xef\xbf\xbdb").hexdigest()


def test_a_generate_reply_is_decoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22 §3: the reply's text is decoded once into its records (the Completion and the
    call's timing both come from that one read)."""
    from pyapp.protocol import model_messages

    decoded: list[str] = []
    real_loads = json.loads

    def counting_loads(text: str, *args: Any, **kwargs: Any) -> Any:
        decoded.append(text)
        return real_loads(text, *args, **kwargs)

    monkeypatch.setattr(model_messages.json, "loads", counting_loads)
    adapter = BrowserModelAdapter(FakeMainThread())
    completion = run(adapter.generate("hi", CAPS))
    replies = [text for text in decoded if '"generate"' in text and '"ok"' in text]
    assert len(replies) == 1
    assert completion.text == COMPLETION["text"]
    assert adapter.last_timing is not None and adapter.last_timing.worker_ms == 20.0


def test_provenance_is_kept_while_the_page_says_its_model_is_the_same() -> None:
    """During a run each event's answer says the page's model client version: while it stays
    the same the provenance read is kept (no call to the page), a new version asks again,
    and outside a run (None) every read asks."""
    main = FakeMainThread()
    adapter = BrowserModelAdapter(main)
    asked = lambda: sum(1 for r in main.requests if r["type"] == "provenance")  # noqa: E731
    adapter.page_model_version = 3
    first = adapter.provenance
    for _ in range(3):
        run(adapter.generate("hi", CAPS))
        assert adapter.provenance is first
    assert asked() == 1
    adapter.page_model_version = 4  # a reload: the page's model client changed
    assert adapter.provenance == first and asked() == 2
    adapter.page_model_version = None
    assert adapter.provenance == adapter.provenance == first and asked() == 4
