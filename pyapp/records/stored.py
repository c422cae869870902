"""A sweep as it is stored between a run's checkpoints, and the one way to make it whole.

The page (IndexedDB, site/store.js) and the sweep CLI (trace.json's header, trials.jsonl)
keep a sweep as Python's own JSON texts: its header (the trace without its trials), one text
per trial, and, between two headers, the records that joined the header during a run, one
`HeaderChange` per event that brought any (a reload's load records, an interruption, the
freezes). A change is what Python sends instead of the whole header (issue 22 §3: an event
carries what changed); `with_change` is the one rule that puts it in place, and
`stored_trace` the one assembly of the stored texts into a trace, which every reader (a
resume, the CLI's checkpoints, a driver reading what the page stores) calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from pyapp.errors import InputError, RecordError
from pyapp.records.base import JSON, from_json
from pyapp.records.documents import loads_document
from pyapp.records.model import ModelProvenance, revision_note
from pyapp.records.trace import (
    FreezeRecord,
    HeldoutDraw,
    Interruption,
    Trace,
    read_trace,
    with_trials,
)
from pyapp.records.trial import TaskRecord
from pyapp.tasks import sealed_tasks


@dataclass(frozen=True)
class HeaderChange:
    """The records that joined a sweep's header since the last header or change the other
    side was sent: appended in order, never rewritten (each is in the hash chain)."""

    model: ModelProvenance | None
    """The model record now, when it changed (a reload's load records joined it and the
    hash chain); null when it did not."""
    interruptions: tuple[Interruption, ...]
    """Interruptions recorded since (a Cancel or an infrastructure failure cut a trial)."""
    freezes: tuple[FreezeRecord, ...]
    """Profiles frozen since."""
    draw: HeldoutDraw | None = field(default=None, metadata={"optional_on_read": True})
    """A sealed run's held-out draw, when it was made since (the header's tasks then gain
    the drawn held-out tasks); null otherwise."""

    @property
    def empty(self) -> bool:
        return self.model is None and not self.interruptions and not self.freezes and not self.draw


Mark = tuple[ModelProvenance | None, int, int, bool]
"""How far a header goes: its model record, how many interruptions and freezes it holds,
and whether it holds a sealed run's draw."""


def header_change(
    before: Mark,
    model: ModelProvenance | None,
    interruptions: Sequence[Interruption],
    freezes: Sequence[FreezeRecord],
    draw: HeldoutDraw | None = None,
) -> HeaderChange:
    """What a header of these records adds to one that went as far as `before`."""
    was, interrupted, frozen, drawn = before
    return HeaderChange(
        model=model if model is not was and model != was else None,
        interruptions=tuple(interruptions[interrupted:]),
        freezes=tuple(freezes[frozen:]),
        draw=None if drawn else draw,
    )


def with_change(header: Trace, change: HeaderChange) -> Trace:
    """The header with a change's records in place (the one rule)."""
    if change.model is None:
        model, note = header.model, header.revision_note
    else:
        model, note = change.model, revision_note(change.model)
    header = replace(
        header,
        model=model,
        revision_note=note,
        interruptions=header.interruptions + change.interruptions,
        freezes=header.freezes + change.freezes,
    )
    if change.draw is None:
        return header
    drawn = sealed_tasks(header.run.task_params, change.draw.draw_seed)
    return replace(header, draw=change.draw, tasks=tuple(TaskRecord.of(t) for t in drawn))


def stored_trace(
    header_json: object, trials_json: Sequence[str] | None, changes_json: Sequence[str] = ()
) -> Trace:
    """The trace of a stored sweep: its header text (a trace/1 one is upgraded whole, with its
    trials), its trials' texts in order (None: a whole trace's text, trials included) and the
    changes stored since the header, applied in order. Python's own texts: numbers keep
    their types. A `RecordError` names what does not fit."""
    document = _loads(header_json, "header_json" if trials_json is not None else "trace_json")
    if isinstance(document, dict) and trials_json is not None:  # upgraded whole, trials too
        document["trials"] = [_loads(t, f"trials_json[{i}]") for i, t in enumerate(trials_json)]
    trace = read_trace(document)
    for i, text in enumerate(changes_json):
        change: HeaderChange = from_json(
            HeaderChange, _loads(text, f"changes_json[{i}]"), f"changes_json[{i}]"
        )
        trace = with_change(trace, change)
    return with_trials(trace, trace.trials)


def _loads(text: object, name: str) -> JSON:
    """One stored text under the input limits of the one bounded reader
    (`pyapp.records.documents.loads_document`: deep JSON, NaN, huge numbers, repeated keys)."""
    if not isinstance(text, str):
        raise RecordError(name, "must be JSON text")
    try:
        return loads_document(text, name)
    except InputError as error:
        raise RecordError(name, f"not JSON within the input limits: {error.message}") from None
