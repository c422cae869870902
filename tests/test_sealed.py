"""Sealed held-out tasks (issue 37, "Sealed held-out tasks"): a sealed run draws its
held-out tasks after every profile is frozen, from a seed its freezes seal; `reproduce`
re-derives that seed and refuses a draw the freezes do not seal; unsealed runs and older
traces are unchanged."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from matrixrun import one_cell_trace
from tracecheck import assert_valid_trace, rechained

from pyapp.cli.main import main
from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.predict import (
    complete_freeze,
    content_sha256,
    heldout_draw_seed,
    score_trace,
    tasks_of_trace,
)
from pyapp.records import (
    VIRTUAL_CLOCK,
    clock,
    header_change,
    read_trace,
    summarise,
    to_json,
    with_change,
)
from pyapp.synthetic import SyntheticAdapter, parse_spec, run_seed
from pyapp.tasks import SEALED_GENERATOR_VERSION, TaskParams, draw_heldout, generate, sealed_tasks
from pyapp.verify import make_receipt, receipt_mismatches, reproduce_predictions
from pyapp.verify.reproduce import reproduce

SPEC = parse_spec("size-dependent")
CONDITIONS = ("model-only", "controlled-chain")
FIXTURES = Path(__file__).resolve().parent / "fixtures"

DEFAULT_TASKS_SHA256 = "4ec3181c75a5c0d13a648b5328cd3806ba9eaa0535050f75d89e548afadd1c70"
"""SHA-256 of the default (seed 1729, unsealed, `tasks/1`) task set's JSON, as the code
before sealing generated it."""


def tasks_sha256(tasks: Any) -> str:
    text = json.dumps([t.to_json() for t in tasks], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def sealed_run() -> Any:
    return run_seed(SPEC, TaskParams(), CONDITIONS, sealed=True)


def test_the_default_task_set_is_byte_for_byte_and_sealing_keeps_its_profile_tasks() -> None:
    default = generate()
    assert tasks_sha256(default) == DEFAULT_TASKS_SHA256
    drawn = sealed_tasks(TaskParams(), "ab" * 32)
    # profile tasks: the task seed's, byte for byte; held-out: same ids, drawn anew
    assert [t.to_json() for t in drawn if t.split == "profile"] == [
        t.to_json() for t in default if t.split == "profile"
    ]
    heldout = [t for t in drawn if t.split == "heldout"]
    assert [t.id for t in heldout] == [t.id for t in default if t.split == "heldout"]
    assert {t.generator_version for t in heldout} == {SEALED_GENERATOR_VERSION}
    assert [t.registers for t in heldout] != [t.registers for t in default if t.split == "heldout"]
    assert draw_heldout(TaskParams(), "ab" * 32) == tuple(heldout)  # one stream, repeatable
    assert sealed_tasks(TaskParams(), None) == tuple(t for t in default if t.split == "profile")


def test_a_sealed_run_draws_after_the_freeze_and_says_so_everywhere(sealed_run) -> None:
    trace = sealed_run.trace
    assert trace.run.terms is not None and trace.run.terms.sealed
    assert trace.run.generator_version == "tasks/2"
    draw = trace.draw
    assert draw is not None
    assert all(f.sequence < draw.sequence for f in trace.freezes)  # drawn after every freeze
    heldout_ids = {t.id for t in trace.tasks if t.split == "heldout"}
    heldout_trials = [t for t in trace.trials if t.task_id in heldout_ids]
    assert heldout_trials and all(t.sequence > draw.sequence for t in heldout_trials)
    assert draw.draw_seed == heldout_draw_seed(trace)
    assert [c.condition for c in draw.checks] == [f.condition for f in trace.freezes]
    document = to_json(trace)
    assert_valid_trace(document)
    assert reproduce(document) == []
    predictions = sealed_run.predictions
    assert predictions.sealed and predictions.draw_seed == draw.draw_seed
    assert all(c.frozen.draw_seed == draw.draw_seed for c in predictions.conditions)
    assert all(c.frozen.terms is not None and c.frozen.terms.sealed for c in predictions.conditions)
    assert reproduce_predictions(document, to_json(predictions)) == []
    receipt = make_receipt(trace)
    assert receipt.draw_seed == draw.draw_seed and receipt.terms == trace.run.terms
    assert receipt_mismatches(trace, receipt) == []
    edited = replace(receipt, draw_seed="0" * 64)
    assert any("draw_seed" in str(m) for m in receipt_mismatches(trace, edited))


def test_identical_profiles_seal_identically_whatever_the_times_and_backend(sealed_run) -> None:
    trace = sealed_run.trace
    seed = heldout_draw_seed(trace)
    assert trace.model is not None
    other = replace(
        trace,
        run=replace(trace.run, run_id="another", created_at="2030-01-01T00:00:00+00:00"),
        model=replace(trace.model, backend_actual="wasm"),
        freezes=tuple(replace(f, frozen_at="2030-01-01T00:00:01.000Z") for f in trace.freezes),
    )
    assert heldout_draw_seed(other) == seed
    renamed = replace(trace, model=replace(trace.model, model_id="another/model"))
    assert heldout_draw_seed(renamed) != seed
    reseeded = replace(
        trace, run=replace(trace.run, task_params=replace(trace.run.task_params, seed=7))
    )
    assert heldout_draw_seed(reseeded) != seed
    # the same model and profile in a second run: the same draw
    again = run_seed(SPEC, TaskParams(), CONDITIONS, sealed=True).trace
    assert again.draw is not None and again.draw.draw_seed == seed


def forged_profile(document: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """A sealed trace whose model-only profile was edited after the draw, as a forger with
    the project's code would: one wrong profile trial made right, the summary recounted,
    the freezes completed again (fit, reference forecast, profile hash) and the chain
    recomputed; the draw and the held-out trials kept."""
    forged = copy.deepcopy(document)
    tasks = {t.id: t for t in tasks_of_trace(read_trace(forged))}
    index, trial = next(
        (i, t)
        for i, t in enumerate(forged["trials"])
        if t["condition"] == "model-only"
        and tasks[t["task_id"]].split == "profile"
        and t["correct"] is False
        and t["completion"] is not None
    )
    right = str(tasks[trial["task_id"]].answer)
    trial["completion"]["text"] = right
    trial.update(result=int(right), correct=True, outcome="correct", failure=None)
    forged["summary"] = to_json(summarise(read_trace(forged).trials))
    rechained(forged)
    trace = read_trace(forged)
    for i, record in enumerate(trace.freezes):
        completed, _ = complete_freeze(trace, replace(record, profile_sha256=""))
        forged["freezes"][i] = to_json(completed)
        rechained(forged)
        trace = read_trace(forged)
    return forged, index


def test_a_profile_edited_after_the_draw_is_refused(sealed_run, tmp_path, capsys) -> None:
    """Reproducer: a sealed trace whose profile was edited after the fact (chain and profile
    hashes recomputed) is refused: its draw is not the one its freezes seal."""
    document = to_json(sealed_run.trace)
    forged, _ = forged_profile(document)
    found = [str(m) for m in reproduce(forged)]
    sealed = [m for m in found if m.startswith("$.draw.draw_seed")]
    assert sealed and "not the ones this run's freezes seal" in sealed[0], found
    assert not any("prev_sha256" in m for m in found)  # the chain itself was recomputed
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(forged), encoding="utf-8")
    assert main(["reproduce", str(path)]) == 1
    assert "MISMATCH $.draw.draw_seed" in capsys.readouterr().out

    # ... and a forger who also writes the seed the edited profile seals: the recorded
    # held-out tasks (and the trials made on them) are not the ones that seed draws
    reseeded = copy.deepcopy(forged)
    reseeded["draw"]["draw_seed"] = heldout_draw_seed(read_trace(forged))
    rechained(reseeded)
    found = [str(m) for m in reproduce(reseeded)]
    assert not any(m.startswith("$.draw.draw_seed") for m in found)
    assert any(m.startswith("$.tasks[") and "differs from the regenerated" in m for m in found)


def test_held_out_trials_of_a_sealed_run_need_the_draw(sealed_run) -> None:
    document = to_json(sealed_run.trace)
    undrawn = copy.deepcopy(document)
    undrawn["draw"] = None
    rechained(undrawn)
    found = [str(m) for m in reproduce(undrawn)]
    assert any("a held-out trial of a sealed run with no draw" in m for m in found)
    unsealed = copy.deepcopy(document)
    unsealed["run"]["terms"]["sealed"] = False
    found = [str(m) for m in reproduce(unsealed)]
    assert any(m.startswith("$.run.generator_version") for m in found)


def test_an_unsealed_tasks_1_trace_reproduces_unchanged(capsys) -> None:
    """A trace/4 written by the code before sealing (tasks/1; tests/fixtures/
    trace-4-unsealed.json and predictions-4-unsealed.json, by `simulate --model
    size-dependent --seeds 1729..1729 --conditions model-only` at e47c85c) reproduces, its
    predictions too, and its task set is the seed's."""
    trace_path = FIXTURES / "trace-4-unsealed.json"
    predictions_path = FIXTURES / "predictions-4-unsealed.json"
    document = json.loads(trace_path.read_text(encoding="utf-8"))
    predictions = json.loads(predictions_path.read_text(encoding="utf-8"))
    assert "sealed" not in document["run"]["terms"] and "draw" not in document
    trace = read_trace(document)
    assert trace.run.generator_version == "tasks/1" and trace.draw is None
    assert tasks_of_trace(trace) == generate(trace.run.task_params)
    assert reproduce(document) == []
    assert reproduce_predictions(document, predictions) == []
    assert not score_trace(trace).sealed
    status = main(["reproduce", str(trace_path), "--predictions", str(predictions_path)])
    out = capsys.readouterr().out
    assert status == 0 and "sealed" not in out, out


