"""Chain routes for triangle determinants and cubic derivatives under the extended, versioned
chain protocol (issue 35), and trace/4, which records the protocol.

Scripted replies are test fixtures: every trial they produce is labelled `fixture`."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest
from asyncrun import run
from matrixrun import one_cell_trace
from promptread import chain_value
from tracecheck import assert_valid_trace

import interpreter
from pyapp.cli.main import main
from pyapp.conditions import (
    CancelToken,
    chain_capacity_problem,
    exact_op,
    plan_route,
    resolve_operand,
    route_of,
    run_chain,
)
from pyapp.errors import PhaseError, RecordError
from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.predict import compare, heldout_tasks, score_trace, task_steps
from pyapp.records import (
    DESIGN_CHAIN,
    EXTENDED_CHAIN,
    ChainProtocol,
    RouteLimits,
    RunTerms,
    ScriptedAdapter,
    ScriptedReply,
    protocol_of,
    read_trace,
    to_json,
)
from pyapp.synthetic import SyntheticAdapter, parse_spec, run_seed
from pyapp.tasks import TaskParams, generate
from pyapp.verify import make_receipt, receipt_mismatches, reproduce_predictions
from pyapp.verify.reproduce import reproduce

TASKS = {t.id: t for t in generate()}
FIXTURES = Path(__file__).resolve().parent / "fixtures"
NEW_FAMILIES = ("determinant-1", "determinant-2", "derivative-1", "derivative-2")
CONDITIONS = ("supplied-program", "model-only", "model-program", "controlled-chain")


def exact(prompt: str, caps: object) -> ScriptedReply:
    """Right on every chain call (operands read from the prompt); `7` to anything else."""
    if prompt.startswith("You are given two integer registers."):
        return ScriptedReply(str(chain_value(prompt)[0]), input_tokens=40, output_tokens=3)
    return ScriptedReply("7", input_tokens=100, output_tokens=1)


def scripted(replies: dict[int, str]) -> ScriptedAdapter:
    """Exact on every call but those named (call index → the reply text)."""
    count = iter(range(100))

    def reply(prompt: str, caps: object) -> ScriptedReply:
        index = next(count)
        if index in replies:
            return ScriptedReply(replies[index], input_tokens=40, output_tokens=3)
        return exact(prompt, caps)

    return ScriptedAdapter(reply)


def route_values(task, outputs=None):
    """Each planned call's (op, left, right, exact value) along the exact route."""
    values: list[int] = []
    found = []
    for call in route_of(task):
        left = resolve_operand(call.left, task.registers, values)
        right = resolve_operand(call.right, task.registers, values)
        values.append(exact_op(call.op, left, right))
        found.append((call.op, left, right, values[-1]))
    return found


# ---- the routes: written down, and the interpreter's own steps -------------------------


def test_the_determinant_and_derivative_routes_are_the_issues() -> None:
    det = [(c.op, c.left, c.right) for c in route_of(TASKS["determinant-1"])]
    assert det == [
        ("sub", "register:x2", "register:x1"),
        ("sub", "register:y3", "register:y1"),
        ("mul", "call:0", "call:1"),
        ("sub", "register:x3", "register:x1"),
        ("sub", "register:y2", "register:y1"),
        ("mul", "call:3", "call:4"),
        ("sub", "call:2", "call:5"),
    ]
    der = [(c.op, c.left, c.right) for c in route_of(TASKS["derivative-1"])]
    assert der == [
        ("mul", "register:three", "register:c3"),
        ("mul", "register:x0", "register:x0"),
        ("mul", "call:0", "call:1"),
        ("mul", "register:two", "register:c2"),
        ("mul", "call:3", "register:x0"),
        ("add", "call:2", "call:4"),
        ("add", "call:5", "register:c1"),
    ]


