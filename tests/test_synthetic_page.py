"""A synthetic model chosen in the page (`synthetic_select`) runs in the Python worker through
the session's own requests, with the SAME `SyntheticAdapter` as `python -m pyapp simulate`:
driven natively through `bridge.handle_async` with no model loaded at all, a page run records
the very trials and verdicts a native run records for the same spec, seed and parameters,
labelled `synthetic` (never model evidence); a resumed run too."""

import json

import pytest
from asyncrun import in_thread
from test_session import Page, call, document

from pyapp.browser import Session, bridge
from pyapp.protocol import constants
from pyapp.records import EVIDENCE_NOTES, to_json
from pyapp.synthetic import STRUCTURES, parse_spec, run_seed
from pyapp.tasks import preset_params
from pyapp.verify import reproduce_predictions
from pyapp.verify.reproduce import reproduce

CONDITIONS = ["supplied-program", "model-only", "model-program", "controlled-chain"]
MOMENTS = ("started_at", "ended_at", "prev_sha256")
"""The wall-clock moments of a trial, and its hash-chain link (which hashes the record before
it, moments included): the only fields two runs of one spec may differ in."""


@pytest.fixture(autouse=True)
def fresh_session(monkeypatch):
    monkeypatch.setattr(bridge, "SESSION", Session())


def comparable(trials, *, sequence=True):
    dropped = MOMENTS if sequence else (*MOMENTS, "sequence")
    return [{k: v for k, v in t.items() if k not in dropped} for t in trials]


def native(spec_text, seed=1729, preset="design"):
    return in_thread(run_seed, parse_spec(spec_text), preset_params(preset, seed), CONDITIONS)


def start(page, spec_text, seed=1729):
    selected = call(page, "synthetic_select", spec=spec_text)
    assert selected["ok"], selected
    started = call(page, "sweep_start", seed=seed, params={}, conditions=CONDITIONS)
    assert started["ok"], started
    return selected["result"], started["result"]


@pytest.mark.parametrize("structure", STRUCTURES)
def test_every_catalogue_entry_is_synthetic_never_model_evidence(structure):
    """The page's catalogue group lists exactly the structures; each is labelled synthetic."""
    assert list(constants()["SYNTHETIC_MODELS"]) == list(STRUCTURES)
    assert "not model evidence" in constants()["EVIDENCE_LABELS"]["synthetic"]
    selected, state = start(Page(), structure)
    assert selected["spec"] == structure
    assert selected["provenance"]["evidence"] == "synthetic"
    assert selected["provenance"]["source"] == "synthetic"
    assert "not model evidence" in selected["note"]
    assert state["evidence"] == "synthetic" and state["model_id"] == f"synthetic/{structure}"


def test_a_page_run_records_what_simulate_records():
    """Run all (measure, freeze, held-out) in the page's session, seed 1729, preset `design`:
    the trace re-derives, every model trial is `synthetic`, and trials and verdicts are
    those of `run_seed` for the same spec, seed and parameters."""
    page = Page()  # no model loaded: the synthetic model needs none
    start(page, "size-dependent")
    reply = call(page, "sweep_run", phase="all")
    assert reply["ok"] and reply["result"]["state"]["stage"] == "done", reply
    trace = document(page, "sweep_trace", "trace")
    predictions = document(page, "sweep_predictions", "predictions")
    assert reproduce(trace) == [] and reproduce_predictions(trace, predictions) == []
    assert trace["model"]["evidence"] == "synthetic" and predictions["evidence"] == "synthetic"
    assert {t["evidence"] for t in trace["trials"] if t["condition"] != "supplied-program"} == {
        "synthetic"
    }
    assert trace["summary"]["model_evidence_trials"] == 0
    assert trace["environment"]["clock"]["name"].startswith("synthetic virtual clock")

    expected = native("size-dependent")
    assert comparable(trace["trials"]) == comparable(to_json(expected.trace.trials))
    # the frozen profiles' hashes cover the run's id and moments; their predictions do not
    assert [c["scores"] for c in predictions["conditions"]] == [
        to_json(c.scores) for c in expected.predictions.conditions
    ]
    verdicts = {t["correct"] for t in trace["trials"] if t["condition"] != "supplied-program"}
    assert verdicts == {True, False}  # a non-degenerate run: some model trials right, some wrong


def test_a_cancelled_and_resumed_page_run_still_records_what_simulate_records():
    page = Page()
    start(page, "correlated:seed=3")
    page.cancel_after = 5
    first = call(page, "sweep_run", phase="all")
    assert first["ok"] and first["result"]["cancelled"], first
    # the page reloads: a new worker session, the synthetic model chosen again, the stored texts
    bridge.SESSION = Session()
    page.cancel, page.cancel_after = False, None
    assert call(page, "synthetic_select", spec="correlated:seed=3")["ok"]
    resumed = call(page, "sweep_resume", **page.stored())
    assert resumed["ok"], resumed
    done = call(page, "sweep_run", phase="all")
    assert done["ok"] and done["result"]["state"]["stage"] == "done", done
    trace = document(page, "sweep_trace", "trace")
    assert reproduce(trace) == []
    expected = native("correlated:seed=3")
    # a Cancel's interruption takes a place in the timeline: everything else is the same
    assert comparable(trace["trials"], sequence=False) == comparable(
        to_json(expected.trace.trials), sequence=False
    )


def test_another_spec_is_another_model():
    page = Page()
    start(page, "independent")
    assert call(page, "synthetic_select", spec="independent:p_add=0.5")["ok"]
    refused = call(page, "sweep_run", phase="measure")
    assert refused["error"]["code"] == "model_changed", refused


def test_bad_specs_journal_and_deselecting():
    page = Page()
    bad = call(page, "synthetic_select", spec="quadratic")
    assert bad["error"]["code"] == "bad_synthetic_spec" and "quadratic" in bad["error"]["message"]
    bad = call(page, "synthetic_select", spec="independent:p_add=2")
    assert bad["error"]["code"] == "bad_synthetic_spec"
    start(page, "independent")
    journal = call(page, "journal_generate", prompt="hello")
    assert journal["error"]["code"] == "bad_request" and "synthetic" in journal["error"]["message"]
    cleared = call(page, "synthetic_select", spec=None)
    assert cleared["ok"] and cleared["result"]["spec"] is None
    refused = call(page, "sweep_start", seed=1729)
    assert refused["error"]["code"] == "not_loaded"  # back to the page's model: none loaded


def test_a_synthetic_trace_relabelled_model_evidence_is_refused():
    trace = to_json(native("independent", seed=5).trace)
    relabelled = json.loads(json.dumps(trace))
    relabelled["model"]["evidence"] = "model"
    for trial in relabelled["trials"]:
        if trial["evidence"] == "synthetic":
            trial["evidence"], trial["evidence_note"] = "model", EVIDENCE_NOTES["model"]
    found = [m.message for m in reproduce(relabelled)]
    assert any("synthetic model, never 'model' evidence" in m for m in found), found
