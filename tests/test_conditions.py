"""Every branch of the model conditions and the controlled chain, with scripted adapters.

Scripted replies are test fixtures: every trial they produce is labelled `fixture`."""

import copy
import json

import pytest
from asyncrun import run
from promptread import chain_operands, chain_value
from tracecheck import assert_valid_trace

import interpreter
from pyapp.conditions import CancelToken, parse_integer, plan_route, run_chain, run_whole_task
from pyapp.conditions import replies as replies_module
from pyapp.conditions import route as route_module
from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.records import Caps, ModelFailure, RouteLimits, ScriptedAdapter, ScriptedReply, to_json
from pyapp.tasks import TaskParams, generate
from pyapp.verify.reproduce import reproduce

TASKS = {t.id: t for t in generate()}


def adapter(fn):
    return ScriptedAdapter(lambda prompt, caps: fn(prompt, caps))


def const(text, **kwargs):
    return adapter(lambda prompt, caps: ScriptedReply(text, **kwargs))


def exact_chain_reply(prompt, caps):
    """Answers a chain-step prompt correctly (operands read from the prompt)."""
    value, _ = chain_value(prompt)
    return ScriptedReply(str(value), input_tokens=40, output_tokens=3)


# ---- parsing --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [("42", 42), ("  -17\n", -17), ("+5", 5), ("0007", 7), ("-0", 0)],
)
def test_parse_integer_accepts_exactly_one_integer(text, value):
    assert parse_integer(text) == (value, None)


@pytest.mark.parametrize(
    "text",
    ["", "42.", "4 2", "The answer is 42", "```\n42\n```", "42\n43", "4e3", "１２", "0x10", "- 5"],
)
def test_parse_integer_refuses_anything_else(text):
    value, failure = parse_integer(text)
    assert value is None and failure.code == "invalid_integer" and failure.stage == "parse"


def test_parse_integer_refuses_huge_digit_strings_without_converting():
    value, failure = parse_integer("9" * 100_000)
    assert value is None and failure.code == "integer_out_of_range"


# ---- model only ---------------------------------------------------------------------


def test_model_only_correct_wrong_and_prose():
    task = TASKS["add-1"]
    right = run(run_whole_task(task, "model-only", const(f" {task.answer}\n")))
    assert right.correct and right.outcome == "correct" and right.failure is None
    assert right.prompt.template_id == "integer-answer/1"
    assert str(task.registers["a"]) in right.prompt.text
    assert right.evidence == "fixture" and "not model evidence" in right.evidence_note
    assert right.caps.max_input_tokens == 1024 and right.caps.max_new_tokens == 256
    assert right.caps.timeout_ms == 60_000

    wrong = run(run_whole_task(task, "model-only", const(str(task.answer + 1))))
    assert not wrong.correct and wrong.outcome == "wrong_answer" and wrong.failure is None
    assert wrong.result == task.answer + 1

    prose = run(run_whole_task(task, "model-only", const("I think about 400k.")))
    assert prose.result is None and prose.outcome == "invalid_integer"
    assert prose.completion.text == "I think about 400k."  # raw text kept


@pytest.mark.parametrize("finish", ["eos", "length"])
def test_a_reply_starting_with_a_think_block_is_scored_as_written(finish):
    """Nothing strips a think block (docs/models.md, Thinking models): a reply that starts
    with one is not exactly one integer, whatever follows it, and keeps its raw text; a
    think block cut by the cap (finish `length`) is the same parse failure."""
    task = TASKS["add-1"]
    text = f"<think>\nadd them\n</think>\n\n{task.answer}" if finish == "eos" else "<think>\nadd"
    trial = run(run_whole_task(task, "model-only", const(text, finish_reason=finish)))
    assert (trial.result, trial.outcome, trial.correct) == (None, "invalid_integer", False)
    assert trial.failure.stage == "parse" and trial.completion.text == text
    assert trial.completion.finish_reason == finish


def test_prose_encoding_probe_gets_prose_registers():
    trial = run(run_whole_task(TASKS["probe-1-prose"], "model-only", const("1")))
    assert "Register a holds" in trial.prompt.text


def test_model_only_input_budget_means_no_generation():
    trial = run(run_whole_task(TASKS["add-1"], "model-only", const("1", input_tokens=1025)))
    assert trial.outcome == "input_budget" and trial.failure.stage == "generation"
    assert trial.completion.finish_reason is None and trial.timings.parse_ms is None


@pytest.mark.parametrize("reason", ["timeout", "cancelled", "error"])
def test_model_only_broken_generation_is_not_parsed(reason):
    trial = run(run_whole_task(TASKS["add-1"], "model-only", const("376070", finish_reason=reason)))
    assert trial.result is None and trial.outcome == reason and trial.timings.parse_ms is None