def test_recurrence_and_primitive_routes_are_unchanged() -> None:
    """The generic derivation gives the routes the design's chain always planned."""
    for task in TASKS.values():
        if task.family == "affine_recurrence":
            expected = []
            current = "register:x0"
            for _ in range(task.steps or 0):
                expected.append(("mul", "register:a", current))
                expected.append(("add", f"call:{len(expected) - 1}", "register:b"))
                current = f"call:{len(expected) - 1}"
        elif task.family in ("add", "sub", "mul"):
            expected = [(task.family, "register:a", "register:b")]
        else:
            continue
        assert [(c.op, c.left, c.right) for c in route_of(task)] == expected


@pytest.mark.parametrize("task_id", [*NEW_FAMILIES, "recurrence-2", "mul-1"])
def test_each_route_is_the_exec_commands_steps(task_id, tmp_path, capsys) -> None:
    """Every call of the route is a step of `python -m pyapp exec` on the reference
    program, in the same order, with the same operands and value."""
    task = TASKS[task_id]
    program = tmp_path / "program.json"
    registers = tmp_path / "registers.json"
    program.write_text(json.dumps(interpreter.program_to_json(task.program)), encoding="utf-8")
    registers.write_text(json.dumps(dict(task.registers)), encoding="utf-8")
    assert main(["exec", str(program), "--registers", str(registers)]) == 0
    executed = json.loads(capsys.readouterr().out)
    steps = [(s["op"], *s["operands"], s["result"]) for s in executed["steps"]]
    assert route_values(task) == steps
    assert route_values(task)[-1][-1] == task.answer == executed["value"]


def test_route_values_equal_the_reference_programs_on_many_seeds() -> None:
    for seed in range(40):
        for task in generate(TaskParams(seed=seed)):
            if task.split == "heldout":
                execution = interpreter.execute(task.program, task.registers)
                steps = [(s.op, *s.operands, s.result) for s in execution.steps]
                assert route_values(task) == steps, task.id


def test_the_protocol_decides_which_families_are_routed() -> None:
    for task_id in NEW_FAMILIES:
        assert plan_route(TASKS[task_id]) is None  # the design's: unsupported
        assert plan_route(TASKS[task_id], DESIGN_CHAIN) is None
        assert len(plan_route(TASKS[task_id], EXTENDED_CHAIN)) == 7
    assert len(heldout_tasks(tuple(TASKS.values()), "controlled-chain")) == 2
    assert len(heldout_tasks(tuple(TASKS.values()), "controlled-chain", EXTENDED_CHAIN)) == 6
    routed = [t for t in TASKS.values() if plan_route(t, EXTENDED_CHAIN) is not None]
    assert len(routed) == 24 and sum(plan_route(t) is not None for t in TASKS.values()) == 20


def test_the_extended_protocols_limits_are_the_issues() -> None:
    limits = EXTENDED_CHAIN.limits
    assert (limits.max_calls, limits.max_input_tokens, limits.max_output_tokens) == (7, 3584, 256)
    assert limits.timeout_ms == 105_000 and limits.retries == 0
    assert limits.call == DESIGN_CHAIN.limits.call  # per call unchanged
    assert EXTENDED_CHAIN.version == "chain-extended/1"
    assert DESIGN_CHAIN.version == "chain-design/1"


# ---- each new family on hand-made states -----------------------------------------------


@pytest.mark.parametrize("task_id", NEW_FAMILIES)
def test_a_right_route_completes(task_id) -> None:
    model = scripted({})
    trial = run(run_chain(TASKS[task_id], model, protocol=EXTENDED_CHAIN))
    route = trial.chain
    assert route.status == "completed" and len(model.calls) == 7
    assert route.all_steps_correct and route.final_correct and trial.correct
    assert [(c.op, c.left, c.right, c.parsed) for c in route.calls] == route_values(TASKS[task_id])
    assert trial.route_limits == EXTENDED_CHAIN.limits
    assert route.reserved_input_tokens == 7 * 512 and route.reserved_output_tokens == 7 * 32


