"""How Python drives the page (Playwright): one protocol request at a time through the page's
one entry point, window.lab.send (site/entry.js) — the page's own state and the Models panel
included (`page_state`, `model_choose`, `sweep_stop`, `model_direct`, `page_stored`,
`model_synthetic`, answered by the page;
`pyapp.protocol.messages.PAGE_REQUESTS`). Waiting is polling `page_state`. Shared by the sweep
CLI's driver, the browser tests, the benches and scripts/screenshots.py (benches must not
import tests).

`SEND` is the one line of JavaScript Python evaluates in the lab page for a request. A long
request whose events Python follows (a sweep run) goes through driver.js instead, the relay
`install_relay` puts in the page before it loads: `relayed` sends it with one window.lab.send
call there and polls for the reply, so that the caller notices Ctrl-C or a deadline meanwhile.
The one other thing a driver does in the page is the consent (`consent`): a person's click on
"Download and load" in the consent dialog, never a message (the sweep CLI's `--consent` is
that click).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pyapp.errors import RecordError
from pyapp.protocol import (
    ErrorBody,
    ModelChoose,
    ModelSynthetic,
    PageState,
    PageStateRequest,
    PageStored,
    PageStoredRequest,
    Request,
    RequestError,
    StoredSweep,
    SyntheticChosen,
    parse_result,
    request_message,
)
from pyapp.records import JSON, from_json, stored_trace, to_json
from pyapp.sweep.errors import SweepError

if TYPE_CHECKING:
    from playwright.sync_api import Page

RELAY_JS = Path(__file__).with_name("driver.js")
"""The relay of one long request and its events (installed before the page loads)."""
SEND = "(m) => (window.lab?.send ? window.lab.send(m) : null)"
"""The one line of JavaScript Python evaluates in the lab page: a protocol request's JSON text
through window.lab.send, answered with the reply's JSON text (null while the page has no entry
point yet)."""
FIXTURE_KEY = "fixture"
"""The catalogue key of the tiny-chat TEST FIXTURE (never model evidence)."""
POLL_MS = 100
"""How often `wait_page` asks the page for its state."""
BOOTED = ("ready", "done", "error")
"""`PageState.app` once the boot has ended."""

_ids = itertools.count(1)


def reply_of(sent: Request, request_id: int, reply_text: str) -> Any:
    """The result record of a reply to `sent` (checked against `sent.RESULT`), or the
    ErrorBody of a refused one; `page_failed` when the reply is not the one asked for."""
    reply = json.loads(reply_text)
    if reply.get("type") != sent.TYPE or reply.get("id") != request_id:
        raise SweepError(
            "page_failed",
            f"reply mismatch: sent {sent.TYPE}#{request_id},"
            f" got {reply.get('type')}#{reply.get('id')}",
        )
    try:
        if not reply.get("ok"):
            error: ErrorBody = from_json(ErrorBody, reply.get("error"), "$error")
            return error
        return parse_result(sent.TYPE, reply.get("result"))
    except (RequestError, RecordError) as error:  # a reply that does not fit its record
        raise SweepError("page_failed", error.message) from None


def refused(sent: Request, error: ErrorBody) -> SweepError:
    """The error a refused request raises (`page_refused`, the reply's code in its message)."""
    return SweepError("page_refused", f"{sent.TYPE} failed: {error.code}: {error.message}")


def ask(page: Page, sent: Request) -> Any:
    """Send one request through window.lab.send and return its result record, or the
    ErrorBody when the page or Python refused it; `no_entry_point` while the page has none."""
    request_id = next(_ids)
    reply_text = page.evaluate(SEND, json.dumps(request_message(sent, request_id)))
    if reply_text is None:
        raise SweepError("no_entry_point", "the page has no window.lab.send (yet)")
    return reply_of(sent, request_id, reply_text)


def send(page: Page, sent: Request) -> Any:
    """`ask`, raising `page_refused` when the request is refused."""
    answer = ask(page, sent)
    if isinstance(answer, ErrorBody):
        raise refused(sent, answer)
    return answer


def install_relay(page: Page, on_event: Callable[[str, dict[str, Any]], None]) -> None:
    """Before the page loads: driver.js, and the binding it hands each event's JSON text to,
    with the texts beside it (`EventTexts`: `{trial, change, receipt}`), as Python wrote
    them, while a `relayed` request is answered."""

    def relay(source: object, text: str, texts: dict[str, Any] | None = None, *_: object) -> None:
        on_event(text, texts or {})

    page.expose_binding("__sweepEvent", relay)
    page.add_init_script(path=str(RELAY_JS))


def relayed(
    page: Page, sent: Request, *, on_poll: Callable[[], None] = lambda: None, poll_ms: int = 500
) -> Any:
    """Send one request through the relay (`install_relay`: its events go to `on_event`),
    calling `on_poll` every `poll_ms` until the page answers; the result record or the
    ErrorBody of a refusal. `page_failed` when the page fails meanwhile."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    request_id = next(_ids)
    page.evaluate("(m) => window.__sweep.call(m)", json.dumps(request_message(sent, request_id)))
    while True:
        try:
            page.wait_for_function("() => window.__sweep.callDone()", timeout=poll_ms, polling=100)
            break
        except PlaywrightTimeout:
            on_poll()
        except PlaywrightError as error:
            raise SweepError(
                "page_failed", f"the page failed during {sent.TYPE}: {error}"
            ) from None
    slot = page.evaluate("() => window.__sweep.callResult()")
    if "reply" not in slot:
        raise SweepError(
            "page_failed", f"the page failed during {sent.TYPE}: {slot.get('failure')}"
        )
    return reply_of(sent, request_id, slot["reply"])


def page_state(page: Page) -> PageState | None:
    """Where the page stands (`page_state`), or None while it has no entry point yet (or is
    navigating: a reload)."""
    from playwright.sync_api import Error as PlaywrightError

    try:
        state: PageState = send(page, PageStateRequest())
    except SweepError as error:
        if error.code == "no_entry_point":
            return None
        raise
    except PlaywrightError as error:
        if "context was destroyed" in str(error) or "navigat" in str(error):
            return None
        raise
    return state


def wait_page(
    page: Page, until: Callable[[PageState], bool], timeout_ms: float, what: str
) -> PageState:
    """Poll `page_state` until `until(state)`; `page_timeout` (saying `what` was awaited and
    where the page stood) once `timeout_ms` have passed."""
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        state = page_state(page)
        if state is not None and until(state):
            return state
        if time.monotonic() > deadline:
            where = "no window.lab.send" if state is None else f"{state.app}: {state.status}"
            raise SweepError(
                "page_timeout", f"waited {timeout_ms / 1000:g} s for {what}; the page: {where}"
            )
        page.wait_for_timeout(POLL_MS)  # Playwright keeps delivering the page's events


def wait_booted(page: Page, timeout_ms: float) -> PageState:
    """Wait until the boot has ended (ready, done or error)."""
    return wait_page(page, lambda s: s.app in BOOTED, timeout_ms, "the boot to end")


def wait_catalogue(page: Page, timeout_ms: float = 30_000) -> PageState:
    """Wait until the Models panel has its catalogue and the backend check has answered."""
    return wait_page(
        page,
        lambda s: s.models.catalogue_ready and s.models.backend_checked,
        timeout_ms,
        "the model catalogue",
    )


def wait_models(page: Page, states: str, timeout_ms: float) -> str:
    """Wait until the Models panel's state is one of `states` (space-separated); return it."""
    wanted = states.split()
    reached = wait_page(page, lambda s: s.models.state in wanted, timeout_ms, f"a model {states}")
    return reached.models.state


def consent(page: Page) -> None:
    """The consent: a person's click on "Download and load" in the open consent dialog."""
    page.get_by_role("button", name="Download and load").click()


def load_from_catalogue(
    page: Page,
    timeout_ms: float,
    *,
    key: str = FIXTURE_KEY,
    backend: Literal["webgpu", "wasm"] = "wasm",
    dtype: str | None = None,
    before_consent: Callable[[], None] | None = None,
) -> str:
    """Load catalogue entry `key` (by default the tiny-chat TEST FIXTURE) on `backend` (with
    `dtype`, or the panel's default): `model_choose`, then "Download and load" in the consent
    dialog (`before_consent` runs while the dialog is open). Returns how the load ended,
    `loaded` or `failed` (`page_state`'s `models.status` says why)."""
    wait_catalogue(page, timeout_ms)
    chosen = send(page, ModelChoose(key=key, backend=backend, dtype=dtype))
    if chosen.outcome == "refused":
        return "failed"
    if chosen.outcome == "consent":
        if before_consent is not None:
            before_consent()
        consent(page)
    return wait_models(page, "loaded failed", timeout_ms)


def stored(page: Page) -> PageStored:
    """What this browser's IndexedDB holds (`page_stored`): the current (else latest) sweep,
    its status and stored texts (`stored_trace` of `pyapp.records.stored` assembles them),
    and the ledger."""
    answer: PageStored = send(page, PageStoredRequest())
    return answer


def stored_document(sweep: StoredSweep) -> dict[str, JSON]:
    """The trace of a sweep as the page stores it (`stored`), assembled by Python's one rule
    (`pyapp.records.stored.stored_trace`: the page assembles none), as a JSON document."""
    trace = stored_trace(sweep.header_json, sweep.trials_json, sweep.changes_json)
    document = to_json(trace)
    assert isinstance(document, dict)
    return document


def use_synthetic(page: Page, spec: str | None) -> SyntheticChosen:
    """Use the synthetic model `spec` (`NAME:key=value,...`; None: the loaded model again), as
    the panel's "Use synthetic model (no download)" does (`model_synthetic`)."""
    chosen: SyntheticChosen = send(page, ModelSynthetic(spec=spec))
    return chosen
