"""The Python worker's half of the model mailbox: a generate call without the page's main
thread in its path (issue 22 §3; the JavaScript half and the whole protocol are described in
site/common/model_mailbox.js, the page's in site/model_direct.js).

    Mailbox(js, convert).call(request_json, request_id, timeout_ms) -> reply_json | None

One SharedArrayBuffer (growable up to `MAX_BYTES`), created here and posted once to the page
(`{model_mailbox: buffer}`), which hands it to its model worker. Layout: Int32 slots `SLOT`,
then from `HEADER_BYTES` the request or the reply as UTF-8 JSON of `length` bytes. A call
writes the request, sets `state` to (seq, request), wakes the model worker
(`Atomics.notify`) and blocks (`Atomics.wait`: the sweep never yields to the event loop, so
no message could reach it) until `state` is (seq, replied); exactly one side answers
(the model worker, or the page where it must: see site/common/model_mailbox.js).

`call` answers None, and the caller uses PyScript's sync channel instead, until the page has
attached the mailbox (`attached`) and for a request too large for it. `js` is the worker's
global scope (Pyodide's `js`) and `convert` turns a dict into a JS object (`to_js`); tests
pass stand-ins for both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SLOT = {
    "state": 0,
    "attached": 1,
    "direct_until": 2,
    "generations": 3,
    "length": 4,
    "request_id": 5,
    "timeout_ms": 6,
    "direct": 7,
}
"""The Int32 slots (site/common/model_mailbox.js `SLOT`; tests/test_model_mailbox.py checks
they agree)."""
PHASE = {"idle": 0, "request": 1, "worker": 2, "page": 3, "writing": 4, "replied": 5}
"""The phases of `state`'s low three bits (site/common/model_mailbox.js `PHASE`)."""
HEADER_BYTES = 64
"""Where the request or the reply starts."""
SEQ_MASK = 0x0FFFFFFF
"""A request's sequence number, kept in `state`'s upper bits."""
INITIAL_BYTES = 1 << 20
MAX_BYTES = 64 << 20
"""The buffer's size at first and at most (a writer grows it for a text that does not fit)."""


def state_of(seq: int, phase: str) -> int:
    """The `state` slot's value for request `seq` in `phase`."""
    return ((seq & SEQ_MASK) << 3) | PHASE[phase]


class Mailbox:
    """The mailbox Python shares with the page and its model worker."""

    def __init__(self, js: Any, convert: Callable[[dict[str, Any]], Any]) -> None:
        self._js = js
        atomics = js.Atomics  # looked up once: every lookup crosses Pyodide's FFI
        self._load, self._store, self._wait = atomics.load, atomics.store, atomics.wait
        self._notify = atomics.notify
        self._bytes = js.Uint8Array.new
        self._buffer = js.SharedArrayBuffer.new(
            INITIAL_BYTES, convert({"maxByteLength": MAX_BYTES})
        )
        self._slots = js.Int32Array.new(self._buffer, 0, HEADER_BYTES // 4)
        self._seq = 0
        self.calls = 0
        """Generate calls made through the mailbox."""
        js.postMessage(convert({"model_mailbox": self._buffer}))

    def attached(self) -> bool:
        """Whether the page has attached the mailbox (calls go through it from then on)."""
        return bool(self._load(self._slots, SLOT["attached"]))

    def call(self, request_json: str, request_id: int, timeout_ms: int) -> str | None:
        """Send one generate request and wait for its reply; None (nothing sent) before the
        page attached the mailbox or for a request too large for it."""
        data = request_json.encode("utf-8")
        if not self.attached() or not self._fits(len(data)):
            return None
        slots, store = self._slots, self._store
        self._bytes(self._buffer, HEADER_BYTES, len(data)).assign(data)
        store(slots, SLOT["length"], len(data))
        store(slots, SLOT["request_id"], request_id)
        store(slots, SLOT["timeout_ms"], timeout_ms)
        self._seq = self._seq % SEQ_MASK + 1
        store(slots, SLOT["state"], state_of(self._seq, "request"))
        self._notify(slots, SLOT["state"])
        replied = state_of(self._seq, "replied")
        while (seen := self._load(slots, SLOT["state"])) != replied:
            self._wait(slots, SLOT["state"], seen)
        length = self._load(slots, SLOT["length"])
        reply = self._bytes(self._buffer, HEADER_BYTES, length).to_bytes()
        self.calls += 1
        return bytes(reply).decode("utf-8")

    def _fits(self, size: int) -> bool:
        needed = HEADER_BYTES + size
        if needed <= self._buffer.byteLength:
            return True
        if needed > MAX_BYTES:
            return False
        self._buffer.grow(needed)
        return True