@pytest.mark.parametrize("task_id", NEW_FAMILIES)
def test_a_wrong_but_valid_integer_continues_on_the_actual_value(task_id) -> None:
    task = TASKS[task_id]
    wrong = route_values(task)[2][3] + 1  # call 2 (a product) one too high
    trial = run(run_chain(task, scripted({2: str(wrong)}), protocol=EXTENDED_CHAIN))
    route = trial.chain
    assert route.status == "completed" and len(route.calls) == 7
    assert route.first_local_error == 2 and route.calls[2].local_correct is False
    # the later call that reads call 2 gets the wrong value, and is judged on it
    reader = next(c for c in route.calls if "call:2" in (c.left_source, c.right_source))
    assert wrong in (reader.left, reader.right) and reader.local_correct
    assert route.all_steps_correct is False and route.final_correct is False
    assert trial.result == task.answer + 1  # call 2 enters the answer with sign +


@pytest.mark.parametrize("task_id", NEW_FAMILIES)
def test_an_invalid_reply_halts_the_route(task_id) -> None:
    model = scripted({3: "eleven"})
    trial = run(run_chain(TASKS[task_id], model, protocol=EXTENDED_CHAIN))
    route = trial.chain
    assert route.status == "halted" and route.halt.code == "invalid_integer"
    assert len(route.calls) == 4 and route.unobserved_calls == 3 and len(model.calls) == 4
    assert trial.result is None and route.all_steps_correct is False


@pytest.mark.parametrize("task_id", NEW_FAMILIES)
def test_a_cancellation_halts_before_the_next_call(task_id) -> None:
    cancel = CancelToken()
    count = iter(range(100))

    def reply(prompt, caps):
        if next(count) == 4:
            cancel.cancel()
        return exact(prompt, caps)

    trial = run(
        run_chain(TASKS[task_id], ScriptedAdapter(reply), protocol=EXTENDED_CHAIN, cancel=cancel)
    )
    assert trial.chain.halt.code == "cancelled" and len(trial.chain.calls) == 5


def test_errors_that_cancel_leave_the_final_answer_right() -> None:
    """Determinant: x2−x1 one too high and x3−x1 one too high can cancel only by chance; a
    last call that undoes an earlier error gives a right final answer with a wrong step."""
    task = TASKS["determinant-1"]
    values = route_values(task)
    replies = {2: str(values[2][3] + 10), 6: str(task.answer)}  # the last call compensates
    trial = run(run_chain(task, scripted(replies), protocol=EXTENDED_CHAIN))
    route = trial.chain
    assert route.final_correct is True and route.all_steps_correct is False
    assert route.first_local_error == 2 and route.calls[6].local_correct is False


@pytest.mark.parametrize("task_id", NEW_FAMILIES)
def test_the_design_protocol_makes_no_call(task_id) -> None:
    model = scripted({})
    trial = run(run_chain(TASKS[task_id], model))
    assert trial.chain.status == "unsupported" and model.calls == []
    assert trial.outcome == "unsupported"


def test_a_route_over_its_budget_is_refused_at_the_start() -> None:
    tight = ChainProtocol(
        name="extended",
        version="chain-extended/1",
        families=EXTENDED_CHAIN.families,
        limits=RouteLimits(max_calls=7, max_input_tokens=3_072),
    )
    problem = chain_capacity_problem(TaskParams(), tight)
    assert problem is not None and problem.limit == "determinants"
    assert chain_capacity_problem(TaskParams(derivatives=0, determinants=0), tight) is None
    # a recurrence of 4 updates is 8 calls: over the extended protocol's 7 too
    long = TaskParams(recurrence_steps=(4,))
    refused = chain_capacity_problem(long, EXTENDED_CHAIN)
    assert refused is not None and refused.limit == "recurrence_steps"
    assert refused.maximum == 3
    with pytest.raises(PhaseError):
        Sweep(
            params=long,
            conditions=("controlled-chain",),
            model=ScriptedAdapter(exact).provenance,
            protocol=EXTENDED_CHAIN,
        )
    assert chain_capacity_problem(TaskParams(), EXTENDED_CHAIN) is None


