"""Integrity under faults and changes (issue 11): infrastructure failures never become
observations, a sweep is bound to one model identity, the timeline, the chain's prompts and
limits, and every `reproduce` reproducer of the issue's section 9 (each a mismatch, exit 1).

Scripted adapters are test fixtures: nothing here is model evidence."""

from __future__ import annotations

import copy
import json
from dataclasses import asdict, replace
from pathlib import Path

import pytest
from asyncrun import run
from promptread import chain_value
from tracecheck import as_trace_2, assert_valid_trace

from pyapp.cli.main import main as cli_main
from pyapp.conditions import kind_of, run_chain
from pyapp.errors import PhaseError
from pyapp.experiment import PAUSE_AFTER, Sweep, freeze, run_phase
from pyapp.predict import score_trace
from pyapp.records import (
    DEFAULT_ROUTE_LIMITS,
    ModelFailure,
    ModelLoad,
    ScriptedAdapter,
    ScriptedReply,
    Trace,
    WasmInfo,
    finish_for,
    identity_difference,
    read_trace,
    to_json,
)
from pyapp.tasks import TaskParams, generate
from pyapp.verify import reproduce_predictions
from pyapp.verify.reproduce import reproduce

TASKS = {t.id: t for t in generate()}
CONDITIONS = ("supplied-program", "model-only", "model-program", "controlled-chain")


def answer(prompt: str, caps: object) -> ScriptedReply:
    """Right on every chain call, `7` to everything else (a fixture, not a model)."""
    if prompt.startswith("You are given two integer registers."):
        return ScriptedReply(str(chain_value(prompt)[0]), input_tokens=40, output_tokens=3)
    return ScriptedReply("7", input_tokens=100, output_tokens=1)


class FlakyAdapter(ScriptedAdapter):
    """A scripted model whose generations fail with `code` whenever `broken(n)` holds for
    the n-th generation (from 1): the infrastructure, not the model, fails."""

    def __init__(self, broken, code: str = "not_loaded") -> None:
        super().__init__(answer)
        self.broken = broken
        self.code = code
        self.count = 0

    async def generate(self, prompt, caps):
        self.count += 1
        if self.broken(self.count):
            self.calls.append((prompt, caps))
            finish = finish_for(self.code)  # as the page's client writes it
            return replace(
                await super().generate(prompt, caps),
                text="",
                finish_reason=finish,
                output_tokens=None,
                generation_ms=None if finish is None else 1.0,
                failure=ModelFailure(self.code, f"injected {self.code}"),
            )
        return await super().generate(prompt, caps)


def measured_and_frozen(model: ScriptedAdapter, conditions=CONDITIONS) -> Sweep:
    sweep = Sweep(params=TaskParams(), conditions=conditions, model=model.provenance)
    assert run(run_phase(sweep, "measure", model)) == "finished"
    freeze(sweep)
    return sweep


def scored_codes(trace: Trace) -> set[str]:
    return {t.failure.code for t in trace.trials if t.failure is not None}


# ---- 1. infrastructure failures are interruptions, never observations -----------------


def test_failed_held_out_generations_are_interruptions_attempted_again() -> None:
    model = FlakyAdapter(lambda n: False)
    sweep = measured_and_frozen(model, ("model-only",))
    first = model.count
    model.broken = lambda n: n in (first + 1, first + 2)  # two failures, then it works
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    trace = sweep.trace()
    assert [i.code for i in trace.interruptions] == ["not_loaded", "not_loaded"]
    assert all(i.reason == "infrastructure" and i.partial is not None for i in trace.interruptions)
    assert trace.interruptions[0].trial_id == trace.interruptions[1].trial_id
    assert not any(kind_of(code) == "infrastructure" for code in scored_codes(trace))
    heldout = [t for t in trace.trials if TASKS[t.task_id].split == "heldout"]
    assert len(heldout) == 6  # every held-out task observed exactly once
    document = to_json(trace)
    assert_valid_trace(document)
    assert reproduce(document) == []
    counts = score_trace(trace).conditions[0].interrupted
    assert counts is not None
    assert (counts.total, counts.infrastructure, counts.attempted_again) == (2, 2, 1 + 1)