# ---- model program --------------------------------------------------------------------


def test_model_program_valid_tree_is_executed_once():
    task = TASKS["recurrence-1"]
    text = interpreter.canonical_program_text(task.program)
    trial = run(run_whole_task(task, "model-program", const(text)))
    assert trial.correct and trial.outcome == "correct"
    assert trial.prompt.template_id == "register-program-examples/2"
    assert trial.program_text == text and len(trial.steps) == 4
    assert trial.timings.execution_ms is not None


@pytest.mark.parametrize(
    ("reply", "outcome", "executed"),
    [
        ("Here is the program: x0 * a + b", "not_json", False),
        ('```json\n{"op":"add","args":[{"ref":"a"},{"ref":"b"}]}\n```', "not_json", False),
        ('{"op":"add","args":[{"ref":"a"}]}', "wrong_shape", False),
        ('{"op":"add","args":[{"ref":"a"},{"ref":"q"}]}', "unknown_register", True),
        ('{"op":"add","args":[{"ref":"a"},3]}', "literal_not_allowed", False),
        ('{"op":"sub","args":[{"ref":"b"},{"ref":"a"}]}', "wrong_answer", True),
    ],
)
def test_model_program_failure_categories(reply, outcome, executed):
    task = TASKS["add-1"]
    trial = run(run_whole_task(task, "model-program", const(reply)))
    assert trial.outcome == outcome
    assert (trial.program is not None) == executed
    if outcome != "wrong_answer":
        assert trial.result is None and trial.steps == ()


def full(depth):
    if depth == 1:
        return {"ref": "a"}
    return {"op": "add", "args": [full(depth - 1), full(depth - 1)]}


def test_model_program_limit_exceeded_names_the_limit():
    deep = {"ref": "a"}
    for _ in range(16):
        deep = {"op": "add", "args": [deep, {"ref": "b"}]}
    trial = run(run_whole_task(TASKS["add-1"], "model-program", const(json.dumps(deep))))
    assert trial.outcome == "limit_exceeded" and trial.failure.limit == "depth"
    wide = {"op": "add", "args": [full(7), {"ref": "b"}]}  # 64 operations, depth 8
    trial = run(run_whole_task(TASKS["add-1"], "model-program", const(json.dumps(wide))))
    assert trial.outcome == "limit_exceeded" and trial.failure.limit == "operations"


def test_model_program_unsafe_integer():
    task = TASKS["mul-1"]
    tree = '{"op":"mul","args":[{"op":"mul","args":[{"ref":"a"},{"ref":"b"}]},{"ref":"a"}]}'
    tree = f'{{"op":"mul","args":[{tree},{{"ref":"b"}}]}}'
    trial = run(run_whole_task(task, "model-program", const(tree)))
    assert trial.outcome == "unsafe_integer" and trial.failure.stage == "execution"


# ---- controlled chains ----------------------------------------------------------------


def test_routes_cover_twenty_of_the_twenty_four_default_tasks():
    supported = [t for t in TASKS.values() if plan_route(t) is not None]
    assert len(supported) == 20
    assert len(plan_route(TASKS["recurrence-1"])) == 4
    assert len(plan_route(TASKS["recurrence-2"])) == 6
    assert [c.op for c in plan_route(TASKS["recurrence-2"])] == ["mul", "add"] * 3


def test_chain_correct_route_routes_each_parsed_output():
    task = TASKS["recurrence-2"]
    model = adapter(exact_chain_reply)
    trial = run(run_chain(task, model))
    route = trial.chain
    assert route.status == "completed" and trial.correct and route.all_steps_correct
    assert route.final_correct and route.first_local_error is None
    assert len(model.calls) == 6 and all(c.caps.max_new_tokens == 32 for c in route.calls)
    assert route.calls[1].left == route.calls[0].parsed  # the parsed output is routed on
    assert route.calls[2].right == route.calls[1].parsed
    assert route.reserved_input_tokens == 6 * 512 and route.reserved_output_tokens == 6 * 32
    assert route.used_input_tokens == 240 and route.used_output_tokens == 18
    assert trial.input_tokens == 240 and trial.evidence == "fixture"
    assert trial.timings.execution_ms is None  # no interpreter during a route


