"""Both predictors are frozen, with the task set (issue 23 §4, §5).

The state-aware fit (coefficients, prior, clamp ranges, version) and the task-set identity
(seed, canonical parameters, generator version) are part of each freeze record and of the
profile hash; `score` uses the frozen fit, `reproduce` re-fits it and names any difference.
Traces come from a scripted adapter (a TEST FIXTURE, never model evidence)."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
from asyncrun import run
from test_integrity import answer

from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.predict import predictor, score_trace, state_aware
from pyapp.records import ScriptedAdapter, read_trace, to_json
from pyapp.tasks import TaskParams
from pyapp.verify.reproduce import reproduce


@pytest.fixture(scope="module")
def finished() -> dict[str, Any]:
    model = ScriptedAdapter(answer)
    sweep = Sweep(params=TaskParams(), conditions=("model-only",), model=model.provenance)
    assert run(run_phase(sweep, "measure", model)) == "finished"
    freeze(sweep)
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    return to_json(sweep.trace())


def test_score_uses_the_frozen_fit_and_reproduce_names_a_refit_that_differs(
    finished, monkeypatch
) -> None:
    trace = read_trace(finished)
    frozen = trace.freezes[0].state_aware
    assert frozen is not None and frozen.version == "state-aware/1"
    real_fit = state_aware.fit

    def changed_fit(*args: Any) -> state_aware.StateAwareModel:  # the fitting code changed
        fitted = real_fit(*args)
        return replace(fitted, prior=fitted.prior + " (changed)")

    monkeypatch.setattr(state_aware, "fit", changed_fit)
    result = score_trace(trace).conditions[0]
    assert result.state_aware is not None and result.state_aware.model == frozen
    assert result.frozen.state_aware == frozen
    found = [m.where for m in reproduce(finished)]
    assert found == ["$.freezes[0].state_aware"]


def test_an_edited_frozen_fit_or_task_set_is_named(finished) -> None:
    fit = copy.deepcopy(finished)
    fit["freezes"][0]["state_aware"]["ops"][0]["coefficients"][0] += 1.0
    wheres = {m.where for m in reproduce(fit)}
    assert {"$.freezes[0].state_aware", "$.freezes"} <= wheres  # the refit; the profile hash
    task_set = copy.deepcopy(finished)
    task_set["freezes"][0]["task_set"]["task_params"]["determinants"] = 3
    wheres = {m.where for m in reproduce(task_set)}
    assert {"$.freezes[0].task_set", "$.freezes"} <= wheres


def test_the_predictions_carry_the_task_set_and_both_fits(finished) -> None:
    trace = read_trace(finished)
    document = score_trace(trace)
    assert document.task_set is not None and document.task_set.task_params == TaskParams()
    frozen = document.conditions[0].frozen
    assert frozen.task_set == document.task_set == trace.freezes[0].task_set
    assert frozen.chain_head == trace.freezes[0].prev_sha256
    # the preset's name is a label only: the identity is the parameters themselves
    other = replace(TaskParams(), determinants=3)
    from pyapp.records import task_set_identity

    assert task_set_identity(other, "tasks/1").params_sha256 != document.task_set.params_sha256
    same_params_other_seed = task_set_identity(replace(TaskParams(), seed=7), "tasks/1")
    assert same_params_other_seed.params_sha256 == document.task_set.params_sha256
    assert same_params_other_seed.sha256 != document.task_set.sha256
    assert any("state-aware predictor" in a for a in predictor.ASSUMPTIONS)


def test_labels_that_were_not_measurements_are_gone(finished) -> None:
    """Issue 23 §8: `verification_ms` of a whole-task trial was two back-to-back clock reads
    (now null); `interrupted.output_shown` was always 0 (dropped; older documents read)."""
    trace = read_trace(finished)
    assert all(t.timings.verification_ms is None for t in trace.trials)
    interrupted = to_json(score_trace(trace).conditions[0].interrupted)
    assert "output_shown" not in interrupted
    old = copy.deepcopy(finished)
    old["interruptions"] = [{"trial_id": "model-only/recurrence-1", "sequence": 999,
                             "at": "2030-01-01T00:00:00.000+00:00", "reason": "page-closed",
                             "code": None, "message": None, "output_shown": False,
                             "partial": None}]  # fmt: skip
    from tracecheck import as_trace_2

    assert read_trace(as_trace_2(old)).interruptions[0].trial_id == "model-only/recurrence-1"


def test_parameters_the_chain_cannot_run_are_refused_naming_the_parameter(capsys) -> None:
    """Issue 23 §6: with recurrence_steps [2, 4] `recurrence-2` needs 8 calls, over a route's
    6: it used to be predicted and scored as the model's `route_call_budget` failure. The
    sweep (page and CLI alike) refuses such parameters at its start when the chain runs."""
    from test_session import Page, call

    from pyapp.cli.main import main
    from pyapp.errors import PhaseError

    page = Page(ScriptedAdapter(answer))
    params = {"recurrence_steps": [2, 4]}
    refused = call(page, "sweep_start", seed=1729, params=params, conditions=["controlled-chain"])
    assert not refused["ok"] and refused["error"]["code"] == "bad_params"
    assert refused["error"]["message"].startswith("recurrence_steps: a recurrence of 4 updates")
    fine = call(page, "sweep_start", seed=1729, params=params, conditions=["model-only"])
    assert fine["ok"]  # whole-task conditions run any recurrence the generator makes
    with pytest.raises(PhaseError, match="recurrence_steps"):
        Sweep(
            params=TaskParams(recurrence_steps=(2, 4)),
            conditions=("controlled-chain",),
            model=ScriptedAdapter(answer).provenance,
        )
    argv = ["simulate", "--model", "independent", "--seeds", "1..1", "--out", "/nonexistent"]
    status = main([*argv, "--param", "recurrence_steps=[2,4]", "--conditions", "controlled-chain"])
    assert status == 2 and "recurrence_steps" in capsys.readouterr().err


def test_each_op_shows_its_distinct_states_beside_n(finished) -> None:
    """Issue 23 §8: four of an op's six default profile trials are two encoding pairs that
    share their state: 6 trials, 4 distinct states."""
    ops = score_trace(read_trace(finished)).conditions[0].frozen.profile.ops
    assert [(op.trials, op.distinct_states) for op in ops] == [(6, 4)] * 3
