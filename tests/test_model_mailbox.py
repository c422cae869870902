"""The model mailbox: Python's generate calls reach the model worker without the page's main
thread in their path, the page supervising (issue 22 §3; site/common/model_mailbox.js).

* Both halves write one layout (`SLOT`, `PHASE`, `HEADER_BYTES`).
* Python's half (pyapp/browser/mailbox.py) natively, over a stand-in for the browser's
  shared memory and Atomics with a thread as the model worker: it waits for the page to attach
  the mailbox (None until then: the adapter falls back to PyScript's sync channel), sends a
  request, blocks until its reply.
* The page's half (site/model_direct.js) and site/model_client.js under Node on a fake
  clock (tests/model_mailbox_node.mjs), with a scripted model worker that serves the mailbox:
  the direct path is taken once attached; a fault hook's generation, a pending load and no
  model go through the page as before; a hang is judged and the reloaded worker gets the
  mailbox again; a hard stop racing the worker's reply ends in exactly one reply.
"""

from __future__ import annotations

import importlib.util
import json
import re
import threading
from pathlib import Path
from typing import Any

from asyncrun import run
from nodescript import run_node_script
from test_model_messages import LOAD_RESULT, SPEC

from pyapp.browser import BrowserModelAdapter, completion_from_reply, mailbox
from pyapp.protocol import model_messages as mm
from pyapp.records import Caps, to_json

ROOT = Path(__file__).resolve().parents[1]
CALL = Caps(max_input_tokens=512, max_new_tokens=32, max_output_bytes=1024, timeout_ms=15_000)


# ---- one layout ------------------------------------------------------------------------------


def js_table(text: str, name: str) -> dict[str, int]:
    found = re.search(rf"export const {name} = Object\.freeze\((\{{[^}}]*\}})\)", text)
    assert found is not None, name
    return {key: int(value) for key, value in re.findall(r"(\w+): (\d+)", found.group(1))}


def test_python_and_javascript_write_one_layout() -> None:
    text = (ROOT / "site" / "common" / "model_mailbox.js").read_text(encoding="utf-8")
    assert js_table(text, "SLOT") == mailbox.SLOT
    assert js_table(text, "PHASE") == mailbox.PHASE
    assert f"export const HEADER_BYTES = {mailbox.HEADER_BYTES};" in text
    assert f"export const SEQ_MASK = 0x{mailbox.SEQ_MASK:08x};" in text
    assert len(mailbox.SLOT) * 4 <= mailbox.HEADER_BYTES


# ---- Python's half, natively -------------------------------------------------------------------


class SharedBuffer:
    def __init__(self, size: int, options: dict[str, int]) -> None:
        self.data = bytearray(size)
        self.maxByteLength = options["maxByteLength"]

    @property
    def byteLength(self) -> int:
        return len(self.data)

    def grow(self, size: int) -> None:
        assert len(self.data) <= size <= self.maxByteLength
        self.data.extend(bytes(size - len(self.data)))


class Slots:
    def __init__(self, buffer: SharedBuffer, offset: int, length: int) -> None:
        self.buffer, self.offset, self.length = buffer, offset, length


class Bytes:
    def __init__(self, buffer: SharedBuffer, offset: int, length: int) -> None:
        self.buffer, self.offset, self.length = buffer, offset, length

    def assign(self, data: bytes) -> None:
        assert len(data) == self.length
        self.buffer.data[self.offset : self.offset + self.length] = data

    def to_bytes(self) -> bytes:
        return bytes(self.buffer.data[self.offset : self.offset + self.length])


