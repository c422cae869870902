"""A finished run's folder, read and re-derived.

A run folder holds `trace.json` (required), and may hold `predictions.json` (the page's or
the sweep's predictions document) and `run.json` (the sweep's record). Reading it checks the
trace against its record types; `verify` re-derives the folder through the one
re-derivation every reader uses (`pyapp.audit.verdict.audit`: the trace from its seed and raw
trials, the predictions from the trace as re-derived, a supplied predictions document compared
with them number for number, completeness, a synthetic trace re-executed). A report shows the
derived numbers, never the supplied ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from interpreter import LabError
from pyapp.audit import audit, verdict_lines
from pyapp.errors import InputError, RecordError
from pyapp.predict import PredictionsDocument
from pyapp.records import (
    CHAINED_VERSIONS,
    JSON,
    MAX_TRIALS,
    RunInfo,
    TaskRecord,
    Trace,
    Trial,
    check_count,
    from_json,
    read_kind,
    stream_object,
    upgrade,
    version_problem,
)
from pyapp.records import trace as records
from pyapp.tasks import GENERATOR_VERSION
from pyapp.verify import Correction, regenerated_records

_TRIAL_PATH = re.compile(r"^\$\.trials\[(?P<index>\d+)\](?P<rest>.*)$", re.S)


class RunInputError(LabError, ValueError):
    """A run folder, a file in it or a document cannot be read as a run (a one-line message;
    code `bad_run_folder`)."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_run_folder", message)


@dataclass(frozen=True)
class RunFolder:
    """What a run folder holds."""

    path: Path
    """The folder."""
    trace: Trace
    """The trace, checked against its record types."""
    trace_json: Any
    """The trace as read, without its trials and tasks (the records in `trace` hold them):
    `reproduce` reads its version from it, and a large trace is not held twice."""
    predictions_json: Any | None
    """predictions.json as read; null when the folder has none."""
    sweep_record: dict[str, Any] | None
    """run.json as read; null when the folder has none."""


@dataclass(frozen=True)
class Verification:
    """What re-deriving the folder found."""

    trace_mismatches: tuple[str, ...]
    """Everything in the trace that does not re-derive from its seed and raw trials."""
    predictions_mismatches: tuple[str, ...] | None
    """predictions.json against the numbers derived from the trace; null without the file."""
    derived: PredictionsDocument | None
    """Profiles, predictions and scores derived from the trace; null without a frozen profile
    or when they cannot be derived."""
    derive_error: str | None
    """Why the predictions could not be derived, when a frozen profile exists."""
    corrections: tuple[Correction, ...] = ()
    """Each recorded trial field that re-derivation contradicts (the derived numbers use
    the re-derived value)."""
    rederived_json: Any = None
    """The trace with every derivable trial field as re-derived (what is drawn)."""
    incomplete: tuple[str, ...] = ()
    """How the run is not complete (`pyapp.verify.completeness`); empty when it is."""
    verdict: tuple[str, ...] = ()
    """The verdict in lines, as `reproduce` prints it (`pyapp.audit.verdict.verdict_lines`)."""
    predictions_other_run: str | None = None
    """One line when predictions.json is of another run than the trace."""
    rerun: str | None = None
    """What re-executing the trace found (a synthetic trace, from its specification), or why
    it could not; null when nothing was re-executed."""

    @property
    def ok(self) -> bool:
        """Everything re-derives (whether the run is complete is `complete`)."""
        return not (self.trace_mismatches or self.predictions_mismatches or self.derive_error)

    @property
    def complete(self) -> bool:
        """Every held-out task of the run has its trial (`incomplete` is empty)."""
        return not self.incomplete


def _read_json(path: Path, kind: str) -> Any:
    """A file's JSON through the one bounded reader of `pyapp.records.documents` (a FIFO,
    a device, a huge file, bad UTF-8, deep nesting, NaN, huge numbers, repeated keys, lone
    surrogates are refused in one line, never a traceback or a hang), refused unless it is
    a document of `kind` (`pyapp.records.kinds`)."""
    try:
        document = read_kind(path, kind)
        if isinstance(document, dict):
            check_count(document.get("trials"), "trials", MAX_TRIALS, str(path))
        return document
    except InputError as error:
        raise RunInputError(f"cannot read {path}: {error.message}") from None


def read_run_folder(path: Path) -> RunFolder:
    """The folder's files; `RunInputError` when the folder or a file is unreadable.

    trace.json is streamed (`stream_trace`): its trials and tasks become records one at a
    time, so neither its text nor its JSON tree is ever held whole."""
    if not path.is_dir():
        raise RunInputError(f"{path} is not a folder (expected a run folder with trace.json)")
    trace_path = path / "trace.json"
    if not (trace_path.exists() or trace_path.is_symlink()):
        raise RunInputError(f"{path} has no trace.json")
    try:
        streamed = stream_trace(trace_path)
    except InputError as error:
        raise RunInputError(f"cannot read {trace_path}: {error.message}") from None
    if streamed is not None:
        trace, trace_json = streamed
    else:  # an older version, or something in it is refused: read whole, as ever
        trace_json = _read_json(trace_path, "trace")
        trace = read_trace(trace_json, str(trace_path))
        trace_json = {key: value for key, value in trace_json.items() if key != "trials"}
    predictions_path, run_path = path / "predictions.json", path / "run.json"
    predictions_json = (
        _read_json(predictions_path, "predictions") if predictions_path.exists() else None
    )
    sweep_record = _read_json(run_path, "sweep-run") if run_path.exists() else None
    if sweep_record is not None and not isinstance(sweep_record, dict):
        raise RunInputError(f"{run_path} is not a JSON object")
    return RunFolder(path, trace, trace_json, predictions_json, sweep_record)