def test_chain_wrong_but_valid_integer_continues_and_can_cancel_out():
    # x1 = a*x0 + b with the mul answered 1 too high and the add 1 too low: the final
    # answer is right although two steps are wrong -- all-step and final stay separate.
    task = TASKS["recurrence-1"]
    replies = iter([1, -1, 0, 0])

    def reply(prompt, caps):
        good = exact_chain_reply(prompt, caps)
        return ScriptedReply(str(int(good.text) + next(replies)))

    trial = run(run_chain(task, adapter(reply)))
    route = trial.chain
    assert route.status == "completed"
    assert [c.local_correct for c in route.calls] == [False, False, True, True]
    assert route.first_local_error == 0
    assert route.all_steps_correct is False and route.final_correct is True and trial.correct


def test_chain_invalid_reply_halts_and_later_steps_are_unobserved():
    task = TASKS["recurrence-2"]
    count = iter(range(10))

    def reply(prompt, caps):
        return exact_chain_reply(prompt, caps) if next(count) < 2 else ScriptedReply("eleven")

    trial = run(run_chain(task, adapter(reply)))
    route = trial.chain
    assert route.status == "halted" and route.halt.code == "invalid_integer"
    assert len(route.calls) == 3 and route.unobserved_calls == 3
    assert route.calls[2].parsed is None and route.calls[2].local_correct is None
    assert trial.result is None and trial.outcome == "invalid_integer"
    assert route.all_steps_correct is False and route.final_correct is False


def test_chain_reservation_refusal_makes_no_call():
    limits = RouteLimits(max_input_tokens=512 * 3)
    model = adapter(exact_chain_reply)
    trial = run(run_chain(TASKS["recurrence-2"], model, limits=limits))
    assert len(model.calls) == 3
    assert trial.chain.halt.code == "route_input_budget" and trial.chain.unobserved_calls == 3
    limits = RouteLimits(max_output_tokens=40)
    model = adapter(exact_chain_reply)
    trial = run(run_chain(TASKS["recurrence-1"], model, limits=limits))
    assert len(model.calls) == 1 and trial.chain.halt.code == "route_output_budget"


def test_chain_call_budget():
    trial = run(run_chain(TASKS["recurrence-2"], const("1"), limits=RouteLimits(max_calls=4)))
    assert trial.chain.halt.code == "route_call_budget" and trial.chain.calls == ()


def test_chain_per_call_timeout_halts():
    count = iter(range(10))

    def reply(prompt, caps):
        if next(count) == 1:
            return ScriptedReply("", finish_reason="timeout")
        return exact_chain_reply(prompt, caps)

    trial = run(run_chain(TASKS["recurrence-1"], adapter(reply)))
    assert trial.chain.halt.code == "timeout" and len(trial.chain.calls) == 2
    assert trial.chain.unobserved_calls == 2


def test_chain_route_timeout_shortens_and_then_refuses_calls(monkeypatch):
    """An injected clock: each call takes exactly 30 ms of it, the route has 70 ms."""
    clock = [0]
    for module in (route_module, replies_module):  # where the chain reads the clock
        monkeypatch.setattr(module, "now_ns", lambda: clock[0])

    class SlowAdapter(ScriptedAdapter):
        async def generate(self, prompt, caps):
            clock[0] += 30_000_000
            return await super().generate(prompt, caps)

    model = SlowAdapter(exact_chain_reply)
    limits = RouteLimits(timeout_ms=70)
    trial = run(run_chain(TASKS["recurrence-2"], model, limits=limits))
    route = trial.chain
    assert route.halt.code == "route_timeout"
    # 70 ms left for the first call, 40 for the second, 10 for the third, none for a fourth
    assert [c.caps.timeout_ms for c in route.calls] == [70, 40, 10]


def test_chain_cancel_halts_before_the_next_call():
    cancel = CancelToken()
    count = iter(range(10))

    def reply(prompt, caps):
        if next(count) == 1:
            cancel.cancel()
        return exact_chain_reply(prompt, caps)

    trial = run(run_chain(TASKS["recurrence-2"], adapter(reply), cancel=cancel))
    assert trial.chain.halt.code == "cancelled" and len(trial.chain.calls) == 2


def test_chain_unsupported_routes_make_no_model_call():
    model = adapter(exact_chain_reply)
    for task_id in ("determinant-1", "derivative-2"):
        trial = run(run_chain(TASKS[task_id], model))
        assert trial.chain.status == "unsupported" and trial.outcome == "unsupported"
        assert trial.chain.all_steps_correct is None and trial.result is None
    assert model.calls == []


def test_chain_input_budget_failure_from_the_adapter_halts():
    trial = run(run_chain(TASKS["add-2"], const("1", input_tokens=600)))
    assert trial.chain.halt.code == "input_budget" and trial.chain.calls[0].parsed is None