class Atomics:
    """Atomics over `Slots`, one lock for all (a stand-in for the browser's)."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.waits = 0

    def _at(self, slots: Slots, index: int) -> slice:
        start = slots.offset + 4 * index
        return slice(start, start + 4)

    def load(self, slots: Slots, index: int) -> int:
        with self.changed:
            return int.from_bytes(slots.buffer.data[self._at(slots, index)], "little", signed=True)

    def store(self, slots: Slots, index: int, value: int) -> None:
        with self.changed:
            slots.buffer.data[self._at(slots, index)] = value.to_bytes(4, "little", signed=True)

    def notify(self, slots: Slots, index: int) -> None:
        with self.changed:
            self.changed.notify_all()

    def wait(self, slots: Slots, index: int, value: int) -> str:
        with self.changed:
            self.waits += 1
            if self.load(slots, index) != value:
                return "not-equal"
            assert self.changed.wait(timeout=10), "nobody answered"
            return "ok"


class Js:
    """The few globals of a worker the mailbox uses."""

    def __init__(self) -> None:
        self.Atomics = Atomics()
        self.posted: list[dict[str, Any]] = []
        self.SharedArrayBuffer = type("SAB", (), {"new": staticmethod(SharedBuffer)})
        self.Int32Array = type("I32", (), {"new": staticmethod(Slots)})
        self.Uint8Array = type("U8", (), {"new": staticmethod(Bytes)})

    def postMessage(self, message: dict[str, Any]) -> None:
        self.posted.append(message)


def model_worker(js: Js, box: SharedBuffer, answers: int) -> threading.Thread:
    """A thread that answers `answers` requests as the model worker would (echoing the id)."""
    slots = Slots(box, 0, mailbox.HEADER_BYTES // 4)
    atomics = js.Atomics

    def serve() -> None:
        for seq in range(1, answers + 1):
            while atomics.load(slots, 0) != mailbox.state_of(seq, "request"):
                atomics.wait(slots, 0, atomics.load(slots, 0))
            length = atomics.load(slots, mailbox.SLOT["length"])
            request = json.loads(Bytes(box, mailbox.HEADER_BYTES, length).to_bytes())
            assert atomics.load(slots, mailbox.SLOT["request_id"]) == request["id"]
            assert atomics.load(slots, mailbox.SLOT["timeout_ms"]) == request["caps"]["timeout_ms"]
            atomics.store(slots, 0, mailbox.state_of(seq, "worker"))
            completion = {
                "text": request["prompt"][::-1],
                "finish_reason": "eos",
                "input_tokens": 3,
                "output_tokens": 1,
                "output_token_ids": [7],
                "generation_ms": 2.0,
                "time_to_first_token_ms": 1.0,
                "failure": None,
                "input_text": None,
                "input_sha256": None,
            }
            timing = {"worker_ms": 2.5, "client_ms": 3.0, "load_wait_ms": 0}
            reply = {"type": "generate", "id": request["id"], "ok": True, "result": completion}
            data = json.dumps({**reply, "timing": timing}).encode()
            Bytes(box, mailbox.HEADER_BYTES, len(data)).assign(data)
            atomics.store(slots, mailbox.SLOT["length"], len(data))
            atomics.store(slots, mailbox.SLOT["direct"], seq)
            atomics.store(slots, 0, mailbox.state_of(seq, "replied"))
            atomics.notify(slots, 0)

    return threading.Thread(target=serve, daemon=True)


def test_pythons_half_falls_back_until_attached_then_waits_for_the_reply() -> None:
    js = Js()
    box = mailbox.Mailbox(js, lambda value: value)
    [posted] = js.posted
    buffer: SharedBuffer = posted["model_mailbox"]
    assert buffer.byteLength == mailbox.INITIAL_BYTES and buffer.maxByteLength == mailbox.MAX_BYTES
    sync: list[str] = []

    def main_thread(request_json: str) -> str:
        sync.append(json.loads(request_json)["type"])
        return json.dumps(
            {
                "type": "generate",
                "id": 1,
                "ok": False,
                "error": {"code": "not_loaded", "message": "none"},
            }
        )

    adapter = BrowserModelAdapter(main_thread, direct=box.call)
    first = run(adapter.generate("before", CALL))
    assert first.failure is not None and first.failure.code == "not_loaded"
    assert sync == ["generate"] and box.calls == 0  # not attached: the sync channel

    js.Atomics.store(Slots(buffer, 0, 16), mailbox.SLOT["attached"], 1)
    worker = model_worker(js, buffer, 2)
    worker.start()
    second = run(adapter.generate("abc", CALL))
    third = run(adapter.generate("x" * (2 * mailbox.INITIAL_BYTES), CALL))  # grows the buffer
    worker.join(timeout=10)
    assert sync == ["generate"] and box.calls == 2
    assert second.text == "cba" and second.finish_reason == "eos"
    assert third.text == "x" * (2 * mailbox.INITIAL_BYTES)
    assert buffer.byteLength > mailbox.INITIAL_BYTES
    assert adapter.last_timing is not None and adapter.last_timing.worker_ms == 2.5
    assert second.bridge_ms is not None  # the round trip less the serving side's time


def test_a_request_too_large_for_the_mailbox_takes_the_sync_channel() -> None:
    js = Js()
    box = mailbox.Mailbox(js, lambda value: value)
    buffer: SharedBuffer = js.posted[0]["model_mailbox"]
    js.Atomics.store(Slots(buffer, 0, 16), mailbox.SLOT["attached"], 1)
    assert box.call("x" * mailbox.MAX_BYTES, 1, 1000) is None
    assert box.calls == 0 and buffer.byteLength == mailbox.INITIAL_BYTES


def test_the_worker_glue_makes_the_adapter_with_the_mailbox() -> None:
    spec = importlib.util.spec_from_file_location(
        "lab_worker", ROOT / "site" / "python_worker" / "lab_worker.py"
    )
    assert spec is not None and spec.loader is not None
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    assert worker.Mailbox is mailbox.Mailbox


# ---- the page's half, under Node ---------------------------------------------------------------


def run_mailbox_client(scenarios: list[dict[str, Any]]) -> list[Any]:
    load_result = {**LOAD_RESULT, "warmup_step_ms": [40.0, 5.0, 6.0]}
    cases = {"spec": SPEC, "load_result": load_result, "scenarios": scenarios}
    results: list[Any] = run_node_script("model_mailbox_node.mjs", cases)
    return results


def gen(worker: dict[str, Any]) -> dict[str, Any]:
    return {"generate": {"caps": to_json(CALL), "worker": worker}}


QUICK = gen({"reply_after_ms": 5})
LOAD = {"load": {"ms": 500}}
ATTACH = {"attach": True}
HARD_STOP_AT = CALL.timeout_ms + mm.GRACE_MS


def code(reply: dict[str, Any]) -> str:
    """What Python reads in the reply: "ok", or its failure's code."""
    reply = reply.get("sync", reply)
    completion = completion_from_reply(json.dumps(reply), reply["id"])
    return "ok" if completion.failure is None else completion.failure.code