@pytest.mark.parametrize("code", ["not_loaded", "busy", "worker_error", "bad_reply"])
def test_three_in_a_row_pause_the_sweep_and_nothing_is_scored(code: str) -> None:
    """The issue's observation: 6 of 6 held-out tasks scored `not_loaded`. Now none is."""
    model = FlakyAdapter(lambda n: False, code)
    sweep = measured_and_frozen(model, ("model-only",))
    before = len(sweep.trials)
    model.broken = lambda n: True
    assert run(run_phase(sweep, "heldout", model)) == "paused"
    assert len(sweep.trials) == before  # no held-out observation
    assert sweep.paused is not None and sweep.paused.code == code
    assert len(sweep.interruptions) == PAUSE_AFTER
    assert reproduce(to_json(sweep.trace())) == []
    # resumed once the model works again: the sweep finishes, each task observed once
    model.broken = lambda n: False
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    assert sweep.paused is None
    trace = sweep.trace()
    assert len(trace.trials) == before + 6 and not scored_codes(trace) & {code}
    assert reproduce(to_json(trace)) == []


def test_an_infrastructure_failure_mid_chain_keeps_the_partial_route() -> None:
    model = FlakyAdapter(lambda n: False, "worker_error")
    sweep = measured_and_frozen(model, ("controlled-chain",))
    start = model.count
    model.broken = lambda n: n == start + 3  # the third call of recurrence-1's route
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    (interruption,) = sweep.interruptions
    assert interruption.trial_id == "controlled-chain/recurrence-1"
    assert interruption.partial is not None and interruption.partial.chain is not None
    assert len(interruption.partial.chain.calls) == 3
    assert reproduce(to_json(sweep.trace())) == []


# ---- 2. one model load identity per sweep ----------------------------------------------


def reloaded(model: ScriptedAdapter, **changes: object) -> ScriptedAdapter:
    """The same scripted model after a reload (a second load record), optionally changed."""
    provenance = model.provenance
    load = replace(provenance.loads[0], load_id=2, reason="reload-after-terminate")
    model._provenance = replace(provenance, loads=(*provenance.loads, load), **changes)
    return model


def test_a_reload_of_the_same_identity_is_recorded_and_allowed() -> None:
    model = ScriptedAdapter(answer)
    sweep = measured_and_frozen(model, ("model-only",))
    reloaded(model)
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    trace = sweep.trace()
    assert {t.load_id for t in trace.trials if TASKS[t.task_id].split == "profile"} == {1}
    assert {t.load_id for t in trace.trials if TASKS[t.task_id].split == "heldout"} == {2}
    assert [load.load_id for load in trace.model.loads] == [1, 2]
    assert reproduce(to_json(trace)) == []


@pytest.mark.parametrize(
    "change", [{"dtype": "q4f16"}, {"backend_actual": "wasm"}, {"revision": "abc"}]
)
def test_another_identity_mid_sweep_is_refused(change: dict[str, object]) -> None:
    model = ScriptedAdapter(answer)
    sweep = measured_and_frozen(model, ("model-only",))
    reloaded(model, **change)
    with pytest.raises(PhaseError) as refused:
        run(run_phase(sweep, "heldout", model))
    assert refused.value.code == "model_changed" and "new sweep" in refused.value.message
    assert sweep.model.dtype == "none"  # the sweep's record was not overwritten
    assert reproduce(to_json(sweep.trace())) == []


def test_no_model_loaded_mid_sweep_is_an_interruption_not_another_identity() -> None:
    """A reload failed: the provenance names no loaded model. That is not a different
    identity: the attempt fails `not_loaded` (an interruption) and the load is recorded."""
    model = FlakyAdapter(lambda n: False)
    sweep = measured_and_frozen(model, ("model-only",))
    failed = ModelLoad(
        2,
        "reload-after-terminate",
        False,
        "load_failed",
        "x",
        "scripted",
        None,
        0,
        None,
        None,
        None,
    )
    unloaded = replace(
        model.provenance, backend_actual=None, loads=(*model.provenance.loads, failed)
    )
    model._provenance = unloaded
    model.broken = lambda n: True
    assert run(run_phase(sweep, "heldout", model)) == "paused"
    assert [load.ok for load in sweep.model.loads] == [True, False]
    assert sweep.model.backend_actual == "scripted"  # the sweep's identity is untouched


def test_reproduce_fails_on_trials_of_mixed_identities() -> None:
    model = ScriptedAdapter(answer)
    sweep = measured_and_frozen(model, ("model-only",))
    document = to_json(sweep.trace())
    document["trials"][-1]["model_identity"] = "0" * 64
    assert any("mixed identities" in str(m) for m in reproduce(document))


