"""The sweep's files without a browser: trials.jsonl as trials arrive, trace.json from it at
checkpoints, what --resume hands the page, and run.json through its typed record."""

import json

import pytest
from asyncrun import run
from test_predict import known_model

from pyapp.browser import Context, Session, bridge
from pyapp.records import ScriptedAdapter
from pyapp.sweep import (
    TRACE,
    TRIALS,
    RunFile,
    RunRecord,
    SweepError,
    TrialsFile,
    read_sweep,
    stored_texts,
    typed,
    write_checkpoint,
)
from pyapp.verify.reproduce import reproduce


@pytest.fixture
def sweep_texts(monkeypatch):
    """A small scripted sweep's header text and trial texts, as the page relays them."""
    monkeypatch.setattr(bridge, "SESSION", Session())
    events = []
    context = Context(
        adapter=lambda: ScriptedAdapter(known_model),
        notify=lambda event, texts: events.append((event, texts)),
        cancel_requested=lambda: False,
    )

    def call(kind, **fields):
        reply = run(bridge.handle_async(json.dumps({"type": kind, "id": 1, **fields}), context))
        return json.loads(reply)["result"]

    call("sweep_start", seed=1729, conditions=["model-only"])
    call("sweep_run", phase="all")
    header = call("sweep_header")["header_json"]
    trials = [texts["trial"] for e, texts in events if e["type"] == "trial_done"]
    return header, trials


def test_trials_append_one_line_each_and_a_torn_line_is_dropped(tmp_path, sweep_texts):
    _, trials = sweep_texts
    path = tmp_path / TRIALS
    file = TrialsFile(path)
    for text in trials[:3]:
        file.append(text)
    file.close()
    assert path.read_text(encoding="utf-8").splitlines() == trials[:3]
    with path.open("a", encoding="utf-8") as handle:  # a crash mid-write
        handle.write(trials[3][: len(trials[3]) // 2])
    again = TrialsFile(path)
    assert again.count == 3 and again.lines() == trials[:3]
    again.append(trials[3])  # appending after the crash repairs the file first
    again.close()
    assert path.read_text(encoding="utf-8").splitlines() == trials[:4]


def test_a_checkpoint_assembles_the_trace_and_resume_hands_back_the_texts(tmp_path, sweep_texts):
    header, trials = sweep_texts
    file = TrialsFile(tmp_path / TRIALS)
    for text in trials:
        file.append(text)
    file.close()
    trace = write_checkpoint(tmp_path, header, file.lines())
    assert len(trace.trials) == len(trials) and trace.freezes
    written = json.loads((tmp_path / TRACE).read_text(encoding="utf-8"))
    assert reproduce(written) == []
    assert (tmp_path / "predictions.json").exists()  # frozen: predictions at the checkpoint
    texts = stored_texts(tmp_path)
    assert texts["trials_json"] == trials
    assert json.loads(texts["header_json"])["trials"] == []
    assert read_sweep(tmp_path) == written


def test_run_json_is_written_through_its_typed_record(tmp_path):
    path = tmp_path / "run.json"
    versions = {"pyapp": "0", "python": "3", "platform": "x", "playwright": None}
    data = {
        "schema_version": "sweep-run/1",
        "kind": "composition-lab-sweep-run",
        "status": "running",
        "evidence": "fixture",
        "evidence_note": "test fixture",
        "command": ["python -m pyapp", "sweep"],
        "started_at": "2026-01-01T00:00:00.000+00:00",
        "ended_at": None,
        "phase": None,
        "in_flight": None,
        "run_id": None,
        "trials": 0,
        "total": None,
        "options": {"model": "fixture"},
        "model": {
            "key": "fixture",
            "model_id": "fixture/tiny-chat",
            "revision": "b",
            "fixture": True,
        },
        "versions": {**versions, "chromium": None, "page": None},
        "sessions": [],
        "checks": None,
    }
    RunFile(path, data).save()
    loaded = RunFile.load(path)
    assert isinstance(typed(loaded.data), RunRecord) and loaded.data["blocked_requests"] == []
    with pytest.raises(SweepError, match="does not fit its record"):
        RunFile(path, {**data, "trials": "many"}).save()
    assert json.loads(path.read_text(encoding="utf-8"))["trials"] == 0  # never written
