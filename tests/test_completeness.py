"""Issue 37 §1: completeness at re-derivation (`pyapp.verify.completeness`).

Reproducer (it failed on the code before: `reproduce --receipt` said ok): drop the last four
held-out trials of a run and fix the summary counts by hand — no hashing needed, the chain
stays valid at its tail. Now `reproduce` (with or without the receipt), `score`, `report`
and the page's Open a trace name each missing task and say the run ended early.

Scripted adapters are test fixtures: nothing here is model evidence."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from asyncrun import run
from test_integrity import FlakyAdapter, answer

from pyapp.browser import open_run
from pyapp.cli.main import main
from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.records import ScriptedAdapter, read_trace, summarise, to_json
from pyapp.tasks import TaskParams
from pyapp.verify import incomplete, make_receipt

MISSING = "4 of 6 held-out tasks of model-only have no trial: "
LAST_FOUR = "determinant-1, determinant-2, derivative-1, derivative-2"


@pytest.fixture(scope="module")
def finished() -> tuple[dict[str, Any], dict[str, Any]]:
    model = ScriptedAdapter(answer)
    sweep = Sweep(params=TaskParams(), conditions=("model-only",), model=model.provenance)
    assert run(run_phase(sweep, "measure", model)) == "finished"
    freeze(sweep)
    receipt = to_json(make_receipt(sweep.trace()))
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    return to_json(sweep.trace()), receipt


def cut(document: dict[str, Any], count: int = 4) -> dict[str, Any]:
    """The reproducer: the last `count` trials gone, the summary fixed by hand."""
    forged = copy.deepcopy(document)
    forged["trials"] = forged["trials"][:-count]
    forged["summary"] = to_json(summarise(read_trace(forged).trials))
    return forged


def cli(tmp_path: Path, capsys, *args: str, trace: object, receipt: object = None):
    (tmp_path / "t.json").write_text(json.dumps(trace), "utf-8")
    argv = [args[0], str(tmp_path / "t.json"), *args[1:]]
    if receipt is not None:
        (tmp_path / "r.json").write_text(json.dumps(receipt), "utf-8")
        argv += ["--receipt", str(tmp_path / "r.json")]
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out + err


def test_an_honest_run_is_complete(finished, tmp_path, capsys) -> None:
    trace, receipt = finished
    assert incomplete(read_trace(trace)) == []
    status, out = cli(tmp_path, capsys, "reproduce", trace=trace, receipt=receipt)
    assert status == 0 and "INCOMPLETE" not in out


def test_dropped_held_out_trials_are_named_with_or_without_the_receipt(
    finished, tmp_path, capsys
) -> None:
    trace, receipt = finished
    forged = cut(trace)
    for with_receipt in (receipt, None):
        status, out = cli(tmp_path, capsys, "reproduce", trace=forged, receipt=with_receipt)
        assert status == 1, out
        assert f"INCOMPLETE: {MISSING}{LAST_FOUR}" in out
        assert "the run ended early" in out
    status, out = cli(tmp_path, capsys, "score", trace=forged)  # its scores say so first
    assert out.startswith(f"INCOMPLETE: {MISSING}"), out  # before any flag or number
    opened = open_run(forged)
    assert not opened.ok and opened.trace_mismatches == ()
    assert opened.incomplete[0] == MISSING + LAST_FOUR


def test_a_run_that_ended_after_an_interruption_says_so() -> None:
    model = FlakyAdapter(lambda n: False)
    sweep = Sweep(params=TaskParams(), conditions=("model-only",), model=model.provenance)
    assert run(run_phase(sweep, "measure", model)) == "finished"
    freeze(sweep)
    model.broken = lambda n: True  # every held-out generation fails: the sweep pauses
    assert run(run_phase(sweep, "heldout", model)) == "paused"
    lines = incomplete(sweep.trace())
    assert lines[0].startswith("6 of 6 held-out tasks of model-only have no trial")
    assert lines[-1].startswith("the run ended early, after an interruption of model-only/")
    assert ": infrastructure (not_loaded)" in lines[-1]


def test_a_condition_never_frozen_is_named() -> None:
    model = ScriptedAdapter(answer)
    sweep = Sweep(params=TaskParams(), conditions=("model-only",), model=model.provenance)
    assert run(run_phase(sweep, "measure", model)) == "finished"
    lines = incomplete(sweep.trace())
    assert lines[0].startswith("model-only has no frozen profile: the run ended before")


def test_a_supplied_program_control_has_nothing_to_count(tmp_path, capsys) -> None:
    status = main(["run", "--out", str(tmp_path / "c.json")])
    assert status == 0
    capsys.readouterr()
    status = main(["reproduce", str(tmp_path / "c.json")])
    out = capsys.readouterr().out
    assert status == 0 and "INCOMPLETE" not in out