# ---- sweeps, traces, reproduce ---------------------------------------------------------


def fixture_model(prompt, caps):
    """Right on chains, right on model-only adds, wrong elsewhere, prose for mul."""
    if chain_operands(prompt) is not None:
        return exact_chain_reply(prompt, caps)
    if "Program:" in prompt:
        return ScriptedReply('{"op":"add","args":[{"ref":"a"},{"ref":"b"}]}')
    if "a * b" in prompt:
        return ScriptedReply("a lot")
    return ScriptedReply("376070")


@pytest.fixture(scope="module")
def sweep_document():
    conditions = ("supplied-program", "model-only", "model-program", "controlled-chain")
    model = adapter(fixture_model)
    sweep = Sweep(params=TaskParams(), conditions=conditions, model=model.provenance)
    seen = []
    assert run(run_phase(sweep, "measure", model)) == "finished"
    freeze(sweep)
    end = run(run_phase(sweep, "heldout", model, on_trial=lambda t, i, n: seen.append((i, n))))
    assert end == "finished" and len(sweep.trials) == 96
    assert seen[-1] == (24, 24)
    return to_json(sweep.trace())


def test_full_sweep_trace_validates_and_reproduces(sweep_document):
    assert_valid_trace(sweep_document)
    assert reproduce(sweep_document) == []
    summary = sweep_document["summary"]
    assert summary["trials"] == 96 and summary["model_evidence_trials"] == 0
    evidence = {t["condition"]: t["evidence"] for t in sweep_document["trials"]}
    assert evidence == {
        "supplied-program": "control",
        "model-only": "fixture",
        "model-program": "fixture",
        "controlled-chain": "fixture",
    }
    assert sweep_document["model"]["evidence"] == "fixture"
    assert sweep_document["model"]["flops"] is None


def find(document, trial_id):
    return next(i for i, t in enumerate(document["trials"]) if t["trial_id"] == trial_id)


@pytest.mark.parametrize(
    ("trial_id", "path", "value", "where"),
    [
        ("model-only/add-1", ["completion", "text"], "376071", ".correct"),
        ("model-only/mul-1", ["outcome"], "wrong_answer", ".outcome"),
        ("model-only/add-1", ["prompt", "text"], "Tell me 376070.", ".prompt"),
        ("model-program/add-1", ["steps", 0, "result"], 0, ".steps"),
        ("model-program/add-1", ["completion", "text"], '{"ref":"a"}', ".program"),
        ("controlled-chain/recurrence-2", ["chain", "calls", 1, "left"], 5, "calls[1]"),
        ("controlled-chain/recurrence-2", ["chain", "all_steps_correct"], False, ".chain"),
        (
            "controlled-chain/recurrence-2",
            ["chain", "calls", 0, "local_correct"],
            False,
            "calls[0]",
        ),
        ("controlled-chain/determinant-1", ["outcome"], "correct", ".outcome"),
        ("model-only/add-1", ["evidence"], "model", "model"),
    ],
)
def test_tampered_model_trials_are_caught(sweep_document, trial_id, path, value, where):
    document = copy.deepcopy(sweep_document)
    node = document["trials"][find(document, trial_id)]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    mismatches = [str(m) for m in reproduce(document)]
    assert any(where in m for m in mismatches), mismatches


def test_cancelled_sweep_keeps_finished_trials():
    cancel = CancelToken()
    model = const("1")
    sweep = Sweep(params=TaskParams(), conditions=("model-only",), model=model.provenance)

    def on_trial(trial, done, total):
        if done == 3:
            cancel.cancel()

    assert run(run_phase(sweep, "measure", model, cancel=cancel, on_trial=on_trial)) == "cancelled"
    assert len(sweep.trials) == 3


def test_caps_are_the_design_numbers():
    from pyapp.records import CHAIN_CALL_CAPS, DEFAULT_ROUTE_LIMITS, WHOLE_TASK_CAPS

    assert Caps(1024, 256, 16384, 60_000) == WHOLE_TASK_CAPS
    assert Caps(512, 32, 1024, 15_000) == CHAIN_CALL_CAPS
    limits = DEFAULT_ROUTE_LIMITS
    assert (limits.max_calls, limits.retries, limits.max_input_tokens) == (6, 0, 3072)
    assert (limits.max_output_tokens, limits.timeout_ms) == (256, 90_000)


def test_model_failure_from_adapter_is_typed():
    failure = ModelFailure("worker_error", "the worker crashed")
    trial = run(run_whole_task(TASKS["add-1"], "model-only", const("", failure=failure)))
    assert trial.outcome == "worker_error" and trial.failure.stage == "generation"
