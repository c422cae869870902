"""Injected infrastructure faults end in finished sweeps, never in observations (issue 11).

Each fault is injected through the page parameter `fault=KIND@N` (site/faults.js), N
counting the generations of the page's life, exactly as a user would pass it:
`python -m pyapp sweep --page-param fault=...`. The fixture is a test fixture, never model
evidence. Conditions model-only and controlled-chain over the small task set give a fixed
count of generations up to the first held-out chain call (the profile chain routes are one
call each):

    measure   model-only g1-g5, controlled-chain g6-g10        (freeze)
    held-out  model-only A: g11 answers, then the reload fails  (reload_fail@11)
                         B: not_loaded (no generation: the client reloads) -> attempted
                            again: g12 malformed reply         (bad_reply@12)
                            -> attempted again: g13
                         C: g14 the worker dies                (worker_crash@14)
                            -> attempted again after the reload: g15
              chain      recurrence-1's first call g16 never returns and sends no token
                         (hang@16): the hard deadline fires (15 s + grace) after more than
                         the stall window (the fixture's window is the 10 s floor) without a
                         token, so it is `stalled` — an infrastructure interruption, never
                         the model's timeout —, the worker is terminated and reloaded, and
                         recurrence-1 is attempted again (g17, after the reload; the wait
                         is recorded apart from its generation time)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser_helpers import open_app
from playwright.sync_api import Browser
from test_experiment import SWEEP_TIMEOUT_MS, load_fixture, wait_experiment
from test_sweep_cli import SMALL, assert_finished_run, built, read, sweep  # noqa: F401

from pyapp.conditions import kind_of
from pyapp.protocol import SweepStart, SweepTrace, TraceText
from pyapp.sweep import send, wait_page
from pyapp.verify.reproduce import reproduce

pytestmark = pytest.mark.browser

FAULTS = "reload_fail@11,bad_reply@12,worker_crash@14,hang@16"
CONDITIONS = "--conditions=model-only,controlled-chain"


def test_each_injected_fault_ends_in_a_finished_sweep_that_reproduces(
    built: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    out = tmp_path / "faults"
    result = sweep(
        "--model", "fixture", "--backend", "wasm", "--consent", "--out", str(out), *SMALL,
        CONDITIONS, f"--page-param=fault={FAULTS}",
    )  # fmt: skip
    trace = assert_finished_run(out, result)  # exit 0, reproduce passes, checks ok
    hooks = FAULTS.split(",")
    assert trace["run"]["faults"] == hooks
    assert read(out / "run.json")["faults"] == hooks

    interruptions = [(i["trial_id"], i["reason"], i["code"]) for i in trace["interruptions"]]
    assert interruptions == [
        ("model-only/recurrence-2", "infrastructure", "not_loaded"),
        ("model-only/recurrence-2", "infrastructure", "bad_reply"),
        ("model-only/determinant-1", "infrastructure", "worker_error"),
        ("controlled-chain/recurrence-1", "infrastructure", "stalled"),
    ]
    assert all(i["partial"] is not None for i in trace["interruptions"])
    scored = [t["failure"]["code"] for t in trace["trials"] if t["failure"] is not None]
    assert not [code for code in scored if kind_of(code) == "infrastructure"], scored
    # the hang is an interruption with the client's judgement, never the model's timeout
    stall = trace["interruptions"][-1]["hard_stop"]
    assert stall["judged"] == "stalled" and stall["silent_ms"] > stall["window_ms"] >= 10_000
    assert stall["tokens"] == 0 and stall["deadline_ms"] == 15_000
    retried = next(t for t in trace["trials"] if t["trial_id"] == "controlled-chain/recurrence-1")
    assert retried["chain"]["halt"] is None or retried["chain"]["halt"]["code"] != "timeout"
    first = retried["chain"]["calls"][0]
    assert first["generation_ms"] < 15_000  # the reload's wait is not the model's time
    assert all(load.get("stall_window_ms") for load in trace["model"]["loads"] if load["ok"])
    reasons = [load["reason"] for load in trace["model"]["loads"]]
    oks = [load["ok"] for load in trace["model"]["loads"]]
    # consent; the failed reload after g11; its retry; the reload after the crash; after the hang
    assert reasons == [
        "consent",
        "reload-after-terminate",
        "reload",
        "reload-after-terminate",
        "reload-after-terminate",
    ]
    assert oks == [True, False, True, True, True]
    loads = {t["load_id"] for t in trace["trials"] if t["condition"] != "supplied-program"}
    assert loads <= {1, 3, 4, 5}  # every trial ran under a successful load
    predictions = read(out / "predictions.json")
    by_condition = {c["frozen"]["profile"]["condition"]: c for c in predictions["conditions"]}
    cut = by_condition["model-only"]["interrupted"]
    assert (cut["total"], cut["infrastructure"], cut["attempted_again"]) == (3, 3, 3)
    chain = by_condition["controlled-chain"]["interrupted"]
    assert (chain["total"], chain["infrastructure"], chain["attempted_again"]) == (1, 1, 1)


def test_three_failures_in_a_row_pause_the_cli_with_exit_3_and_resume_finishes(
    built: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    out = tmp_path / "paused"
    base = ["--model", "fixture", "--backend", "wasm", "--consent", *SMALL]
    args = [*base, "--out", str(out)]
    crash = "--page-param=fault=worker_crash@6,worker_crash@7,worker_crash@8"
    result = sweep(*args, "--conditions=model-only", crash)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "paused" in result.stderr and "worker_error" in result.stderr
    assert "--resume" in result.stderr
    run = read(out / "run.json")
    assert run["status"] == "paused" and run["paused"]["code"] == "worker_error"
    trace = read(out / "trace.json")
    assert [i["code"] for i in trace["interruptions"]] == ["worker_error"] * 3
    assert not any(t["trial_id"] == "model-only/recurrence-1" for t in trace["trials"])

    resumed = sweep("--resume", "--consent", "--out", str(out), "--page-param=fault=")
    trace = assert_finished_run(out, resumed)
    assert [i["code"] for i in trace["interruptions"]] == ["worker_error"] * 3
    assert read(out / "run.json")["status"] == "done"

    # The CLI's ledger (tmp_path/ledger.json, beside the runs): a later sweep of the same
    # model and task set has seen its held-out tasks (by content), so it is exploratory.
    ledger = read(tmp_path / "ledger.json")
    (entry,) = ledger["entries"]
    assert ledger["schema_version"] == "sweep-ledger/2"
    assert entry["condition"] == "model-only" and len(entry["tasks"]) == 3
    again = tmp_path / "again"
    second = sweep(*base, "--out", str(again), "--conditions=model-only")
    assert_finished_run(again, second)
    assert "exploratory" in second.stderr
    (frozen,) = [c["frozen"] for c in read(again / "predictions.json")["conditions"]]
    assert frozen["exploratory"] is True and "earlier session" in frozen["exploratory_reason"]


SMALL_PARAMS = {
    "primitives_per_op": 1,
    "probe_pairs": 1,
    "recurrence_steps": [2, 3],
    "determinants": 1,
    "derivatives": 0,
}


def test_the_page_pauses_names_the_cause_and_counts_the_interrupted_attempts(
    browser: Browser, site_url: str
) -> None:
    """In the page itself: `data-state="paused"` with the cause in the status line, the same
    button resumes, and the scores table counts the held-out attempts interrupted."""
    hooks = ["worker_crash@6", "worker_crash@7", "worker_crash@8"]
    booted = open_app(browser, f"{site_url}?fault={','.join(hooks)}")
    page = booted.page
    try:
        load_fixture(page)
        send(page, SweepStart(seed=1729, params=SMALL_PARAMS, conditions=("model-only",)))
        run_all = page.get_by_role("button", name="Run (measure, freeze, held-out)")
        page.check("#sweep-run-through")  # no pause at the freeze
        run_all.click()
        assert wait_experiment(page, "paused done") == "paused"
        status = page.inner_text("#experiment-status")
        assert "Paused" in status and "worker_error" in status and "Nothing was scored" in status
        run_all.click()
        # the click reaches Python before the page leaves `paused`: wait for that, then the end
        wait_page(page, lambda s: s.experiment != "paused", SWEEP_TIMEOUT_MS, "no pause")
        assert wait_experiment(page, "done paused") == "done"
        # issue 41: nothing is said to be attempted again before it is
        assert "recorded and attempted again" not in page.inner_text("#experiment-status")
        scores = page.inner_text("#scores")
        assert "Held-out attempts interrupted and attempted again" in scores
        assert "3 (cancelled 0, infrastructure 3, page closed 0; attempted again 3" in scores
        answer: TraceText = send(page, SweepTrace())
        trace = json.loads(answer.trace_json or "null")
        assert trace["run"]["faults"] == hooks
        assert [i["code"] for i in trace["interruptions"]] == ["worker_error"] * 3
        assert reproduce(trace) == []
    finally:
        booted.context.close()
