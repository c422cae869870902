"""Issue 37 §2: the never-scored rules are applied by whoever reads a trace, not only by the
code that writes one (`pyapp.predict.never_scored`).

Reproducers (each failed on the code before: the trace reproduced and was scored):

* a `stalled` held-out trial, kept by the sweep under `interruptions`, moved among the scored
  trials in place of its retry (the hash chain recomputed, the summary fixed by hand);
* a zero-call capacity failure (`route_call_budget`: a recurrence whose route needs more
  calls than a route allows) recorded among the scored trials, as a sweep that did not
  refuse such parameters (the code before issue 23 §6) wrote it.

Scripted adapters are test fixtures: nothing here is model evidence."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from asyncrun import run
from test_integrity import answer
from test_stall import HangingAdapter
from tracecheck import rechained

from pyapp.cli.main import main
from pyapp.experiment import Sweep, freeze, phases, run_phase
from pyapp.predict import RULES, score_trace
from pyapp.predict.never_scored import never_scored
from pyapp.records import ScriptedAdapter, read_trace, summarise, to_json
from pyapp.tasks import TaskParams
from pyapp.verify.reproduce import reproduce


def stalled_run() -> dict[str, Any]:
    """model-only, whose first held-out generation hangs (kept as an interruption)."""
    model = HangingAdapter(set())
    sweep = Sweep(params=TaskParams(), conditions=("model-only",), model=model.provenance)
    assert run(run_phase(sweep, "measure", model)) == "finished"
    freeze(sweep)
    model.hung = {model.count + 1}
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    return to_json(sweep.trace())


def moved_among_scored(document: dict[str, Any]) -> dict[str, Any]:
    """The forger's edit: the interruption's partial replaces the trial observed after it."""
    forged = copy.deepcopy(document)
    [interruption] = forged.pop("interruptions")
    forged["interruptions"] = []
    partial = interruption["partial"]
    index = next(i for i, t in enumerate(forged["trials"]) if t["trial_id"] == partial["trial_id"])
    partial["sequence"] = forged["trials"][index]["sequence"]
    forged["trials"][index] = partial
    gap = interruption["sequence"]  # the timeline closed over the removed interruption
    records = [*forged["trials"], *forged["freezes"], *forged["journal"]]
    for record in [*records, *forged["model"]["loads"]]:
        if isinstance(record.get("sequence"), int) and record["sequence"] > gap:
            record["sequence"] -= 1
    rechained(forged)
    forged["summary"] = to_json(summarise(read_trace(forged).trials))
    return forged


def cli(tmp_path: Path, capsys, command: str, document: object) -> tuple[int, str]:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document), "utf-8")
    status = main([command, str(path)])
    out, err = capsys.readouterr()
    return status, out + err


def test_a_stalled_trial_moved_among_the_scored_ones_is_a_mismatch(tmp_path, capsys) -> None:
    honest = stalled_run()
    assert reproduce(honest) == []
    forged = moved_among_scored(honest)
    trial = next(t for t in read_trace(forged).trials if t.failure is not None)
    assert never_scored(trial) == "stalled"
    found = [str(m) for m in reproduce(forged)]
    assert found and all("never scored (stalled" in line for line in found), found
    with pytest.raises(ValueError, match="never scored \\(stalled"):
        score_trace(read_trace(forged))
    status, out = cli(tmp_path, capsys, "reproduce", forged)
    assert status == 1 and "never scored (stalled" in out and trial.trial_id in out
    status, out = cli(tmp_path, capsys, "score", forged)
    assert status == 1 and "never scored (stalled" in out and "Brier" not in out


def capacity_run(monkeypatch) -> dict[str, Any]:
    """A chain sweep of recurrence_steps [2, 4] as the code before issue 23 §6 ran it."""
    monkeypatch.setattr(phases, "chain_capacity_problem", lambda params, protocol=None: None)
    model = ScriptedAdapter(answer)
    sweep = Sweep(
        params=TaskParams(recurrence_steps=(2, 4)),
        conditions=("controlled-chain",),
        model=model.provenance,
    )
    assert run(run_phase(sweep, "measure", model)) == "finished"
    freeze(sweep)
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    return to_json(sweep.trace())


def test_a_zero_call_capacity_failure_among_the_scored_trials_is_a_mismatch(
    monkeypatch, tmp_path, capsys
) -> None:
    document = capacity_run(monkeypatch)
    [trial] = [t for t in read_trace(document).trials if t.failure is not None
               and t.failure.code == "route_call_budget"]  # fmt: skip
    assert trial.chain is not None and trial.chain.calls == ()
    assert never_scored(trial) == "capacity refusal"
    found = [str(m) for m in reproduce(document)]
    assert len(found) == 1 and "never scored (capacity refusal" in found[0], found
    status, out = cli(tmp_path, capsys, "score", document)
    assert status == 1 and "capacity refusal" in out and trial.trial_id in out


def test_every_rule_is_named_in_the_specification() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "specification.md").read_text("utf-8")
    for rule in RULES:
        assert f"`{rule}`" in text, rule
