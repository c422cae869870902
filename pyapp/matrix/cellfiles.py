"""What a cell's own files say — the record a matrix folder keeps, read as evidence.

`matrix.json` says where cells stand, but a hurried colleague may have copied, renamed,
half-deleted or edited anything in the folder, so which cells run, which count as done and
which the summary reads is decided here, from each cell's files (`review`):

- **missing** (no result files): the cell is pending again and runs; if `matrix.json` said
  `done`, its `error` says why (`its files are missing`).
- **unfinished** (a sweep's `run.json` not `done`, a simulate without its summary): it runs
  (a browser cell resumes); recorded `done`, it is pending again, saying so.
- **finished**: the trace and predictions are re-derived (`reproduce`, `--predictions`):
  re-deriving cells are `done`; the others are `failed: does not re-derive …`, left out of
  `summary.json` and never run over (their files stay for a person to look at). Each check
  is kept in `matrix.json` by the SHA-256 of the files, so a cell is re-derived once.

A cell is matched by what its trace says it is (`Identity`: seed, every task parameter,
model, revision, backend, conditions), not by its folder's name: a plan that gives an
existing cell other task parameters (a preset name reused), another model, seed or
conditions — or other options that shape its result — is refused before anything runs,
naming the cell and the plan's key; so is a new cell whose task set, model and seed are a
cell the folder already holds under another name.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from interpreter import LabError
from pyapp.errors import InputError, RecordError
from pyapp.matrix.cells import Cell
from pyapp.matrix.folder import check_entry
from pyapp.matrix.plan import ModelEntry, Plan
from pyapp.matrix.runner import finished
from pyapp.matrix.state import (
    DOES_NOT_REDERIVE,
    CellState,
    FilesCheck,
    Identity,
    MatrixFile,
    now,
)
from pyapp.records import (
    JSON,
    MAX_TRIALS,
    Trace,
    check_count,
    open_regular,
    read_kind,
    read_trace,
    task_params,
    to_json,
)
from pyapp.synthetic import written_name
from pyapp.verify import reproduce_predictions
from pyapp.verify.reproduce import reproduce

Seen = Literal["missing", "unfinished", "finished"]
FIELD_WORDS = {"task_params": "task parameters"}
HASH_CHUNK = 1024 * 1024


def folder_of(out: Path, cell: Cell) -> Path:
    return out / "cells" / cell.name


def result_files(cell: Cell) -> tuple[str, ...]:
    """The cell's result documents, relative to its folder (trace first, predictions second)."""
    if cell.kind == "synthetic":
        seed = f"seed-{cell.seed}"
        return (f"{seed}/trace.json", f"{seed}/predictions.json", "summary.json")
    return ("trace.json", "predictions.json", "run.json")


def check_cell_entries(out: Path, cell: Cell) -> None:
    """The cell's folder, its lock and result files: plain, no symlink (else one line)."""
    folder = folder_of(out, cell)
    check_entry(folder, "folder")
    check_entry(folder / ".lock", "file")
    for name in result_files(cell):
        if "/" in name:
            check_entry(folder / name.rpartition("/")[0], "folder")
        check_entry(folder / name, "file")


def files_sha256(folder: Path, names: Sequence[str]) -> str:
    """SHA-256 over the files' names and bytes (each read through the bounded reader)."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode("utf-8") + b"\0")
        with open_regular(folder / name) as handle:
            while chunk := handle.read(HASH_CHUNK):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()


def identity_of(trace: Trace) -> Identity:
    model = trace.model
    if model is not None and model.synthetic is not None:
        name = written_name(model.synthetic)
    else:
        name = model.model_id if model is not None else ""
    params = to_json(trace.run.task_params)
    assert isinstance(params, dict)
    return Identity(
        seed=trace.run.task_params.seed,
        task_params=params,
        model=name,
        revision=model.revision if model is not None and model.synthetic is None else None,
        backend=model.backend_requested if model is not None else None,
        conditions=tuple(trace.run.conditions),
    )


def wanted_identity(cell: Cell) -> dict[str, JSON]:
    """What the plan says the cell's trace must say (only what the plan fixes)."""
    params = to_json(task_params(cell.seed, cell.params))
    wanted: dict[str, JSON] = {"seed": cell.seed, "task_params": params}
    wanted["model"] = cell.model_key if cell.kind == "synthetic" else json.loads(cell.model_key)[0]
    if cell.kind == "browser" and cell.revision is not None:
        wanted["revision"] = cell.revision
    if cell.kind == "browser" and cell.backend in ("wasm", "webgpu"):
        wanted["backend"] = cell.backend
    if cell.conditions:
        wanted["conditions"] = sorted(cell.conditions)
    return wanted


