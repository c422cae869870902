"""The page answers the requests that are its own (`PAGE_REQUESTS`, site/entry.js) through
window.lab.send, in Chromium, with the bundled tiny-chat TEST FIXTURE on WASM (not model
evidence): page_state follows the boot and the Models panel, model_choose opens the consent
dialog (the consent stays a click) or refuses what the panel does not offer, model_direct
generates in the model worker, sweep_stop cancels a run right after a trial is done,
page_stored reads what IndexedDB holds and model_synthetic uses a synthetic model by spec."""

from __future__ import annotations

import json
from typing import Any

import pytest
from browser_helpers import BOOT_TIMEOUT_MS
from playwright.sync_api import BrowserContext

from pyapp.protocol import (
    DirectGenerated,
    ModelChoose,
    ModelChosen,
    ModelDirect,
    PageStored,
    RunEnded,
    StopAsked,
    SweepRun,
    SweepStart,
    SweepStop,
)
from pyapp.sweep import (
    SweepError,
    consent,
    install_relay,
    page_state,
    relayed,
    send,
    stored,
    stored_document,
    use_synthetic,
    wait_booted,
    wait_catalogue,
    wait_models,
)
from pyapp.tasks import DEFAULT_SEED

pytestmark = pytest.mark.browser

SMALL = {"primitives_per_op": 1, "probe_pairs": 1, "derivatives": 0, "determinants": 1}


def test_the_page_answers_its_own_requests(
    fresh_context: tuple[BrowserContext, object], site_url: str
) -> None:
    context, _ = fresh_context
    page = context.new_page()
    events: list[dict[str, object]] = []
    install_relay(page, lambda text, texts: events.append(json.loads(text)))
    page.goto(site_url, timeout=30_000)

    booted = wait_booted(page, BOOT_TIMEOUT_MS)
    assert booted.app == "ready" and booted.timings.python_ready_ms is not None
    ready = wait_catalogue(page, BOOT_TIMEOUT_MS)
    assert ready.models.state == "idle" and not ready.models.consent_open
    assert ready.models.provenance.model_id == "none" and ready.sweep_running is False

    # a dtype or a model the panel does not offer: nothing is pressed, nothing downloaded
    lacking = send(page, ModelChoose(key="fixture", backend="wasm", dtype="q4f16"))
    assert isinstance(lacking, ModelChosen) and lacking.outcome == "not_offered"
    assert lacking.why and "q4f16" in lacking.why and "q4f16" not in lacking.models.dtypes
    assert not lacking.models.consent_open and lacking.models.state == "idle"
    nothing = send(page, ModelChoose(key="no-such-model", backend="wasm"))
    assert nothing.outcome == "not_offered" and "no-such-model" in nothing.why

    # choosing opens the consent dialog; the consent itself is the click
    chosen = send(page, ModelChoose(key="fixture", backend="wasm"))
    assert isinstance(chosen, ModelChosen) and chosen.outcome == "consent" and chosen.why is None
    assert chosen.models.consent_open and chosen.models.choice == "fixture"
    assert chosen.models.backend == "wasm" and chosen.models.dtype in chosen.models.dtypes
    assert "Model: " in chosen.models.consent_details
    assert page.get_by_role("dialog").is_visible()  # what a person sees
    consent(page)
    assert wait_models(page, "loaded failed", 120_000) == "loaded"
    loaded = page_state(page)
    assert loaded is not None and not loaded.models.consent_open
    assert loaded.models.provenance.evidence == "fixture"
    assert loaded.models.provenance.loads[-1].ok

    # one generation in the model worker, Python not involved
    caps = {"max_input_tokens": 256, "max_new_tokens": 2, "max_output_bytes": 4096,
            "timeout_ms": 60_000}  # fmt: skip
    direct = send(page, ModelDirect(caps=caps, prompt="Say hello."))
    assert isinstance(direct, DirectGenerated) and direct.error is None
    assert direct.completion is not None and direct.worker_ms is not None
    assert direct.client_ms >= direct.worker_ms

    # sweep_stop: asked before the run, the page cancels right after its second trial
    send(page, SweepStart(seed=DEFAULT_SEED, params=SMALL, conditions=("model-only",)))
    stop = send(page, SweepStop(after=2))
    assert isinstance(stop, StopAsked) and stop.running is False
    ended = relayed(page, SweepRun(phase="all"))
    assert isinstance(ended, RunEnded) and ended.cancelled
    done = [e for e in events if e["type"] == "trial_done"]
    assert len(done) == 2 and ended.state.trials == 2
    after = page_state(page)
    assert after is not None and after.trials == 2 and not after.sweep_running

    # page_stored: what IndexedDB holds, Python's texts (Python assembles the trace)
    held = stored(page)
    assert held.sweep is not None and held.sweep.run_id == ended.state.run_id
    assert held.sweep.in_flight is None and not held.sweep.finished
    trace = stored_document(held.sweep)
    assert [t["trial_id"] for t in trace["trials"]] == [e["trial_id"] for e in done]
    assert held.ledger == ()  # no held-out task observed

    # model_synthetic: the panel's "Use synthetic model", by spec (no consent, no download)
    chosen = use_synthetic(page, "correlated:rho=0.9")
    assert chosen.spec is not None and chosen.spec.startswith("correlated:")
    assert chosen.provenance is not None and chosen.provenance.evidence == "synthetic"
    using = page_state(page)
    assert using is not None and using.models.synthetic == chosen.spec
    assert using.models.state == "loaded" and not using.models.consent_open
    with pytest.raises(SweepError) as raised:
        use_synthetic(page, "no-such-structure")
    assert "bad_synthetic_spec" in raised.value.message
    assert use_synthetic(page, None).spec is None
    back = page_state(page)
    assert back is not None and back.models.synthetic is None


