"""The sweep's files in ``--out``: trials as they arrive, the trace at checkpoints.

    trials.jsonl   one trial per line, Python's JSON text exactly as the page relayed it,
                   appended and flushed as each trial arrives (a crash loses at most the trial
                   in flight; a torn last line is dropped on reading)
    trace.json     header + every trial, written atomically at checkpoints (start, freeze,
                   end, Ctrl-C / --timeout) from trials.jsonl
    predictions.json  once something is frozen, written at the same checkpoints
    receipt.json   the freeze receipt (pyapp.verify.receipt), written once at the freeze,
                   before the first held-out trial starts

Nothing here grows with the trials already done: appending a trial is one write. Every
read goes through the bounded reader (`pyapp.records.documents`): trials.jsonl is streamed a
line at a time, each line at most `MAX_LINE_BYTES` and a JSON object under the document
limits, at most `MAX_TRIALS` lines; a FIFO, a device or a folder in their place is refused
before it is opened.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

from interpreter import LabError
from pyapp.errors import InputError, RecordError
from pyapp.host import write_atomically
from pyapp.predict import score_trace
from pyapp.records import (
    JSON,
    MAX_TRIALS,
    Trace,
    Trial,
    check_count,
    check_kind,
    document_text,
    from_json,
    is_sealed,
    line_text,
    loads_document,
    read_document,
    read_lines,
    stored_trace,
    to_json,
)
from pyapp.verify import Receipt, read_receipt, receipt_mismatches

TRIALS = "trials.jsonl"
TRACE = "trace.json"
PREDICTIONS = "predictions.json"
RECEIPT = "receipt.json"


class FilesError(LabError):
    """A file in --out cannot be read as a sweep's."""

    def __init__(self, message: str) -> None:
        super().__init__("unreadable_sweep_file", message)


class TrialsFile:
    """trials.jsonl: appended one line per trial, flushed at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.count = sum(1 for _ in self.texts())
        self._handle: IO[str] | None = None

    def texts(self) -> Iterator[tuple[str, str]]:
        """(where, text) of every complete trial line, streamed (a last line torn by a crash
        is left out); the reader's limits hold, the JSON is not decoded yet."""
        if not os.path.lexists(self.path):
            return
        for number, (text, ended) in enumerate(read_lines(self.path), start=1):
            if text is None or not text.strip():
                continue
            if not ended:  # no newline after it: the write may have been cut short
                try:
                    json.loads(text)
                except (ValueError, RecursionError):
                    continue
            yield f"{self.path}:{number}", text

    def lines(self, typed: bool = False) -> list[str]:
        """Every complete trial line, each checked to be one JSON object under the document
        limits and, with `typed`, a `Trial` record (`InputError` naming the file and the
        line)."""
        kept = []
        for where, text in self.texts():
            value = loads_document(text, where)
            if not isinstance(value, dict):
                raise InputError("unreadable_file", "a trial line is not a JSON object", path=where)
            if typed:
                try:
                    from_json(Trial, value)
                except RecordError as error:
                    message = f"not a trial: {error}"
                    raise InputError("unreadable_sweep_file", message, path=where) from None
            kept.append(text)
        return kept

    def append(self, text: str) -> None:
        if "\n" in text:
            raise FilesError("a trial's JSON text must be one line")
        if self._handle is None:
            self._repair()
            self._handle = self.path.open("a", encoding="utf-8")
        self._handle.write(text + "\n")
        self._handle.flush()
        self.count += 1

    def _repair(self) -> None:
        """Before appending after a crash: drop a torn last line, end the file with a newline."""
        if not self.path.exists():
            return
        kept = self.lines()
        size = sum(len(line.encode("utf-8")) + 1 for line in kept)
        if self.path.stat().st_size != size:  # kept lines are a prefix: only a tail differs
            write_atomically(self.path, "".join(line + "\n" for line in kept))

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def header_text(trace: dict[str, JSON]) -> str:
    """A trace document's header (the trace without its trials) as JSON text."""
    header = dict(trace)
    header["trials"] = []
    return line_text(header)


def assemble(header_json: str, lines: list[str], changes: Sequence[str] = ()) -> Trace:
    """The trace from its header text, one JSON text per trial and the header changes the
    page sent since the header (the one assembly: `pyapp.records.stored.stored_trace`)."""
    try:
        return stored_trace(header_json, lines, changes)
    except RecordError as error:
        raise FilesError(f"the sweep's files do not make a trace: {error}") from None


def write_checkpoint(
    out: Path, header_json: str, lines: list[str], changes: Sequence[str] = ()
) -> Trace:
    """trace.json (and predictions.json once something is frozen — for a sealed run, once
    its held-out tasks are drawn: before that there is nothing to predict), atomically."""

    trace = assemble(header_json, lines, changes)
    write_atomically(out / TRACE, document_text(trace, "trace"))
    undrawn = is_sealed(trace.run.terms) and trace.draw is None
    if trace.freezes and not undrawn:
        write_atomically(out / PREDICTIONS, document_text(score_trace(trace), "predictions"))
    return trace


def write_receipt(out: Path, receipt_json: str, trace: Trace) -> Receipt:
    """receipt.json from the page's receipt text, checked here against the checkpoint's
    trace; the receipt."""

    try:
        receipt = read_receipt(json.loads(receipt_json))
    except (ValueError, RecordError) as error:
        raise FilesError(f"the page's receipt is not a receipt: {error}") from None
    problems = receipt_mismatches(trace, receipt)
    if problems:
        raise FilesError(f"the page's receipt does not fit the trace: {problems[0]}")
    write_atomically(out / RECEIPT, receipt_json)
    return receipt


def stored_texts(out: Path) -> dict[str, JSON] | None:
    """What the page's `resumeFrom` takes: {header_json, trials_json}, from trace.json's
    header and trials.jsonl (or, for a folder written before trials.jsonl, trace.json's
    trials). None when there is no trace.json."""
    path = out / TRACE
    if not os.path.lexists(path):
        return None
    trace = read_document(path)
    try:
        check_kind(trace, "trace", path)
    except InputError as error:
        raise FilesError(str(error)) from None
    assert isinstance(trace, dict)
    check_count(trace.get("trials"), "trials", MAX_TRIALS, str(path))
    if not isinstance(trace.get("trials", []), list):
        raise FilesError(f"{path}: `trials` is not a list")
    if os.path.lexists(out / TRIALS):
        lines: list[str] = TrialsFile(out / TRIALS).lines(typed=True)
    else:
        lines = [line_text(t) for t in trace.get("trials", [])]
    return {"header_json": header_text(trace), "trials_json": list(lines)}


def read_sweep(out: Path) -> dict[str, JSON] | None:
    """The trace of a sweep folder as it stands (trace.json's header, trials.jsonl's trials),
    as a JSON document; None when nothing was written yet."""
    texts = stored_texts(out)
    if texts is None:
        return None
    header_json, lines = texts["header_json"], texts["trials_json"]
    assert isinstance(header_json, str) and isinstance(lines, list)
    document = to_json(assemble(header_json, [str(line) for line in lines]))
    assert isinstance(document, dict)
    return document
