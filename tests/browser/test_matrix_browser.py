"""`python -m pyapp matrix` (issue 28) with fixture browser cells, on both engines.

- a local matrix of synthetic cells (two specs × two seeds) and two fixture browser cells
  finishes, and every cell reproduces exactly (`python -m pyapp reproduce`);
- the same plan on a local Ray instance (`ray.init(num_cpus=2)` here) gives byte-identical
  cell documents once timings and the machine's provenance are set aside (synthetic cells:
  only wall-clock times; browser cells: also measured milliseconds and what derives from
  them, the run id and the hashes over them);
- a Ray worker killed during a browser cell (injected: the cell runner's `kill_worker_once`
  hook) → Ray tries the cell again, the sweep resumes from its own files, the matrix
  finishes, nothing recorded is lost and no held-out task is observed twice.

The model is the committed tiny-chat TEST FIXTURE: this checks the pipeline, not a model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import ROOT, SITE

# Under pytest-xdist (scripts/lab test) the module runs in one process: its finished local
# run is made once, and only one process starts Ray at a time (test_study_seal.py's too).
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("ray")]

PLAN = """
name = "test: synthetic and fixture cells"
[axes]
models = ["independent", "size-dependent:slope=1.2", "fixture"]
seeds = [1, 2]
presets = ["small"]
conditions = [["model-only", "controlled-chain"]]
backends = ["wasm"]

[parameter_sets.small]
primitives_per_op = 1
probe_pairs = 1
recurrence_steps = [2, 3]
determinants = 1
derivatives = 0

[options]
consent = true
site = "{site}"
cpus_per_browser_cell = 1
sealed = false  # compared local vs Ray cell by cell: the held-out tasks must follow from
# the seed (a sealed browser cell's depend on its measured costs, which differ run to run)
"""
HASHES = ("sha256", "profile_sha256", "prev_sha256", "chain_head", "predictions_sha256")
"""A frozen profile's hash covers its `frozen_at`, and each record's link in the hash chain
(trace/3) the previous record's clock readings."""
TIMING_KEYS = ("run_id", "trace_run_id", "cost", "cost_coefficients")
"""Browser cells: a random run id, and keys whose values come from the clock (besides
`*_ms`)."""


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (SITE / "experiment.js").is_file():
        pytest.fail(f"{SITE} has no experiment.js: rebuild it (scripts/build_site.py)")
    path = tmp_path_factory.mktemp("plan") / "plan.toml"
    path.write_text(PLAN.format(site=SITE), encoding="utf-8")
    return path


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def documents(folder: Path, kind: str, seed: int) -> list[Path]:
    inner = folder / f"seed-{seed}" if kind == "synthetic" else folder
    return [inner / "trace.json", inner / "predictions.json"]


