"""run.json: what ran, how, and how it ended (docs/sweep.md).

`RunRecord` is the typed record (frozen dataclasses, a docstring per field); every write goes
through it, so a run.json that does not fit is never written, and `python -m pyapp schema`
generates `exports/sweep-run.schema.json` from it (drift-checked like the trace schema).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pyapp.errors import InputError, RecordError
from pyapp.host import write_atomically
from pyapp.records import (
    JSON,
    check_kind,
    document_text,
    from_json,
    json_schema,
    read_document,
    to_json,
)
from pyapp.sweep.errors import SweepError

RUN_SCHEMA = "sweep-run/1"
MAX_RUN_BYTES = 16 * 1024 * 1024
"""Largest run.json read (one holds a few sessions' command lines and messages)."""
SCHEMA_ID = "https://composition-lab.invalid/schemas/sweep-run.schema.json"


@dataclass(frozen=True)
class RunModel:
    """The model the sweep asked the page to load."""

    key: str
    """Catalogue key, or `other` for a free model id."""
    model_id: str
    """Model id as the hub spells it."""
    revision: str
    """Revision asked for."""
    fixture: bool
    """The bundled test fixture (not model evidence)."""


@dataclass(frozen=True)
class RunVersions:
    """Versions of everything that ran."""

    pyapp: str
    """This checkout's pyapp."""
    python: str
    """The Python running the command."""
    platform: str
    """The machine's platform string."""
    playwright: str | None
    """The Playwright package, when installed."""
    chromium: str | None
    """Chromium's version, once started."""
    page: dict[str, JSON] | None
    """The page's `hello` (its Python, pyapp and generator versions), once booted."""


@dataclass(frozen=True)
class RunSession:
    """One invocation of the command (the first run, then each --resume)."""

    started_at: str
    """UTC start, ISO 8601."""
    ended_at: str | None
    """UTC end; null while running (or when the process was killed)."""
    status: Literal["running", "done", "interrupted", "paused", "failed"]
    """How it ended."""
    resumed: bool
    """Whether it was a --resume."""
    command: tuple[str, ...]
    """Its command line."""
    in_flight_at_start: str | None
    """The trial in flight when the previous session stopped."""
    trials_at_start: int
    """Trials observed before it started."""
    trials_at_end: int | None
    """Trials observed when it ended."""
    message: str | None
    """Why it stopped, when not done."""
    timings_s: dict[str, float]
    """Seconds for boot, model_load and sweep."""
    consent_dialog: str | None = None
    """The consent dialog's text, as shown."""
    model: dict[str, JSON] | None = None
    """What the Models panel said after the load (status, backend, the model's state)."""
    faults: tuple[str, ...] = ()
    """This session's fault-injection hooks (`KIND@N`); empty for a normal run."""


@dataclass(frozen=True)
class RunRecord:
    """run.json: what ran, how, and how it ended."""

    schema_version: Literal["sweep-run/1"]
    """Version of this schema."""
    kind: Literal["composition-lab-sweep-run"]
    """Document kind."""
    status: Literal["running", "done", "interrupted", "paused", "failed"]
    """`running` also when the process was killed outright."""
    evidence: Literal["model", "fixture", "reference-subject"]
    """Whether the sweep is model evidence (`reference-subject`: evidence about the locally
    trained reference subject, never about a pretrained LLM)."""
    evidence_note: str
    """In words."""
    command: tuple[str, ...]
    """The first session's command line."""
    started_at: str
    """UTC start of the first session."""
    ended_at: str | None
    """UTC end, once done or failed."""
    phase: str | None
    """The phase running now (null once done)."""
    in_flight: str | None
    """The trial the page started and has not finished."""
    run_id: str | None
    """The trace's run id, once started."""
    trials: int
    """Trials observed (lines of trials.jsonl)."""
    total: int | None
    """Trials planned, once started."""
    options: dict[str, JSON]
    """Everything needed to resume (pyapp.sweep.options.Options)."""
    model: RunModel
    """The model asked for."""
    versions: RunVersions
    """Versions of everything that ran."""
    sessions: tuple[RunSession, ...]
    """One per invocation."""
    checks: dict[str, JSON] | None
    """The end-of-run checks (schemas, exact re-derivation)."""
    blocked_requests: tuple[str, ...] = ()
    """Requests off 127.0.0.1 the guard refused (first 100)."""
    faults: tuple[str, ...] = ()
    """The first session's fault-injection hooks; empty for a normal run."""
    ledger: str | None = None
    """The ledger file of held-out tasks observed across sweeps."""
    paused: dict[str, JSON] | None = None
    """While paused: the cause (`code`, `message`, `trial_id`, `in_a_row`)."""


def run_schema() -> dict[str, JSON]:
    return json_schema(RunRecord, schema_id=SCHEMA_ID, title="Composition Lab sweep run.json")


def _defaults(record: type) -> dict[str, JSON]:
    return {
        f.name: to_json(f.default)
        for f in dataclasses.fields(record)
        if f.default is not dataclasses.MISSING
    }


def typed(data: dict[str, Any]) -> RunRecord:
    """The record of run.json's data (fields with defaults may be absent)."""
    filled = {**_defaults(RunRecord), **data}
    sessions = data.get("sessions", [])
    if isinstance(sessions, list):  # anything else: from_json names it
        filled["sessions"] = [
            {**_defaults(RunSession), **s} if isinstance(s, dict) else s for s in sessions
        ]
    record: RunRecord = from_json(RunRecord, filled)
    return record


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass
class RunFile:
    """run.json: what ran, how, and how it ended. Rewritten atomically on every change."""

    path: Path
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> RunFile:
        """run.json through the bounded reader, checked against `RunRecord` (bad data: an
        `InputError`, exit 1)."""
        data = read_document(path, MAX_RUN_BYTES)
        check_kind(data, "sweep-run", path)
        if not isinstance(data, dict) or data.get("schema_version") != RUN_SCHEMA:
            raise InputError("bad_run_file", "not a sweep's run.json", path=str(path))
        try:
            record = typed(data)
        except RecordError as error:
            raise InputError("bad_run_file", str(error), path=str(path)) from None
        document = to_json(record)
        assert isinstance(document, dict)
        return cls(path, document)

    def save(self) -> None:
        """Written through the typed record: a run.json that does not fit is never written."""
        try:
            record = typed(self.data)
        except RecordError as error:  # a bug in the sweep: say so, never write it
            raise SweepError(
                "bad_run_record", f"run.json does not fit its record: {error}"
            ) from None
        write_atomically(self.path, document_text(record, "sweep-run"))

    @property
    def session(self) -> dict[str, Any]:
        sessions: list[dict[str, Any]] = self.data["sessions"]
        return sessions[-1]
