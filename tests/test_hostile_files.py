"""Issue 24's reproducers: every file the tools read goes through one bounded reader.

Each case runs the real command in a subprocess with a deadline (a FIFO that hangs the old
code fails the test by its timeout, never by waiting on the wall clock for a result) and
checks: the exit status (1 bad data, 2 bad usage), one line on stderr naming the file, no
traceback. Nothing here writes to a device: a device is only ever read, or linked to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pyapp.errors import InputError
from pyapp.records import documents, read_document, read_lines, read_text

ROOT = Path(__file__).resolve().parents[1]
DEADLINE_S = 60


def pyapp(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyapp", *map(str, argv)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=DEADLINE_S,
        stdin=subprocess.DEVNULL,
    )


def refused(done: subprocess.CompletedProcess[str], status: int, *needles: str) -> str:
    """The one error line of a refused command (exit `status`), holding every needle."""
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == status, (done.returncode, done.stdout, done.stderr)
    assert len(lines) == 1 and lines[0].startswith("error"), done.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def control(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A valid supplied-program trace."""
    path = tmp_path_factory.mktemp("control") / "trace.json"
    assert pyapp("run", "--condition", "supplied-program", "--out", path).returncode == 0
    return path


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic model run folder (trace.json with a model, predictions.json)."""
    out = tmp_path_factory.mktemp("sim")
    assert (
        pyapp("simulate", "--model", "independent", "--seeds", "1..1", "--out", out).returncode == 0
    )
    return out / "seed-1"


# ---- the reader itself ------------------------------------------------------------------


def test_a_fifo_a_device_and_a_folder_are_refused_before_a_byte_is_read(tmp_path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "FIFO"), ("/dev/zero", "character device"), (tmp_path, "folder")):
        with pytest.raises(InputError, match=kind) as caught:
            read_text(path)
        assert caught.value.code == "unreadable_file"


def test_size_utf8_and_line_limits(tmp_path) -> None:
    sparse = tmp_path / "huge.json"
    with open(sparse, "wb") as handle:
        handle.truncate(documents.MAX_DOCUMENT_BYTES + 1)  # no disk used, never read
    with pytest.raises(InputError) as caught:
        read_document(sparse)
    assert caught.value.code == "input_too_large"
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"a": "caf\xe9"}')
    with pytest.raises(InputError, match="not UTF-8"):
        read_document(latin)
    lines = tmp_path / "t.jsonl"
    lines.write_bytes(b"{}\n" * 5 + b'{"torn": ')
    assert [ended for _, ended in read_lines(lines)] == [True] * 5 + [False]
    with pytest.raises(InputError, match="lines"):
        list(read_lines(lines, max_lines=4))
    lines.write_bytes(b"{}\n" + b"x" * 100 + b"\n")
    with pytest.raises(InputError, match="line_bytes"):
        list(read_lines(lines, max_line_bytes=50))


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"a": "\\ud800"}', "$.a"),
        ('{"a": ["ok", "x\\uDFFF"]}', "$.a[1]"),
        ('{"\\udc00": 1}', "(a key)"),
    ],
)
def test_a_lone_surrogate_is_refused_naming_the_field(text, field) -> None:
    with pytest.raises(InputError) as caught:
        documents.loads_document(text, "doc.json")
    assert caught.value.code == "lone_surrogate" and field in caught.value.message


def test_a_surrogate_pair_and_an_escaped_backslash_are_text() -> None:
    assert documents.loads_document('{"a": "\\ud83d\\ude00"}', "d") == {"a": "\U0001f600"}
    assert documents.loads_document('{"a": "\\\\ud800"}', "d") == {"a": "\\ud800"}


# ---- report --------------------------------------------------------------------------------


def _with(folder: Path, source: Path, name: str, change: Any) -> Path:
    folder.mkdir()
    for sibling in ("trace.json", "predictions.json"):
        if (source / sibling).exists():
            (folder / sibling).write_bytes((source / sibling).read_bytes())
    document = json.loads((folder / name).read_text("utf-8")) if (folder / name).exists() else {}
    change(document)
    # ensure_ascii: the lone surrogate is written as the JSON escape "\ud800" (valid UTF-8)
    (folder / name).write_text(json.dumps(document), encoding="utf-8")
    return folder


def _journal(trace: dict[str, Any]) -> None:
    trial = next(t for t in trace["trials"] if t["completion"] is not None)
    entry = {"at": "2026-01-01T00:00:00Z", "prompt": "hi \ud800", "caps": trial["caps"]}
    trace["journal"].append({**entry, "completion": trial["completion"]})


SURROGATES = {
    "journal": ("trace.json", _journal, "$.journal[0].prompt"),
    "model_id": ("trace.json", lambda t: t["model"].update(model_id="m\ud800"), "model_id"),
    "run.json": ("run.json", lambda r: r.update(note="\udfff"), "$.note"),
}


@pytest.mark.parametrize("case", sorted(SURROGATES))
def test_report_refuses_a_lone_surrogate_in_one_line(simulated, tmp_path, case) -> None:
    name, change, field = SURROGATES[case]
    folder = _with(tmp_path / "run", simulated, name, change)
    refused(pyapp("report", folder, "--out", tmp_path / "r.html"), 1, name, field)
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("name", ["predictions.json", "run.json", "trace.json"])
@pytest.mark.parametrize("hostile", ["fifo", "dev-zero", "folder", "latin-1"])
def test_report_refuses_a_file_that_is_not_a_document(simulated, tmp_path, name, hostile) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    for sibling in ("trace.json", "predictions.json"):
        (folder / sibling).write_bytes((simulated / sibling).read_bytes())
    target = folder / name
    target.unlink(missing_ok=True)
    if hostile == "fifo":
        os.mkfifo(target)  # the old reader blocked in open() forever: the deadline fails it
    elif hostile == "dev-zero":
        target.symlink_to("/dev/zero")  # the old reader read a gigabyte a second
    elif hostile == "folder":
        target.mkdir()
    else:
        target.write_bytes(b'{"x": "\xe9"}')
    refused(pyapp("report", folder, "--out", tmp_path / "r.html"), 1, name)


def test_report_of_an_invalid_trace_exits_1_like_reproduce_and_score(tmp_path, control) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    trace = json.loads(control.read_text("utf-8"))
    trace["trials"][0]["sequence"] = "first"
    (folder / "trace.json").write_text(json.dumps(trace), encoding="utf-8")
    for command in (["reproduce", folder / "trace.json"], ["score", folder / "trace.json"]):
        refused(pyapp(*command), 1, "trace.json")
    refused(pyapp("report", folder, "--out", tmp_path / "r.html"), 1, "trace.json")


def test_report_refuses_an_output_that_is_not_a_regular_file(simulated, tmp_path) -> None:
    fifo = tmp_path / "out.html"
    os.mkfifo(fifo)
    refused(pyapp("report", simulated, "--out", fifo), 2, "--out")
    link = tmp_path / "zero.html"
    link.symlink_to("/dev/zero")  # never written through: refused before any work
    refused(pyapp("report", simulated, "--out", link), 2, "--out")
    assert link.is_symlink()


# ---- simulate --out ------------------------------------------------------------------------


def test_simulate_checks_its_output_folder_first(tmp_path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x", encoding="utf-8")
    base = ("simulate", "--model", "independent", "--seeds", "1..2", "--out")
    refused(pyapp(*base, a_file), 2, str(a_file), "not a folder")
    refused(pyapp(*base, a_file / "under"), 2, "is a file, not a folder")
    unwritable = Path("/proc/self/no-such-folder")  # no one, not even root, creates it
    done = pyapp(*base, unwritable)
    assert done.returncode in (1, 2)
    refused(done, done.returncode, "no-such-folder")


# ---- report of a large run: summaries and a sample past a stated number ---------------------


def test_past_the_stated_number_a_report_shows_counts_and_a_sample(tmp_path, monkeypatch) -> None:
    """The thresholds are injected small (the bench measures a 100,000-trial run): 66
    trials are over 20, so the report lists a sample, says so, and counts every group."""
    from pyapp.report import build_report, sample

    folder = tmp_path / "run"
    trace = folder / "trace.json"
    argv = ("run", "--condition", "supplied-program", "--param", "primitives_per_op=16")
    assert pyapp(*argv, "--out", trace).returncode == 0
    full, _ = build_report(folder)
    monkeypatch.setattr(sample, "MAX_LISTED_ROWS", 20)
    monkeypatch.setattr(sample, "SAMPLE_ROWS", 6)
    small, verification = build_report(folder)
    assert verification.ok
    trials = len(json.loads(trace.read_text("utf-8"))["trials"])
    assert trials == 66
    listed_rows = small.count("data-trial-id=")
    assert 6 <= listed_rows < 20 and full.count("data-trial-id=") == trials
    assert f"{trials:,} trials are more than this report lists (20)" in small
    assert "every 11th and the first of each group" in small
    assert "Trials per group" in small and "Tasks per group" in small
    assert len(small) < len(full) / 2
