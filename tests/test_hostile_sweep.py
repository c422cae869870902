"""Issue 24's `sweep` reproducers: fault strings, hostile `--resume` folders, ledgers.

Every case ends before a browser could start: the sweep reads and checks every input file
first. A valid folder reaches the consent check (exit 2, "needs your consent"), so each
hostile variant of it shows that its own file, and nothing else, is what was refused."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from test_hostile_files import pyapp, refused

from pyapp.records import MAX_TRIALS

OPTIONS: dict[str, Any] = {
    "model": "fixture",
    "backend": "wasm",
    "dtype": None,
    "revision": None,
    "seed": 1729,
    "params": {},
    "conditions": None,
    "model_host": None,
    "model_folder": None,
    "chromium_flags": [],
    "page_params": {},
}
RUN: dict[str, Any] = {
    "schema_version": "sweep-run/1",
    "kind": "composition-lab-sweep-run",
    "status": "interrupted",
    "evidence": "fixture",
    "evidence_note": "a test fixture",
    "command": ["python -m pyapp", "sweep"],
    "started_at": "2026-12-01T00:00:00.000+00:00",
    "ended_at": None,
    "phase": "measure",
    "in_flight": None,
    "run_id": None,
    "trials": 2,
    "total": None,
    "options": OPTIONS,
    "model": {
        "key": "fixture",
        "model_id": "fixture/tiny-chat",
        "revision": "main",
        "fixture": True,
    },
    "versions": {
        "pyapp": "0",
        "python": "3",
        "platform": "linux",
        "playwright": None,
        "chromium": None,
        "page": None,
    },
    "sessions": [],
    "checks": None,
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A resumable sweep folder: run.json, trace.json (header) and two trials.jsonl lines."""
    out = tmp_path / "runs" / "sweep"
    out.mkdir(parents=True)
    trace = tmp_path / "control.json"
    assert pyapp("run", "--condition", "supplied-program", "--out", trace).returncode == 0
    document = json.loads(trace.read_text("utf-8"))
    trials = document["trials"][:2]
    document["trials"] = []
    (out / "trace.json").write_text(json.dumps(document), encoding="utf-8")
    (out / "trials.jsonl").write_text("".join(json.dumps(t) + "\n" for t in trials), "utf-8")
    (out / "run.json").write_text(json.dumps(RUN), encoding="utf-8")
    return out


def resume(out: Path, *extra: str) -> Any:
    return pyapp("sweep", "--resume", "--out", out, *extra)


def reaches_consent(done: Any) -> None:
    """Everything was read and accepted: the sweep stops at the consent check (exit 2)."""
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "needs your consent" in done.stderr.splitlines()[-1], done.stderr


def test_a_valid_folder_reaches_the_consent_check(folder) -> None:
    reaches_consent(resume(folder))


def _options(change: Any) -> Any:
    def edit(run: dict[str, Any]) -> None:
        run["options"] = change(copy.deepcopy(run["options"]))

    return edit


RUN_EDITS = {
    "options: {}": (_options(lambda o: {}), "options.model"),
    "options.seed: abc": (_options(lambda o: {**o, "seed": "abc"}), "options.seed"),
    "options.params: x": (_options(lambda o: {**o, "params": "x"}), "options.params"),
    "options.params refused": (
        _options(lambda o: {**o, "params": {"primitives_per_op": 10**9}}),
        "options.params",
    ),
    "options not an object": (_options(lambda o: [1]), "options"),
    "fault hang@01": (
        _options(lambda o: {**o, "page_params": {"fault": "hang@01"}}),
        "page_params.fault",
    ),
    "fault hang@٣": (
        _options(lambda o: {**o, "page_params": {"fault": "hang@\u0663"}}),
        "page_params.fault",
    ),
    "sessions of numbers": (lambda run: run.update(sessions=[1, 2]), "sessions"),
}


@pytest.mark.parametrize("case", sorted(RUN_EDITS))
def test_a_hostile_run_json_is_one_line_exit_1(folder, case) -> None:
    change, field = RUN_EDITS[case]
    run = json.loads((folder / "run.json").read_text("utf-8"))
    change(run)
    (folder / "run.json").write_text(json.dumps(run), encoding="utf-8")
    refused(resume(folder), 1, "run.json", field)