def test_mid_run_the_page_stores_the_freeze_beside_its_header_not_a_new_header(
    fresh_context: tuple[BrowserContext, object], site_url: str
) -> None:
    """Phase `all` freezes inside the run: the `frozen` event brings the freeze records beside
    it (never the header), and the page stores them beside the header it had, as Python wrote
    them; what it stores mid-run (`page_stored`, answered by the page while Python runs) is
    the header, the changes and the trials, which Python assembles into a trace with the
    freeze. Once the run ends the page stores Python's header whole and drops the changes."""
    context, _ = fresh_context
    page = context.new_page()
    events: list[tuple[dict[str, Any], dict[str, Any]]] = []
    install_relay(page, lambda text, texts: events.append((json.loads(text), texts)))
    page.goto(f"{site_url}?model_step_delay_ms=40", timeout=30_000)
    wait_booted(page, BOOT_TIMEOUT_MS)
    wait_catalogue(page, BOOT_TIMEOUT_MS)
    assert send(page, ModelChoose(key="fixture", backend="wasm")).outcome == "consent"
    consent(page)
    assert wait_models(page, "loaded failed", 120_000) == "loaded"
    started = send(page, SweepStart(seed=DEFAULT_SEED, params=SMALL, conditions=("model-only",)))
    mid: list[PageStored] = []

    def look() -> None:  # between the relay's polls, while Python runs
        heldout = [e for e, _ in events if e["type"] == "trial_done" and e["phase"] == "heldout"]
        if heldout and not mid:
            mid.append(stored(page))

    ended = relayed(page, SweepRun(phase="all"), on_poll=look, poll_ms=20)
    assert isinstance(ended, RunEnded) and ended.state.stage == "done" and mid
    (frozen,) = [(e, texts) for e, texts in events if e["type"] == "frozen"]
    assert frozen[0]["conditions"] == ["model-only"] and frozen[1]["receipt"]
    assert "header_json" not in frozen[0] and frozen[1]["trial"] is None
    held = mid[0].sweep
    assert held is not None and held.run_id == started.run_id
    assert json.loads(held.header_json)["freezes"] == []  # the header the page had
    assert held.changes_json == (frozen[1]["change"],)  # the freeze, as Python wrote it
    trace = stored_document(held)
    assert [f["condition"] for f in trace["freezes"]] == ["model-only"]
    assert len(trace["trials"]) == len(held.trials_json) >= 6
    after = stored(page).sweep
    assert after is not None and after.changes_json == () and after.finished
    assert json.loads(after.header_json)["freezes"] == trace["freezes"]
