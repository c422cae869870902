"""A matrix folder's cells, read and re-derived for a study.

`DIR/matrix.json` names the cells; each done cell's run folder (`cells/NAME/`, or
`cells/NAME/seed-N/` for a synthetic cell) is read and verified by the report's own reader
(`pyapp.report.run_folder`: the trace re-derived from its seed and raw trials, the
predictions derived from the trace *as re-derived* — a predictions.json that disagrees
leaves the cell out, named). Nothing is trusted that the trace does not give: the cell's
preset is the one its trace's task parameters are (`preset_of`), its seed the trace's, its
model and versions the frozen profile's.

A cell's **identity** is everything it must share with another to be pooled with it: kind,
model (id, revision, dtype, chat-template options), backend, evidence, generator and prompt
versions, decoding settings, injected faults, condition set, exploratory or not, the chain
protocol (a run's terms: cells of the design's and of the extended protocol are never
pooled), and its task sets — the ladder when its preset is a rung, else the preset (or the
custom parameters).
Cells of one identity differ in their seed and rung alone.

A cell is used only when it is **complete**: done, and every held-out task of every condition
it lists observed after that condition's freeze — the count `reproduce` makes
(`pyapp.verify.completeness`). A cell not run, not finished, or done but cut short (its
held-out phase ended early, trials missing, a condition never frozen) is left out of every
figure, and its note says what it lacks: a run cut short loses the tasks it would have
observed last, not a random sample of its seed's, so its tasks are not the task set the
cells it would be pooled with share.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pyapp.errors import InputError, RecordError
from pyapp.matrix import Cell, MatrixRecord, own_seal, predictions_path, seal_problem
from pyapp.predict import PredictionsDocument
from pyapp.records import (
    DEFAULT_CHAIN_PROTOCOL,
    Trace,
    canonical,
    from_json,
    protocol_of,
    read_document,
    to_json,
)
from pyapp.report import RunInputError, read_run_folder, verify
from pyapp.tasks import ladder_of, preset_of
from pyapp.verify import incomplete

CUT_SHORT = "cut short"
"""A done cell whose trace lacks held-out trials or a freeze (`pyapp.verify.completeness`)."""
NOT_RUN = "not run"
SEAL_NOT_SHARED = "study seal not shared"
"""A cell with no trace."""


@dataclass(frozen=True)
class ReadCell:
    """One done cell whose numbers the study uses."""

    cell: Cell
    """The cell as matrix.json holds it."""
    trace: Trace
    """Its trace (as read; the predictions come from it as re-derived)."""
    doc: PredictionsDocument
    """Its predictions, derived from the trace."""
    seed: int
    """The trace's task seed."""
    preset: str | None
    """The preset its task parameters are; None for a custom set."""
    ladder: str | None
    """The ladder whose rung `preset` is."""
    rung: int | None
    """Its place on the ladder."""
    identity: str
    """What it must share with a cell it is pooled with (canonical JSON)."""
    note: str | None
    """What disagreed with matrix.json's names (the trace's values are used)."""


@dataclass(frozen=True)
class Skipped:
    """A cell the study does not use, and why."""

    cell: Cell
    """The cell."""
    status: str
    """Its status."""
    note: str
    """Why it is left out."""


def read_matrix(folder: Path) -> MatrixRecord:
    """DIR/matrix.json, or an `InputError` naming it."""
    path = folder / "matrix.json"
    if not path.is_file():
        raise InputError(
            "bad_study_folder", "no matrix.json: not a matrix output folder", path=str(folder)
        )
    try:
        record: MatrixRecord = from_json(MatrixRecord, read_document(path))
    except RecordError as error:
        raise InputError("bad_matrix", f"not a matrix.json: {error}", path=str(path)) from None
    return record


def identity_of(cell: Cell, trace: Trace, doc: PredictionsDocument, task_sets: str) -> str:
    """The canonical JSON of everything a cell shares with those it may be pooled with."""
    frozen = [r.frozen for r in doc.conditions]
    templates: dict[str, str] = {}
    for f in frozen:
        templates.update(f.prompt_templates)
    model = frozen[0] if frozen else None
    parts = {
        "kind": cell.kind,
        "synthetic": cell.model_key if cell.kind == "synthetic" else None,  # its whole spec
        "model": None
        if model is None
        else [model.model_id, model.model_revision, model.model_dtype, model.backend],
        "chat_template_options": None if model is None else model.model_chat_template_options,
        "backend": cell.backend,
        "evidence": doc.evidence,
        "generator_version": trace.run.generator_version,
        "prompt_templates": dict(sorted(templates.items())),
        "generation": to_json(trace.run.generation),
        "faults": list(trace.run.faults),
        "conditions": list(cell.conditions),
        "exploratory": sorted({f.exploratory for f in frozen}),
        "task_sets": task_sets,
    }
    protocol = protocol_of(trace.run.terms)
    if protocol != DEFAULT_CHAIN_PROTOCOL:  # the design's is left out: identities kept
        parts["chain_protocol"] = protocol.version
    return json.dumps(parts, sort_keys=True, separators=(",", ":"))


def key_of(identity: str) -> str:
    return hashlib.sha256(identity.encode()).hexdigest()[:12]


