"""One writer per document kind (issue 40): every path that writes a trace, a predictions
document, a receipt, a run.json, a ledger, a matrix's matrix.json and summary.json, a
simulate summary, a study and a study receipt writes it through
`pyapp.records.writer.document_text` — the same bytes from every path, UTF-8 as written,
NaN and Infinity refused."""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path
from typing import Any

import pytest
from asyncrun import run
from test_predict import known_model

from interpreter import LabError
from pyapp.browser import Context, Session, bridge, open_run, receipt_of
from pyapp.cli.main import main
from pyapp.records import NotJSONNumber, ScriptedAdapter, ScriptedReply, document_text, line_text
from pyapp.sweep import (
    PREDICTIONS,
    RECEIPT,
    TRACE,
    TRIALS,
    TrialsFile,
    write_checkpoint,
    write_receipt,
)

ROOT = Path(__file__).resolve().parents[1]
MARK = "−5 ≈ café"
"""Non-ASCII text a model replies: written as it is, never `\\u2212`."""


def marked_model(prompt: str, caps: Any) -> ScriptedReply:
    """`known_model`, whose wrong replies carry non-ASCII text."""
    reply = known_model(prompt, caps)
    if reply.text != "0":
        return reply
    return ScriptedReply(MARK, input_tokens=100, output_tokens=2, generation_ms=10.0)


@pytest.fixture(scope="module")
def page() -> dict[str, Any]:
    """A scripted sweep through the page's bridge: what the page holds and downloads."""
    saved = bridge.SESSION
    bridge.SESSION = Session()
    events: list[tuple[dict[str, Any], dict[str, Any]]] = []
    context = Context(
        adapter=lambda: ScriptedAdapter(marked_model),
        notify=lambda event, texts: events.append((event, texts)),
        cancel_requested=lambda: False,
    )

    def call(kind: str, **fields: Any) -> dict[str, Any]:
        reply = run(bridge.handle_async(json.dumps({"type": kind, "id": 1, **fields}), context))
        result: dict[str, Any] = json.loads(reply)["result"]
        return result

    try:
        call("sweep_start", seed=1729, conditions=["model-only"])
        call("sweep_run", phase="all")
        texts = {
            "header": call("sweep_header")["header_json"],
            "trace": call("sweep_trace")["trace_json"],
            "predictions": call("sweep_predictions")["predictions_json"],
            "trials": [t["trial"] for e, t in events if e["type"] == "trial_done"],
            "receipt": next(t["receipt"] for e, t in events if t.get("receipt")),
        }
    finally:
        bridge.SESSION = saved
    return texts


