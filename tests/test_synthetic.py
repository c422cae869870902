"""Synthetic validation models: deterministic, labelled `synthetic`, and each structure does
exactly what its specification says; `simulate` runs the page's protocol with them."""

import json

import pytest
from asyncrun import in_thread
from tracecheck import assert_valid_trace

from pyapp.cli.main import main
from pyapp.records import SpecError, to_json
from pyapp.synthetic import parse_spec, run_seed
from pyapp.tasks import TaskParams
from pyapp.verify import reproduce_predictions
from pyapp.verify.reproduce import reproduce


def simulate(spec, params=None, conditions=("model-only", "model-program", "controlled-chain")):
    return in_thread(run_seed, spec, params or TaskParams(), conditions)


def trials(run, condition):
    return {t.task_id: t for t in run.trace.trials if t.condition == condition}


def test_same_spec_same_trace_and_every_label_is_synthetic():
    spec = parse_spec("correlated:seed=7")
    first, second = simulate(spec), simulate(spec)

    # everything but the wall-clock moments (run start, each trial's start and end, freezes)
    # and the hash chain's links, which hash the records holding them
    def trials_of(run):
        moments = ("started_at", "ended_at", "prev_sha256")
        return [{k: v for k, v in t.items() if k not in moments} for t in to_json(run.trace.trials)]

    assert trials_of(first) == trials_of(second)  # timings included
    assert to_json(first.trace.tasks) == to_json(second.trace.tasks)
    assert first.trace.run.run_id == second.trace.run.run_id
    other = simulate(parse_spec("correlated:seed=8"))
    assert trials_of(other) != trials_of(first)

    trace = first.trace
    assert trace.model is not None and trace.model.evidence == "synthetic"
    assert {t.evidence for t in trace.trials} == {"synthetic"}
    assert trace.summary.model_evidence_trials == 0
    assert first.predictions.evidence == "synthetic"
    assert trace.environment.clock.name.startswith("synthetic virtual clock")
    assert_valid_trace(to_json(trace))


def test_simulated_documents_re_derive():
    run = simulate(parse_spec("cancelling"), TaskParams(seed=5))
    document = to_json(run.trace)
    assert reproduce(document) == []
    assert reproduce_predictions(document, to_json(run.predictions)) == []
    tampered = to_json(run.predictions)
    tampered["conditions"][0]["state_aware"]["predictions"][0]["probability"] = 0.123
    assert reproduce_predictions(document, tampered)


def test_perfect_and_hopeless_models():
    perfect = simulate(parse_spec("independent:p_add=0,p_sub=0,p_mul=0"))
    assert all(t.correct for t in perfect.trace.trials if t.chain is None or t.chain.calls)
    hopeless = simulate(parse_spec("independent:p_add=1,p_sub=1,p_mul=1"))
    chains = [t.chain for t in trials(hopeless, "controlled-chain").values() if t.chain.calls]
    assert chains and all(c.local_correct is False for ch in chains for c in ch.calls)
    for trial in trials(hopeless, "model-only").values():
        # one perturbation of the root: the answer is off by exactly one unit in one place
        difference = abs(int(trial.completion.text) - trial.expected)
        assert trial.expected != int(trial.completion.text)
        if trial.task_id.startswith(("add", "sub", "mul", "probe")):
            assert str(difference).strip("0") == "1"
    programs = trials(hopeless, "model-program")
    assert '"op":"sub"' in programs["add-1"].program_text  # add written as sub
    assert '"op":"add"' in programs["mul-1"].program_text  # mul written as add
    assert not any(t.correct for t in programs.values())


def test_cancelling_makes_the_final_answer_right_with_a_step_wrong():
    spec = parse_spec("cancelling:p_add=0,p_sub=0,p_mul=1,cancel=1")
    chain = trials(simulate(spec), "controlled-chain")["recurrence-1"]
    calls = chain.chain.calls
    assert [c.local_correct for c in calls] == [False, False, False, False]
    assert chain.chain.final_correct is True and chain.chain.all_steps_correct is False
    independent = trials(simulate(parse_spec("independent:p_mul=1,p_add=0")), "controlled-chain")
    assert independent["recurrence-1"].correct is False


def test_correlated_steps_share_one_draw():
    spec = parse_spec("correlated:p_add=0.5,p_sub=0.5,p_mul=0.5,rho=1.0")
    run = simulate(spec, TaskParams(seed=11, recurrence_steps=(3, 3, 3, 3, 3, 3)))
    for trial in trials(run, "controlled-chain").values():
        if not trial.chain.calls:
            continue  # an unsupported route: no call made
        verdicts = {c.local_correct for c in trial.chain.calls}
        assert len(verdicts) == 1, trial.task_id  # all right or all wrong
    independent = simulate(parse_spec("independent:p_add=0.5,p_sub=0.5,p_mul=0.5"))
    mixed = [
        t
        for t in trials(independent, "controlled-chain").values()
        if len({c.local_correct for c in t.chain.calls}) > 1
    ]
    assert mixed


def test_size_dependent_error_grows_with_digits_and_costs_follow_the_cost_model():
    spec = parse_spec("size-dependent:slope=1.0,p_mul=0.2")
    small, pivot, large = (spec.error_probability("mul", v, 7) for v in (12, 1234, 123456))
    assert small < pivot < large
    assert pivot == pytest.approx(0.2)
    assert parse_spec("independent").error_probability("mul", 123456, 7) == 0.15
    run = simulate(spec)
    chain = trials(run, "controlled-chain")["recurrence-2"]
    expected = sum(
        spec.cost.call_ms + spec.cost.step_ms + spec.cost.digit_ms * len(str(abs(c.parsed)))
        for c in chain.chain.calls
    )
    assert chain.timings.generation_ms == pytest.approx(expected)


@pytest.mark.parametrize(
    "text",
    ["nonsense", "independent:p_add=2", "independent:bogus=1", "independent:p_mul=x"],
)
def test_bad_specs_are_refused_in_one_line(text):
    with pytest.raises(SpecError) as caught:
        parse_spec(text)
    assert "\n" not in str(caught.value)


def test_simulate_command_writes_re_derivable_documents(tmp_path, capsys):
    out = tmp_path / "sim"
    argv = ["simulate", "--model", "independent", "--seeds", "3..4", "--out", str(out)]
    assert in_thread(main, argv) == 0  # its own thread: asyncio.run inside
    printed = capsys.readouterr().out
    assert "NOT model evidence" in printed and "trials/s" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["evidence"] == "synthetic" and summary["seeds"] == [3, 4]
    assert set(summary["conditions"][0]["predictors"]) == {"product", "state-aware"}
    trace, predictions = out / "seed-4" / "trace.json", out / "seed-4" / "predictions.json"
    assert main(["reproduce", str(trace), "--predictions", str(predictions)]) == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["--model", "unknown", "--seeds", "1..2"],
        ["--model", "independent", "--seeds", "5..2"],
        ["--model", "independent", "--seeds", "1..2", "--param", "primitives_per_op=-1"],
        ["--model", "independent", "--seeds", "1", "--conditions", "model-only,bogus"],
    ],
)
def test_simulate_refuses_bad_input_with_exit_2(argv, tmp_path, capsys):
    assert main(["simulate", *argv, "--out", str(tmp_path / "x")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error:") and "\n" not in error