def test_once_attached_generate_calls_skip_the_main_thread() -> None:
    [before, attached_first] = run_mailbox_client(
        [
            {"steps": [LOAD, QUICK, ATTACH, QUICK, QUICK]},
            {"steps": [ATTACH, QUICK, LOAD, QUICK, QUICK, QUICK]},
        ]
    )
    # before the page attached the mailbox: the sync channel (through the main thread)
    assert [("sync" in reply, code(reply)) for reply in before["replies"]] == [
        (True, "ok"),
        (False, "ok"),
        (False, "ok"),
    ]
    assert before["counts"] == {"sync": 1, "page": 0, "direct": 2}
    # no model yet: the page answers not_loaded, as before; then the worker answers
    assert [code(reply) for reply in attached_first["replies"]] == ["not_loaded", "ok", "ok", "ok"]
    assert attached_first["counts"] == {"sync": 0, "page": 1, "direct": 3}
    for reply in attached_first["replies"][1:]:
        mm.parse_reply(json.dumps(reply), "generate", reply["id"])  # fits the channel
        assert reply["timing"]["load_wait_ms"] == 0


def test_a_fault_hooks_generation_goes_through_the_page_and_counts_alike() -> None:
    faults = "bad_reply@2,reload_fail@3"
    [result] = run_mailbox_client(
        [{"faults": faults, "steps": [ATTACH, LOAD, QUICK, QUICK, QUICK, QUICK, QUICK, QUICK]}]
    )
    # g1 direct; g2 the page's (bad_reply); g3 the page's, then its reload fails; the next
    # call finds no model (not_loaded, no generation; a reload starts); the one after waits
    # for that reload (g4, through the page, as the gate was shut); g5 direct again
    assert [code(reply) for reply in result["replies"]] == [
        "ok",
        "bad_reply",
        "ok",
        "not_loaded",
        "ok",
        "ok",
    ]
    assert result["counts"] == {"sync": 0, "page": 4, "direct": 2}
    assert [load["reason"] for load in result["loads"]] == [
        "consent",
        "reload-after-terminate",
        "reload",
    ]
    assert [load["ok"] for load in result["loads"]] == [True, False, True]
    assert result["replies"][4]["timing"]["load_wait_ms"] > 0


