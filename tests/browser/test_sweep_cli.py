"""End to end: `python -m pyapp sweep` (issue 7) drives the real page, headless.

Every sweep runs as a subprocess with a timeout, exactly as a user would start it. The model
is the committed tiny-chat TEST FIXTURE: these tests check the pipeline (files, resume,
reproduction), never a model. Task parameters are small where the test allows (CI has two
cores); the WASM test runs the default task set because it is the "full sweep".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from browser_helpers import ROOT, SITE
from test_study_seal import assert_the_draw_is_exploratory, ledger_the_draw

from pyapp.host import serve_hub_in_thread
from pyapp.records import Trial, from_json, to_json
from pyapp.sweep import FilesError, read_sweep

# Under pytest-xdist (scripts/lab test) the module runs in one process: its sweeps are made once.
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("sweep_cli")]

FIXTURE = ROOT / "tests" / "fixtures" / "tiny-chat"
SMALL = [
    "--param=primitives_per_op=1",
    "--param=probe_pairs=1",
    "--param=recurrence_steps=[2, 3]",
    "--param=determinants=1",
    "--param=derivatives=0",
]
"""A small task set: 5 profile tasks (one probe per op + one encoding pair), 3 held-out."""
SWEEP_TIMEOUT_S = 600
PYAPP = [sys.executable, "-m", "pyapp"]
SWEEP_SITE = Path(os.environ.get("SWEEP_TEST_SITE", SITE))
"""The built site the sweeps serve (build/site; SWEEP_TEST_SITE=DIR tests another build)."""
MODEL_CONDITIONS = {"model-only", "model-program", "controlled-chain"}


def pyapp_command(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m pyapp ARGS` in the repository, its output captured as text."""
    return subprocess.run(
        [*PYAPP, *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout
    )


def sweep(*args: str, timeout: float = SWEEP_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    return pyapp_command("sweep", "--site", str(SWEEP_SITE), *args, timeout=timeout)


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def heldout_trial_ids(trace: dict[str, Any]) -> list[str]:
    """Trial ids observed after their condition's freeze (the held-out observations)."""
    frozen_after = {f["condition"]: f["after_trials"] for f in trace["freezes"]}
    return [
        t["trial_id"]
        for i, t in enumerate(trace["trials"])
        if t["condition"] in frozen_after and i >= frozen_after[t["condition"]]
    ]


def assert_finished_run(out: Path, result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The checks every finished fixture sweep must pass; returns the trace."""
    assert result.returncode == 0, result.stdout + result.stderr
    trace, predictions, run = (
        read(out / n) for n in ("trace.json", "predictions.json", "run.json")
    )
    for document, name in ((trace, "trace"), (predictions, "predictions")):
        schema = read(ROOT / "exports" / f"{name}.schema.json")
        jsonschema.Draft202012Validator(schema).validate(document)
    # trials.jsonl holds every trial, one line each, exactly as Python wrote it: re-typing a
    # line through the Trial record and writing it again gives the same text (JavaScript
    # would have written 1.0 as 1).
    lines = (out / "trials.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == trace["trials"]
    for line in lines:
        retyped = to_json(from_json(Trial, json.loads(line)))
        assert json.dumps(retyped, ensure_ascii=False) == line
    # The folder re-derives with the ordinary command, not only inside `sweep`.
    again = pyapp_command(
        "reproduce", str(out / "trace.json"), "--predictions", str(out / "predictions.json")
    )
    assert again.returncode == 0, again.stdout
    assert run["status"] == "done" and run["in_flight"] is None and run["ended_at"]
    assert run["checks"]["ok"] is True, run["checks"]
    assert run["checks"]["exact"] is True, run["checks"]  # math.fsum: same bits everywhere
    assert run["evidence"] == "fixture" and predictions["evidence"] == "fixture"
    assert "TEST FIXTURE — NOT MODEL EVIDENCE" in result.stdout
    assert "reproduce: ok" in result.stdout and "re-derived exactly" in result.stdout
    assert run["versions"]["chromium"] and run["versions"]["page"]["pyapp_version"]
    assert not run.get("blocked_requests"), run.get("blocked_requests")
    # Each held-out task is observed once per model condition, and only after the freeze.
    observed = heldout_trial_ids(trace)
    assert observed and max(Counter(observed).values()) == 1
    assert {f["condition"] for f in trace["freezes"]} == set(run_conditions(trace))
    assert trace["model"]["model_id"] == "fixture/tiny-chat"
    return dict(trace)


def run_conditions(trace: dict[str, Any]) -> list[str]:
    return [c for c in trace["run"]["conditions"] if c in MODEL_CONDITIONS]


@pytest.fixture(scope="module")
def built(site_url: str) -> Path:
    """The built site (site_url skips when it or Chromium is missing)."""
    if not (SWEEP_SITE / "experiment.js").is_file():
        pytest.fail(f"{SWEEP_SITE} has no experiment.js: rebuild it (scripts/build_site.py)")
    return SWEEP_SITE


@pytest.fixture(scope="module")
def wasm_run(built: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, float]:
    out = tmp_path_factory.mktemp("runs") / "wasm"
    started = time.monotonic()
    result = sweep("--model", "fixture", "--backend", "wasm", "--seed", "1729", "--consent",
                   "--out", str(out))  # fmt: skip
    return out, result, time.monotonic() - started


def test_full_fixture_sweep_on_wasm(wasm_run: tuple[Path, Any, float]) -> None:
    out, result, seconds = wasm_run
    trace = assert_finished_run(out, result)
    assert trace["run"]["conditions"] == [
        "supplied-program",
        "model-only",
        "model-program",
        "controlled-chain",
    ]
    assert trace["model"]["backend_actual"] == "wasm"
    # the freeze receipt (issue 23 section 3): written at the freeze, fingerprint printed,
    # and the finished trace checks against it
    receipt = read(out / "receipt.json")
    schema = read(ROOT / "exports" / "receipt.schema.json")
    jsonschema.Draft202012Validator(schema).validate(receipt)
    assert f"fingerprint {receipt['fingerprint']}" in result.stdout
    for frozen in receipt["freezes"]:  # and, per profile, its frozen reference forecast
        assert f"reference forecast {frozen['reference_probability']:.3f}" in result.stdout
    checked = pyapp_command(
        "reproduce", str(out / "trace.json"), "--receipt", str(out / "receipt.json")
    )
    assert checked.returncode == 0 and "every held-out trial came after it" in checked.stdout
    run = read(out / "run.json")
    assert run["trials"] == run["total"] == len(trace["trials"])
    assert len(run["sessions"]) == 1 and run["sessions"][0]["timings_s"]["sweep"] > 0
    assert run["command"][1] == "sweep" and "fixture" in run["command"]
    # Plain progress lines on a non-terminal stderr: one per finished trial.
    lines = [line for line in result.stderr.splitlines() if "ETA" in line and "->" in line]
    assert len(lines) == len(trace["trials"])
    assert f"{len(trace['trials'])}/{len(trace['trials'])}" in lines[-1]
    print(f"full WASM fixture sweep: {len(trace['trials'])} trials in {seconds:.1f} s")


def test_report_of_the_full_sweep(wasm_run: tuple[Path, Any, float]) -> None:
    """`python -m pyapp report` (issue 17) on a real fixture-model run folder."""
    out, result, _ = wasm_run
    assert result.returncode == 0, result.stderr
    done = subprocess.run([*PYAPP, "report", str(out), "--out", str(out / "report.html")],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    text = (out / "report.html").read_text(encoding="utf-8")
    assert "TEST FIXTURE — NOT MODEL EVIDENCE" in text.split("</title>", 1)[0]
    assert "✓ Every number in predictions.json re-derived exactly." in text
    assert "fixture/tiny-chat" in text and text.count("<svg ") == 2
    assert "<script" not in text and " src=" not in text


def test_no_consent_downloads_nothing(built: Path, tmp_path: Path) -> None:
    hub, hub_url, served = serve_hub_in_thread({"test-org/tiny-chat": FIXTURE})
    try:
        for model in (["fixture"], ["test-org/tiny-chat", "--model-host", hub_url]):
            out = tmp_path / model[0].replace("/", "-")
            result = sweep("--model", *model, "--backend", "wasm", "--out", str(out), timeout=60)
            assert result.returncode == 2, result.stderr
            assert "needs your consent: add --consent" in result.stderr
            assert "Nothing was downloaded" in result.stderr
            assert not out.exists()
        assert served == []
    finally:
        hub.shutdown()
        hub.server_close()


@pytest.fixture(scope="module")
def folder_run(built: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    out = tmp_path_factory.mktemp("runs") / "folder"
    result = sweep("--model", "test-org/tiny-chat", "--model-folder", str(FIXTURE),
                   "--backend", "wasm", "--dtype", "fp32", "--conditions", "model-only",
                   *SMALL, "--consent", "--out", str(out))  # fmt: skip
    return out, result


def test_local_model_folder_through_the_hub_path(folder_run: tuple[Path, Any]) -> None:
    out, result = folder_run
    assert result.returncode == 0, result.stdout + result.stderr
    trace = read(out / "trace.json")
    # Served as a hub model, but its config.json is the fixture's: still a test fixture.
    assert (trace["model"]["source"], trace["model"]["revision"]) == ("hub", "main")
    assert trace["model"]["evidence"] == "fixture"
    assert {t["evidence"] for t in trace["trials"]} == {"fixture"}
    run = read(out / "run.json")
    assert run["evidence"] == "fixture" and "TEST FIXTURE" in result.stdout
    assert run["checks"]["ok"] is True and not run.get("blocked_requests")
    assert "test-org/tiny-chat" in run["sessions"][0]["model"]["dialog"]


def test_a_draw_the_page_makes_on_resume_is_checked_against_the_ledger(
    built: Path, tmp_path: Path
) -> None:
    """tests/test_study_seal.py's ledger hit, through the page: the sweep stops at its freeze
    (its study seal not made yet); the ledger then records that an earlier sweep of the model
    observed the very tasks the seal will draw; on resume the CLI hands the ledger to the page
    (`previously_observed`), and the page's draw takes it in and is exploratory."""
    ledger, seal_file, out = tmp_path / "ledger.json", tmp_path / "seal.json", tmp_path / "run"
    argv = ["--model", "fixture", "--backend", "wasm", "--consent", "--conditions", "model-only",
            "--ledger", str(ledger), *SMALL, "--out", str(out),
            "--study-seal", str(seal_file)]  # fmt: skip
    paused = sweep(*argv)
    assert paused.returncode == 3, paused.stdout + paused.stderr
    drawn = ledger_the_draw(out, ledger, seal_file)
    resumed = sweep(*argv, "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert_the_draw_is_exploratory(out, drawn)


def test_killed_then_resumed(built: Path, tmp_path: Path) -> None:
    """SIGKILL after the freeze and a held-out trial; --resume finishes with every held-out
    task scored exactly once under the one frozen profile, the interruption recorded."""
    out = tmp_path / "killed"
    args = [*PYAPP, "sweep", "--site", str(SWEEP_SITE), "--model", "fixture", "--backend", "wasm",
            "--conditions", "model-only,model-program", *SMALL, "--consent", "--out", str(out),
            "--page-param", "model_step_delay_ms=15"]  # fmt: skip
    log = (tmp_path / "first.log").open("w")
    process = subprocess.Popen(args, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    before: dict[str, Any] | None = None
    try:
        deadline = time.monotonic() + SWEEP_TIMEOUT_S
        while time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
            try:  # trace.json's header (freezes) + trials.jsonl's trials, as they stand
                trace = read_sweep(out)
            except (OSError, ValueError, FilesError):
                continue
            if trace is None:
                continue
            try:
                in_flight = read(out / "run.json")["in_flight"]
            except (OSError, ValueError):
                continue
            observed = {t["trial_id"] for t in trace["trials"]}
            if heldout_trial_ids(trace) and in_flight and in_flight not in observed:
                process.send_signal(signal.SIGKILL)  # a crash, mid-trial: no clean-up
                before = trace
                break
    finally:
        if process.poll() is None and before is None:
            process.kill()
        process.wait(timeout=60)
        log.close()
    assert before is not None, (tmp_path / "first.log").read_text()
    run = read(out / "run.json")
    assert run["status"] == "running"  # the process died mid-run: nothing was tidied up
    in_flight = run["in_flight"]
    killed_at = read_sweep(out)
    assert killed_at is not None
    assert len(killed_at["trials"]) >= len(before["trials"])

    result = sweep("--resume", "--consent", "--out", str(out))
    trace = assert_finished_run(out, result)
    # The same freezes (not re-frozen), the held-out set scored exactly once.
    assert trace["freezes"] == killed_at["freezes"]
    observed = heldout_trial_ids(trace)
    assert sorted(observed) == sorted(set(observed))
    assert set(heldout_trial_ids(killed_at)) <= set(observed)
    predictions = read(out / "predictions.json")
    for condition in predictions["conditions"]:
        ids = [p["task_id"] for p in condition["predictions"]]
        seen = [o["task_id"] for o in condition["observations"] if not o["observed_before_freeze"]]
        assert sorted(seen) == sorted(ids), condition["frozen"]["profile"]["condition"]
    # The trial in flight at the kill is recorded as interrupted (unless its result was
    # written just before the kill), then attempted again.
    interrupted = [i["trial_id"] for i in trace["interruptions"]]
    if in_flight not in {t["trial_id"] for t in killed_at["trials"]}:
        assert interrupted == [in_flight]
        assert in_flight in {t["trial_id"] for t in trace["trials"]}
    else:
        assert interrupted == []
    resumed = read(out / "run.json")
    assert len(resumed["sessions"]) == 2
    first, second = resumed["sessions"]
    assert first["status"] == "running" and first["ended_at"] is None  # killed
    assert second["resumed"] is True and second["in_flight_at_start"] == in_flight
    assert second["trials_at_start"] == len(killed_at["trials"])
    assert "resumed" in result.stderr

    # Resuming a finished sweep does nothing.
    again = sweep("--resume", "--consent", "--out", str(out), timeout=60)
    assert again.returncode == 0 and "nothing to resume" in again.stdout


def test_compare_two_fixture_runs(
    wasm_run: tuple[Path, Any, float], folder_run: tuple[Path, Any], tmp_path: Path
) -> None:
    (first, result, _), (second, done) = wasm_run, folder_run
    assert result.returncode == 0 and done.returncode == 0, result.stderr + done.stderr
    files = (str(first / "predictions.json"), str(second / "predictions.json"))
    # the folder run uses a smaller task set: refused, never pooled (issue 23 section 5)
    refused = pyapp_command("compare", *files)
    assert refused.returncode == 1 and "task sets differ" in refused.stderr
    compared = pyapp_command(
        "compare", *files, "--describe-anyway", "--markdown", str(tmp_path / "table.md")
    )
    assert compared.returncode == 0, compared.stderr
    assert compared.stdout.startswith("DESCRIBED ANYWAY (--describe-anyway): task sets")
    assert "not a confirmatory model comparison" in compared.stdout
    warnings = [line for line in compared.stdout.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 1  # that one: same seed, generator and prompts
    lines = compared.stdout.splitlines()
    assert any(line.startswith("wasm ") and "profile add" in line for line in lines)
    assert any(line.startswith("folder ") and "model-only" in line for line in lines)
    assert "test-org/tiny-chat" in (tmp_path / "table.md").read_text(encoding="utf-8")


def test_out_folder_in_use_is_refused(wasm_run: tuple[Path, Any, float]) -> None:
    out, _, _ = wasm_run
    result = sweep("--model", "fixture", "--backend", "wasm", "--consent", "--out", str(out))
    assert result.returncode == 2 and "already holds a sweep" in result.stderr


def test_short_sweep_on_the_software_webgpu_adapter(built: Path, tmp_path: Path) -> None:
    out = tmp_path / "webgpu"
    result = sweep("--model", "fixture", "--backend", "webgpu",
                   "--chromium-flag=--enable-unsafe-webgpu", "--conditions", "model-only",
                   "--param=primitives_per_op=1", "--param=probe_pairs=0",
                   "--param=recurrence_steps=[2]", "--param=determinants=0",
                   "--param=derivatives=0", "--consent", "--out", str(out))  # fmt: skip
    if result.returncode != 0 and "WebGPU is not available" in result.stderr:
        pytest.skip(f"no WebGPU adapter even with --enable-unsafe-webgpu: {result.stderr[-300:]}")
    trace = assert_finished_run(out, result)
    model = trace["model"]
    assert (model["backend_requested"], model["backend_actual"]) == ("webgpu", "webgpu")
    assert model["adapter"] is not None and model["adapter"]["is_fallback_adapter"] is True
    assert read(out / "run.json")["options"]["chromium_flags"] == ["--enable-unsafe-webgpu"]
