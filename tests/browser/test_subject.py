"""End to end: the locally trained reference subject in the browser (issue 26).

The committed subject (tests/fixtures/subject) loads through the consent dialog as a bundled
model, is named as what it is (never a pretrained LLM), reproduces its reference replies'
greedy ids on WASM (fp32, the ids onnxruntime gave natively when it was built; a reply may
part from them only at or after a listed near-tie, top-two logits within NEAR_TIE), loads and
generates on WebGPU (SwiftShader), and a short sweep on it finishes and reproduces exactly.
Its profile is neither all-correct nor all-wrong on a fixed seed (the first, 1,500-step
subject was all wrong here; this test was a strict xfail until the 16,000-step recipe). The
same sweep run natively (`sweep --backend native`, onnxruntime) gives every trial the same
verdict, or parts from the page only after a near-tie of its own logits (issue 34).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import (
    ACTION_TIMEOUT_MS,
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    Booted,
    guard,
    missing,
    open_app,
)
from playwright.sync_api import Browser, BrowserType, Page
from test_models import caps, client_generate, provenance
from test_sweep_cli import SWEEP_TIMEOUT_S, pyapp_command, read, sweep

from pyapp.browser import parse_provenance
from pyapp.native import NativeAdapter, NativeIdentity, load_native, read_model
from pyapp.records import SUBJECT_LABEL, SUBJECT_MODEL_ID, SUBJECT_RECIPE
from pyapp.sweep import wait_catalogue, wait_models

pytestmark = pytest.mark.browser

SUBJECT = ROOT / "tests" / "fixtures" / "subject"
REPLIES: list[dict[str, Any]] = (
    json.loads((SUBJECT / "replies.json").read_text(encoding="utf-8"))
    if (SUBJECT / "replies.json").is_file()
    else []
)
MODEL_TIMEOUT_MS = 90_000
NEAR_TIE = (
    json.loads((SUBJECT / "subject.json").read_text(encoding="utf-8"))["near_tie_margin"]
    if (SUBJECT / "subject.json").is_file()
    else 0.0
)
"""Top-two logits closer than this are a near-tie: another runtime may pick the other token."""
STRATIFIED = [
    "--param=primitives_per_op=9",
    '--param=operand_digits="stratified"',
    "--param=addsub_magnitude=[1, 999]",
    "--param=mul_magnitude=[1, 999]",
    "--param=probe_pairs=0",
    "--param=recurrence_steps=[2]",
    "--param=determinants=0",
    "--param=derivatives=0",
]
"""A short task set: 9 primitives per op, operands stratified over 1-3 digits, one held-out
recurrence (a controlled chain of four primitives)."""


def agrees(got: list[int], row: dict[str, Any]) -> str | None:
    """None when `got` is the native greedy ids, or parts from them only at or after a listed
    near-tie; else what differs."""
    want = row["fp32"]["output_ids"]
    if got == want:
        return None
    first = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), None)
    first = min(len(got), len(want)) if first is None else first
    ties = row["fp32"]["near_ties"]
    if ties and first >= ties[0]:
        return None
    return f"{row['name']}: step {first} differs (near-ties {ties}): {got} != {want}"


@pytest.fixture(scope="module")
def loaded(browser: Browser, site_url: str) -> Iterator[tuple[Booted, str]]:
    if not REPLIES:
        missing(f"no reference subject at {SUBJECT}")
    booted = open_app(browser, site_url)
    page = booted.page
    wait_catalogue(page)
    # the subject is the catalogue's first entry: the page's suggested first run
    assert page.input_value("#model-choice") == "subject"
    page.check('input[name="backend"][value="wasm"]')
    page.select_option("#model-dtype", "fp32")
    page.get_by_role("button", name="Load model…").click()
    dialog = page.inner_text("#consent-dialog")
    page.get_by_role("button", name="Download and load").click()
    state = wait_models(page, "loaded failed", MODEL_TIMEOUT_MS)
    assert state == "loaded", page.inner_text("#model-status")
    yield booted, dialog
    booted.context.close()
    assert not booted.log.offenders, booted.log.offenders


def test_consent_and_labels_name_the_subject(loaded: tuple[Booted, str]) -> None:
    booted, dialog = loaded
    for words in (SUBJECT_MODEL_ID, SUBJECT_LABEL, "bundled", "MB", "WASM"):
        assert words in dialog, (words, dialog)
    assert SUBJECT_LABEL in booted.page.inner_text("#model-status")
    record = parse_provenance(provenance(booted.page))
    assert record.source == "bundled-subject" and record.evidence == "reference-subject"
    assert record.subject_recipe == SUBJECT_RECIPE
    assert booted.log.requested("/models/subject/reference-2/onnx/model.onnx")


def test_reference_replies_on_wasm_are_the_native_greedy_ids(loaded: tuple[Booted, str]) -> None:
    page = loaded[0].page
    problems = []
    for row in REPLIES:
        answer = client_generate(
            page, messages=row["messages"], caps=caps(max_new_tokens=row["max_new_tokens"])
        )
        assert answer["ok"], answer
        result = answer["result"]
        assert result["input_tokens"] == row["prompt_tokens"], row["name"]
        problem = agrees(result["output_token_ids"], row)
        if problem:
            problems.append(problem)
    assert not problems, problems


def test_webgpu_on_the_software_adapter_loads_and_generates(
    browser_type: BrowserType, site_url: str
) -> None:
    if not REPLIES:
        missing(f"no reference subject at {SUBJECT}")
    gpu_browser = browser_type.launch(
        executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--enable-unsafe-webgpu"]
    )
    try:
        context = gpu_browser.new_context()
        context.set_default_timeout(ACTION_TIMEOUT_MS)
        log = guard(context)
        page: Page = context.new_page()
        page.goto(site_url, timeout=30_000)
        wait_catalogue(page)
        if "WebGPU is not available" in page.inner_text("#backend-status"):
            pytest.skip("no WebGPU adapter: " + page.inner_text("#backend-status"))
        page.select_option("#model-choice", "subject")
        page.check('input[name="backend"][value="webgpu"]')
        page.get_by_role("button", name="Load model…").click()
        page.get_by_role("button", name="Download and load").click()
        assert wait_models(page, "loaded failed", 180_000) == "loaded", page.inner_text(
            "#model-status"
        )
        row = REPLIES[0]
        answer = client_generate(
            page, 180_000, messages=row["messages"], caps=caps(max_new_tokens=3, timeout_ms=150_000)
        )
        assert answer["ok"], answer
        got = answer["result"]["output_token_ids"]
        assert 1 <= len(got) <= 3
        assert (
            agrees(
                got,
                {
                    **row,
                    "fp32": {**row["fp32"], "output_ids": row["fp32"]["output_ids"][: len(got)]},
                },
            )
            is None
        )
        record = parse_provenance(provenance(page))
        assert (record.backend_actual, record.evidence) == ("webgpu", "reference-subject")
        assert not log.offenders
    finally:
        gpu_browser.close()


@pytest.fixture(scope="module")
def subject_run(site_url: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    if not REPLIES:
        missing(f"no reference subject at {SUBJECT}")
    out = tmp_path_factory.mktemp("runs") / "subject"
    result = sweep("--model", "subject", "--backend", "wasm", "--dtype", "fp32", "--seed", "1729",
                   "--consent", "--conditions", "model-only,controlled-chain", *STRATIFIED,
                   "--out", str(out), timeout=SWEEP_TIMEOUT_S)  # fmt: skip
    return out, result


def test_a_short_sweep_finishes_and_reproduces(subject_run: tuple[Path, Any]) -> None:
    out, result = subject_run
    assert result.returncode == 0, result.stdout + result.stderr
    assert "reproduce: ok" in result.stdout and "re-derived exactly" in result.stdout
    trace, predictions, run = (
        read(out / n) for n in ("trace.json", "predictions.json", "run.json")
    )
    again = pyapp_command(
        "reproduce", str(out / "trace.json"), "--predictions", str(out / "predictions.json")
    )
    assert again.returncode == 0, again.stdout
    assert run["evidence"] == "reference-subject" and predictions["evidence"] == "reference-subject"
    assert trace["model"]["evidence"] == "reference-subject"
    assert trace["model"]["subject_recipe"] == SUBJECT_RECIPE
    assert trace["model"]["model_id"] == SUBJECT_MODEL_ID


def test_its_profile_is_neither_all_correct_nor_all_wrong(subject_run: tuple[Path, Any]) -> None:
    out, result = subject_run
    assert result.returncode == 0, result.stdout + result.stderr
    trace = read(out / "trace.json")
    frozen = {f["condition"]: f["after_trials"] for f in trace["freezes"]}
    profile = [
        t["correct"]
        for i, t in enumerate(trace["trials"])
        if t["condition"] == "model-only" and i < frozen["model-only"]
    ]
    assert len(profile) == 27
    assert 0 < sum(bool(c) for c in profile) < len(profile), profile


def generations(trial: dict[str, Any]) -> list[tuple[str, list[int]]]:
    """(prompt, output ids) of each model call of a trial, in order."""
    if trial["chain"] is not None:
        calls = trial["chain"]["calls"]
        return [(c["prompt"]["text"], c["completion"]["output_token_ids"] or []) for c in calls]
    if trial["completion"] is None:
        return []
    return [(trial["prompt"]["text"], trial["completion"]["output_token_ids"] or [])]


def near_tie_before_parting(
    adapter: NativeAdapter, ours: dict[str, Any], theirs: dict[str, Any]
) -> str | None:
    """Where the native trial first parts from the browser's, when a near-tie of the native
    logits comes at or before that token; None when there is none (a real difference)."""
    pairs = zip(generations(ours), generations(theirs), strict=False)  # a halt ends one early
    for (prompt, native_ids), (_, page_ids) in pairs:
        if native_ids == page_ids:
            continue
        parted = zip(native_ids, page_ids, strict=False)
        step = next((i for i, (a, b) in enumerate(parted) if a != b), None)
        step = min(len(native_ids), len(page_ids)) if step is None else step
        gaps = adapter.margins(prompt, native_ids)[: step + 1]
        ties = [i for i, gap in enumerate(gaps) if gap < NEAR_TIE]
        return f"call parts at token {step}, near-ties at {ties}" if ties else None
    return None


def test_the_native_sweep_gives_the_browsers_verdicts(
    subject_run: tuple[Path, Any], tmp_path: Path
) -> None:
    out, result = subject_run
    assert result.returncode == 0, result.stdout + result.stderr
    native = tmp_path / "native"
    conditions = "model-only,controlled-chain"
    done = pyapp_command("sweep", "--backend", "native", "--model", "subject", "--dtype", "fp32",
                         "--seed", "1729", "--consent", "--conditions", conditions, *STRATIFIED,
                         "--out", str(native), timeout=SWEEP_TIMEOUT_S)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    page, ours = read(out / "trace.json"), read(native / "trace.json")
    assert ours["model"]["backend_actual"] == "native" and page["model"]["backend_actual"] == "wasm"
    assert ours["tasks"] == page["tasks"] and ours["freezes"][0]["profile_sha256"]
    verdict = lambda t: (t["outcome"], t["result"], t["correct"])  # noqa: E731
    by_id = {t["trial_id"]: t for t in page["trials"]}
    assert sorted(by_id) == sorted(t["trial_id"] for t in ours["trials"])
    adapter = load_native(
        read_model((SUBJECT,), "fp32"),
        NativeIdentity(SUBJECT_MODEL_ID, "bundled", "bundled-subject", {}),
    )
    near_ties, differ = [], []
    for trial in ours["trials"]:
        theirs = by_id[trial["trial_id"]]
        if verdict(trial) == verdict(theirs):
            continue
        tie = near_tie_before_parting(adapter, trial, theirs)
        (near_ties if tie else differ).append(f"{trial['trial_id']}: {tie or verdict(trial)}")
    assert not differ, differ
    print(f"native vs browser: {len(ours['trials'])} trials, near-ties listed: {near_ties}")


def test_a_design_size_sweep_on_the_extended_chain_protocol(
    loaded: tuple[Booted, str], tmp_path: Path
) -> None:
    """The design's 24 tasks, the controlled chain under `chain-extended/1` (issue 35): step
    2 offers the protocol; every held-out family is routed in the page (determinants and
    derivatives seven calls each), the trace records the protocol, and it reproduces."""
    import time

    page = loaded[0].page
    options = page.eval_on_selector_all("#chain-protocol option", "os => os.map(o => o.value)")
    assert options == ["design", "extended"]
    assert page.input_value("#chain-protocol") == "design"  # the design's is the default
    out = tmp_path / "extended"
    started = time.monotonic()
    result = sweep("--model", "subject", "--backend", "wasm", "--dtype", "fp32", "--seed", "1729",
                   "--consent", "--conditions", "controlled-chain", "--chain-protocol", "extended",
                   "--out", str(out), timeout=SWEEP_TIMEOUT_S)  # fmt: skip
    took = time.monotonic() - started
    assert result.returncode == 0, result.stdout + result.stderr
    assert "reproduce: ok" in result.stdout
    trace = read(out / "trace.json")
    assert trace["schema_version"] == "trace/4"
    assert trace["run"]["terms"] == {"chain_protocol": "chain-extended/1", "sealed": False}
    assert all(f["terms"] == trace["run"]["terms"] for f in trace["freezes"])
    chains = {t["task_id"]: t["chain"] for t in trace["trials"]}
    for task_id in ("determinant-1", "determinant-2", "derivative-1", "derivative-2"):
        route = chains[task_id]
        assert route["status"] in ("completed", "halted") and route["planned_calls"] == 7
        assert route["calls"], task_id  # the model was asked: never `unsupported`
    predictions = read(out / "predictions.json")
    heldout = predictions["conditions"][0]["frozen"]["heldout_task_ids"]
    assert len(heldout) == 6 and read(out / "run.json")["options"]["chain_protocol"] == "extended"
    print(f"design-size extended-protocol sweep: {took:.0f} s")  # no timed assertion