def test_simulate_and_sweep_refuse_it_before_anything_runs(tmp_path, capsys) -> None:
    status = main(
        [
            "simulate",
            "--model",
            "independent",
            "--seeds",
            "1",
            "--param",
            "recurrence_steps=[4]",
            "--chain-protocol",
            "extended",
            "--out",
            str(tmp_path / "sim"),
        ]
    )
    assert status == 2 and "recurrence_steps" in capsys.readouterr().err
    assert not (tmp_path / "sim").exists()


# ---- a sweep under each protocol: trace/4, the freeze, the receipt, reproduce -----------


def sweep(protocol: ChainProtocol, adapter: ScriptedAdapter | None = None):
    model = adapter or ScriptedAdapter(exact)
    state = Sweep(
        params=TaskParams(), conditions=CONDITIONS, model=model.provenance, protocol=protocol
    )
    run(run_phase(state, "measure", model))
    freeze(state)
    receipt = make_receipt(state.trace())
    run(run_phase(state, "heldout", model))
    return state, receipt


@pytest.fixture(scope="module")
def extended():
    """A sweep under the extended protocol whose model is one off on every product."""

    def reply(prompt, caps):
        if prompt.startswith("You are given two integer registers."):
            value, symbol = chain_value(prompt)
            return ScriptedReply(str(value + (symbol == "*")), input_tokens=40, output_tokens=3)
        return exact(prompt, caps)

    state, receipt = sweep(EXTENDED_CHAIN, ScriptedAdapter(reply))
    return to_json(state.trace()), receipt


def test_a_sweep_records_its_protocol_in_the_trace_the_freeze_and_the_receipt(extended) -> None:
    document, receipt = extended
    assert document["schema_version"] == "trace/4"
    assert document["run"]["terms"] == {"chain_protocol": "chain-extended/1", "sealed": False}
    assert all(f["terms"] == document["run"]["terms"] for f in document["freezes"])
    assert receipt.terms == RunTerms("chain-extended/1")
    assert_valid_trace(document)
    design, design_receipt = sweep(DESIGN_CHAIN)
    assert to_json(design.trace())["run"]["terms"] == {
        "chain_protocol": "chain-design/1",
        "sealed": False,
    }
    assert design_receipt.terms == RunTerms("chain-design/1")


def test_every_new_route_is_observed_predicted_and_scored(extended) -> None:
    document, _ = extended
    trace = read_trace(document)
    chains = {t.task_id: t for t in trace.trials if t.condition == "controlled-chain"}
    for task_id in NEW_FAMILIES:
        route = chains[task_id].chain
        assert route.status == "completed" and len(route.calls) == 7
        assert route.all_steps_correct is False  # one off on every product
    doc = score_trace(trace)
    result = next(r for r in doc.conditions if r.frozen.profile.condition == "controlled-chain")
    assert set(NEW_FAMILIES) <= set(result.frozen.heldout_task_ids)
    assert result.frozen.terms == RunTerms("chain-extended/1")
    by_id = {p.task_id: p for p in result.predictions}
    assert by_id["determinant-1"].ops == ("sub", "sub", "mul", "sub", "sub", "mul", "sub")
    assert by_id["derivative-1"].ops == ("mul",) * 5 + ("add", "add")
    # the state-aware predictor predicts each route from its planned calls
    aware = {p.task_id: p for p in result.state_aware.predictions}
    assert aware["derivative-1"].ops == by_id["derivative-1"].ops
    steps = task_steps(TASKS["derivative-1"], "controlled-chain", EXTENDED_CHAIN)
    assert [(s.op, s.left, s.right, s.result) for s in steps] == route_values(TASKS["derivative-1"])