def test_a_trial_naming_a_failed_or_missing_load_is_a_mismatch() -> None:
    model = ScriptedAdapter(answer)
    sweep = measured_and_frozen(model, ("model-only",))
    failed = ModelLoad(
        2, "reload", False, "load_failed", "no", "scripted", None, 0, None, None, None
    )
    sweep.model = replace(sweep.model, loads=(*sweep.model.loads, failed))
    document = to_json(sweep.trace())
    document["trials"][0]["load_id"] = 2
    assert any(".load_id" in str(m) for m in reproduce(document))


# ---- 4. the timeline -------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished_document() -> dict:
    model = ScriptedAdapter(answer)
    sweep = measured_and_frozen(model)
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    return to_json(sweep.trace())


def test_every_trial_has_its_place_and_time(finished_document: dict) -> None:
    assert_valid_trace(finished_document)
    assert reproduce(finished_document) == []
    trials = finished_document["trials"]
    sequences = [t["sequence"] for t in trials]
    assert sequences == sorted(sequences) and len(set(sequences)) == len(sequences)
    assert all(t["started_at"] <= t["ended_at"] for t in trials)
    (freeze_record, *_) = finished_document["freezes"]
    assert all(
        t["sequence"] > freeze_record["sequence"] and t["started_at"] >= freeze_record["frozen_at"]
        for t in trials[freeze_record["after_trials"] :]
    )


def test_a_freeze_naming_later_trials_is_a_mismatch(finished_document: dict) -> None:
    document = copy.deepcopy(finished_document)
    document["freezes"][0]["sequence"] = 1
    assert any("came after it" in str(m) for m in reproduce(document))


def test_a_held_out_trial_started_before_its_freeze_is_a_mismatch(finished_document) -> None:
    document = copy.deepcopy(finished_document)
    at = document["freezes"][0]["after_trials"]
    trial = next(t for t in document["trials"][at:] if t["condition"] == "model-only")
    trial["started_at"] = "2000-01-01T00:00:00.000+00:00"
    assert any("before its condition's freeze" in str(m) for m in reproduce(document))


# ---- 5. the controlled chain's probes, limits, unsupported routes ----------------------


def test_the_two_halves_of_a_probe_pair_send_different_chain_prompts() -> None:
    model = ScriptedAdapter(answer)
    for pair in range(1, 7):
        json_half = run(run_chain(TASKS[f"probe-{pair}-json"], model))
        prose_half = run(run_chain(TASKS[f"probe-{pair}-prose"], model))
        a, b = json_half.chain.calls[0].prompt, prose_half.chain.calls[0].prompt
        assert a.template_id == b.template_id == "chain-step/2"
        assert a.text != b.text
        assert (json_half.chain.calls[0].left, json_half.chain.calls[0].right) == (
            prose_half.chain.calls[0].left,
            prose_half.chain.calls[0].right,
        )
        assert "Register a holds" in b.text and '{"a":' in a.text


def test_chain_trials_carry_route_limits_and_no_interpreter_budget(finished_document) -> None:
    chains = [t for t in finished_document["trials"] if t["condition"] == "controlled-chain"]
    assert chains and all(t["budget"] is None for t in chains)
    assert all(t["route_limits"] == to_json(DEFAULT_ROUTE_LIMITS) for t in chains)
    limits = chains[0]["route_limits"]
    assert (limits["max_calls"], limits["max_input_tokens"]) == (6, 3072)
    assert (limits["max_output_tokens"], limits["timeout_ms"]) == (256, 90_000)


def test_unsupported_routes_are_recorded_with_zero_calls_and_never_scored(
    finished_document,
) -> None:
    unsupported = [
        t
        for t in finished_document["trials"]
        if t["condition"] == "controlled-chain" and t["outcome"] == "unsupported"
    ]
    assert sorted(t["task_id"] for t in unsupported) == [
        "derivative-1",
        "derivative-2",
        "determinant-1",
        "determinant-2",
    ]
    assert all(
        t["chain"]["calls"] == [] and t["chain"]["status"] == "unsupported" for t in unsupported
    )
    trace = read_trace(finished_document)
    chain = next(
        c for c in score_trace(trace).conditions if c.frozen.profile.condition == "controlled-chain"
    )
    assert {o.task_id for o in chain.observations} == {"recurrence-1", "recurrence-2"}