def differences(cell: Cell, found: Identity) -> list[str]:
    """The fields of `found` (a trace's) that differ from what the plan says of `cell`."""
    have = to_json(found)
    assert isinstance(have, dict)
    if isinstance(have.get("conditions"), list):
        have["conditions"] = sorted(have["conditions"])
    return [k for k, v in wanted_identity(cell).items() if have.get(k) != v]


def read_results(folder: Path, cell: Cell) -> tuple[Trace, JSON, JSON]:
    """The cell's trace (document and records) and predictions document, each of its kind."""
    trace_name, predictions_name = result_files(cell)[:2]
    document = read_kind(folder / trace_name, "trace")
    if isinstance(document, dict):
        check_count(document.get("trials"), "trials", MAX_TRIALS, str(folder / trace_name))
    try:
        trace = read_trace(document)
    except RecordError as error:
        where = str(folder / trace_name)
        raise InputError("bad_trace", f"not a valid trace: {error}", path=where) from None
    predictions = read_kind(folder / predictions_name, "predictions")
    if cell.kind == "synthetic":
        read_kind(folder / "summary.json", "simulation-summary")
    return trace, document, predictions


def rederive(folder: Path, cell: Cell, sha256: str) -> FilesCheck:
    """Re-derive a finished cell's trace and predictions (what `reproduce` does)."""
    try:
        trace, document, predictions = read_results(folder, cell)
    except LabError as error:
        return FilesCheck(sha256, False, str(error)[:500], None)
    identity = identity_of(trace)
    found = reproduce(document, read=trace)
    found += reproduce_predictions(document, predictions, read=trace)
    detail = f"{len(found)} mismatch(es), the first: {found[0]}"[:500] if found else None
    return FilesCheck(sha256, not found, detail, identity)


def examine(out: Path, cell: Cell, cached: FilesCheck | None) -> tuple[Seen, FilesCheck | None]:
    """Where the cell's own files stand, and (finished) what they say; the cached check is
    used when the files' hash is the one it was made for."""
    folder = folder_of(out, cell)
    check_cell_entries(out, cell)
    names = result_files(cell)
    if not any(os.path.lexists(folder / name) for name in names):
        return "missing", None
    if not finished(cell, folder):
        return "unfinished", _partial(folder, cell)
    try:
        sha256 = files_sha256(folder, names)
    except InputError as error:
        return "finished", FilesCheck("", False, str(error)[:500], None)
    if cached is not None and cached.sha256 == sha256:
        return "finished", cached
    return "finished", rederive(folder, cell, sha256)


def _partial(folder: Path, cell: Cell) -> FilesCheck | None:
    """An unfinished cell's identity, from its trace when it has one (nothing re-derived);
    a synthetic cell's folder holding another seed's trace (a folder copied over it) says
    that seed."""
    path = folder / result_files(cell)[0]
    if not path.exists() and cell.kind == "synthetic":
        path = next(iter(sorted(folder.glob("seed-*/trace.json"))), path)
    if not path.exists():
        return None
    try:
        trace = read_trace(read_kind(path, "trace"))
    except (LabError, RecordError):
        return None
    return FilesCheck("", False, "unfinished", identity_of(trace))


@dataclass(frozen=True)
class Review:
    """What `review` decided."""

    run: tuple[str, ...]
    """Cells to hand to the engine (missing, unfinished, or never run)."""
    not_rederiving: tuple[str, ...]
    """Cells whose files do not re-derive (failed; never run over)."""


def plan_key(plan: Plan, cell: Cell, field: str) -> str:
    """The plan's key a difference in `field` of `cell` comes from."""
    if field == "task_params":
        named = plan.parameter_sets or {}
        if cell.preset in named:
            return f"parameter_sets.{cell.preset}"
        return f"axes.presets ({cell.preset!r})"
    if field in ("model", "revision", "backend"):
        for i, value in enumerate(plan.axes.models):
            if (value.id if isinstance(value, ModelEntry) else value) == cell.model:
                return f"axes.models[{i}]" if field != "backend" else "axes.backends"
        return "axes.models"
    if field == "conditions":
        return "axes.conditions"
    return "axes.seeds" if field == "seed" else f"options.{field}"


def _difference(cell: Cell, identity: Identity, field: str) -> str:
    """How the trace's `field` differs from the plan's, in a few words."""
    wanted = wanted_identity(cell)[field]
    found = to_json(getattr(identity, field))
    if field == "task_params" and isinstance(found, dict) and isinstance(wanted, dict):
        keys = sorted(k for k in {*found, *wanted} if found.get(k) != wanted.get(k))
        parts = [
            f"{k} {json.dumps(found.get(k))} in its trace, {json.dumps(wanted.get(k))} in the plan"
            for k in keys[:3]
        ]
        return "; ".join(parts)[:300]
    shown = f"{json.dumps(found)[:120]} in its trace, {json.dumps(wanted)[:120]} in the plan"
    return shown