def test_reproduce_re_derives_every_new_route(extended, tmp_path) -> None:
    document, receipt = extended
    assert reproduce(document) == []
    assert receipt_mismatches(read_trace(document), receipt) == []
    doc = to_json(score_trace(read_trace(document)))
    assert reproduce_predictions(document, doc) == []


def _chain_trial(document, task_id):
    for i, trial in enumerate(document["trials"]):
        if trial["trial_id"] == f"controlled-chain/{task_id}":
            return i, trial
    raise AssertionError(task_id)


@pytest.mark.parametrize(
    ("what", "edit", "expected"),
    [
        (
            "a call's parsed value",
            lambda call: call.update(parsed=call["parsed"] + 1),
            "recorded parsed/expected/correct",
        ),
        (
            "a call's reply",
            lambda call: call["completion"].update(text=str(call["parsed"] + 5)),
            "recorded parsed/expected/correct",
        ),
        (
            "a call's routed operand",
            lambda call: call.update(left=call["left"] + 1),
            "are not the routed values",
        ),
        (
            "a call's source",
            lambda call: call.update(left_source="register:x1"),
            "does not follow the task's route",
        ),
    ],
)
def test_a_tampered_call_of_a_new_route_is_caught(extended, what, edit, expected) -> None:
    from tracecheck import rechained

    document, _ = extended
    for task_id in ("determinant-2", "derivative-1"):
        tampered = copy.deepcopy(document)
        i, trial = _chain_trial(tampered, task_id)
        edit(trial["chain"]["calls"][4])
        found = [str(m) for m in reproduce(rechained(tampered))]
        assert any(f"$.trials[{i}]" in m and expected in m for m in found), (what, found)


def test_a_trace_whose_terms_were_changed_is_caught(extended) -> None:
    from tracecheck import rechained

    document, _ = extended
    tampered = copy.deepcopy(document)
    tampered["run"]["terms"] = {"chain_protocol": "chain-design/1"}
    found = [str(m) for m in reproduce(rechained(tampered))]
    assert any("route limits of the run's chain protocol" in m for m in found)
    assert any("$.freezes" in m and "another chain protocol" in m for m in found)
    tampered["run"]["terms"] = None
    assert any("$.run.terms" in str(m) for m in reproduce(rechained(tampered)))


def test_a_receipt_names_the_protocol(extended) -> None:
    document, receipt = extended
    edited = copy.deepcopy(document)
    edited["run"]["terms"] = {"chain_protocol": "chain-design/1"}
    found = [str(m) for m in receipt_mismatches(read_trace(edited), receipt)]
    assert any("$.terms" in m for m in found)


def test_compare_never_pools_two_protocols(extended) -> None:
    document, _ = extended
    design, _ = sweep(DESIGN_CHAIN)
    docs = [score_trace(design.trace()), score_trace(read_trace(document))]
    differ = compare.parameter_differences(["design", "extended"], docs)
    assert differ is not None and "chain protocols differ" in differ
    assert compare.parameter_differences(["a", "b"], [docs[1], docs[1]]) is None


# ---- older documents -------------------------------------------------------------------


