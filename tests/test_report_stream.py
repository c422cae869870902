"""A report reads trace.json an item at a time (issue 24: a 100,000-trial run in under
1 GiB): each trial and each task becomes its record as it is decoded, the text held is a
window of a few chunks, and the report is the one the whole-document read gives. Nothing
here is timed; `bench/report_scale.py` measures the 100,000-trial run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_predict import known_model
from test_report import sweep_folder
from test_session import Page

from pyapp.browser import Session, bridge
from pyapp.conditions import run_supplied
from pyapp.records import ScriptedAdapter, document_text, documents, to_json
from pyapp.report import RunInputError, build_report, run_folder
from pyapp.tasks import TaskParams

CHUNK = 2048


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fixture run of every condition (freezes, predictions, a journal), as the sweep
    writes it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bridge, "SESSION", Session())
        page = Page(ScriptedAdapter(known_model))
        folder = tmp_path_factory.mktemp("runs") / "run"
        return sweep_folder(folder, page, "What is 2 + 2?", {"model": "fixture"})


def whole(folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any]:
    """The report as the whole-document read gives it."""
    with monkeypatch.context() as patch:
        patch.setattr(run_folder, "stream_trace", lambda path: None)
        return build_report(folder)


class Counting:
    """A file handle that counts the bytes read through it."""

    def __init__(self, handle: Any) -> None:
        self.handle, self.read_bytes = handle, 0

    def read(self, size: int = -1) -> bytes:
        data: bytes = self.handle.read(size)
        self.read_bytes += len(data)
        return data

    def __enter__(self) -> Counting:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()


@pytest.mark.parametrize("indent", [None, 2])
def test_the_report_reads_a_trial_at_a_time_and_is_the_whole_reads(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, indent: int | None
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    for name in ("predictions.json", "run.json"):
        (folder / name).write_bytes((run / name).read_bytes())
    document = json.loads((run / "trace.json").read_text("utf-8"))
    text = json.dumps(document, indent=indent)
    (folder / "trace.json").write_text(text, "utf-8")
    trials = document["trials"]
    longest = max(len(json.dumps(t, indent=indent)) + 64 * (indent or 0) for t in trials)

    opened: list[Counting] = []
    real_open = documents.open_regular

    def counting_open(path: Any, max_bytes: int = documents.MAX_DOCUMENT_BYTES) -> Any:
        opened.append(Counting(real_open(path, max_bytes)))
        return opened[-1]

    read_before: list[int] = []  # bytes read when each trial became its record
    real_trial = run_folder._trial

    def counted_trial(value: Any, where: str, before: Any) -> Any:
        read_before.append(opened[0].read_bytes)
        return real_trial(value, where, before)

    windows: list[int] = []
    real_stream = run_folder.stream_object

    def stream(path: Any, items: Any) -> Any:
        streamed = real_stream(path, {**items, "trials": counted_trial})
        windows.append(streamed[1])
        return streamed

    monkeypatch.setattr(documents, "STREAM_CHUNK_BYTES", CHUNK)
    monkeypatch.setattr(documents, "open_regular", counting_open)
    monkeypatch.setattr(run_folder, "stream_object", stream)
    streamed, verification = build_report(folder)
    monkeypatch.undo()

    assert verification.ok
    assert len(read_before) == len(trials) > 50
    # every trial became a record before the text after it was read: the file is read a
    # chunk or two ahead of the trial being decoded, never whole
    offsets = [text.index(json.dumps(t["trial_id"])) for t in trials]
    assert all(
        read <= offset + longest + 2 * CHUNK
        for read, offset in zip(read_before, offsets, strict=True)
    )
    assert read_before[0] < len(text) / 10
    assert windows and windows[0] <= longest + 2 * CHUNK < len(text) / 10
    assert streamed == whole(folder, monkeypatch)[0]


def test_a_control_run_streamed_and_whole_give_the_same_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    trace = run_supplied(TaskParams(primitives_per_op=8))
    (folder / "trace.json").write_text(document_text(trace, "trace"), "utf-8")
    assert run_folder.stream_trace(folder / "trace.json") is not None
    streamed, verification = build_report(folder)
    assert verification.ok and streamed == whole(folder, monkeypatch)[0]
    assert to_json(run_folder.read_run_folder(folder).trace) == to_json(trace)


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text.replace('"correct": true', '"correct": NaN', 1),
        lambda text: text.replace('"trial_id":', '"trial_id": "x", "trial_id":', 1),
        lambda text: text.replace('"outcome":', '"outcome_": "x", "outcome":', 1),
        lambda text: text[: len(text) // 2],
        lambda text: text + "\n{}",
        lambda text: text.replace('"schema_version": "trace/4"', '"schema_version": "trace/9"'),
    ],
    ids=["nan", "repeated-key", "extra-key", "cut", "trailing", "version"],
)
def test_a_refused_trace_is_named_as_the_whole_read_names_it(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: Any
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    text = json.dumps(json.loads((run / "trace.json").read_text("utf-8")), indent=1)
    (folder / "trace.json").write_text(edit(text), "utf-8")
    assert run_folder.stream_trace(folder / "trace.json") is None
    with pytest.raises(RunInputError) as streamed:
        build_report(folder)
    with pytest.raises(RunInputError) as read_whole:
        whole(folder, monkeypatch)
    assert str(streamed.value) == str(read_whole.value)