def _trial(value: JSON, where: str, before: dict[str, Any]) -> Trial:
    trial: Trial = from_json(Trial, value, where)
    return trial


class _Tasks:
    """Reads a trace's tasks, holding each that equals its regenerated one (the seed's task
    at the same place, which `reproduce` checks it against) as that one: a 100,000-task
    set is held once, not twice."""

    def __init__(self) -> None:
        self.regenerated: tuple[TaskRecord, ...] | None = None

    def __call__(self, value: JSON, where: str, before: dict[str, Any]) -> TaskRecord:
        task: TaskRecord = from_json(TaskRecord, value, where)
        if self.regenerated is None:
            self.regenerated = _regenerated(before.get("run"))
        index = int(where[where.rindex("[") + 1 : -1])
        if index < len(self.regenerated) and self.regenerated[index] == task:
            return self.regenerated[index]
        return task


def _regenerated(run: JSON) -> tuple[TaskRecord, ...]:
    """The task records the run's seed and parameters give; none when the run record read
    so far does not name a generator this code has."""
    try:
        info: RunInfo = from_json(RunInfo, run)
    except RecordError:
        return ()
    if info.generator_version != GENERATOR_VERSION:
        return ()
    return regenerated_records(info.task_params)


def stream_trace(path: Path) -> tuple[Trace, dict[str, JSON]] | None:
    """A trace/3 or trace/4 document read an item at a time
    (`pyapp.records.documents.stream_object`): each trial and each task becomes its record
    as it is decoded, and the document's JSON is kept without them. None when it must be
    read whole instead — an older version (upgraded as JSON first), or anything in it
    refused or not fitting the records (the whole read names it, exactly as it always has).
    `InputError` when the file itself is refused (not a regular file, too large)."""
    try:
        streamed = stream_object(path, {"trials": _trial, "tasks": _Tasks()})
    except RecordError:
        return None
    if streamed is None:
        return None
    document = streamed[0]
    trials, tasks = document.get("trials"), document.get("tasks")
    if (
        document.get("schema_version") not in CHAINED_VERSIONS
        or not isinstance(trials, list)
        or not isinstance(tasks, list)
        or len(trials) > MAX_TRIALS
    ):
        return None
    header = {**document, "trials": [], "tasks": []}
    if version_problem(header) is not None:
        return None
    try:  # a trace/3 header as trace/4 (its run's terms null)
        trace: Trace = from_json(Trace, upgrade(header))
    except RecordError:
        return None
    trace_json = {key: value for key, value in document.items() if key not in ("trials", "tasks")}
    return replace(trace, trials=tuple(trials), tasks=tuple(tasks)), trace_json


def read_trace(trace_json: Any, where: str = "the trace") -> Trace:
    """The trace's records (a trace/1 document upgraded first, as `reproduce` and `score`
    read it); `RunInputError` when it does not fit them."""
    try:
        trace = records.read_trace(trace_json)
    except RecordError as error:
        raise RunInputError(f"{where} is not a trace: {error}") from None
    return trace


def named(mismatch: str, trace: Trace) -> str:
    """A mismatch as a person looks for it: `$.trials[726].correct: …` becomes
    `model-only/recurrence-1 · correct: …` (the trial and the field, not the array index)."""
    found = _TRIAL_PATH.match(mismatch)
    if found is None or int(found["index"]) >= len(trace.trials):
        return mismatch
    trial = trace.trials[int(found["index"])]
    rest = found["rest"].lstrip(".")
    field = rest.split(":", 1)
    if rest.startswith(":") or not rest:
        return f"{trial.trial_id}{rest}"
    return f"{trial.trial_id} · {field[0]}:{field[1]}" if len(field) == 2 else mismatch


def verify_documents(trace: Trace, trace_json: Any, predictions_json: Any | None) -> Verification:
    """Re-derive a trace and its predictions; compare a predictions document with them: the
    one re-derivation (`pyapp.audit.verdict.audit`), its mismatches named as a person looks
    for them (`named`). The predictions are derived from the trace *as re-derived*: a
    recorded verdict that re-derivation contradicts never enters a score."""
    result = audit(trace_json, read=trace, predictions_json=predictions_json)
    rerun = result.rerun.mismatches if result.rerun is not None else ()
    predictions_mismatches = (
        (result.predictions_other_run,)
        if result.predictions_other_run is not None
        else None
        if result.predictions_mismatches is None
        else tuple(str(m) for m in result.predictions_mismatches)
    )
    return Verification(
        trace_mismatches=tuple(named(str(m), trace) for m in result.trace_mismatches + rerun),
        predictions_mismatches=predictions_mismatches,
        derived=result.derived,
        derive_error=result.derive_error,
        corrections=result.corrections,
        rederived_json=result.rederived_json,
        incomplete=result.incomplete,
        verdict=tuple(verdict_lines(result, trace)),
        predictions_other_run=result.predictions_other_run,
        rerun=result.rerun.line() if result.rerun is not None else result.rerun_note,
    )


def verify(folder: RunFolder) -> Verification:
    """Re-derive the folder's trace and predictions; compare predictions.json with them."""
    return verify_documents(folder.trace, folder.trace_json, folder.predictions_json)