def test_a_trace_3_written_before_trace_4_reads_and_reproduces_unchanged(capsys) -> None:
    """tests/fixtures/trace-3.json, predictions-4.json and receipt-trace-3.json were written
    by the code of commit 53508eb (before trace/4; a scripted adapter, a TEST FIXTURE)."""
    document = json.loads((FIXTURES / "trace-3.json").read_text(encoding="utf-8"))
    assert document["schema_version"] == "trace/3" and "terms" not in document["run"]
    trace = read_trace(document)
    assert trace.schema_version == "trace/4" and trace.run.terms is None
    assert protocol_of(trace.run.terms) == DESIGN_CHAIN
    assert all(f.terms is None for f in trace.freezes)
    status = main(
        [
            "reproduce",
            str(FIXTURES / "trace-3.json"),
            "--predictions",
            str(FIXTURES / "predictions-4.json"),
            "--receipt",
            str(FIXTURES / "receipt-trace-3.json"),
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert "note: run terms absent (recorded before trace/4)" in out
    assert "every number in" in out and "chain absent" not in out


def test_a_trace_3_document_that_records_terms_is_refused() -> None:
    document = json.loads((FIXTURES / "trace-3.json").read_text(encoding="utf-8"))
    document["run"]["terms"] = {"chain_protocol": "chain-extended/1"}
    with pytest.raises(RecordError, match=r"trace/4's run\.terms"):
        read_trace(document)


# ---- synthetic models: their structure applies to the new routes ------------------------


def test_a_synthetic_models_exact_route_is_the_new_routes() -> None:
    adapter = SyntheticAdapter(parse_spec("independent"), 1729)
    for task_id in NEW_FAMILIES:
        adapter.begin_trial("controlled-chain", TASKS[task_id])
        assert adapter._exact_route == [v for *_, v in route_values(TASKS[task_id])]


def test_synthetic_structures_run_on_the_new_routes() -> None:
    """`depth` with zero base rates is perfect on every chain call: every new route is right
    (the shipped `depth` has small base rates since metrics/2's validation). `cancelling`
    compensates after a wrong step: some new routes end right with a step wrong."""
    params = TaskParams(determinants=6, derivatives=6)
    depth = parse_spec("depth:p_add=0,p_sub=0,p_mul=0")
    perfect = run_seed(depth, params, ("controlled-chain",), EXTENDED_CHAIN)
    new = [
        t
        for t in perfect.trace.trials
        if t.task_id.startswith(("determinant", "derivative")) and t.chain is not None
    ]
    assert len(new) == 12 and all(t.chain.all_steps_correct and t.correct for t in new)
    assert reproduce(to_json(perfect.trace)) == []
    cancelled = 0
    for seed in range(1, 9):
        spec = parse_spec("cancelling:p_mul=0.5,p_sub=0.3,p_add=0.3")
        seeded = run_seed(spec, replace(params, seed=seed), ("controlled-chain",), EXTENDED_CHAIN)
        for t in seeded.trace.trials:
            if t.task_id.startswith(("determinant", "derivative")) and t.chain is not None:
                assert t.chain.status == "completed" and len(t.chain.calls) == 7
                cancelled += bool(t.chain.final_correct and not t.chain.all_steps_correct)
    assert cancelled > 0
    design = run_seed(depth, params, ("controlled-chain",), DESIGN_CHAIN)
    unsupported = [t for t in design.trace.trials if t.task_id.startswith("determinant")]
    assert unsupported and all(t.chain.status == "unsupported" for t in unsupported)


def test_simulate_takes_the_chain_protocol(tmp_path, capsys) -> None:
    out = tmp_path / "sim"
    argv = ["simulate", "--model", "independent", "--seeds", "1..2", "--out", str(out)]
    assert main([*argv, "--chain-protocol", "extended"]) == 0
    capsys.readouterr()
    trace = json.loads((out / "seed-1" / "trace.json").read_text(encoding="utf-8"))
    assert trace["run"]["terms"] == {"chain_protocol": "chain-extended/1", "sealed": False}
    chains = [t for t in trace["trials"] if t["trial_id"] == "controlled-chain/derivative-1"]
    assert len(chains[0]["chain"]["calls"]) == 7
    assert main(["reproduce", str(out / "seed-1" / "trace.json")]) == 0


# ---- the page's session: step 2's choice travels in sweep_start --------------------------


def test_the_page_chooses_the_protocol_explicitly(monkeypatch) -> None:
    from test_session import Page, call, document

    from pyapp.browser import Session, bridge

    monkeypatch.setattr(bridge, "SESSION", Session())
    page = Page(ScriptedAdapter(exact))
    bad = call(page, "sweep_start", seed=1729, conditions=["controlled-chain"], chain_protocol="x")
    assert not bad["ok"] and bad["error"]["code"] == "bad_request"
    assert "unknown chain protocol" in bad["error"]["message"]
    default = call(page, "sweep_start", seed=1729, conditions=["controlled-chain"])
    assert default["result"]["chain_protocol"] == "chain-design/1"
    started = call(
        page, "sweep_start", seed=1729, conditions=["controlled-chain"], chain_protocol="extended"
    )
    assert started["ok"] and started["result"]["chain_protocol"] == "chain-extended/1"
    frozen = call(page, "sweep_run", phase="all")
    assert frozen["ok"], frozen
    shown = next(e for e in page.events if e["type"] == "frozen")["predictions"][0]["predictions"]
    assert [p["task_id"] for p in shown][-4:] == list(NEW_FAMILIES)  # predicted, then observed
    trace = document(page, "sweep_trace", "trace")
    assert trace["run"]["terms"] == {"chain_protocol": "chain-extended/1", "sealed": False}
    assert reproduce(trace) == []
    refused = call(
        page,
        "sweep_start",
        seed=1729,
        conditions=["controlled-chain"],
        chain_protocol="extended",
        params={"recurrence_steps": [4]},
    )
    assert not refused["ok"] and refused["error"]["code"] == "bad_params"


def test_the_sweep_records_its_protocol_and_resume_keeps_it() -> None:
    import argparse

    from pyapp.cli import parser
    from pyapp.errors import UsageError
    from pyapp.sweep import options_for_resume, options_from_args, recorded_options_of

    def args(*argv: str) -> argparse.Namespace:
        return parser().parse_args(["sweep", "--model", "fixture", "--out", "x", *argv])

    chosen = options_from_args(args("--chain-protocol", "extended"))
    assert chosen.chain_protocol == "extended" and chosen.to_json()["chain_protocol"] == "extended"
    assert options_from_args(args()).chain_protocol == "design"
    with pytest.raises(UsageError, match="recurrence_steps"):
        options_from_args(args("--chain-protocol", "extended", "--param", "recurrence_steps=[4]"))
    recorded = chosen.to_json()
    resumed = options_for_resume(args("--resume"), recorded, "run.json")
    assert resumed.chain_protocol == "extended"
    with pytest.raises(UsageError, match="chain-protocol"):
        options_for_resume(args("--resume", "--chain-protocol", "design"), recorded, "run.json")
    older = {k: v for k, v in recorded.items() if k != "chain_protocol"}  # before it existed
    assert recorded_options_of(older, "run.json").chain_protocol == "design"


def test_a_plan_key_chooses_the_protocol_of_every_cell(tmp_path) -> None:
    import subprocess
    import sys
    import tomllib

    import jsonschema

    root = Path(__file__).resolve().parents[1]
    trace = one_cell_trace(
        tmp_path,
        '[axes]\nmodels = ["depth"]\nseeds = [1]\nconditions = [["controlled-chain"]]\n'
        '[options]\nchain_protocol = "extended"\n',
    )
    plan = tmp_path / "plan.toml"  # the plan the helper wrote
    # a plan is sealed unless it says otherwise
    assert trace["run"]["terms"] == {"chain_protocol": "chain-extended/1", "sealed": True}
    schema = json.loads((root / "exports" / "matrix-plan.schema.json").read_text("utf-8"))
    shipped = root / "examples" / "study-subject-extended.toml"
    jsonschema.validate(tomllib.loads(shipped.read_text(encoding="utf-8")), schema)
    bad = plan.read_text(encoding="utf-8").replace('"extended"', '"sideways"')
    plan.write_text(bad, encoding="utf-8")
    refused = subprocess.run(
        [sys.executable, "-m", "pyapp", "matrix", str(plan), "--out", str(tmp_path / "o2")],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=300,
    )
    assert refused.returncode != 0 and "chain_protocol" in refused.stderr + refused.stdout