def _refuse(plan_path: Path, key: str, message: str) -> InputError:
    return InputError("bad_plan", f"{key}: {message}", path=str(plan_path))


def result_options(plan: Plan, cell: Cell) -> dict[str, JSON]:
    """The plan's options that shape a cell's result (a synthetic cell takes none)."""
    if cell.kind == "synthetic":
        return {}
    options = plan.options
    shaped = {
        "ledger": options.ledger,
        "page_params": dict(options.page_params or {}),
        "chromium_flags": list(options.chromium_flags),
        "site": options.site,
    }
    out: dict[str, JSON] = to_json(shaped)
    return out


def check_match(
    plan: Plan, plan_path: Path, out: Path, state: CellState, check: FilesCheck | None
) -> None:
    """Refuse the plan when the cell's files are another cell than the plan's."""
    cell = state.cell
    where = f"cell {cell.name} in {out}"
    if check is not None and check.identity is not None:
        for field in differences(cell, check.identity):
            raise _refuse(
                plan_path,
                plan_key(plan, cell, field),
                f"{where}: its {FIELD_WORDS.get(field, field)} and the plan's differ "
                f"({_difference(cell, check.identity, field)}); a plan may add cells to a "
                "folder, not change them (use another --out, or the plan that made it)",
            )
    if state.options is not None and check is not None:
        current = result_options(plan, cell)
        for name, value in current.items():
            if state.options.get(name, value) != value:
                raise _refuse(
                    plan_path,
                    f"options.{name}",
                    f"{where} was run with {name} = {json.dumps(state.options.get(name))[:200]}"
                    ": a plan may add cells to a folder, not change them",
                )


def _renamed(
    plan: Plan, plan_path: Path, out: Path, state: MatrixFile, cells: Sequence[Cell]
) -> None:
    """A new cell whose task set, model and seed are those of a cell the folder already
    holds under another name (a preset renamed): refused, naming both."""
    held: dict[str, list[tuple[str, Identity]]] = {}
    for other in state.record.cells:
        if other.checked is not None and other.checked.identity is not None:
            identity = other.checked.identity
            held.setdefault(_task_key(identity.seed, identity.task_params), []).append(
                (other.cell.name, identity)
            )
    checked = {c.cell.name for c in state.record.cells if c.checked is not None}
    for cell in cells:
        if cell.name in checked:
            continue
        wanted = wanted_identity(cell)
        for name, identity in held.get(_task_key(cell.seed, wanted["task_params"]), []):
            if name != cell.name and not differences(cell, identity):
                raise _refuse(
                    plan_path,
                    plan_key(plan, cell, "task_params"),
                    f"cell {cell.name} is cell {name} of {out} under another name (the same "
                    "task set, model and seed): name it as before, or use another --out",
                )


def _task_key(seed: int, params: JSON) -> str:
    return json.dumps([seed, params], sort_keys=True)


def review(
    plan: Plan, plan_path: Path, out: Path, state: MatrixFile, cells: Sequence[Cell], save: bool
) -> Review:
    """Decide every cell's status from its files (see the module docstring), refuse a plan
    that changes a cell the folder holds, and record what was found (`save`: written)."""
    changes: dict[str, dict[str, object]] = {}
    run: list[str] = []
    bad: list[str] = []
    states = {c.cell.name: c for c in state.record.cells}
    for cell in cells:
        current = states[cell.name]
        seen, check = examine(out, cell, current.checked)
        check_match(plan, plan_path, out, current, check)
        change: dict[str, object] = {}
        if seen == "finished" and check is not None:
            change["checked"] = check
            if check.rederives:
                change.update(status="done", error=None)
            else:
                change.update(status="failed", error=f"{DOES_NOT_REDERIVE}: {check.detail}")
                bad.append(cell.name)
        else:
            run.append(cell.name)
            change["checked"] = None
            if current.status == "done" or current.checked is not None:
                why = "missing" if seen == "missing" else "unfinished"
                reason = f"its files are {why} (cells/{cell.name}/): run again"
                change.update(status="pending", error=reason, reset=f"{now()}: {reason}")
        if current.options is None or seen == "missing":
            change["options"] = result_options(plan, cell)
        kept = {k: v for k, v in change.items() if getattr(current, k) != v}
        if kept:
            changes[cell.name] = kept
    state.update_many(changes, save=save)
    _renamed(plan, plan_path, out, state, cells)
    return Review(tuple(run), tuple(bad))
