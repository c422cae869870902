"""`DIR/matrix.json`: where a matrix stands — every cell's state, attempts, timings, errors.

The matrix command is its only writer (the engines hand each finished attempt back to it),
and it holds the folder's lock while it writes (`pyapp.matrix.folder`); every change goes
through the `MatrixRecord` below and is written atomically (a temporary file and a rename),
so a crash or a Ctrl-C never leaves a torn file, and a file changed by anything else since
the command read it is never overwritten. A `matrix.json` of another kind, or one that is a
symlink, is refused in one line. `python -m pyapp schema` generates
`exports/matrix-state.schema.json` from these records.

What a cell's status says is decided from the cell's own files (`pyapp.matrix.cellfiles`),
not from this file: a cell recorded `done` whose files are missing is pending again (its
`error` says why), one whose files do not re-derive is `failed` ("does not re-derive"). What
the files said is kept per cell (`checked`), keyed by the SHA-256 of the files, so a cell
is re-derived once.

A cell moves `pending` → `running` → `done`, or to `interrupted` / `paused` / `failed`,
which the next invocation resumes. A cell left `running` by a matrix command that was
killed outright is treated as interrupted.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pyapp.errors import InputError, RecordError
from pyapp.matrix.cells import Cell
from pyapp.matrix.folder import StateFile, check_entry
from pyapp.records import JSON, document_text, from_json, json_schema, read_kind

STATE_SCHEMA: Literal["matrix/1"] = "matrix/1"
SCHEMA_ID = "https://composition-lab.invalid/schemas/matrix-state.schema.json"
CellStatus = Literal["pending", "running", "done", "interrupted", "paused", "failed"]
UNFINISHED: tuple[CellStatus, ...] = ("pending", "running", "interrupted", "paused", "failed")
OPTIONAL = {"optional_on_read": True}
DOES_NOT_REDERIVE = "does not re-derive"
"""The start of the `error` of a cell whose files do not re-derive (it is never run over)."""


@dataclass(frozen=True)
class Identity:
    """What a cell's trace says the cell is (what matches a plan's cell to its files)."""

    seed: int
    """The task seed."""
    task_params: dict[str, JSON]
    """Every task parameter (the task set, whatever the preset was called)."""
    model: str
    """A synthetic model's specification as `simulate` names it, else the model id."""
    revision: str | None
    """The revision asked for (browser models)."""
    backend: str | None
    """The backend asked for."""
    conditions: tuple[str, ...]
    """The conditions run."""


@dataclass(frozen=True)
class FilesCheck:
    """What a cell's files said when they were last read and re-derived."""

    sha256: str
    """SHA-256 over the cell's result files (their names and bytes): the key of this check."""
    rederives: bool
    """Its trace and predictions re-derive exactly (`reproduce`, with `--predictions`)."""
    detail: str | None
    """Why not: the first mismatch, or why a file could not be read."""
    identity: Identity | None
    """What its trace says the cell is (null when the trace cannot be read)."""


@dataclass(frozen=True)
class CellState:
    """One cell: what it is, where it stands, how its attempts went."""

    cell: Cell
    """The cell as the plan made it."""
    status: CellStatus
    """Where it stands."""
    in_plan: bool
    """False when a later plan no longer makes this cell (its files are kept)."""
    attempts: int
    """Attempts started, over every invocation (a resume is an attempt)."""
    started_at: str | None
    """UTC start of the last attempt."""
    ended_at: str | None
    """UTC end of the last attempt."""
    seconds: float
    """Wall seconds over every attempt."""
    exit_code: int | None
    """The command's exit status in the last attempt (null: none ended yet)."""
    error: str | None
    """Why the last attempt did not finish (the command's last line on stderr)."""
    command: tuple[str, ...]
    """The last attempt's command line (`python -m pyapp ...`)."""
    worker: str | None
    """Where the last attempt ran (host name and process id)."""
    checked: FilesCheck | None = field(default=None, metadata=OPTIONAL)
    """What the cell's files said when last read (null: not read yet)."""
    reset: str | None = field(default=None, metadata=OPTIONAL)
    """Why the cell last went back to pending although recorded done or checked (its files
    missing or unfinished), and when; kept after it runs again."""
    options: dict[str, JSON] | None = field(default=None, metadata=OPTIONAL)
    """The plan's options that shape this cell's result, as it was first run under them
    (null: recorded before they were kept)."""


