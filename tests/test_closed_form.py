"""The validation's targets, computed from a structure's parameters alone
(pyapp/synthetic/closed_form.py, targets.py), agree with what the synthetic model does, and
read nothing of the code they judge (the model's step rule, the adapter, the metrics, the
predictors)."""

from __future__ import annotations

import ast
import asyncio
import itertools
import math
from dataclasses import replace
from pathlib import Path

import pytest
from asyncrun import in_thread

from pyapp.conditions import plan_route, run_trial
from pyapp.predict import FEATURES, fit_logistic, wilson_interval
from pyapp.records import CHAIN_PROTOCOLS, EXTENDED_CHAIN, carries, clock
from pyapp.synthetic import SyntheticAdapter, closed_chain, closed_form, parse_spec, targets
from pyapp.tasks import TaskParams, generate

ROOT = Path(__file__).resolve().parents[1]


def test_the_targets_read_nothing_of_the_code_they_judge():
    forbidden = ("pyapp.predict", "pyapp.conditions", "pyapp.synthetic.adapter")
    for name in ("closed_form.py", "closed_chain.py", "targets.py"):
        source = (ROOT / "pyapp" / "synthetic" / name).read_text(encoding="utf-8")
        tree = ast.parse(source)
        imported = [
            node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
        ]
        assert not [m for m in imported if m.startswith(forbidden)], name
        assert "error_probability" not in source.replace("`SyntheticSpec.error_probability`", "")
        named = "`pyapp.predict.metrics.wilson_interval`"
        assert "wilson_interval" not in source.replace(named, "")


def test_the_step_rule_written_again_agrees_with_the_model():
    values = [0, 7, -9, 99, 1000, -12345, 987654, 55555]
    for name in ("size-dependent", "carry", "encoding", "depth", "independent"):
        spec = parse_spec(name)
        for op, a, b, encoding, position in itertools.product(
            ("add", "sub", "mul"), values, values, ("json", "prose"), (1, 3)
        ):
            mine = closed_form.step_wrong(spec, op, a, b, encoding, position)
            assert mine == pytest.approx(spec.error_probability(op, a, b, encoding, position))
    for op, a, b in itertools.product(("add", "sub", "mul"), values, values):
        assert closed_form.carry_count(op, a, b) == carries(op, a, b), (op, a, b)


def test_a_route_is_the_tree_in_evaluation_order():
    for task in generate(TaskParams(seed=4)):
        planned = plan_route(task)
        if planned is None:
            continue
        mine = closed_chain.route_of(task.program, task.registers)
        assert [c.op for c in mine] == [c.op for c in planned]


def test_the_targets_route_what_each_chain_protocol_routes_in_its_order():
    """The targets state each protocol's routed families themselves (`targets.ROUTED`): they
    are the protocol's, and under `chain-extended/1` a determinant's and a derivative's route
    (seven calls each) is the tree in evaluation order, operand for operand."""
    assert {p.version: p.families for p in CHAIN_PROTOCOLS.values()} == targets.ROUTED
    tasks = generate(TaskParams(seed=4))
    for protocol in CHAIN_PROTOCOLS.values():
        chained = targets.heldout_of(tasks, "controlled-chain", protocol.version)
        routed = [t for t in tasks if t.split == "heldout" and plan_route(t, protocol)]
        assert [t.id for t in chained] == [t.id for t in routed]
    seen = set()
    for task in tasks:
        planned = plan_route(task, EXTENDED_CHAIN)
        if task.family not in ("triangle_determinant", "cubic_derivative"):
            continue
        seen.add(task.family)
        mine = closed_chain.route_of(task.program, task.registers)
        assert len(mine) == len(planned) == 7

        def source(text, registers=task.registers):
            kind, _, name = text.partition(":")
            return registers[name] if kind == "register" else text

        assert [(c.op, c.left, c.right) for c in mine] == [
            (c.op, source(c.left), source(c.right)) for c in planned
        ]
    assert seen == {"triangle_determinant", "cubic_derivative"}


def _frequencies(spec, task, condition, draws, protocol=None):
    async def go():
        final = steps = 0
        cost = 0.0
        for r in range(draws):
            adapter = SyntheticAdapter(replace(spec, seed=77_000 + r), task_seed=9)
            with clock.using(adapter.clock.now_ns):
                adapter.begin_trial(condition, task)
                if protocol is None:
                    trial = await run_trial(task, condition, adapter)
                else:
                    trial = await run_trial(task, condition, adapter, protocol=protocol)
            final += trial.correct
            steps += bool(trial.chain is not None and trial.chain.all_steps_correct)
            cost += (trial.timings.generation_ms or 0.0) + (trial.timings.execution_ms or 0.0)
        return final / draws, steps / draws, cost / draws

    return in_thread(lambda: asyncio.run(go()))


