"""measure → freeze → held-out → score with a scripted adapter whose outcomes are known in
advance, so the profile, the predictions and the Brier scores are known too."""

import copy
import json

import pytest
from asyncrun import run
from promptread import chain_operands, chain_value, read_registers
from tracecheck import assert_valid_trace

from pyapp.conditions import CancelToken
from pyapp.errors import PhaseError
from pyapp.experiment import Sweep, freeze, plan, record_interruption, run_phase
from pyapp.host import EXPORTS
from pyapp.predict import score_trace
from pyapp.records import ScriptedAdapter, ScriptedReply, to_json
from pyapp.tasks import TaskParams
from pyapp.verify import reproduce_predictions
from pyapp.verify.reproduce import reproduce


def validate_predictions(document):
    import jsonschema

    schema = json.loads((EXPORTS / "predictions.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(document, schema)


def known_model(prompt, caps):
    """Chains: add and mul always right, so recurrences are all right.
    Model only: right for add and sub (JSON), wrong for mul, and for all held-out tasks."""
    if chain_operands(prompt) is not None:
        value, _ = chain_value(prompt)
        return ScriptedReply(str(value), input_tokens=30, output_tokens=4, generation_ms=2.0)
    if "Question: Compute a * b." in prompt:
        return ScriptedReply("0", input_tokens=100, output_tokens=2, generation_ms=10.0)
    if "Question: Compute a + b." in prompt or "Question: Compute a - b." in prompt:
        registers = read_registers(prompt)
        a, b = registers["a"], registers["b"]
        value = a + b if "a + b" in prompt else a - b
        return ScriptedReply(str(value), input_tokens=100, output_tokens=3, generation_ms=10.0)
    return ScriptedReply("7", input_tokens=200, output_tokens=1, generation_ms=30.0)


def make_sweep(conditions=("model-only", "controlled-chain")):
    model = ScriptedAdapter(known_model)
    return Sweep(params=TaskParams(), conditions=conditions, model=model.provenance), model


@pytest.fixture(scope="module")
def finished():
    sweep, model = make_sweep()
    assert run(run_phase(sweep, "measure", model)) == "finished"
    frozen = freeze(sweep)
    assert [f.profile.condition for f in frozen] == ["model-only", "controlled-chain"]
    assert not any(f.exploratory for f in frozen)
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    return sweep, frozen


def test_profile_rates_are_the_known_ones(finished):
    _, frozen = finished
    only = {op.op: op for op in frozen[0].profile.ops}
    # add: 2 primitives + 4 probe tasks, all right; sub likewise; mul all wrong.
    assert (only["add"].trials, only["add"].successes, only["add"].rate) == (6, 6, 1.0)
    assert (only["sub"].successes, only["mul"].successes) == (6, 0)
    assert only["add"].mean_cost_ms >= 0 and only["add"].mean_input_tokens == 100
    encoding = frozen[0].profile.encoding
    assert encoding.complete_pairs == 6 and encoding.agreement_rate == 1.0
    assert encoding.json_rate == pytest.approx(4 / 6)
    chain = {op.op: op.rate for op in frozen[1].profile.ops}
    assert chain == {"add": 1.0, "sub": 1.0, "mul": 1.0}


def test_predictions_and_scores_are_the_known_ones(finished):
    sweep, _ = finished
    document = score_trace(sweep.trace())
    only, chain = document.conditions
    by_task = {p.task_id: p for p in only.predictions}
    # model only: recurrences and determinants and derivatives all contain a mul -> p = 0.
    assert {p.probability for p in by_task.values()} == {0.0}
    assert len(only.observations) == 6 and not any(o.final_correct for o in only.observations)
    assert only.scores.brier_final_proxy == 0.0 and only.scores.brier_all_steps is None
    # chains: only the recurrences are routed; every step right -> p = 1, all right.
    assert [p.task_id for p in chain.predictions] == ["recurrence-1", "recurrence-2"]
    assert [p.probability for p in chain.predictions] == [1.0, 1.0]
    assert chain.scores.brier_final_proxy == 0.0 and chain.scores.brier_all_steps == 0.0
    assert chain.predictions[1].ops == ("mul", "add") * 3
    assert chain.scores.cost.n == 2
    assert document.evidence == "fixture"
    assert any("Independent step errors" in a for a in document.assumptions)
    assert "naive proxy" in document.interpretation


def test_documents_validate_and_reproduce(finished):
    sweep, _ = finished
    trace = to_json(sweep.trace())
    assert_valid_trace(trace)
    predictions = to_json(score_trace(sweep.trace()))
    validate_predictions(predictions)
    assert reproduce(trace) == []
    assert reproduce_predictions(trace, predictions) == []
    tampered = copy.deepcopy(predictions)
    tampered["conditions"][1]["scores"]["brier_all_steps"] = 0.01
    assert any("brier_all_steps" in str(m) for m in reproduce_predictions(trace, tampered))
    tampered = copy.deepcopy(predictions)
    tampered["conditions"][0]["frozen"]["profile"]["ops"][2]["successes"] = 3
    assert reproduce_predictions(trace, tampered)


def test_a_tampered_trial_before_the_freeze_breaks_the_frozen_hash(finished):
    sweep, _ = finished
    trace = to_json(sweep.trace())
    index = next(i for i, t in enumerate(trace["trials"]) if t["trial_id"] == "model-only/mul-1")
    trace["trials"][index]["timings"]["generation_ms"] += 5.0  # changes the mean cost
    assert any("$.freezes" in str(m) for m in reproduce(trace))


def test_heldout_before_freeze_is_refused():
    sweep, model = make_sweep()
    run(run_phase(sweep, "measure", model))
    with pytest.raises(PhaseError) as caught:
        run(run_phase(sweep, "heldout", model))
    assert caught.value.code == "not_frozen"


def test_each_heldout_task_is_scored_once_per_profile(finished):
    sweep, _ = finished
    assert plan(sweep, "heldout") == []  # nothing left to observe
    model = ScriptedAdapter(known_model)
    before = len(sweep.trials)
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    assert len(sweep.trials) == before and model.calls == []
    ids = [t.trial_id for t in sweep.trials]
    assert len(ids) == len(set(ids))


def test_exploratory_when_heldout_observed_before_freeze():
    sweep, model = make_sweep(("model-only",))
    run(run_phase(sweep, "measure", model))
    # someone looks at a held-out task before freezing: run one held-out trial by hand
    from pyapp.conditions import run_trial

    task = next(t for t in sweep.tasks if t.id == "determinant-1")
    sweep.trials.append(run(run_trial(task, "model-only", model)))
    frozen = freeze(sweep)
    assert frozen[0].exploratory and "determinant-1" in frozen[0].exploratory_reason
    document = score_trace(sweep.trace())
    early = [o for o in document.conditions[0].observations if o.observed_before_freeze]
    assert [o.task_id for o in early] == ["determinant-1"]


def test_exploratory_when_an_earlier_session_observed_it():
    sweep, model = make_sweep(("model-only",))
    sweep.previously_observed = {"model-only": ("recurrence-2",)}
    run(run_phase(sweep, "measure", model))
    frozen = freeze(sweep)
    assert frozen[0].exploratory and "earlier session" in frozen[0].exploratory_reason
    assert reproduce(to_json(sweep.trace())) == []


def test_interrupted_sweep_resumes_with_the_next_unobserved_trial():
    sweep, model = make_sweep(("model-only",))
    cancel = CancelToken()

    def stop_after_five(trial, done, total):
        if done == 5:
            cancel.cancel()

    end = run(run_phase(sweep, "measure", model, cancel=cancel, on_trial=stop_after_five))
    assert end == "cancelled"
    assert len(sweep.trials) == 5
    # the page persisted the sweep; it reloads it and records the trial that was in flight
    saved = to_json(sweep.trace())
    condition, task = plan(sweep, "measure")[0]
    record_interruption(sweep, f"{condition}/{task.id}")
    resumed_model = ScriptedAdapter(known_model)
    assert run(run_phase(sweep, "measure", resumed_model)) == "finished"
    assert len(sweep.trials) == 18 and len(resumed_model.calls) == 13
    assert len(sweep.interruptions) == 1
    assert saved["trials"] == to_json(sweep.trace())["trials"][:5]
    freeze(sweep)
    assert run(run_phase(sweep, "heldout", resumed_model)) == "finished"
    trace = to_json(sweep.trace())
    assert reproduce(trace) == []
    heldout = [t for t in trace["trials"] if t["task_id"].startswith(("rec", "det", "der"))]
    assert len(heldout) == 6