def test_a_hung_direct_generation_is_judged_and_the_reloaded_worker_gets_the_mailbox() -> None:
    [result] = run_mailbox_client([{"steps": [ATTACH, LOAD, gen({"hang": True}), QUICK, QUICK]}])
    stalled, after_reload, direct = result["replies"]
    assert code(stalled) == "stalled" and stalled["hard_stop"]["judged"] == "stalled"
    assert stalled["hard_stop"]["deadline_ms"] == CALL.timeout_ms
    assert code(after_reload) == "ok" and after_reload["timing"]["load_wait_ms"] > 0
    assert code(direct) == "ok" and direct["result"]["output_tokens"] == 2  # the worker's own
    assert result["spawned"] == 2  # the reloaded worker served it: it got the mailbox
    assert result["counts"] == {"sync": 0, "page": 1, "direct": 1}


def test_a_hard_stop_racing_the_workers_reply_ends_in_exactly_one_reply() -> None:
    worker_first, page_first = run_mailbox_client(
        [
            {"steps": [ATTACH, LOAD, gen({"race_ms": HARD_STOP_AT}), QUICK]},
            {"steps": [ATTACH, LOAD, gen({"race_ms_late": HARD_STOP_AT}), QUICK]},
        ]
    )
    # the worker's reply was written first: the page's hard stop finds it answered and stops
    # nothing (no termination, no reload)
    raced = worker_first["replies"][0]
    assert code(raced) == "ok" and "hard_stop" not in raced
    assert worker_first["answers"][0] == {"seq": 1, "won": True}
    assert [load["reason"] for load in worker_first["loads"]] == ["consent"]
    assert worker_first["spawned"] == 1 and worker_first["now"] >= HARD_STOP_AT
    # the page's hard stop was first: its judgement is the reply, the worker's is dropped
    stopped = page_first["replies"][0]
    assert code(stopped) == "stalled" and stopped["hard_stop"]["silent_ms"] == HARD_STOP_AT
    assert page_first["answers"][0] == {"seq": 1, "won": False}
    assert [load["reason"] for load in page_first["loads"]] == ["consent", "reload-after-terminate"]
    for result in (worker_first, page_first):
        assert code(result["replies"][1]) == "ok"


def test_a_worker_that_dies_under_a_direct_generation_fails_it_and_is_reloaded() -> None:
    [result] = run_mailbox_client(
        [{"steps": [ATTACH, LOAD, gen({"crash_after_ms": 20}), QUICK, QUICK]}]
    )
    died, after_reload, direct = result["replies"]
    assert code(died) == "worker_error" and "stand-in crash" in died["error"]["message"]
    assert [load["reason"] for load in result["loads"]] == ["consent", "reload-after-terminate"]
    assert code(after_reload) == "ok" and after_reload["timing"]["load_wait_ms"] > 0
    assert code(direct) == "ok" and result["spawned"] == 2
    assert result["counts"] == {"sync": 0, "page": 1, "direct": 1}


def test_a_token_event_before_the_page_saw_the_worker_take_the_request_counts() -> None:
    """The worker's first token can reach the page before the state change does: it starts
    the supervision (Cancel waits for it; the stall judgement counts it)."""
    [result] = run_mailbox_client(
        [{"steps": [ATTACH, LOAD, gen({"hang": True, "first_token": True}), QUICK]}]
    )
    stalled = result["replies"][0]
    assert code(stalled) == "stalled"
    assert stalled["hard_stop"]["tokens"] == 1 and stalled["hard_stop"]["silent_ms"] == HARD_STOP_AT