def timeless(value: Any, browser: bool) -> Any:
    """The document with its clock readings set aside (None)."""
    if isinstance(value, dict):
        return {
            k: None
            if k.endswith("_at")
            or k in HASHES
            or (browser and (k.endswith("_ms") or k in TIMING_KEYS))
            else timeless(v, browser)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [timeless(v, browser) for v in value]
    return value


def run_matrix(plan: Path, out: Path) -> Path:
    """`matrix PLAN --out OUT --jobs 2`, which must finish."""
    result = subprocess.run(
        [sys.executable, "-m", "pyapp", "matrix", str(plan), "--out", str(out), "--jobs", "2"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out


@pytest.fixture(scope="module")
def local_run(plan: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_matrix(plan, tmp_path_factory.mktemp("local") / "out")


def test_local_matrix_finishes_and_every_cell_reproduces(local_run: Path) -> None:
    cells = read(local_run / "matrix.json")["cells"]
    assert len(cells) == 6 and {c["status"] for c in cells} == {"done"}
    kinds = sorted(c["cell"]["kind"] for c in cells)
    assert kinds == ["browser"] * 2 + ["synthetic"] * 4
    for state in cells:
        cell = state["cell"]
        trace, predictions = documents(
            local_run / "cells" / cell["name"], cell["kind"], cell["seed"]
        )
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pyapp",
                "reproduce",
                str(trace),
                "--predictions",
                str(predictions),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "re-derived exactly" in result.stdout
    summary = read(local_run / "summary.json")
    evidence = {row["cell"]["name"]: row["evidence"] for row in summary["cells"]}
    assert sorted(evidence.values()) == ["fixture"] * 2 + ["synthetic"] * 4
    for pooled in summary["pooled"]:  # never across evidence kinds; seeds named
        kinds_pooled = {evidence[name] for name in pooled["cells"]}
        assert kinds_pooled == {pooled["evidence"]} and pooled["seeds"] == [1, 2]
    assert {p["evidence"] for p in summary["pooled"]} == {"fixture", "synthetic"}


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def run_in_process(plan: Path, out: Path, hooks: dict[str, Any] | None = None) -> int:
    from pyapp.cli.main import main

    previous = os.environ.pop("COMPOSITION_LAB_MATRIX_HOOKS", None)
    if hooks:
        os.environ["COMPOSITION_LAB_MATRIX_HOOKS"] = json.dumps(hooks)
    try:
        return main(["matrix", str(plan), "--out", str(out), "--engine", "ray"])
    finally:
        os.environ.pop("COMPOSITION_LAB_MATRIX_HOOKS", None)
        if previous is not None:
            os.environ["COMPOSITION_LAB_MATRIX_HOOKS"] = previous


def test_ray_gives_identical_cell_documents(
    plan: Path, local_run: Path, ray_instance: Any, tmp_path: Path
) -> None:
    out = tmp_path / "ray"
    assert run_in_process(plan, out) == 0
    cells = read(out / "matrix.json")["cells"]
    assert {c["status"] for c in cells} == {"done"}
    for state in cells:
        cell = state["cell"]
        browser = cell["kind"] == "browser"
        ours = documents(out / "cells" / cell["name"], cell["kind"], cell["seed"])
        theirs = documents(local_run / "cells" / cell["name"], cell["kind"], cell["seed"])
        for a, b in zip(ours, theirs, strict=True):
            assert timeless(read(a), browser) == timeless(read(b), browser), (a, b)


def test_ray_worker_killed_mid_cell_is_retried_and_nothing_is_lost(
    plan: Path, ray_instance: Any, tmp_path: Path
) -> None:
    one = tmp_path / "one.toml"
    text = plan.read_text(encoding="utf-8").replace(
        'models = ["independent", "size-dependent:slope=1.2", "fixture"]', 'models = ["fixture"]'
    )
    one.write_text(text.replace("seeds = [1, 2]", "seeds = [1]"), encoding="utf-8")
    marker, out = tmp_path / "killed.txt", tmp_path / "out"
    hook = {"marker": str(marker), "cell": "fixture", "after_trials": 3}
    assert run_in_process(one, out, {"kill_worker_once": hook}) == 0
    assert marker.read_text(encoding="utf-8").startswith("killed ")  # the fault happened
    (state,) = read(out / "matrix.json")["cells"]
    assert state["status"] == "done" and state["attempts"] == 2
    folder = out / "cells" / state["cell"]["name"]
    run = read(folder / "run.json")
    assert [s["resumed"] for s in run["sessions"]] == [False, True]
    assert run["sessions"][1]["trials_at_start"] >= 3
    trace = read(folder / "trace.json")
    lines = (folder / "trials.jsonl").read_text(encoding="utf-8").splitlines()
    assert [t["trial_id"] for t in trace["trials"]] == [json.loads(x)["trial_id"] for x in lines]
    frozen_after = {f["condition"]: f["after_trials"] for f in trace["freezes"]}
    heldout = [
        (t["condition"], t["task_id"])
        for i, t in enumerate(trace["trials"])
        if t["condition"] in frozen_after and i >= frozen_after[t["condition"]]
    ]
    assert len(heldout) == len(set(heldout))  # nothing observed (or scored) twice
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyapp",
            "reproduce",
            str(folder / "trace.json"),
            "--predictions",
            str(folder / "predictions.json"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_browser_cell_and_a_synthetic_cell_share_a_study_seal(tmp_path: Path) -> None:
    """Issue 37: the page's sweep under a study-level seal stops at its freeze (run.json
    paused, `awaiting_study_seal`) and, resumed by the matrix once the seed's seal exists,
    draws the same held-out tasks as the synthetic cell of its seed."""
    plan = tmp_path / "plan.toml"
    text = PLAN.format(site=SITE).replace(
        'models = ["independent", "size-dependent:slope=1.2", "fixture"]',
        'models = ["independent", "fixture"]',
    )
    text = text.replace("seeds = [1, 2]", "seeds = [1]").replace(
        "sealed = false", 'sealed = "study"'
    )
    plan.write_text(text, encoding="utf-8")
    out = run_matrix(plan, tmp_path / "out")
    cells = {c["cell"]["name"]: c["cell"] for c in read(out / "matrix.json")["cells"]}
    traces = {
        name: read(documents(out / "cells" / name, cell["kind"], cell["seed"])[0])
        for name, cell in cells.items()
    }
    assert len(traces) == 2
    [draw_seed] = {t["draw"]["draw_seed"] for t in traces.values()}
    assert read(out / "seals" / "seed-1.json")["draw_seed"] == draw_seed
    browser = next(n for n, c in cells.items() if c["kind"] == "browser")
    log = (out / "cells" / browser / "cell.log").read_text(encoding="utf-8")
    assert log.count("== ") == 2 and "stopped at the freeze" in log
    held_out = [
        {
            t["trial_id"]: t.get("expected")
            for t in trace["trials"]
            if t["sequence"] > trace["draw"]["sequence"] and t["condition"] == "model-only"
        }
        for trace in traces.values()
    ]
    assert held_out[0] and held_out[0] == held_out[1]