def _task_sets(trace: Trace, preset: str | None) -> str:
    place = None if preset is None else ladder_of(preset)
    if place is not None:
        return place[0]
    if preset is not None:
        return preset
    params = canonical(to_json(trace.run.task_params))
    assert isinstance(params, dict)
    text = json.dumps({k: v for k, v in params.items() if k != "seed"}, sort_keys=True)
    return f"custom parameters {hashlib.sha256(text.encode()).hexdigest()[:12]}"


def read_cell(folder: Path, cell: Cell, status: str) -> ReadCell | Skipped:
    """A done cell re-derived, or why it is left out."""
    run = (folder / predictions_path(cell)).parent
    try:
        found = read_run_folder(run)
    except RunInputError as error:
        return Skipped(cell, status, f"cannot be read: {error.message}")
    verification = verify(found)
    if not verification.ok or verification.derived is None:
        problems = [
            *verification.trace_mismatches,
            *(verification.predictions_mismatches or ()),
            *([verification.derive_error] if verification.derive_error else []),
        ]
        first = problems[0] if problems else "no frozen profile"
        return Skipped(cell, status, f"does not re-derive ({len(problems)} problem(s)): {first}")
    if verification.incomplete:  # re-derives, but cut short: its tasks are not its seed's
        return Skipped(cell, status, f"{CUT_SHORT}: {'; '.join(verification.incomplete)}")
    trace, doc = found.trace, verification.derived
    preset = preset_of(trace.run.task_params)
    place = None if preset is None else ladder_of(preset)
    notes = []
    if preset is not None and preset != cell.preset:
        notes.append(f"matrix.json names {cell.preset!r}; its trace's parameters are {preset!r}")
    if cell.ladder is not None and (place is None or (cell.ladder, cell.rung) != place):
        notes.append(
            f"matrix.json says rung {cell.rung} of {cell.ladder}; its trace's parameters are "
            f"{'no rung' if place is None else f'rung {place[1]} of {place[0]}'}"
        )
    if trace.run.task_params.seed != cell.seed:
        notes.append(f"matrix.json says seed {cell.seed}; its trace's is {trace.run.seed}")
    return ReadCell(
        cell=cell,
        trace=trace,
        doc=doc,
        seed=trace.run.task_params.seed,
        preset=preset,
        ladder=None if place is None else place[0],
        rung=None if place is None else place[1],
        identity=identity_of(cell, trace, doc, _task_sets(trace, preset)),
        note="; ".join(notes) or None,
    )


def missing_of(folder: Path, cell: Cell, status: str) -> str:
    """Why a cell that is not done is left out, with what it lacks: no trace at all (never
    run), or — counted on the trace it has (`pyapp.verify.completeness`) — the freezes and
    held-out trials it has not reached."""
    run = (folder / predictions_path(cell)).parent
    if not (run / "trace.json").exists():
        return f"{NOT_RUN} ({status}): no trace, none of its trials"
    try:
        lines = incomplete(read_run_folder(run).trace)
    except RunInputError as error:
        return f"not done ({status}): its trace cannot be read ({error.message})"
    return f"not done ({status}): " + ("; ".join(lines) or "its run did not finish")


def read_cells(folder: Path) -> tuple[MatrixRecord, list[ReadCell | Skipped]]:
    """Every cell of the plan in name order: re-derived when done and complete, else skipped
    and why."""
    record = read_matrix(folder)
    found: list[ReadCell | Skipped] = []
    for state in sorted(record.cells, key=lambda s: s.cell.name):
        if not state.in_plan:
            found.append(Skipped(state.cell, state.status, "no longer in the plan"))
        elif state.status != "done":
            found.append(
                Skipped(state.cell, state.status, missing_of(folder, state.cell, state.status))
            )
        else:
            found.append(read_cell(folder, state.cell, state.status))
    return record, check_seals(folder, record, found)


def check_seals(
    folder: Path, record: MatrixRecord, found: list[ReadCell | Skipped]
) -> list[ReadCell | Skipped]:
    """Each run under a study-level seal checked against its seed's other cells: the seal
    it drew from must list every cell of the seed in the plan with the own seal that cell's
    trace gives (`pyapp.matrix.seals.seal_problem`); a cell whose seal does not is left out,
    saying why."""
    read = [f for f in found if isinstance(f, ReadCell)]
    if not any(f.trace.draw is not None and f.trace.draw.study_seal for f in read):
        return found
    planned = [s.cell for s in record.cells if s.in_plan]
    traces = {f.cell.name: f.trace for f in read}
    seals = {c.name: own_seal(folder, c, traces.get(c.name)) for c in planned}
    shared = {f.cell.seed for f in read if f.trace.draw is not None and f.trace.draw.study_seal}
    checked: list[ReadCell | Skipped] = []
    for item in found:
        if isinstance(item, ReadCell):
            group = [c for c in planned if c.seed == item.cell.seed]
            problem = seal_problem(item.trace, group, seals, item.cell.seed in shared)
            if problem is not None:
                checked.append(Skipped(item.cell, "done", f"{SEAL_NOT_SHARED}: {problem}"))
                continue
        checked.append(item)
    return checked
