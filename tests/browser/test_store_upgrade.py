"""IndexedDB version 1 → 2 (site/store.js, issue 13): a database the old page wrote is
converted on open, keeps every trial, freeze, interruption and ledger entry, assembles a
trace that `python -m pyapp reproduce` accepts, and its sweep resumes and finishes.

Version 1 (site/store.js before 1644ad4) kept one record per sweep in "sweeps" —
{run_id, trace, in_flight, phase, finished, model_id, revision, trials, updated_at}, `trace`
the whole trace as the page held it (Python's reply parsed by JavaScript, so 5.0 is 5) — and
one record per model, revision and condition in "ledger" — {key: "<model_id>@<revision>|
<condition>", model_id, revision, condition, task_ids}. While version 1 existed the trace
schema was trace/1 (no sequence numbers, timestamps, load ids or identities; interruptions
were `page-closed` or `cancelled`). The test makes a real, unfinished sweep with the TEST
FIXTURE (never model evidence), rewrites it as trace/1 (`as_trace_1`, the downgrade the
trace/1 reading test uses), writes it into a version 1 database exactly in that layout, and
reloads the page.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import missing, open_app
from playwright.sync_api import Browser, Page
from test_experiment import FIXTURE, SMALL, api, load_fixture, wait_experiment
from test_integrity import as_trace_1

from pyapp.protocol import SweepPredictions, SweepRun, SweepStart, SweepTrace
from pyapp.records import read_trace, to_json
from pyapp.sweep import send, stored, stored_document
from pyapp.verify import reproduce_predictions
from pyapp.verify.reproduce import reproduce

pytestmark = pytest.mark.browser

# measure g1-g3, freeze, held-out A g4; B fails three times in a row (g5-g7): paused
FAULTS = "bad_reply@5,bad_reply@6,bad_reply@7"

WRITE_V1 = """async ({record, ledger}) => {
  await new Promise((resolve, reject) => {
    const gone = indexedDB.deleteDatabase("composition-lab");
    gone.onsuccess = resolve; gone.onerror = () => reject(gone.error);
    gone.onblocked = () => reject(new Error("the database is still open"));
  });
  const open = indexedDB.open("composition-lab", 1);
  open.onupgradeneeded = () => {
    open.result.createObjectStore("sweeps", { keyPath: "run_id" });
    open.result.createObjectStore("ledger", { keyPath: "key" });
  };
  const db = await new Promise((resolve, reject) => {
    open.onsuccess = () => resolve(open.result); open.onerror = () => reject(open.error);
  });
  const tx = db.transaction(["sweeps", "ledger"], "readwrite");
  tx.objectStore("sweeps").put(record);
  for (const entry of ledger) tx.objectStore("ledger").put(entry);
  await new Promise((resolve, reject) => {
    tx.oncomplete = resolve; tx.onerror = () => reject(tx.error);
  });
  db.close();
  return db.version;
}"""

READ_STORES = """async () => {
  const db = await new Promise((resolve, reject) => {
    const open = indexedDB.open("composition-lab");
    open.onsuccess = () => resolve(open.result); open.onerror = () => reject(open.error);
  });
  const all = (name) => new Promise((resolve, reject) => {
    const request = db.transaction(name, "readonly").objectStore(name).getAll();
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  const out = { version: db.version, stores: [...db.objectStoreNames] };
  for (const name of out.stores) out[name] = await all(name);
  db.close();
  return out;
}"""


def as_version_1(document: dict[str, Any]) -> dict[str, Any]:
    """The trace as the page of version 1 held it: trace/1, its interruptions as trace/1
    recorded them (a page closed mid-trial: nothing survived), numbers as JavaScript has them."""
    old = as_trace_1(document)
    old["interruptions"] = [
        {"trial_id": i["trial_id"], "at": i["at"], "reason": "page-closed", "partial": None}
        for i in document["interruptions"]
    ]
    old["summary"] = document["summary"]
    return old


def reproduced_by_cli(document: Any, path: Path, *, complete: bool = True) -> str:
    """`reproduce`'s output: every record re-derived; a paused sweep (`complete` false) is
    said to be incomplete, which is exit 1 (issue 37: a run that ended early says so)."""
    path.write_text(json.dumps(document), "utf-8")
    command = [sys.executable, "-m", "pyapp", "reproduce", str(path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == (0 if complete else 1), result.stdout + result.stderr
    assert "MISMATCH" not in result.stdout and "re-derived exactly" in result.stdout
    assert ("INCOMPLETE: " in result.stdout) is not complete, result.stdout
    return result.stdout


def boot_with_v1(page: Page, site_url: str, record: dict[str, Any], ledger: list[Any]) -> None:
    """Write the version 1 database from a page of the site's origin that does not open it
    (the app's own connection would block the rewrite), then load the app."""
    page.goto(f"{site_url}favicon.svg", timeout=30_000)
    assert api(page, WRITE_V1, {"record": record, "ledger": ledger}) == 1
    page.goto(site_url, timeout=30_000)
    page.wait_for_selector("#resume-prompt:not([hidden])", timeout=90_000)


def test_a_version_1_database_is_converted_and_its_sweep_resumes(
    browser: Browser, site_url: str, tmp_path: Path
) -> None:
    if not (FIXTURE / "replies.json").is_file():
        missing(f"no fixture model at {FIXTURE}")
    booted = open_app(browser, f"{site_url}?fault={FAULTS}")
    page = booted.page
    try:
        load_fixture(page)
        send(page, SweepStart(seed=5, params=SMALL, conditions=("model-only",)))
        assert send(page, SweepRun(phase="all")).state.paused
        document = json.loads(send(page, SweepTrace()).trace_json)
        assert len(document["freezes"]) == 1 and len(document["interruptions"]) == 3
        v1_trace = as_version_1(document)
        assert reproduce(v1_trace) == []  # a sound trace/1 document
        held = stored(page)
        assert held.sweep is not None
        ledger = [to_json(entry) for entry in held.ledger]  # version 1's records
        assert ledger and all("|" in e["key"] and e["task_ids"] for e in ledger)
        # the old page died while it ran the interrupted trial once more
        in_flight = document["interruptions"][-1]["trial_id"]
        record = {
            "run_id": held.sweep.run_id,
            "trace": v1_trace,
            "in_flight": in_flight,
            "phase": "all",
            "finished": False,
            "model_id": document["model"]["model_id"],
            "revision": document["model"]["revision"],
            "trials": len(v1_trace["trials"]),
            "updated_at": held.sweep.updated_at,
        }

        boot_with_v1(page, site_url, record, ledger)
        converted = api(page, READ_STORES)
        assert converted["version"] == 2
        assert sorted(converted["stores"]) == ["headers", "ledger", "sweeps", "trials"]
        (status,) = converted["sweeps"]
        assert "trace" not in status and status["trials"] == len(v1_trace["trials"])
        assert (status["evidence"], status["seed"]) == ("fixture", 5)
        assert [t["trial_id"] for t in converted["trials"]] == [
            t["trial_id"] for t in v1_trace["trials"]
        ]
        assert [to_json(entry) for entry in stored(page).ledger] == ledger
        tasks = sorted(task for entry in ledger for task in entry["task_ids"])
        assert sorted(r["task_id"] for r in converted["ledger"]) == tasks  # one per task
        assert in_flight in page.inner_text("#resume-prompt")

        # the converted records are the version 1 trace's parts (every trial, freeze and
        # interruption), so they reproduce as it does; Python assembles them (upgraded as it
        # reads a trace/1 document: what a resume continues)
        converted_sweep = stored(page).sweep
        assert converted_sweep is not None
        v1 = json.loads(json.dumps(v1_trace))
        header = json.loads(converted_sweep.header_json)
        assert [json.loads(t) for t in converted_sweep.trials_json] == v1["trials"]
        for key in ("freezes", "interruptions", "tasks", "model", "run"):
            assert header[key] == v1[key], key
        assert to_json(converted_sweep.summary) == v1["summary"]
        rebuilt = {**header, "trials": v1["trials"], "summary": v1["summary"]}
        assert rebuilt == v1 and reproduce(rebuilt) == []
        reproduced_by_cli(rebuilt, tmp_path / "converted.json", complete=False)  # paused
        kept = stored_document(converted_sweep)
        assert kept == to_json(read_trace(v1))

        # the resumed sweep continues from it (its phase was running: at once, the model
        # loaded): the trial in flight is interrupted and attempted again, nothing runs twice
        load_fixture(page)
        page.get_by_role("button", name="Resume", exact=True).click()
        assert wait_experiment(page, "done") == "done"
        finished = json.loads(send(page, SweepTrace()).trace_json)
        ids = [t["trial_id"] for t in finished["trials"]]
        assert ids[: len(v1_trace["trials"])] == [t["trial_id"] for t in v1_trace["trials"]]
        assert len(ids) == len(set(ids)) == len(v1_trace["trials"]) + 1
        interruptions = [(i["trial_id"], i["reason"]) for i in finished["interruptions"]]
        old = [(i["trial_id"], i["reason"]) for i in v1_trace["interruptions"]]
        assert interruptions == [*old, (in_flight, "page-closed")]
        assert reproduce(finished) == []
        predictions = json.loads(send(page, SweepPredictions()).predictions_json)
        assert reproduce_predictions(finished, predictions) == []

        # what the store holds after the resume is the same sweep, and reproduces too
        again = stored(page).sweep
        assert again is not None and again.finished is True
        again_trace = stored_document(again)
        assert [t["trial_id"] for t in again_trace["trials"]] == ids
        assert reproduce(again_trace) == []
    finally:
        booted.context.close()
    assert not booted.log.offenders, f"requests left 127.0.0.1: {booted.log.offenders}"
