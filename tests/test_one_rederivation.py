"""Issue 37 §3: the page and the command line run one re-derivation
(`pyapp.audit.verdict.audit`) and list the same mismatches for the same files.

Reproducer (it failed on the code before): one held-out verdict edited. The page (Open a
trace: `pyapp.browser.viewer.open_run`, the Python the page calls) listed 4 mismatches and
scored the trace as re-derived; `python -m pyapp reproduce --predictions` listed 30,
re-scoring the tampered verdict. Several tamperings, each compared: the page names a
trial's mismatch by its trial id (`named`), the command line by its path.

Scripted adapters are test fixtures: nothing here is model evidence."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from asyncrun import run
from test_integrity import answer
from test_never_scored import moved_among_scored, stalled_run
from tracecheck import rechained

from pyapp.browser import open_run
from pyapp.cli.main import main
from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.predict import score_trace
from pyapp.records import ScriptedAdapter, read_trace, summarise, to_json
from pyapp.report import named
from pyapp.tasks import TaskParams


@pytest.fixture(scope="module")
def honest() -> tuple[dict[str, Any], dict[str, Any]]:
    model = ScriptedAdapter(answer)
    sweep = Sweep(
        params=TaskParams(),
        conditions=("model-only", "controlled-chain"),
        model=model.provenance,
    )
    assert run(run_phase(sweep, "measure", model)) == "finished"
    freeze(sweep)
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    trace = sweep.trace()
    return to_json(trace), to_json(score_trace(trace))


def verdict_edited(trace: dict[str, Any], predictions: dict[str, Any]):
    """The reproducer: the last held-out trial's verdict says correct."""
    forged = copy.deepcopy(trace)
    trial = next(t for t in reversed(forged["trials"]) if t["condition"] == "model-only")
    trial.update(correct=True, outcome="correct", result=trial["expected"])
    return forged, predictions


def completion_edited(trace: dict[str, Any], predictions: dict[str, Any]):
    """A profile trial's reply rewritten, the chain recomputed (the profile no longer
    re-derives to its frozen hash)."""
    forged = copy.deepcopy(trace)
    trial = forged["trials"][0]
    trial["completion"]["text"] = str(trial["expected"])
    return rechained(forged), predictions


def prediction_edited(trace: dict[str, Any], predictions: dict[str, Any]):
    forged = copy.deepcopy(predictions)
    forged["conditions"][0]["predictions"][0]["probability"] = 0.5
    return trace, forged


def tail_dropped(trace: dict[str, Any], predictions: dict[str, Any]):
    forged = copy.deepcopy(trace)
    forged["trials"] = forged["trials"][:-3]
    forged["summary"] = to_json(summarise(read_trace(forged).trials))
    return forged, predictions


def stall_moved(trace: dict[str, Any], predictions: dict[str, Any]):
    stalled = stalled_run()
    return moved_among_scored(stalled), to_json(score_trace(read_trace(stalled)))


TAMPERINGS = [verdict_edited, completion_edited, prediction_edited, tail_dropped, stall_moved]


def cli_lines(tmp_path: Path, capsys, trace: object, predictions: object) -> tuple[int, str]:
    (tmp_path / "t.json").write_text(json.dumps(trace), "utf-8")
    (tmp_path / "p.json").write_text(json.dumps(predictions), "utf-8")
    status = main(
        ["reproduce", str(tmp_path / "t.json"), "--predictions", str(tmp_path / "p.json")]
    )
    out, err = capsys.readouterr()
    return status, out + err


@pytest.mark.parametrize("tamper", TAMPERINGS, ids=lambda f: f.__name__)
def test_the_page_and_the_cli_list_the_same_mismatches(honest, tamper, tmp_path, capsys) -> None:
    trace, predictions = tamper(*honest)
    status, out = cli_lines(tmp_path, capsys, trace, predictions)
    printed = [line.removeprefix("MISMATCH ") for line in out.splitlines()]
    mismatches = [line for line, raw in zip(printed, out.splitlines(), strict=True)
                  if raw.startswith("MISMATCH ")]  # fmt: skip
    opened = open_run(trace, predictions)
    listed = [*opened.trace_mismatches, *(opened.predictions_mismatches or ())]
    assert [named(m, read_trace(trace)) for m in mismatches] == listed
    assert opened.incomplete == tuple(
        line.removeprefix("INCOMPLETE: ") for line in printed if line.startswith("INCOMPLETE: ")
    )
    # the same verdict, in the same words
    verdict = [
        line for line in printed if line not in mismatches and not line.startswith("ok: the")
    ]
    assert opened.summary == "; ".join(verdict)
    assert (status == 0) == opened.ok
    assert mismatches or opened.incomplete, "each tampering is found"


def test_an_edited_verdict_is_scored_as_re_derived_by_both(honest, tmp_path, capsys) -> None:
    """The reproducer's numbers: the trial's 3 fields, the chain and the summary, nothing
    re-scored with the tampered verdict (the CLI listed 26 predictions mismatches more)."""
    trace, predictions = verdict_edited(*honest)
    status, out = cli_lines(tmp_path, capsys, trace, predictions)
    assert status == 1 and out.count("MISMATCH ") == 5, out
    assert "MISMATCH $.conditions" not in out
    assert len(open_run(trace, predictions).trace_mismatches) == 5
