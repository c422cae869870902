"""Every reader refuses a document of the wrong kind in one line (issue 39): the file, the
kind found and the kind wanted, exit 1, before comparing anything (`pyapp.records.kinds`).

The documents are real ones, written by one small matrix run (a synthetic cell)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from interpreter import LabError
from pyapp.errors import InputError
from pyapp.experiment import read_ledger
from pyapp.records import KINDS, check_kind, kind_of
from pyapp.sweep import RunFile

ROOT = Path(__file__).resolve().parents[1]
PLAN = """
[axes]
models = ["independent"]
seeds = [3]
presets = ["tiny"]
conditions = [["model-only"]]

[parameter_sets.tiny]
primitives_per_op = 2
probe_pairs = 1
determinants = 0
derivatives = 0
"""


def pyapp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyapp", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """name → path: a matrix's matrix.json and summary.json, its cell's summary.json,
    trace.json and predictions.json."""
    folder = tmp_path_factory.mktemp("kinds")
    plan = folder / "plan.toml"
    plan.write_text(PLAN, encoding="utf-8")
    out = folder / "out"
    done = pyapp("matrix", str(plan), "--out", str(out), "--jobs", "1")
    assert done.returncode == 0, done.stderr
    cell = next((out / "cells").iterdir())
    return {
        "matrix": out / "matrix.json",
        "matrix summary": out / "summary.json",
        "cell summary": cell / "summary.json",
        "trace": cell / "seed-3" / "trace.json",
        "predictions": cell / "seed-3" / "predictions.json",
    }


def one_line_refusal(result: subprocess.CompletedProcess[str], path: Path, found: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "MISMATCH" not in result.stdout and "does not re-derive" not in result.stdout
    assert len(lines) == 1 and str(path) in lines[0], result.stderr
    assert found in lines[0], lines[0]


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("matrix", "a matrix's matrix.json (composition-lab-matrix)"),
        ("matrix summary", "a matrix's summary.json (composition-lab-matrix-summary)"),
        ("cell summary", "a simulate run's summary.json (composition-lab-simulation-summary)"),
        ("trace", "a trace (composition-lab-trace)"),
    ],
)
def test_reproduce_refuses_a_predictions_file_of_another_kind(
    documents: dict[str, Path], name: str, found: str
) -> None:
    """The reproducer: `reproduce TRACE --predictions matrix.json` printed 13-20 MISMATCH
    lines and blamed the valid trace."""
    path = documents[name]
    result = pyapp("reproduce", str(documents["trace"]), "--predictions", str(path))
    one_line_refusal(result, path, found)
    assert "not a predictions document (composition-lab-predictions)" in result.stderr


@pytest.mark.parametrize("name", ["matrix", "matrix summary", "cell summary", "predictions"])
def test_reproduce_and_score_refuse_a_trace_of_another_kind(
    documents: dict[str, Path], name: str
) -> None:
    for command in ("reproduce", "score"):
        result = pyapp(command, str(documents[name]))
        one_line_refusal(result, documents[name], "not a trace (composition-lab-trace)")


def test_the_right_documents_still_reproduce(documents: dict[str, Path]) -> None:
    result = pyapp(
        "reproduce", str(documents["trace"]), "--predictions", str(documents["predictions"])
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_compare_refuses_a_trace(documents: dict[str, Path]) -> None:
    result = pyapp("compare", str(documents["predictions"]), str(documents["trace"]))
    one_line_refusal(result, documents["trace"], "a trace (composition-lab-trace), not a")


def test_report_refuses_a_run_folder_whose_predictions_are_another_kind(
    documents: dict[str, Path], tmp_path: Path
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(documents["trace"], run / "trace.json")
    shutil.copy(documents["matrix summary"], run / "predictions.json")
    result = pyapp("report", str(run), "--out", str(tmp_path / "r.html"))
    one_line_refusal(result, run / "predictions.json", "not a predictions document")


def test_a_ledger_and_a_run_file_are_checked_by_kind(documents: dict[str, Path]) -> None:
    with pytest.raises(LabError, match=r"a predictions document .*, not a ledger \(sweep-ledger"):
        read_ledger(documents["predictions"])
    with pytest.raises(InputError, match=r"a trace .*, not a sweep's run.json"):
        RunFile.load(documents["trace"])


def test_kind_of_names_what_a_document_is() -> None:
    assert kind_of({"schema_version": "sweep-ledger/2", "entries": []}) == "ledger"
    assert kind_of({"schema_version": "trace/1"}) == "trace"  # no kind: its version's family
    assert kind_of([1]) == "a JSON array"
    assert len(kind_of({"kind": "x" * 500})) < 100  # bounded, whatever it holds
    assert kind_of({}).startswith("a document of no known kind")
    for name, known in KINDS.items():
        document = {"kind": known.kind} if known.kind else {"schema_version": "sweep-ledger/2"}
        check_kind(document, name, "x.json")
    with pytest.raises(InputError, match=r"^x.json: a JSON array, not a trace"):
        check_kind([], "trace", "x.json")
    assert json.dumps(sorted(KINDS))  # every kind is named by a plain string
