"""`python -m pyapp sweep --backend native` (issue 34): the page's sweep without Chromium.

The tiny-chat TEST FIXTURE runs under onnxruntime through the same session, events and files
as the browser sweep (trials.jsonl, trace.json, predictions.json, receipt.json, run.json),
re-derived exactly at the end; a `--timeout` stop and a crash mid-trial (the process exits
inside a held-out generation, injected) are resumed to the same end, each held-out task
scored once; the page-only options and models the native backend cannot run as the page
would are refused in one line (exit 2); the adapter stops as the page's worker does (input
budget, deadline, bytes, length). Never model evidence.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from asyncrun import run

from pyapp.cli.main import main
from pyapp.native import NativeAdapter, NativeIdentity, load_native, logits_settings, read_model
from pyapp.records import CHAIN_CALL_CAPS, WHOLE_TASK_CAPS

pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "tiny-chat"
SMALL = [
    "--param=primitives_per_op=1",
    "--param=probe_pairs=1",
    "--param=recurrence_steps=[2, 3]",
    "--param=determinants=1",
    "--param=derivatives=0",
]
"""5 profile tasks (one probe per op + one encoding pair), 3 held-out (as the browser test)."""
FILES = {"trials.jsonl", "trace.json", "predictions.json", "receipt.json", "run.json"}
"""What a finished sweep folder holds, in the browser and natively."""


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def sweep(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`python -m pyapp sweep ARGS` in its own process: the sweep runs asyncio and installs
    signal handlers, which the browser tests' event loop in this process would refuse."""
    done = subprocess.run(
        [sys.executable, "-m", "pyapp", "sweep", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def heldout_ids(trace: dict[str, Any]) -> list[str]:
    frozen_after = {f["condition"]: f["after_trials"] for f in trace["freezes"]}
    return [
        t["trial_id"]
        for i, t in enumerate(trace["trials"])
        if t["condition"] in frozen_after and i >= frozen_after[t["condition"]]
    ]


def assert_finished(out: Path, code: int, stdout: str) -> dict[str, Any]:
    assert code == 0, stdout
    assert {p.name for p in out.iterdir()} == FILES
    trace, run = read(out / "trace.json"), read(out / "run.json")
    lines = (out / "trials.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == trace["trials"]
    assert run["status"] == "done" and run["checks"]["ok"] and run["checks"]["exact"]
    schema = read(ROOT / "exports" / "sweep-run.schema.json")
    jsonschema.Draft202012Validator(schema).validate(run)
    assert run["options"]["backend"] == "native" and run["evidence"] == "fixture"
    model = trace["model"]
    assert (model["backend_requested"], model["backend_actual"]) == ("native", "native")
    assert (model["source"], model["evidence"]) == ("bundled-fixture", "fixture")
    assert model["onnxruntime_version"] and model["transformers_js_version"] is None
    assert "reproduce: ok" in stdout and "TEST FIXTURE — NOT MODEL EVIDENCE" in stdout
    observed = heldout_ids(trace)
    assert observed and max(Counter(observed).values()) == 1
    return dict(trace)


def test_a_native_sweep_writes_the_browser_sweeps_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    code, stdout, stderr = sweep(
        capsys, "--backend", "native", "--model", "fixture", "--consent", "--out", str(out),
        *SMALL,
    )  # fmt: skip
    trace = assert_finished(out, code, stdout)
    assert trace["run"]["conditions"] == [
        "supplied-program",
        "model-only",
        "model-program",
        "controlled-chain",
    ]
    receipt = read(out / "receipt.json")
    assert f"fingerprint {receipt['fingerprint']}" in stdout
    progress = [line for line in stderr.splitlines() if "ETA" in line and "->" in line]
    assert len(progress) == len(trace["trials"])  # one plain line per trial, as in the page
    run = read(out / "run.json")
    assert run["sessions"][0]["model"]["provenance"]["backend_actual"] == "native"
    assert set(run["sessions"][0]["timings_s"]) == {"model_load", "sweep"}
    assert run["versions"]["page"]["pyapp_version"] and run["versions"]["chromium"] is None
    assert code == main(
        ["reproduce", str(out / "trace.json"), "--receipt", str(out / "receipt.json")]
    )


def test_a_timeout_stop_then_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    code, _, stderr = sweep(
        capsys, "--backend", "native", "--model", "fixture", "--consent", "--out", str(out),
        "--conditions", "model-only,model-program", *SMALL, "--timeout", "0.001",
    )  # fmt: skip
    assert code == 1 and "stopped by --timeout" in stderr and "--resume" in stderr
    stopped = read(out / "run.json")
    assert stopped["status"] == "interrupted" and stopped["trials"] == 1  # the trial in flight
    code, stdout, stderr = sweep(capsys, "--resume", "--consent", "--out", str(out))
    trace = assert_finished(out, code, stdout)
    assert trace["interruptions"] == []  # a stop between trials cuts nothing short
    assert [s["resumed"] for s in read(out / "run.json")["sessions"]] == [False, True]


CRASH = """
import os, sys
from pyapp.cli.main import main
from pyapp.native.adapter import NativeAdapter
calls = [0]
generate = NativeAdapter.generate
async def crashing(self, prompt, caps):
    calls[0] += 1
    if calls[0] == int(sys.argv[1]):
        os._exit(137)  # the process dies inside a generation: nothing is tidied up
    return await generate(self, prompt, caps)
NativeAdapter.generate = crashing
sys.exit(main(sys.argv[2:]))
"""


def test_a_crash_mid_trial_then_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    args = ["sweep", "--backend", "native", "--model", "fixture", "--consent", "--out", str(out),
            "--conditions", "model-only,model-program", *SMALL]  # fmt: skip
    # 10 profile calls, then the held-out ones: the 12th call is the second held-out trial
    died = subprocess.run(
        [sys.executable, "-c", CRASH, "12", *args], cwd=ROOT, capture_output=True, timeout=120
    )
    assert died.returncode == 137, died.stderr[-2000:]
    run = read(out / "run.json")
    assert run["status"] == "running" and run["in_flight"]  # killed mid-trial
    in_flight = run["in_flight"]
    code, stdout, stderr = sweep(capsys, "--resume", "--consent", "--out", str(out))
    trace = assert_finished(out, code, stdout)
    assert [i["trial_id"] for i in trace["interruptions"]] == [in_flight]
    assert in_flight in {t["trial_id"] for t in trace["trials"]}
    assert "resumed" in stderr
    predictions = read(out / "predictions.json")
    for condition in predictions["conditions"]:
        ids = sorted(p["task_id"] for p in condition["predictions"])
        seen = [o["task_id"] for o in condition["observations"] if not o["observed_before_freeze"]]
        assert sorted(seen) == ids
    code, stdout, _ = sweep(capsys, "--resume", "--consent", "--out", str(out))
    assert code == 0 and "nothing to resume" in stdout


@pytest.mark.parametrize(
    "option",
    ["--site=build/site", "--chromium-flag=--enable-unsafe-webgpu", "--page-param=seed=3"],
)
def test_page_only_options_are_refused(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    code, _, stderr = sweep(
        capsys, "--backend", "native", "--model", "fixture", "--consent", "--out", str(out), option
    )
    assert code == 2 and not out.exists()
    assert stderr.strip().count("\n") == 0 and "not with --backend native" in stderr


def test_models_it_cannot_run_as_the_page_would_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edited = tmp_path / "edited"
    shutil.copytree(FIXTURE, edited)
    config = read(edited / "tokenizer_config.json")
    config["chat_template"] = config["chat_template"].replace("'\\n'", "'\\n\\n'")
    (edited / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    penalised = tmp_path / "penalised"
    shutil.copytree(FIXTURE, penalised)
    (penalised / "generation_config.json").write_text(
        '{"eos_token_id": 2, "repetition_penalty": 1.1}'
    )
    cases = [
        (["--model", "smollm2-135m"], "no_model_files"),
        (["--model", "local/edited", "--model-folder", str(edited)], "unverified_template"),
        (["--model", "local/penalised", "--model-folder", str(penalised)], "logits_processor"),
        (["--model", "fixture", "--dtype", "q4"], "no_model_files"),
        (["--model", "local/x", "--model-host", "http://127.0.0.1:9"], "reads local files"),
    ]
    for model, words in cases:
        out = tmp_path / "run"
        code, _, stderr = sweep(
            capsys, "--backend", "native", *model, "--consent", "--out", str(out)
        )
        assert code == 2 and not out.exists(), stderr
        assert stderr.strip().count("\n") == 0 and words in stderr, stderr


@pytest.fixture(scope="module")
def adapter() -> NativeAdapter:
    files = read_model((FIXTURE,), "fp32")
    return load_native(files, NativeIdentity("fixture/tiny-chat", "bundled", "bundled-fixture", {}))


PROMPT = 'Reply with one integer.\n\nRegisters:\n{"a": 12, "b": 30}\n\nQuestion: Compute a + b.'


def test_the_adapter_stops_as_the_pages_worker_does(adapter: NativeAdapter) -> None:
    def generate(**caps: int) -> Any:
        return run(adapter.generate(PROMPT, replace(WHOLE_TASK_CAPS, **caps)))

    full = generate()
    assert full.finish_reason in ("eos", "length") and full.input_tokens
    assert full.input_text is not None and full.input_text.startswith("<|im_start|>user\n")
    over = generate(max_input_tokens=full.input_tokens - 1)
    assert (over.finish_reason, over.failure and over.failure.code) == (None, "input_budget")
    assert over.output_tokens is None and over.input_tokens == full.input_tokens
    # the deadline is checked after every token: a 0 ms deadline stops after the first
    late = generate(timeout_ms=0)
    assert (late.finish_reason, late.output_tokens) == ("timeout", 1)
    assert late.failure is not None and late.failure.code == "timeout"
    assert late.failure.message == "deadline of 0 ms reached; soft stop after 1 tokens"
    short = generate(max_new_tokens=1)
    assert short.output_token_ids == full.output_token_ids[:1]
    assert short.finish_reason == ("eos" if len(full.output_token_ids or ()) == 1 else "length")
    narrow = generate(max_output_bytes=0)
    assert narrow.finish_reason in ("bytes", "eos") and narrow.output_tokens == 1
    chain = run(adapter.generate(PROMPT, CHAIN_CALL_CAPS))
    assert chain.output_token_ids == full.output_token_ids[: CHAIN_CALL_CAPS.max_new_tokens]


@pytest.mark.parametrize("dtype", ["fp32", "q8"])
def test_the_adapter_gives_the_subjects_reference_replies(dtype: str) -> None:
    """replies.json: the greedy ids onnxruntime gave when the subject was built (and the
    page's WASM run reproduces, tests/browser/test_subject.py); prompt counts included."""
    subject = ROOT / "tests" / "fixtures" / "subject"
    native = load_native(
        read_model((subject,), dtype),
        NativeIdentity("subject/reference-2", "bundled", "bundled-subject", {}),
    )
    assert native.provenance.evidence == "reference-subject"
    rows = read(subject / "replies.json")
    for row in rows:
        caps = replace(WHOLE_TASK_CAPS, max_new_tokens=row["max_new_tokens"])
        reply = run(native.generate(row["messages"][0]["content"], caps))
        assert reply.input_tokens == row["prompt_tokens"], row["name"]
        assert list(reply.output_token_ids or ()) == row[dtype]["output_ids"], row["name"]
        assert reply.text == row[dtype]["reply"] and reply.finish_reason == row[dtype]["finish"]


def test_generation_settings_that_add_a_logits_processor_are_named() -> None:
    """transformers.js's `_get_logits_processor` tests, one by one: neutral values (as real
    config.json files carry them) pass; anything that adds a processor is named."""
    neutral = {
        "repetition_penalty": 1.0,
        "no_repeat_ngram_size": 0,
        "bad_words_ids": None,
        "min_length": 0,
        "min_new_tokens": None,
        "forced_bos_token_id": None,
        "suppress_tokens": None,
        "guidance_scale": 1,
        "temperature": 0.7,  # a sampling setting: greedy decoding ignores it, as the page does
    }
    assert logits_settings(neutral) == []
    added = {"repetition_penalty": 1.05, "no_repeat_ngram_size": 3, "min_new_tokens": 2}
    assert logits_settings({**neutral, **added}) == [
        "repetition_penalty=1.05",
        "no_repeat_ngram_size=3",
        "min_new_tokens=2",
    ]


def test_each_bundled_subject_loads_its_own_folder() -> None:
    """Both subjects have the source `bundled-subject`: the native sweep, the study receipt
    and `reproduce --rerun` find each one's files by its model id (a table keyed by source
    loaded the first subject for the second)."""
    from pyapp.records import SUBJECTS
    from pyapp.sweep import bundled_folder

    folders = {bundled_folder("bundled-subject", s.model_id) for s in SUBJECTS}
    assert len(folders) == len(SUBJECTS)
    for subject in SUBJECTS:
        folder = bundled_folder("bundled-subject", subject.model_id)
        assert folder is not None and folder.name == subject.folder.rsplit("/", 1)[-1]
    assert bundled_folder("bundled-subject", "subject/nonesuch") is None
    assert bundled_folder("hub", "subject/reference-2") is None


def test_each_subject_run_natively_records_its_own_recipe() -> None:
    """A native run of the second subject records the second subject's recipe: the adapter
    wrote the first's for both, so every subject2 cell of the comparison failed to score
    ("$.model.subject_recipe: is not the recipe of the reference subject")."""
    from pyapp.native import NativeIdentity, native_model_provenance, read_model
    from pyapp.records import SUBJECTS, evidence_mismatches
    from pyapp.sweep import bundled_folder

    for subject in SUBJECTS:
        folder = bundled_folder("bundled-subject", subject.model_id)
        assert folder is not None
        files = read_model((folder,), "fp32")
        identity = NativeIdentity(subject.model_id, "bundled", "bundled-subject", {})
        provenance = native_model_provenance(files, identity, "1.0", 1.0)
        assert provenance.evidence == "reference-subject"
        assert provenance.subject_recipe == subject.recipe
        assert evidence_mismatches(provenance) == []