# ---- 3. provenance -------------------------------------------------------------------


def test_generation_settings_and_faults_are_recorded(finished_document) -> None:
    generation = finished_document["run"]["generation"]
    assert generation["greedy"] is True and "eos" in generation["stop_tokens"]
    assert finished_document["run"]["faults"] == []


def test_an_unpinned_revision_is_named_in_the_predictions() -> None:
    model = ScriptedAdapter(answer)
    model._provenance = replace(model.provenance, source="hub", revision="main")
    sweep = measured_and_frozen(model, ("model-only",))
    note = score_trace(sweep.trace()).conditions[0].revision_note
    assert note.startswith("UNPINNED") and "unknown" in note
    assert sweep.trace().revision_note == note  # the trace says it too
    document = to_json(sweep.trace())
    document["revision_note"] = "pinned: main"
    assert any("$.revision_note" in str(m) for m in reproduce(document))
    sweep.model = replace(sweep.model, revision_served="f" * 40)
    assert "f" * 40 in score_trace(sweep.trace()).conditions[0].revision_note


# ---- old traces stay readable -----------------------------------------------------------


def as_trace_1(document: dict) -> dict:
    """The document as trace/1 wrote it (none of trace/2's fields; chains on chain-step/1)."""
    import interpreter
    from pyapp.records import budget_of, prompts

    old = as_trace_2(document)
    old["schema_version"] = "trace/1"
    del old["revision_note"]
    for key in ("generation", "faults"):
        del old["run"][key]
    for key in ("revision_served_note", "wasm", "chat_template_options", "config_sha256"):
        del old["model"][key]
    # (run.prompt_templates stays: the freeze hashes were computed over it)
    for trial in old["trials"]:
        for key in ("sequence", "started_at", "ended_at", "load_id", "model_identity"):
            del trial[key]
        del trial["route_limits"]
        if trial["condition"] == "controlled-chain":
            trial["budget"] = to_json(budget_of(interpreter.DEFAULT_LIMITS))
            for call in trial["chain"]["calls"]:
                rendered = prompts.render_chain_step(
                    call["op"], call["left"], call["right"], "json", prompts.CHAIN_STEP_V1
                )
                call["prompt"] = to_json(rendered)
    for record in old["freezes"]:
        del record["sequence"]
    return old


def test_a_trace_1_document_is_still_read_and_reproduced(finished_document) -> None:
    old = as_trace_1(finished_document)
    trace = read_trace(old)
    assert trace.schema_version == "trace/4" and trace.trials[0].started_at is None
    assert [t.sequence for t in trace.trials] == sorted(t.sequence for t in trace.trials)
    # the freeze hashes still re-derive: the profile does not depend on the new fields
    assert reproduce(old) == []


# ---- 9. reproduce trusts nothing it can recompute (each reproducer: a mismatch, exit 1) --


def test_a_trace_1_sweep_continued_under_trace_3_reproduces(finished_document) -> None:
    """Its trace/1 trials come first and keep what trace/1 recorded; the records since are
    trace/3's (chained after the old ones); an untimed trial after a timed one is no upgrade
    but a mismatch."""
    old = as_trace_1(finished_document)
    kept = len(old["trials"]) - 3  # three held-out trials still to run
    old["trials"] = old["trials"][:kept]
    sweep = Sweep.from_trace(read_trace(old))
    assert run(run_phase(sweep, "heldout", ScriptedAdapter(answer))) == "finished"
    document = to_json(sweep.trace())
    assert document["schema_version"] == "trace/4"
    assert document["trials"][kept - 1].get("prev_sha256") is None
    assert document["trials"][kept]["prev_sha256"] is not None
    assert [t["trial_id"] for t in document["trials"]] == [
        t["trial_id"] for t in finished_document["trials"]
    ]
    assert document["trials"][kept - 1]["started_at"] is None
    assert document["trials"][kept]["started_at"] is not None
    assert reproduce(document) == []
    late = copy.deepcopy(document)
    late["trials"][-1]["started_at"] = late["trials"][-1]["ended_at"] = None
    found = [m.message for m in reproduce(late) if m.where == f"$.trials[{kept + 2}]"]
    assert "a trace/2 trial needs started_at and ended_at" in found