def test_the_ledger_is_matched_after_the_draw(sealed_run) -> None:
    """A second sealed run of the same model and profile draws the same tasks: the ledger
    that recorded them makes it exploratory, by the draw's check (the freeze, made before
    the tasks existed, names none)."""
    trace = sealed_run.trace
    heldout = [t for t in tasks_of_trace(trace) if t.split == "heldout"]
    keys = {"model-only": tuple(content_sha256(t) for t in heldout[:2])}

    async def go() -> Any:
        adapter = SyntheticAdapter(SPEC, 1729)
        sweep = Sweep(
            params=TaskParams(),
            conditions=CONDITIONS,
            model=adapter.provenance,
            run_id="second",
            clock=VIRTUAL_CLOCK,
            sealed=True,
            ledger_keys=keys,
        )
        with clock.using(adapter.clock.now_ns):
            await run_phase(sweep, "measure", adapter, before_trial=adapter.begin_trial)
            assert [t for t in sweep.tasks if t.split == "heldout"] == []  # none before the draw
            header = sweep.header()
            mark = (sweep.model, len(sweep.interruptions), len(sweep.freezes), False)
            freeze(sweep)
            change = header_change(
                mark, sweep.model, sweep.interruptions, sweep.freezes, sweep.draw
            )
            # what the page stores: the header before the freeze and the change it was sent
            assert to_json(with_change(header, change)) == to_json(sweep.header())
            await run_phase(sweep, "heldout", adapter, before_trial=adapter.begin_trial)
        return sweep.trace()

    import asyncio

    second = asyncio.run(go())
    assert second.draw is not None and trace.draw is not None
    assert second.draw.draw_seed == trace.draw.draw_seed
    assert all(f.previously_observed == () for f in second.freezes)
    check = second.draw.checks[0]
    assert check.condition == "model-only"
    assert check.previously_observed == tuple(sorted(t.id for t in heldout[:2]))
    assert "observed in an earlier session" in (check.exploratory_reason or "")
    assert reproduce(to_json(second)) == []
    frozen = {c.frozen.profile.condition: c.frozen for c in score_trace(second).conditions}
    assert frozen["model-only"].exploratory and not frozen["controlled-chain"].exploratory


