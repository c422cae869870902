"""`python -m pyapp study DIR` (issue 34) end to end on the shipped synthetic study plan
(`examples/study-synthetic.toml`: subject-ladder rungs 1-2, two seeds, natively): the
matrix runs its cells, the study re-derives each from its trace, pools the rungs of the
ladder (rung-aware climatology) and writes study.json (its schema, the answer first),
study.html and Markdown; a matrix interrupted by Ctrl-C and resumed gives the same
study.json byte for byte; a cell whose trace does not re-derive, or whose matrix.json names
another rung, is left out or corrected, named."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pyapp.cli.main import main
from pyapp.predict import ANSWER_LABEL, score_trace
from pyapp.records import from_json, summarise, to_json
from pyapp.report import read_run_folder, verify
from pyapp.study import BEGIN, END, StudyDocument, markdown_into
from pyapp.tasks import LADDERS

ROOT = Path(__file__).resolve().parents[1]
PLAN = ROOT / "examples" / "study-synthetic.toml"
RESAMPLES = ["--resamples", "200", "--bootstrap-seed", "5"]


def matrix(out: Path, hooks: dict[str, Any] | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("COMPOSITION_LAB_MATRIX_HOOKS", None)
    if hooks:
        env["COMPOSITION_LAB_MATRIX_HOOKS"] = json.dumps(hooks)
    command = [sys.executable, "-m", "pyapp", "matrix", str(PLAN), "--out", str(out)]
    return subprocess.run(
        [*command, "--jobs", "2"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def studied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic study plan run straight through, then studied."""
    out = tmp_path_factory.mktemp("study") / "straight"
    done = matrix(out)
    assert done.returncode == 0, done.stderr
    assert main(["study", str(out), "--markdown", str(out / "study.md"), *RESAMPLES]) == 0
    return out


def test_the_study_answers_first_and_pools_the_ladders_rungs(studied: Path) -> None:
    document = read(studied / "study.json")
    jsonschema.validate(document, read(ROOT / "exports" / "study.schema.json"))
    # the confirmatory layer first (empty: this plan has no hypotheses), then the answer
    assert list(document)[:6] == [
        "schema_version", "kind", "receipt", "hypotheses", "residuals", "answer"
    ]  # fmt: skip
    assert document["hypotheses"] == [] and document["receipt"] is None
    assert document["answer"][0] == ANSWER_LABEL and "NOT model evidence" in document["answer"][1]
    [group] = document["groups"]
    assert group["ladder"] == "subject-ladder" and group["rungs"] == ["subject-ladder/1",
           "subject-ladder/2"] and group["seeds"] == [1, 2]  # fmt: skip
    assert [(a["condition"], a["predictor"]) for a in group["answers"]] == [
        ("model-only", "product"), ("model-only", "state-aware"),
        ("controlled-chain", "product"), ("controlled-chain", "state-aware"),
    ]  # fmt: skip
    verdicts = {a["verdict"] for a in group["answers"]}
    assert verdicts <= {"beats climatology", "fails against climatology", "cannot say"}
    pooled = [s["figures"] for s in group["slices"] if s["figures"]["pooled_over_rungs"]]
    chain = next(f for f in pooled if f["condition"] == "controlled-chain")
    assert chain["n"] == 4 * 120 and chain["family"] == "all families"  # routed recurrences
    assert "rung-aware" in chain["climatology"] and "pooled over subject-ladder" in chain["scope"]
    boot = chain["state_aware"]["skill_bootstrap"]
    assert (boot["method"], boot["resamples"], boot["seed"]) == (
        "percentile bootstrap over tasks", 200, 5)  # fmt: skip
    assert chain["state_aware"]["skill_seeds"]["method"] == "Student-t across seeds"
    rung = [s["figures"] for s in group["slices"] if s["figures"]["scope"] == "subject-ladder/2"]
    assert {f["family"] for f in rung} == {"all families", "affine_recurrence",
            "triangle_determinant", "cubic_derivative"}  # fmt: skip
    assert all(not f["pooled_over_rungs"] for f in rung)
    assert [(c["preset"], c["ladder"], c["rung"], c["used"]) for c in document["cells"]] == [
        (f"subject-ladder/{r}", "subject-ladder", r, True) for r in (1, 1, 2, 2)
    ]
    assert document["method"]["resamples"] == 200 and document["cells_done"] == 4
    summary = (studied / "summary.json").read_text(encoding="utf-8")  # per cell, no answer
    assert "climatology" not in summary and "answer" not in read(studied / "summary.json")


def test_study_html_and_markdown_lead_with_the_answer(studied: Path) -> None:
    html = (studied / "study.html").read_text(encoding="utf-8")
    assert "<script" not in html and "Content-Security-Policy" in html
    assert html.index(ANSWER_LABEL) < html.index("<svg") < html.index("Method")
    assert html.count('data-series="product"') == 2 and html.count('data-series="state-aware"') == 2
    assert html.count("Success by steps") >= 2 and "NOT model evidence" in html
    markdown = (studied / "study.md").read_text(encoding="utf-8")
    assert markdown.startswith(f"## Answer\n\n**{ANSWER_LABEL}**")
    document = read(studied / "study.json")
    assert all(line in markdown for line in document["answer"][1:])