@dataclass(frozen=True)
class Session:
    """One invocation of `python -m pyapp matrix`."""

    started_at: str
    """UTC start."""
    ended_at: str | None
    """UTC end; null while running (or when the process was killed)."""
    engine: Literal["local", "ray"]
    """The engine."""
    jobs: int | None
    """Local engine: cells at once."""
    address: str | None
    """Ray engine: the cluster's address (null: a local instance)."""
    plan_sha256: str
    """SHA-256 of the parsed plan (its canonical JSON, `pyapp.matrix.check.plan_sha256`):
    the same plan however it is written."""
    status: Literal["running", "done", "interrupted", "failed"]
    """How it ended: `done` when every cell of the plan is done."""
    cells_run: int
    """Attempts this invocation started."""


@dataclass(frozen=True)
class MatrixRecord:
    """matrix.json: every cell's state and every invocation."""

    schema_version: Literal["matrix/1"]
    """Version of this schema."""
    kind: Literal["composition-lab-matrix"]
    """Document kind."""
    plan: str
    """The plan file of the last invocation."""
    name: str | None
    """The plan's name."""
    updated_at: str
    """UTC time of this write."""
    cells: tuple[CellState, ...]
    """Every cell any plan of this folder made, in plan order."""
    sessions: tuple[Session, ...] = field(default=(), metadata={"optional_on_read": True})
    """One per invocation."""


def state_schema() -> dict[str, JSON]:
    return json_schema(MatrixRecord, schema_id=SCHEMA_ID, title="Composition Lab matrix.json")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class MatrixFile:
    """matrix.json in memory; `save()` writes it atomically."""

    def __init__(self, path: Path, record: MatrixRecord) -> None:
        self.path = path
        self.record = record
        self.file = StateFile(path)

    @classmethod
    def open(cls, out: Path, plan_path: Path, name: str | None, cells: list[Cell]) -> MatrixFile:
        """The folder's matrix.json brought up to the plan: new cells pending, a cell left
        `running` by a killed command interrupted, cells the plan no longer makes kept."""
        path = out / "matrix.json"
        old: dict[str, CellState] = {}
        check_entry(path, "file")
        written = StateFile(path)  # as read here: a later write refuses a changed file
        if path.exists():
            try:
                loaded: MatrixRecord = from_json(MatrixRecord, read_kind(path, "matrix"))
            except RecordError as error:
                raise InputError(
                    "bad_matrix", f"not a matrix.json: {error}", path=str(path)
                ) from None
            old = {c.cell.name: c for c in loaded.cells}
            sessions = loaded.sessions
        else:
            sessions = ()
        states: list[CellState] = []
        for cell in cells:
            state = old.pop(cell.name, None)
            if state is None:
                state = CellState(cell, "pending", True, 0, None, None, 0.0, None, None, (), None)
            elif state.status == "running":
                state = replace(state, status="interrupted", error="the matrix command stopped")
            states.append(replace(state, cell=cell, in_plan=True))
        states += [replace(s, in_plan=False) for s in old.values()]
        record = MatrixRecord(
            STATE_SCHEMA,
            "composition-lab-matrix",
            str(plan_path),
            name,
            now(),
            tuple(states),
            sessions,
        )
        opened = cls(path, record)
        opened.file = written
        return opened

    def save(self) -> None:
        self.record = replace(self.record, updated_at=now())
        self.file.write(document_text(self.record, "matrix"))

    def cell(self, name: str) -> CellState:
        return next(c for c in self.record.cells if c.cell.name == name)

    def update(self, name: str, **changes: object) -> None:
        self.update_many({name: changes})

    def update_many(self, changes: dict[str, dict[str, object]], save: bool = True) -> None:
        """Several cells' changes, written once (`save`: else kept in memory only)."""
        if not changes:
            return
        cells = tuple(
            replace(c, **changes[c.cell.name]) if c.cell.name in changes else c  # type: ignore[arg-type]
            for c in self.record.cells
        )
        self.record = replace(self.record, cells=cells)
        if save:
            self.save()

    def begin_session(self, session: Session) -> None:
        self.record = replace(self.record, sessions=(*self.record.sessions, session))
        self.save()

    def end_session(self, **changes: object) -> None:
        last = replace(self.record.sessions[-1], **changes)  # type: ignore[arg-type]
        self.record = replace(self.record, sessions=(*self.record.sessions[:-1], last))
        self.save()

    def counts(self) -> dict[str, int]:
        counted: dict[str, int] = {}
        for c in self.record.cells:
            if c.in_plan:
                counted[c.status] = counted.get(c.status, 0) + 1
        return counted