def test_simulate_sealed_writes_sealed_runs_that_reproduce(tmp_path, capsys) -> None:
    out = tmp_path / "sim"
    args = ["simulate", "--model", "size-dependent", "--seeds", "3..4", "--out", str(out)]
    assert main([*args, "--sealed"]) == 0
    capsys.readouterr()
    trace = json.loads((out / "seed-3" / "trace.json").read_text(encoding="utf-8"))
    predictions = json.loads((out / "seed-3" / "predictions.json").read_text(encoding="utf-8"))
    assert trace["run"]["terms"]["sealed"] is True and trace["draw"]["draw_seed"]
    assert predictions["sealed"] is True
    assert predictions["draw_seed"] == trace["draw"]["draw_seed"]
    assert main(["reproduce", str(out / "seed-3" / "trace.json")]) == 0
    assert "sealed: the held-out tasks were drawn after every freeze" in capsys.readouterr().out
    assert main(["score", str(out / "seed-4" / "trace.json")]) == 0
    assert "sealed: held-out tasks drawn after every freeze" in capsys.readouterr().out


def test_sweep_sealed_is_an_option_run_json_records(tmp_path) -> None:
    from pyapp.cli import parser as build_parser
    from pyapp.sweep import options_from_args, recorded_options_of

    parser = build_parser()
    base = ["sweep", "--model", "fixture", "--out", str(tmp_path / "run")]
    sealed = options_from_args(parser.parse_args([*base, "--sealed"]))
    assert sealed.sealed and sealed.to_json()["sealed"] is True
    assert recorded_options_of(sealed.to_json(), "run.json").sealed
    unsealed = options_from_args(parser.parse_args(base))
    assert not unsealed.sealed and "sealed" not in unsealed.to_json()