def test_a_trace_1_sweep_on_wasm_continues_under_the_measured_runtime() -> None:
    """trace/1 did not record the WASM runtime: unknown, not another identity."""
    wasm = WasmInfo(threads=2, simd=True, cross_origin_isolated=True, threads_allowed=True)
    loaded = replace(ScriptedAdapter(answer).provenance, backend_actual="wasm", wasm=wasm)
    assert identity_difference(replace(loaded, wasm=None), loaded) == []
    other = replace(loaded, wasm=replace(wasm, threads=1))
    differ = f"wasm: {asdict(replace(wasm, threads=1))!r} -> {asdict(wasm)!r}"
    assert identity_difference(other, loaded) == [differ]
    on_webgpu = replace(loaded, backend_actual="webgpu", wasm=None)
    assert identity_difference(on_webgpu, loaded)  # a recorded null is compared


def trial_of(document: dict, trial_id: str) -> dict:
    return next(t for t in document["trials"] if t["trial_id"] == trial_id)


def relabel_as_model(document: dict) -> None:
    from pyapp.records import EVIDENCE_NOTES

    document["model"]["evidence"] = "model"
    for trial in document["trials"]:
        if trial["evidence"] == "fixture":
            trial["evidence"], trial["evidence_note"] = "model", EVIDENCE_NOTES["model"]


def set_path(trial_id: str, path: list, value: object):
    def change(document: dict) -> None:
        node = trial_of(document, trial_id)
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


REPRODUCERS = {
    "interpreter budget max_nodes 128": set_path(
        "supplied-program/add-1", ["budget", "max_nodes"], 128
    ),
    "model-program budget max_nodes 128": set_path(
        "model-program/add-1", ["budget", "max_nodes"], 128
    ),
    "caps max_new_tokens 100000": set_path("model-only/add-1", ["caps", "max_new_tokens"], 100_000),
    "chain call caps max_new_tokens 100000": set_path(
        "controlled-chain/add-1", ["chain", "calls", 0, "caps", "max_new_tokens"], 100_000
    ),
    "route limits changed": set_path("controlled-chain/add-1", ["route_limits", "max_calls"], 60),
    "evidence relabelled model on a scripted source": relabel_as_model,
    "negative chain call index": set_path(
        "controlled-chain/recurrence-1", ["chain", "calls", 1, "index"], -1
    ),
    "control trial carrying caps": set_path(
        "supplied-program/add-1",
        ["caps"],
        {"max_input_tokens": 1, "max_new_tokens": 1, "max_output_bytes": 1, "timeout_ms": 1},
    ),
    "control trial carrying a completion": set_path(
        "supplied-program/add-1",
        ["completion"],
        {
            "text": "1",
            "finish_reason": "eos",
            "input_tokens": 1,
            "output_tokens": 1,
            "output_token_ids": None,
            "generation_ms": 1.0,
            "time_to_first_token_ms": None,
            "failure": None,
            "input_text": None,
            "input_sha256": None,
        },
    ),
    "control trial carrying token counts": set_path("supplied-program/add-1", ["input_tokens"], 12),
    "interruption naming a trial never attempted": lambda d: d["interruptions"].append(
        {
            "trial_id": "model-only/no-such-task",
            "sequence": 10_000,
            "at": "2030-01-01T00:00:00.000+00:00",
            "reason": "page-closed",
            "code": None,
            "message": None,
            "partial": None,
        }
    ),
    "missing prompt-template hash": lambda d: d["run"]["prompt_templates"].pop("integer-answer/1"),
    "held-out trial with no freeze before it": lambda d: d.update(freezes=[]),
}


@pytest.mark.parametrize("name", sorted(REPRODUCERS))
def test_each_reproducer_is_a_mismatch_and_exit_1(finished_document, name, tmp_path, capsys):
    document = copy.deepcopy(finished_document)
    REPRODUCERS[name](document)
    assert reproduce(document), f"{name}: went unnoticed"
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert cli_main(["reproduce", str(path)]) == 1
    capsys.readouterr()


def test_predictions_count_interruptions_per_condition(finished_document) -> None:
    trace = read_trace(finished_document)
    document = to_json(score_trace(trace))
    assert reproduce_predictions(finished_document, document) == []
    for result in document["conditions"]:
        assert result["interrupted"]["total"] == 0
        assert result["revision_note"] == "not a hub download (scripted): no revision to pin"


# ---- 6. exploration stays in the journal; the CLI's ledger -----------------------------


