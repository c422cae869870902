"""`python -m pyapp matrix` with native sweep cells (issue 34): `native` in `axes.backends`
runs each ONNX model's cell as `sweep --backend native` (no browser): a dry run names those
commands (no site, page parameters or Chromium flags), a model the native backend cannot run
as the page would is refused naming its key before anything starts, and a tiny plan of the
fixture finishes, every cell re-derived exactly. The fixture is never model evidence.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_matrix import matrix, read, write_plan

from pyapp.verify import reproduce_predictions
from pyapp.verify.reproduce import reproduce

pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[1]
STANDIN = ROOT / "tests" / "fixtures" / "standins" / "qwen3"
TINY = """
[parameter_sets.tiny]
primitives_per_op = 1
probe_pairs = 1
recurrence_steps = [2]
determinants = 0
derivatives = 0
"""


def test_dry_run_names_native_sweeps_without_page_options(tmp_path: Path) -> None:
    plan = write_plan(
        tmp_path,
        "[axes]\nmodels = [\n"
        f'  "fixture", "independent", {{ id = "qwen3-0.6b", folder = "{STANDIN}" }},\n'
        ']\nseeds = [3]\nbackends = ["native", "wasm"]\n'
        '[options]\nconsent = true\npage_params = { model_step_delay_ms = "5" }\n'
        'chromium_flags = ["--enable-unsafe-webgpu"]\n',
    )
    result = matrix(str(plan), "--out", str(tmp_path / "out"), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("[would run]") == 5  # 2 models x 2 backends, 1 synthetic
    lines = [ln.strip() for ln in result.stdout.splitlines() if ln.strip().startswith("python")]
    native = [ln for ln in lines if "--backend native" in ln]
    assert len(native) == 2, lines
    for line in native:
        assert "--consent" in line and "--ledger" in line
        assert not any(o in line for o in ("--site", "--page-param", "--chromium-flag")), line
    assert any(f"--model-folder {STANDIN}" in ln for ln in native), native
    page = [ln for ln in lines if "--backend wasm" in ln]
    assert all("--site" in ln and "--page-param=model_step_delay_ms=5" in ln for ln in page)
    assert "fixture_native_design_default_s3: sweep (native, TEST FIXTURE)" in result.stdout


def test_a_model_that_cannot_run_natively_is_refused_naming_its_key(tmp_path: Path) -> None:
    edited = tmp_path / "edited"
    shutil.copytree(ROOT / "tests" / "fixtures" / "tiny-chat", edited)
    config = read(edited / "tokenizer_config.json")
    config["chat_template"] += "{{ eos_token }}"
    (edited / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    for models, expected in (
        ('["fixture", "smollm2-135m"]', "axes.models[1]: 'smollm2-135m' cannot run on backend"),
        (f'["fixture", {{ id = "local/x", folder = "{edited}" }}]', "not one the native backend"),
    ):
        plan = write_plan(
            tmp_path,
            f'[axes]\nmodels = {models}\nseeds = [1]\nbackends = ["native"]\n'
            "[options]\nconsent = true\n",
        )
        result = matrix(str(plan), "--out", str(tmp_path / "out"), "--dry-run")
        assert result.returncode == 1, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], result.stderr
        assert not (tmp_path / "out").exists()


def test_a_native_fixture_plan_runs_and_every_cell_reproduces(tmp_path: Path) -> None:
    plan = write_plan(
        tmp_path,
        '[axes]\nmodels = ["fixture"]\nseeds = [1, 2]\npresets = ["tiny"]\n'
        'backends = ["native"]\nconditions = [["model-only", "controlled-chain"]]\n'
        "[options]\nconsent = true\n" + TINY,
    )
    out = tmp_path / "out"
    result = matrix(str(plan), "--out", str(out), "--jobs", "2")
    assert result.returncode == 0, result.stderr
    states: dict[str, Any] = {c["cell"]["name"]: c for c in read(out / "matrix.json")["cells"]}
    assert set(states) == {f"fixture_native_tiny_mo+cc_s{seed}" for seed in (1, 2)}
    for name, state in states.items():
        assert state["status"] == "done" and state["attempts"] == 1, state
        folder = out / "cells" / name
        trace, predictions = read(folder / "trace.json"), read(folder / "predictions.json")
        assert trace["model"]["backend_actual"] == "native"
        assert read(folder / "run.json")["options"]["backend"] == "native"
        assert reproduce(trace) == [] and reproduce_predictions(trace, predictions) == []
    summary = read(out / "summary.json")
    assert {row["evidence"] for row in summary["cells"]} == {"fixture"}
    assert {row["backend"] for row in summary["pooled"]} == {"native"}
