"""`python -m pyapp matrix` (issue 28) with synthetic cells only: plans refused before
anything starts (naming the key), a local matrix whose every cell reproduces exactly, a
rerun that runs nothing, and an interrupted matrix whose rerun runs only unfinished cells.

Every command runs as a subprocess, as a user starts it. The browser cells and the Ray
engine are in tests/browser/test_matrix_browser.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pyapp.verify import reproduce_predictions
from pyapp.verify.reproduce import reproduce

ROOT = Path(__file__).resolve().parents[1]
SYNTHETIC_PLAN = """
name = "test: synthetic specs x seeds"
[axes]
models = ["independent", "size-dependent:slope=1.2", "cancelling"]
seeds = { first = 1, last = 2 }
presets = ["tiny"]
conditions = [["model-only", "controlled-chain"]]

[parameter_sets.tiny]
primitives_per_op = 2
probe_pairs = 1
determinants = 0
derivatives = 0
"""


def matrix(*args: str, hooks: dict[str, Any] | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("COMPOSITION_LAB_MATRIX_HOOKS", None)
    if hooks:
        env["COMPOSITION_LAB_MATRIX_HOOKS"] = json.dumps(hooks)
    return subprocess.run(
        [sys.executable, "-m", "pyapp", "matrix", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )


def write_plan(tmp_path: Path, text: str, name: str = "plan.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def cell_states(out: Path) -> dict[str, dict[str, Any]]:
    return {c["cell"]["name"]: c for c in read(out / "matrix.json")["cells"]}


BAD_PLANS = [
    ('[axes]\nmodels = ["nonesuch"]\nseeds = [1]\n', "axes.models[0]: unknown model 'nonesuch'"),
    ("[axes]\nmodels = []\nseeds = [1]\n", "axes.models: an axis that makes no cell"),
    ('[axes]\nmodels = ["independent"]\nseeds = []\n', "axes.seeds: an axis that makes no cell"),
    (
        '[axes]\nmodels = ["independent", "independent:p_add=0.05"]\nseeds = [1]\n',
        "axes.models[1]: duplicate cells",
    ),
    (
        '[axes]\nmodels = ["HuggingFaceTB/SmolLM2-135M-Instruct"]\nseeds = [1]\n',
        "options.consent: axes.models[0] 'HuggingFaceTB/SmolLM2-135M-Instruct' loads a model "
        "(from the hub)",
    ),
    ('[axes]\nmodels = ["independent"]\nseeds = [1]\npresets = ["nope"]\n', "axes.presets[0]"),
    (
        '[axes]\nmodels = ["independent"]\nseeds = [1]\n[[exclude]]\nseed = 9\n',
        "exclude[0]: matches no cell",
    ),
    ('[axes]\nmodels = ["independent"]\nseeds = "1..3"\n', "axes.seeds:"),
    (
        '[axes]\nmodels = ["independent:bogus=1"]\nseeds = [1]\n',
        "axes.models[0]: bogus: not a synthetic parameter",
    ),
    ("[axes\n", "not TOML"),
]


@pytest.mark.parametrize(("text", "expected"), BAD_PLANS)
def test_bad_plans_are_refused_naming_the_key(tmp_path: Path, text: str, expected: str) -> None:
    plan = write_plan(tmp_path, text)
    result = matrix(str(plan), "--out", str(tmp_path / "out"))
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(plan) in lines[0] and expected in lines[0], result.stderr
    assert not (tmp_path / "out").exists()  # refused before anything started


def test_webgpu_cell_on_a_cluster_without_gpus_is_refused(tmp_path: Path) -> None:
    from pyapp.errors import InputError
    from pyapp.matrix import check_engine_resources, expand, read_plan

    plan_path = write_plan(
        tmp_path,
        '[axes]\nmodels = ["fixture"]\nseeds = [1]\nbackends = ["wasm", "webgpu"]\n'
        "[options]\nconsent = true\n",
    )
    cells = expand(read_plan(plan_path), plan_path)
    check_engine_resources(cells, gpus=1, plan_path=plan_path)
    with pytest.raises(InputError, match=r"cell fixture_webgpu_design_default_s1 runs on WebGPU"):
        check_engine_resources(cells, gpus=0, plan_path=plan_path)


def test_dry_run_lists_every_cell_and_runs_nothing(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, SYNTHETIC_PLAN)
    result = matrix(str(plan), "--out", str(tmp_path / "out"), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("[would run]") == 6
    assert "python -m pyapp simulate --model size-dependent:slope=1.2 --seeds 2..2" in result.stdout
    assert not (tmp_path / "out").exists()


def assert_cell_reproduces(folder: Path, seed: int) -> None:
    trace = read(folder / f"seed-{seed}" / "trace.json")
    predictions = read(folder / f"seed-{seed}" / "predictions.json")
    assert reproduce(trace) == []
    assert reproduce_predictions(trace, predictions) == []


def test_local_matrix_finishes_reproduces_and_never_reruns(tmp_path: Path) -> None:
    plan, out = write_plan(tmp_path, SYNTHETIC_PLAN), tmp_path / "out"
    result = matrix(str(plan), "--out", str(out), "--jobs", "2")
    assert result.returncode == 0, result.stderr
    states = cell_states(out)
    assert len(states) == 6 and {s["status"] for s in states.values()} == {"done"}
    for name, state in states.items():
        assert state["attempts"] == 1 and state["exit_code"] == 0
        assert_cell_reproduces(out / "cells" / name, state["cell"]["seed"])
    record = read(out / "matrix.json")
    jsonschema.validate(record, read(ROOT / "exports" / "matrix-state.schema.json"))
    summary = read(out / "summary.json")
    assert [row["evidence"] for row in summary["cells"]] == ["synthetic"] * 6
    pooled = summary["pooled"]
    assert {(p["model"], p["condition"]) for p in pooled} == {
        (m, c)
        for m in ("independent", "size-dependent:slope=1.2", "cancelling")
        for c in ("model-only", "controlled-chain")
    }
    assert all(p["seeds"] == [1, 2] for p in pooled)
    across = summary["across_seeds"]  # Compare's difference across runs (issue 25 item 8)
    assert {(a["model"], a["condition"]) for a in across} == {
        (p["model"], p["condition"]) for p in pooled
    }
    assert all(a["seeds"] == [1, 2] and a["across"]["low"] is not None for a in across)
    report = (out / "report.html").read_text(encoding="utf-8")
    assert all(a["shown"] in report for a in across) and "across runs (seeds)" in report
    assert "synthetic cells are NOT model evidence" in report
    assert report.count("<svg") == 3  # one calibration plot per model
    assert "<script" not in report

    mtimes = {p: p.stat().st_mtime_ns for p in (out / "cells").rglob("trace.json")}
    again = matrix(str(plan), "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert "6 done already, 0 to run" in again.stderr
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes
    assert all(s["attempts"] == 1 for s in cell_states(out).values())
    assert len(read(out / "matrix.json")["sessions"]) == 2

    grown = write_plan(tmp_path, SYNTHETIC_PLAN.replace("last = 2", "last = 3"), "grown.toml")
    third = matrix(str(grown), "--out", str(out))  # a seed added: only its cells run
    assert third.returncode == 0, third.stderr
    assert "6 done already, 3 to run" in third.stderr
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes


def test_interrupted_matrix_reruns_only_unfinished_cells(tmp_path: Path) -> None:
    plan, out = write_plan(tmp_path, SYNTHETIC_PLAN), tmp_path / "out"
    first = matrix(str(plan), "--out", str(out), "--jobs", "1", hooks={"sigint_after_cells": 1})
    assert first.returncode == 130, first.stderr
    assert f"continue with: python -m pyapp matrix {plan} --out {out}" in first.stderr
    states = cell_states(out)
    done = {n for n, s in states.items() if s["status"] == "done"}
    assert 1 <= len(done) < 6, states
    assert {s["status"] for n, s in states.items() if n not in done} <= {"pending", "interrupted"}
    assert read(out / "matrix.json")["sessions"][-1]["status"] == "interrupted"
    kept = {n: (out / "cells" / n / "summary.json").stat().st_mtime_ns for n in done}

    second = matrix(str(plan), "--out", str(out), "--jobs", "2")
    assert second.returncode == 0, second.stderr
    assert f"{len(done)} done already, {6 - len(done)} to run" in second.stderr
    after = cell_states(out)
    assert {s["status"] for s in after.values()} == {"done"}
    for name in done:  # finished cells never ran again
        assert after[name]["attempts"] == 1
        assert (out / "cells" / name / "summary.json").stat().st_mtime_ns == kept[name]
    for name, state in after.items():
        assert_cell_reproduces(out / "cells" / name, state["cell"]["seed"])


def test_plan_schema_accepts_the_examples() -> None:
    import tomllib

    schema = read(ROOT / "exports" / "matrix-plan.schema.json")
    examples = sorted((ROOT / "examples").glob("matrix-*.toml"))
    assert len(examples) >= 3
    for path in examples:
        jsonschema.validate(tomllib.loads(path.read_text(encoding="utf-8")), schema)


def test_dry_run_of_browser_models_names_what_each_sweep_loads(tmp_path: Path) -> None:
    """Stand-ins via a folder, hub ids with revision and dtype: the sweep's own options."""
    folder = ROOT / "tests" / "fixtures" / "standins" / "llama"
    plan = write_plan(
        tmp_path,
        "[axes]\nmodels = [\n"
        f'  {{ id = "smollm2-135m", folder = "{folder}" }},\n'
        '  { id = "HuggingFaceTB/SmolLM2-360M-Instruct", revision = "abc123", dtype = "q4" },\n'
        ']\nseeds = [5]\nbackends = ["wasm", "webgpu"]\n'
        '[options]\nconsent = true\ntimeout_s = 60\npage_params = { model_step_delay_ms = "5" }\n'
        '[[exclude]]\nmodel = "smollm2-135m"\nbackend = "webgpu"\n',
    )
    result = matrix(str(plan), "--out", str(tmp_path / "out"), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("[would run]") == 3
    lines = [ln.strip() for ln in result.stdout.splitlines() if ln.strip().startswith("python")]
    assert any(
        "--model smollm2-135m --backend wasm --seed 5" in ln and f"--model-folder {folder}" in ln
        for ln in lines
    ), lines
    assert any(
        "--revision abc123" in ln
        and "--dtype q4" in ln
        and "--backend webgpu" in ln
        and "--timeout 60.0" in ln
        and "--page-param=model_step_delay_ms=5" in ln
        and "--consent" in ln
        for ln in lines
    ), lines


def test_ray_engine_without_ray_says_how_to_install(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "ray"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no ray here')\n", encoding="utf-8")
    plan = write_plan(tmp_path, SYNTHETIC_PLAN)
    env = {**os.environ, "PYTHONPATH": str(shadow.parent)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyapp",
            "matrix",
            str(plan),
            "--out",
            str(tmp_path / "o"),
            "--engine",
            "ray",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert "pip install '.[cluster]'" in result.stderr
    assert not (tmp_path / "o").exists()