@pytest.fixture(scope="module")
def sweep_folder(page: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sweep CLI's files of the same run: trials.jsonl, a checkpoint, the receipt."""
    out = tmp_path_factory.mktemp("sweep")
    file = TrialsFile(out / TRIALS)
    for text in page["trials"]:
        file.append(text)
    file.close()
    trace = write_checkpoint(out, page["header"], file.lines())
    write_receipt(out, page["receipt"], trace)
    return out


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_a_trace_is_the_same_bytes_from_every_path(page: dict[str, Any], sweep_folder: Path):
    trace = read(sweep_folder / TRACE)
    assert MARK in trace  # UTF-8 as written
    assert page["trace"] == trace  # the page's download and the sweep's checkpoint
    stored = run(
        bridge.handle_async(
            json.dumps(
                {
                    "type": "stored_trace",
                    "id": 2,
                    "header_json": page["header"],
                    "trials_json": page["trials"],
                    "changes_json": [],
                }
            ),
            Context(adapter=lambda: None, notify=lambda e, t: None, cancel_requested=bool),
        )
    )
    assert json.loads(stored)["result"]["trace_json"] == trace  # the page's stored sweep
    assert document_text(json.loads(trace), "trace") == trace


def test_predictions_are_the_same_bytes_from_every_path(
    page: dict[str, Any], sweep_folder: Path, tmp_path: Path
) -> None:
    written = read(sweep_folder / PREDICTIONS)  # the sweep's checkpoint
    assert page["predictions"] == written  # the page's, which the sweep writes at its end
    scored = tmp_path / "scored.json"
    assert main(["score", str(sweep_folder / TRACE), "--out", str(scored)]) == 0
    assert read(scored) == written  # `score`
    opened = open_run(json.loads(read(sweep_folder / TRACE)))
    assert opened.predictions_json == written  # the page's Open a trace


def test_a_receipt_is_the_same_bytes_from_every_path(page: dict[str, Any], sweep_folder: Path):
    written = read(sweep_folder / RECEIPT)
    assert written == page["receipt"]
    remade = receipt_of(json.loads(read(sweep_folder / TRACE)))  # the page's, from a trace
    assert remade.after_heldout  # another chain head: the same writer, other content
    assert document_text(json.loads(remade.receipt_json), "receipt") == remade.receipt_json
    assert document_text(json.loads(written), "receipt") == written


def test_trial_lines_are_the_writers_lines(page: dict[str, Any], sweep_folder: Path) -> None:
    lines = read(sweep_folder / TRIALS).splitlines()
    assert lines == page["trials"] == [line_text(json.loads(line)) for line in lines]
    assert any(MARK in line for line in lines)


def test_run_and_simulate_write_through_the_writer(tmp_path: Path) -> None:
    """`run` (a trace), `simulate` (per seed a compact trace and predictions, the summary)."""
    assert main(["run", "--out", str(tmp_path / "run.json")]) == 0
    text = read(tmp_path / "run.json")
    assert document_text(json.loads(text), "trace") == text
    out = tmp_path / "sim"
    assert main(["simulate", "--model", "independent", "--seeds", "1..2", "--out", str(out)]) == 0
    for name, kind in (("trace.json", "trace"), ("predictions.json", "predictions")):
        text = read(out / "seed-1" / name)
        assert document_text(json.loads(text), kind, compact=True) == text
        assert text.count("\n") == 1
    summary = read(out / "summary.json")
    assert document_text(json.loads(summary), "simulation-summary") == summary


STUDY_PLAN = """
name = "one writer — café ± study"
[axes]
models = ["size-dependent"]
seeds = [31]
presets = ["subject-ladder/1"]
conditions = [["model-only", "controlled-chain"]]

[[hypotheses]]
id = "aware-skill"
statement = "state-aware beats climatology on chains — a café’s guess"
metric = "skill"
predictor = "state-aware"
model = "size-dependent"
condition = "controlled-chain"
direction = "greater"
min_n = 20
"""


def test_matrix_and_study_documents_write_through_the_writer(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(STUDY_PLAN, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["study-receipt", str(plan), "--out", str(out)]) == 0
    assert main(["matrix", str(plan), "--out", str(out)]) == 0
    assert main(["study", str(out), "--resamples", "100"]) == 0
    for name, kind in (
        ("study-receipt.json", "study-receipt"),
        ("matrix.json", "matrix"),
        ("summary.json", "matrix-summary"),
        ("study.json", "study"),
    ):
        text = read(out / name)
        assert document_text(json.loads(text), kind) == text, name
    assert "café" in read(out / "study-receipt.json") + read(out / "matrix.json")


def test_nan_and_infinity_are_refused_naming_the_field() -> None:
    document = {"kind": "composition-lab-predictions", "scores": [{"brier": math.nan}]}
    with pytest.raises(NotJSONNumber, match=r"\$\.scores\[0\]\.brier = nan") as caught:
        document_text(document, "predictions")
    assert isinstance(caught.value, LabError) and isinstance(caught.value, ValueError)
    assert caught.value.code == "not_json_number"
    with pytest.raises(NotJSONNumber, match=r"\$\[1\] = inf"):
        line_text([1.0, math.inf])


def test_a_document_of_another_kind_is_never_written() -> None:
    with pytest.raises(LabError, match="not a predictions document"):
        document_text({"kind": "composition-lab-trace"}, "predictions")


# Where `pyapp` lays JSON out with `indent` outside the writer: files that are not documents.
INDENTED_ELSEWHERE = {
    "pyapp/cli/main.py": "`tasks` prints the task list",
    "pyapp/cli/schema.py": "the generated JSON Schemas",
    "pyapp/protocol/generate.py": "the generated JavaScript modules",
    "pyapp/native/template.py": "a chat template's `tojson` filter",
    "pyapp/report/sections.py": "records shown in the HTML report",
    "pyapp/synthetic/expectations.py": "the validation's committed expectations (data, one script)",
}


def indented_dumps(path: Path) -> list[int]:
    """The lines of `json.dump(s)` calls in `path` that pass `indent` or `allow_nan`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("dump", "dumps")
        and any(k.arg in ("indent", "allow_nan") for k in node.keywords)
    ]


def test_no_document_is_laid_out_outside_the_writer() -> None:
    found = {}
    for path in sorted((ROOT / "pyapp").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name != "pyapp/records/writer.py" and indented_dumps(path):
            found[name] = indented_dumps(path)
    assert set(found) == set(INDENTED_ELSEWHERE), found