@pytest.mark.parametrize(
    "model", ["cancelling", "correlated", "program", "format", "depth", "carry", "size-dependent"]
)
def test_the_enumerated_outcomes_agree_with_the_model_run_many_times(model):
    """Closed form against the adapter's own frequencies (the draws are hashes, so this is
    deterministic): within 4.5 standard errors, plus the stated truncation bound."""
    spec = parse_spec(model)
    tasks = {t.id: t for t in generate(TaskParams(seed=9))}
    draws = 240
    for task_id, condition in (
        ("recurrence-2", "controlled-chain"),
        ("determinant-1", "model-only"),
        ("derivative-1", "model-program"),
    ):
        task = tasks[task_id]
        out = closed_chain.outcome(spec, condition, task.program, task.registers, task.encoding)
        final, steps, cost = _frequencies(spec, task, condition, draws)
        se = math.sqrt(max(out.final * (1 - out.final), 1e-4) / draws)
        assert abs(final - out.final) <= 4.5 * se + out.dropped, (model, task_id, condition)
        if out.all_steps is not None:
            se = math.sqrt(max(out.all_steps * (1 - out.all_steps), 1e-4) / draws)
            assert abs(steps - out.all_steps) <= 4.5 * se, (model, task_id)
        assert abs(cost - out.cost_ms) <= 4.5 * 200 / math.sqrt(draws), (model, task_id)


@pytest.mark.parametrize(
    "model",
    ["independent", "cancelling", "correlated", "format", "depth", "carry", "size-dependent"],
)
def test_the_extended_routes_targets_agree_with_the_model_run_many_times(model):
    """Under `chain-extended/1` a determinant's and a derivative's chain (seven calls): the
    targets' exact final and all-step correctness per trial (`targets.heldout_truth`, the
    enumeration the committed `ci-extended` expectations are made from) against the
    adapter's own frequencies, within 4.5 standard errors plus the truncation bound."""
    spec = parse_spec(model)
    params = TaskParams(seed=9)
    tasks = {t.id: t for t in generate(params)}
    truth = targets.heldout_truth(spec, params, EXTENDED_CHAIN.version)
    draws = 600
    for task_id in ("determinant-1", "derivative-2"):
        task = tasks[task_id]
        out = truth[("controlled-chain", task_id)]
        exact = closed_chain.outcome(
            spec, "controlled-chain", task.program, task.registers, task.encoding
        )
        assert out.all_steps == pytest.approx(exact.all_steps)
        assert abs(out.final - exact.final) <= out.dropped + exact.dropped + 1e-12
        final, steps, cost = _frequencies(spec, task, "controlled-chain", draws, EXTENDED_CHAIN)
        se = math.sqrt(max(exact.final * (1 - exact.final), 1e-4) / draws)
        assert abs(final - exact.final) <= 4.5 * se + exact.dropped, (model, task_id, final)
        se = math.sqrt(max(exact.all_steps * (1 - exact.all_steps), 1e-4) / draws)
        assert abs(steps - exact.all_steps) <= 4.5 * se, (model, task_id, steps)
        assert abs(cost - exact.cost_ms) <= 4.5 * 200 / math.sqrt(draws), (model, task_id)


def test_the_correlated_all_step_closed_form_is_the_issues():
    spec = parse_spec("correlated")
    task = next(t for t in generate(TaskParams(seed=2)) if t.id == "recurrence-1")
    rates = [closed_form.step_wrong(spec, op, 1, 1, "json", 1) for op in task.operations]
    rho = 0.6
    expected = rho * (1 - max(rates)) + (1 - rho) * math.prod(1 - e for e in rates)
    got = closed_chain.all_steps_closed_form(spec, task.program, task.registers, "json")
    assert got == pytest.approx(expected)


def test_the_wilson_interval_by_its_definition_is_the_shipped_one():
    for n in (1, 6, 12, 60, 300):
        for k in range(n + 1):
            low, high = wilson_interval(k, n)
            for r in (low + 1e-9, high - 1e-9, 0.5, k / n, 0.0, 1.0):
                if 0.0 <= r <= 1.0 and abs(r - low) > 1e-12 and abs(r - high) > 1e-12:
                    assert targets.in_wilson(k, n, r) == (low <= r <= high), (k, n, r)
    # the issue's reproducer: a true rate of exactly 1 is in the interval at k = n
    assert targets.in_wilson(60, 60, 1.0)
    assert wilson_interval(60, 60, version="metrics/1")[1] < 1.0


def test_the_profile_distribution_and_the_same_prior_rate():
    pmf = targets.poisson_binomial([0.9, 0.5, 0.2])
    assert math.fsum(pmf) == pytest.approx(1.0)
    assert math.fsum(x * p for x, p in enumerate(pmf)) == pytest.approx(1.6)
    bias_only = (1.0,) + (0.0,) * (len(FEATURES) - 1)
    for k, n in ((6, 6), (3, 6), (0, 6), (55, 60)):
        rows = [(bias_only, True)] * k + [(bias_only, False)] * (n - k)
        beta = fit_logistic(rows)[0]
        assert targets.shrunk(k, n) == pytest.approx(1 / (1 + math.exp(-beta)), abs=1e-9)