def test_a_try_a_prompt_call_lands_in_the_journal_never_in_a_trial() -> None:
    from pyapp.browser import BrowserModelAdapter, Session, handle_model_generate

    reply = {
        "type": "generate",
        "ok": True,
        "result": {
            "text": "Hello.",
            "finish_reason": "eos",
            "input_tokens": 3,
            "output_tokens": 2,
            "output_token_ids": [5, 6],
            "generation_ms": 1.0,
            "time_to_first_token_ms": 0.5,
            "failure": None,
            "input_text": None,
            "input_sha256": None,
        },
    }

    def transport(request_json: str) -> str:
        request = json.loads(request_json)
        if request["type"] == "provenance":
            provenance = to_json(ScriptedAdapter(answer).provenance)
            return json.dumps(
                {"type": "provenance", "id": request["id"], "ok": True, "result": provenance}
            )
        return json.dumps({**reply, "id": request["id"]})

    session = Session()
    adapter = BrowserModelAdapter(transport)
    run(handle_model_generate(adapter, {"prompt": "Say hello."}, session.record_exploration))
    (entry,) = session.journal
    assert entry.prompt == "Say hello." and entry.completion.text == "Hello."


def test_the_cli_ledger_marks_a_later_sweep_of_the_same_identity_exploratory() -> None:
    from pyapp.experiment import observed_for, read_ledger, record_trace, seen_in

    model = ScriptedAdapter(answer)
    sweep = measured_and_frozen(model, ("model-only", "controlled-chain"))
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    ledger = record_trace(read_ledger(Path("/nonexistent/ledger.json")), sweep.trace())
    keys = observed_for(ledger, model.provenance)
    tasks = generate()
    seen = seen_in(keys, tasks, ("model-only", "controlled-chain"))
    assert sorted(seen["model-only"]) == sorted(t.id for t in tasks if t.split == "heldout")
    assert seen["controlled-chain"] == ("recurrence-1", "recurrence-2")  # predicted ones only
    # by content, per model id and revision (issue 23 §7): another dtype of the same model
    # has seen them; another seed's held-out tasks are other tasks under the same ids
    assert observed_for(ledger, replace(model.provenance, dtype="q8")) == keys
    assert seen_in(keys, generate(TaskParams(seed=7)), ("model-only",)) == {}
    assert observed_for(ledger, replace(model.provenance, revision="other")) == {}
    # the next sweep of the same model and task set is exploratory
    again = Sweep(params=TaskParams(), conditions=("model-only",), model=model.provenance)
    again.previously_observed = dict(seen)
    assert run(run_phase(again, "measure", model)) == "finished"
    (frozen,) = freeze(again)
    assert frozen.exploratory and "earlier session" in (frozen.exploratory_reason or "")


def test_a_hub_download_of_a_test_fixture_relabelled_model_is_a_mismatch(finished_document):
    """The config.json hash the model worker recorded betrays a fixture served as a hub model."""
    from pyapp.records import TEST_FIXTURE_CONFIGS

    def as_hub(config: str | None) -> list[str]:
        document = copy.deepcopy(finished_document)
        relabel_as_model(document)
        document["model"]["source"] = "hub"
        document["model"]["config_sha256"] = config
        return [m.where + " " + m.message for m in reproduce(document)]

    tiny = "ac08f6c43634e14258f8834da0c45ea882226099d17be6f21e78e4094d620ab3"
    assert tiny in TEST_FIXTURE_CONFIGS
    flagged = [m for m in as_hub(tiny) if "is a test fixture's" in m]
    assert flagged and flagged[0].startswith("$.model.evidence")
    assert not [m for m in as_hub("0" * 64) if "is a test fixture's" in m]  # another model


def test_the_fixture_configs_are_the_committed_fixtures_and_the_catalogues():
    import hashlib
    from pathlib import Path

    from pyapp.records import TEST_FIXTURE_CONFIGS

    root = Path(__file__).resolve().parent
    files = [root / "fixtures" / "tiny-chat" / "config.json"]
    files += sorted((root / "fixtures" / "standins").glob("*/config.json"))
    on_disk = {hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
    catalogue = json.loads((root.parent / "site" / "models.json").read_text(encoding="utf-8"))
    listed = {catalogue["fixture_config_sha256"], *catalogue["standin_config_sha256"].values()}
    assert len(files) == 4 and TEST_FIXTURE_CONFIGS == on_disk == listed