def test_a_matrix_resumed_after_ctrl_c_gives_the_same_study(studied: Path, tmp_path: Path) -> None:
    out = tmp_path / "resumed"
    first = matrix(out, hooks={"sigint_after_cells": 1})
    assert first.returncode == 130, first.stderr
    states = [c["status"] for c in read(out / "matrix.json")["cells"]]
    assert states.count("done") < 4, states
    second = matrix(out)
    assert second.returncode == 0, second.stderr
    assert main(["study", str(out), *RESAMPLES]) == 0
    assert (out / "study.json").read_bytes() == (studied / "study.json").read_bytes()


def test_a_cell_that_does_not_rederive_is_left_out_and_a_wrong_rung_corrected(
    studied: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "edited"
    shutil.copytree(studied, copy)
    names = sorted(p.name for p in (copy / "cells").iterdir())
    trace_path = copy / "cells" / names[0] / "seed-1" / "trace.json"
    trace = read(trace_path)
    held = next(t for t in trace["trials"] if not t["correct"] and "recurrence" in t["task_id"])
    held["correct"] = True  # a verdict the raw completion does not support
    trace_path.write_text(json.dumps(trace), encoding="utf-8")
    state = read(copy / "matrix.json")
    renamed = next(c for c in state["cells"] if c["cell"]["name"] == names[2])
    renamed["cell"]["preset"], renamed["cell"]["rung"] = "subject-ladder/1", 1  # a wrong name
    (copy / "matrix.json").write_text(json.dumps(state), encoding="utf-8")
    assert main(["study", str(copy), *RESAMPLES]) == 0
    cells = {c["name"]: c for c in read(copy / "study.json")["cells"]}
    assert not cells[names[0]]["used"] and "does not re-derive" in cells[names[0]]["note"]
    corrected = cells[names[2]]
    assert corrected["used"] and corrected["preset"] == "subject-ladder/2"  # the trace's
    assert "its trace's parameters are 'subject-ladder/2'" in corrected["note"]
    assert any("INCOMPLETE: 1 of 4 cells" in f for f in read(copy / "study.json")["flags"])


def cut_short(run: Path, dropped: int) -> None:
    """The run as a sweep that stopped `dropped` trials early writes it: the trace without its
    last trials (its counts those of the trials left), predictions.json derived from it."""
    found = read_run_folder(run)
    trials = found.trace.trials[:-dropped]
    trace = dataclasses.replace(found.trace, trials=trials, summary=summarise(trials))
    (run / "trace.json").write_text(json.dumps(to_json(trace)), encoding="utf-8")
    (run / "predictions.json").write_text(json.dumps(to_json(score_trace(trace))), "utf-8")
    check = verify(read_run_folder(run))
    assert check.ok and check.incomplete  # it re-derives: only its tail is missing


def pooled_chain_n(document: Any) -> int:
    [group] = document["groups"]
    return next(
        s["figures"]["n"]
        for s in group["slices"]
        if s["figures"]["pooled_over_rungs"]
        and s["figures"]["condition"] == "controlled-chain"
        and s["figures"]["family"] == "all families"
    )


def test_a_cell_not_run_is_named_with_what_it_lacks_and_left_out(
    studied: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 34: a matrix stopped before one of its cells ran; the study names the cell and
    what it lacks in study.json, study.html and its printed lines, and pools the others."""
    copy = tmp_path / "unrun"
    shutil.copytree(studied, copy)
    state = read(copy / "matrix.json")
    unrun = state["cells"][-1]
    name = unrun["cell"]["name"]
    unrun.update(status="pending", checked=None)
    (copy / "matrix.json").write_text(json.dumps(state), encoding="utf-8")
    shutil.rmtree(copy / "cells" / name)
    capsys.readouterr()
    assert main(["study", str(copy), *RESAMPLES]) == 0
    printed = capsys.readouterr().out
    said = f"LEFT OUT {name}: not run (pending): no trace, none of its trials"
    document = read(copy / "study.json")
    assert said in document["flags"] and said in printed.splitlines()
    assert said in (copy / "study.html").read_text(encoding="utf-8")
    cells = {c["name"]: c for c in document["cells"]}
    assert not cells[name]["used"] and cells[name]["group"] is None
    [group] = document["groups"]
    assert name not in group["cells"] and len(group["cells"]) == 3
    assert pooled_chain_n(document) == 3 * 120


def test_a_cell_cut_short_is_named_with_what_it_lacks_and_left_out(
    studied: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 34: a done cell whose held-out phase ended early (its last trials missing, the
    rest re-deriving) is not pooled as if whole: it is left out, and the study says which
    held-out tasks of which condition have no trial — the count `reproduce` makes."""
    copy = tmp_path / "cut"
    shutil.copytree(studied, copy)
    state = read(copy / "matrix.json")
    name = state["cells"][0]["cell"]["name"]
    cut_short(copy / "cells" / name / f"seed-{state['cells'][0]['cell']['seed']}", 150)
    capsys.readouterr()
    assert main(["study", str(copy), *RESAMPLES]) == 0
    printed = capsys.readouterr().out
    document = read(copy / "study.json")
    [flag] = [f for f in document["flags"] if f.startswith(f"LEFT OUT {name}: ")]
    assert (
        f"LEFT OUT {name}: cut short: " in flag
        and "held-out tasks of controlled-chain have no trial" in flag
    )
    assert "the run ended early" in flag
    assert flag in printed.splitlines()
    assert flag in (copy / "study.html").read_text(encoding="utf-8")
    assert any("INCOMPLETE: 1 of 4 cells" in f for f in document["flags"])
    cells = {c["name"]: c for c in document["cells"]}
    assert not cells[name]["used"] and cells[name]["status"] == "done"
    assert "Cells: 4 of 4 done, 3 used" in (copy / "study.html").read_text(encoding="utf-8")
    [group] = document["groups"]
    assert name not in group["cells"] and pooled_chain_n(document) == 3 * 120


def test_bad_study_folders_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["study", str(tmp_path)]) == 1
    assert "no matrix.json: not a matrix output folder" in capsys.readouterr().err
    assert main(["study", str(tmp_path), "--markdown", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["study", str(tmp_path), "--resamples", "5"])


def test_the_subject_study_plan_is_the_ladder_three_seeds_three_conditions() -> None:
    plan = tomllib.loads((ROOT / "examples" / "study-subject.toml").read_text("utf-8"))
    axes = plan["axes"]
    assert axes["models"] == ["subject"] and axes["backends"] == ["native"]
    assert axes["presets"] == ["subject-ladder"] and "subject-ladder" in LADDERS
    assert axes["seeds"] == [11, 12, 13] and not {901, 902} & set(axes["seeds"])
    assert axes["conditions"] == [["model-only", "model-program", "controlled-chain"]]


def test_markdown_fills_only_the_results_block_of_a_document(studied: Path, tmp_path: Path) -> None:
    doc = from_json(StudyDocument, read(studied / "study.json"))  # the record reads back
    page = tmp_path / "study.md"
    page.write_text(
        "# Method by hand\n\n<!-- study-results:begin (generated) -->\nold numbers\n"
        "<!-- study-results:end -->\n\nAfter.\n",
        encoding="utf-8",
    )
    text = markdown_into(page, doc)
    assert text.startswith("# Method by hand\n\n<!-- study-results:begin (generated) -->\n")
    assert "old numbers" not in text and text.endswith("<!-- study-results:end -->\n\nAfter.\n")
    assert f"### Answer\n\n**{ANSWER_LABEL}**" in text
    assert markdown_into(tmp_path / "new.md", doc).startswith("## Answer")
    shipped = (ROOT / "docs" / "study.md").read_text(encoding="utf-8")
    assert BEGIN in shipped and END in shipped  # the coordinator's run fills docs/study.md


def test_a_study_whose_outcomes_are_all_zero_says_so_first(tmp_path: Path) -> None:
    """The issue's reproducer: on held-out tasks the model never gets right, the old skill
    read "1.000"; the study's first line says the outcomes are all 0 and it cannot say."""
    plan = tmp_path / "zero.toml"
    plan.write_text(
        '[axes]\nmodels = ["independent:p_add=1,p_sub=1,p_mul=1"]\nseeds = [1, 2]\n'
        'conditions = [["model-only", "controlled-chain"]]\n'
        "[options]\nsealed = false  # the reproducer's tasks: the design's, from the seeds\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    command = [sys.executable, "-m", "pyapp", "matrix", str(plan), "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert main(["study", str(out), *RESAMPLES]) == 0
    document = read(out / "study.json")
    assert document["answer"][0].startswith("DEGENERATE: all 16 held-out outcomes are 0")
    assert document["answer"][1] == ANSWER_LABEL
    [group] = document["groups"]
    assert {a["verdict"] for a in group["answers"]} == {"cannot say"}
    assert all("constant" in a["reason"] for a in group["answers"])
    html = (out / "study.html").read_text(encoding="utf-8")
    assert html.index("DEGENERATE: all 16") < html.index(ANSWER_LABEL)


def test_study_is_one_writer_and_refuses_a_study_json_of_another_kind(
    studied: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The study holds the folder's lock (a matrix or a study already on it is refused in
    one line) and replaces only a study.json that is a study's."""
    from pyapp.matrix import hold_folder

    copy = tmp_path / "copy"
    shutil.copytree(studied, copy)
    with hold_folder(copy, "matrix", wait=False):
        assert main(["study", str(copy), *RESAMPLES]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "in use by matrix" in err, err
    assert "--wait" not in err  # study has no --wait to offer
    shutil.copyfile(copy / "matrix.json", copy / "study.json")
    assert main(["study", str(copy), *RESAMPLES]) == 1
    err = capsys.readouterr().err
    assert "study.json" in err and "matrix" in err, err
    (copy / "study.json").unlink()
    (copy / "study.json").symlink_to(copy / "matrix.json")
    assert main(["study", str(copy), *RESAMPLES]) == 1
    assert "symbolic link" in capsys.readouterr().err