@pytest.mark.parametrize("name", ["trials.jsonl", "run.json", "trace.json"])
@pytest.mark.parametrize("hostile", ["fifo", "folder", "latin-1", "dev-zero"])
def test_a_file_of_the_folder_that_is_not_a_document(folder, name, hostile) -> None:
    target = folder / name
    target.unlink()
    if hostile == "fifo":
        os.mkfifo(target)  # the old code blocked in read_text forever
    elif hostile == "folder":
        target.mkdir()
    elif hostile == "dev-zero":
        target.symlink_to("/dev/zero")
    else:
        target.write_bytes(b'{"trial_id": "caf\xe9"}\n')
    refused(resume(folder), 1, name)


def test_a_trials_file_over_the_trial_limit_is_refused_while_streaming(folder) -> None:
    line = (folder / "trials.jsonl").read_text("utf-8").splitlines()[0]
    with open(folder / "trials.jsonl", "w", encoding="utf-8") as handle:
        for _ in range(MAX_TRIALS + 1):
            handle.write(line + "\n")
    refused(resume(folder), 1, "trials.jsonl", str(MAX_TRIALS))


def test_a_trial_line_that_is_not_an_object_names_its_line(folder) -> None:
    with open(folder / "trials.jsonl", "a", encoding="utf-8") as handle:
        handle.write('["not", "a", "trial"]\n{"a": NaN}\n')
    refused(resume(folder), 1, "trials.jsonl:3")


FAULTS = ["hang@²", "hang@" + "9" * 5000, "hang@01", "hang@٣", "hang@３", "hang@0", "hang@1\n"]


@pytest.mark.parametrize("fault", FAULTS, ids=range(len(FAULTS)))
def test_fault_strings_off_the_grammar_are_usage_errors(tmp_path, fault) -> None:
    done = pyapp(
        "sweep", "--model", "fixture", "--out", tmp_path / "s", f"--page-param=fault={fault}"
    )
    refused(done, 2, "--page-param fault")
    assert not (tmp_path / "s").exists()


def test_valid_faults_pass_the_cli(tmp_path) -> None:
    done = pyapp(
        "sweep",
        "--model",
        "fixture",
        "--out",
        tmp_path / "s",
        "--page-param=fault=hang@3, bad_reply@999999",
    )
    reaches_consent(done)


@pytest.mark.parametrize(
    ("entries", "field"),
    [
        ([1, "x"], "entries[0] must be an object"),
        ([{"identity": 1}], "entries[0].identity"),
        (
            [
                {
                    **dict.fromkeys(
                        ("identity", "model_id", "revision", "task_set", "condition"), "x"
                    ),
                    "task_ids": [1],
                    "runs": [],
                }
            ],
            "entries[0].task_ids",
        ),
        ("all", "`entries` must be a list"),
    ],
)
def test_a_bad_ledger_is_refused_before_the_browser(tmp_path, entries, field) -> None:
    ledger = tmp_path / "ledger.json"
    ledger.write_text(json.dumps({"schema_version": "sweep-ledger/1", "entries": entries}), "utf-8")
    # no --consent: the old code read the ledger only after booting the page and loading
    # the model, so it reached the consent check (exit 2) without looking at the ledger
    done = pyapp("sweep", "--model", "fixture", "--out", tmp_path / "s", "--ledger", ledger)
    refused(done, 1, str(ledger), field)


def test_a_ledger_that_is_a_fifo_is_refused(tmp_path) -> None:
    os.mkfifo(tmp_path / "ledger.json")
    done = pyapp("sweep", "--model", "fixture", "--out", tmp_path / "s")
    refused(done, 1, "ledger.json", "FIFO")


def test_a_trial_line_that_is_not_a_trial_record_is_refused_before_the_browser(folder) -> None:
    with open(folder / "trials.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"trial_id": 7}\n')
    refused(resume(folder), 1, "trials.jsonl:3", "not a trial")