def test_a_plan_option_seals_every_cell_and_unsealed_plans_keep_their_hash(tmp_path) -> None:

    from pyapp.matrix import plan_sha256, read_plan

    root = Path(__file__).resolve().parents[1]
    # the hash the code before `options.sealed` gave this shipped plan, which is silent on
    # it: it is kept by the plan saying `sealed = false` (its old meaning); silent, the plan
    # is now sealed (the default), another plan
    shipped = read_plan(root / "examples" / "matrix-fixture.toml")
    assert shipped.options.sealed is True
    unsealed = replace(shipped, options=replace(shipped.options, sealed=False))
    assert plan_sha256(unsealed).startswith("58923bd51c6b888b")
    assert plan_sha256(shipped) != plan_sha256(unsealed)
    trace = one_cell_trace(
        tmp_path,
        '[axes]\nmodels = ["depth"]\nseeds = [1]\nconditions = [["model-only"]]\n'
        "[options]\nsealed = true\n",
    )
    assert trace["run"]["terms"]["sealed"] is True and trace["draw"] is not None
    assert reproduce(trace) == []


def test_the_page_session_starts_a_sealed_sweep(monkeypatch) -> None:
    from test_integrity import answer
    from test_session import Page, call

    from pyapp.browser import Session, bridge
    from pyapp.records import ScriptedAdapter

    monkeypatch.setattr(bridge, "SESSION", Session())
    page = Page(ScriptedAdapter(answer))
    started = call(page, "sweep_start", seed=1729, conditions=["model-only"], sealed=True)
    assert started["ok"] and started["result"]["sealed"] is True
    assert started["result"]["draw_seed"] is None
    assert started["result"]["heldout_left"] == 6  # counted before the draw
    ran = call(page, "sweep_run", phase="all")
    assert ran["ok"], ran
    state = ran["result"]["state"]
    assert state["stage"] == "done" and state["draw_seed"]
    trace = json.loads(call(page, "sweep_trace")["result"]["trace_json"])
    assert trace["draw"]["draw_seed"] == state["draw_seed"]
    assert reproduce(trace) == []


def test_the_report_says_sealed_or_not(sealed_run, tmp_path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "trace.json").write_text(json.dumps(to_json(sealed_run.trace)), encoding="utf-8")
    assert main(["report", str(folder), "--out", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    draw = sealed_run.trace.draw
    assert draw is not None
    assert f"sealed: drawn after every freeze from the held-out draw seed {draw.draw_seed}" in html
    unsealed = tmp_path / "old"
    unsealed.mkdir()
    (unsealed / "trace.json").write_bytes((FIXTURES / "trace-4-unsealed.json").read_bytes())
    assert main(["report", str(unsealed), "--out", str(tmp_path / "o.html")]) == 0
    assert "unsealed: drawn from the task seed" in (tmp_path / "o.html").read_text("utf-8")
