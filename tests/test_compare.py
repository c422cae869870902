import json
import subprocess
import sys
from pathlib import Path

import pytest
from asyncrun import run
from test_predict import known_model

from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.predict import score_trace
from pyapp.records import ScriptedAdapter, to_json
from pyapp.tasks import TaskParams

ROOT = Path(__file__).resolve().parent.parent


def finished_run(folder: Path, seed: int, **params: object) -> Path:
    model = ScriptedAdapter(known_model)
    task_params = TaskParams(seed=seed, **params)  # type: ignore[arg-type]
    sweep = Sweep(params=task_params, conditions=("model-only",), model=model.provenance)
    run(run_phase(sweep, "measure", model))
    freeze(sweep)
    run(run_phase(sweep, "heldout", model))
    folder.mkdir(parents=True)
    path = folder / "predictions.json"
    path.write_text(json.dumps(to_json(score_trace(sweep.trace()))), encoding="utf-8")
    (folder / "trace.json").write_text(json.dumps(to_json(sweep.trace())), encoding="utf-8")
    return path


def compare(*args):
    return subprocess.run(
        [sys.executable, "-m", "pyapp", "compare", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    return (
        finished_run(base / "A", 1729),
        finished_run(base / "B", 1729),
        finished_run(base / "C", 7),
        finished_run(base / "D", 1729, recurrence_steps=(2, 4)),
    )


def test_compare_two_runs_side_by_side(runs, tmp_path):
    a, b, *_ = runs
    done = compare(a, b, "--csv", tmp_path / "t.csv", "--markdown", tmp_path / "t.md")
    assert done.returncode == 0, done.stderr
    assert "not a confirmatory model comparison" in done.stdout
    assert "WARNING" not in done.stdout
    lines = done.stdout.splitlines()
    assert any(line.startswith("A ") and "profile mul" in line and "0/6" in line for line in lines)
    assert any(line.startswith("B ") and "heldout recurrence-1" in line for line in lines)
    csv_text = (tmp_path / "t.csv").read_text(encoding="utf-8")
    assert csv_text.splitlines()[0].startswith("run,model,evidence,condition,item")
    assert csv_text.count("\nA,") == csv_text.count("\nB,") == 3 + 6 + 1
    markdown = (tmp_path / "t.md").read_text(encoding="utf-8")
    assert "| run | model |" in markdown and "not a confirmatory" in markdown


def test_different_seeds_under_the_same_parameters_are_pooled_with_seeds_named(runs):
    a, _, c, _ = runs
    done = compare(a, c)
    assert done.returncode == 0
    assert "pooled under the same task parameters (seeds A: 1729; C: 7)" in done.stdout


def test_runs_whose_task_parameters_differ_are_refused_unless_described_anyway(runs):
    """Issue 23 §5: seed 1729 under other parameters is another task set under the same ids."""
    a, _, _, d = runs
    refused = compare(a, d)
    assert refused.returncode == 1 and refused.stdout == ""
    # a task set is named by its preset where its parameters are one, else by what differs
    assert (
        "refused to pool: task sets differ between runs "
        "(A: design; D: custom parameters (recurrence_steps=[2, 4]))"
    ) in refused.stderr
    described = compare(a, d, "--describe-anyway")
    assert described.returncode == 0
    assert described.stdout.splitlines()[0].startswith("DESCRIBED ANYWAY (--describe-anyway)")


def test_unreadable_run_is_a_clear_error(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"schema_version": "trace/1"}', encoding="utf-8")
    done = compare(bad)
    assert done.returncode == 1 and "not a predictions document" in done.stderr
    assert str(bad) in done.stderr and "Traceback" not in done.stderr


def test_a_summary_leads_and_a_run_compared_with_itself_is_flagged(runs, tmp_path):
    """Issue 25 item 7: one summary row per run and condition (both predictors' Brier with
    intervals and skill, their paired difference, cost error) before every row, the difference
    across runs over seeds, and a warning when the same run is compared with itself."""
    from pyapp.predict import compare as module

    a, b, c, _ = runs
    done = compare(a, c)  # two seeds of one task set: pooled across seeds
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.index("Summary:") < out.index("All rows:")
    summary = out[out.index("Summary:") : out.index("All rows:")].splitlines()
    assert summary[1].split()[:2] == ["run", "evidence"]
    assert sum(line.startswith(("A ", "C ")) and "model-only" in line for line in summary) == 2
    assert any(line.startswith("across runs (seeds)") and "2 runs" in line for line in summary)
    assert module.ACROSS_RUNS_DEFINITION in out  # said as the matrix and validation say it

    # Issue 41: two runs of the same seed are never pooled "across seeds", and it says so
    done = compare(a, b)
    assert done.returncode == 0, done.stderr
    assert "across runs (seeds)" not in done.stdout.replace("no across runs (seeds) row", "")
    assert "NOT POOLED: no across runs (seeds) row — they are not of distinct seeds" in done.stdout
    assert "WARNING" not in done.stdout

    again = tmp_path / "again" / "predictions.json"
    again.parent.mkdir()
    again.write_text(a.read_text(encoding="utf-8"), encoding="utf-8")
    done = compare(a, again)
    assert "it is compared with itself" in done.stdout, done.stdout
    assert module.SUMMARY_HEADER[4] == "Brier, product [95%]"


# ---- run folders: the task set from the trace (issue 37 §5) --------------------------------


def test_run_folders_are_compared_with_the_task_set_taken_from_their_traces(runs) -> None:
    a, b, *_ = runs
    done = compare(a.parent, b.parent)
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stdout and "A " in done.stdout


def test_a_predictions_task_set_edited_to_pool_is_refused(runs, tmp_path) -> None:
    """Reproducer (it failed on the code before: the runs were pooled): run D's task
    parameters differ from A's; its predictions.json edited to claim A's task set."""
    a, _, _, d = runs
    forged = tmp_path / "D-edited"
    forged.mkdir()
    (forged / "trace.json").write_text((d.parent / "trace.json").read_text("utf-8"), "utf-8")
    document = json.loads(d.read_text("utf-8"))
    document["task_set"] = json.loads(a.read_text("utf-8"))["task_set"]
    (forged / "predictions.json").write_text(json.dumps(document), "utf-8")
    for given in (forged, forged / "predictions.json"):
        done = compare(a, given)
        assert done.returncode == 1 and done.stdout == "", done.stdout
        assert "refused" in done.stderr and "is not its trace's" in done.stderr, done.stderr


def test_a_predictions_file_alone_says_its_task_set_is_unverified(runs, tmp_path) -> None:
    a, b, *_ = runs
    alone = tmp_path / "alone.json"
    alone.write_text(b.read_text("utf-8"), "utf-8")
    done = compare(a, alone)
    assert done.returncode == 0, done.stderr
    # each run named as in every other line (compare.run_names: the page names them so too)
    assert "WARNING: task set unverified: alone is a predictions document without" in (done.stdout)
    assert "task set unverified: A " not in done.stdout  # trace.json beside it
