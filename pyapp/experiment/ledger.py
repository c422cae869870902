"""The ledger of observed held-out tasks across sweeps, kept in a file (the sweep CLI's; the
page keeps its own in IndexedDB). Both follow the one rule of `pyapp.predict.exploratory`.

A held-out task is recorded by its content (`content_sha256`: registers and question, not its
id) under the model (id and revision, and the commit served when known: not the backend,
threads or runtime versions; matched as one model however spelled, `same_model`) and the
condition. The sweep CLI reads this file before it starts a sweep and passes what it holds
for the model as `previously_observed` (content keys, per condition); Python turns them into
the ids of the sweep's own held-out tasks (`previously_seen`), so a new seed or preset is
not made exploratory by an earlier one, while the same tasks on another backend are. It
records every held-out task its sweep observed. The file is JSON:

    {"schema_version": "sweep-ledger/2",
     "entries": [{"model_id", "revision", "condition", "tasks": [content sha256, ...],
                  "runs": [run ids], "revision_served" (optional)}]}

A `sweep-ledger/1` file (entries keyed by the full load identity and the task set, with
task ids) is read and rewritten as /2: its ids are kept as legacy keys, matched by id.

The format is written once, as the records `LedgerFile` and `LedgerEntry`: the checks of
`check_entries` (`ENTRY_FIELDS`) are derived from them, and `python -m pyapp schema`
generates `exports/ledger.schema.json` from them (`ledger_schema`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from interpreter import LabError
from pyapp.conditions import MODEL_CONDITIONS
from pyapp.errors import InputError
from pyapp.predict import (
    content_sha256,
    heldout_tasks,
    keys_by_condition,
    previously_seen,
    tasks_of_trace,
)
from pyapp.records import (
    DEFAULT_CHAIN_PROTOCOL,
    JSON,
    ChainProtocol,
    ModelProvenance,
    Trace,
    check_kind,
    json_schema,
    protocol_of,
    read_document,
    to_json,
)
from pyapp.tasks import GENERATOR_VERSION, Task, TaskParams

LEDGER_SCHEMA = "sweep-ledger/2"
LEGACY_SCHEMA = "sweep-ledger/1"
SCHEMA_ID = "https://composition-lab.invalid/schemas/ledger.schema.json"


@dataclass(frozen=True)
class LedgerEntry:
    """The held-out tasks observed with one model (id and revision) under one condition."""

    model_id: str
    """The model's id."""
    revision: str
    """The revision asked for (a commit, a branch, `bundled`)."""
    condition: str
    """The condition."""
    tasks: tuple[str, ...]
    """The observed held-out tasks' content keys (`content_sha256`; a legacy /1 ledger's task
    ids, matched by id), sorted."""
    runs: tuple[str, ...]
    """The run ids that observed them, sorted."""
    revision_served: str | None = dataclasses.field(
        default=None, metadata={"optional_on_read": True}
    )
    """The commit the hub served for `revision`, when the runs recorded it (a branch and its
    resolved commit are then one model: `pyapp.predict.exploratory.same_model`); absent in
    entries written before it was kept."""


@dataclass(frozen=True)
class LedgerFile:
    """The sweep CLI's ledger of observed held-out tasks (`--ledger`, `ledger.json`)."""

    schema_version: Literal["sweep-ledger/2"]
    """The format."""
    entries: tuple[LedgerEntry, ...]
    """One entry per model id, revision and condition."""


def ledger_schema() -> dict[str, JSON]:
    """exports/ledger.schema.json: the ledger file, from its records."""
    return json_schema(LedgerFile, schema_id=SCHEMA_ID, title="Composition Lab sweep ledger")


class LedgerError(LabError, ValueError):
    """The ledger file exists but is not a ledger (code `bad_ledger`)."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_ledger", message)


def task_set_sha256(params: TaskParams, generator_version: str = GENERATOR_VERSION) -> str:
    """The task set a seed and parameters regenerate, named by a hash."""
    text = json.dumps(
        {"params": to_json(params), "generator_version": generator_version}, sort_keys=True
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: Largest ledger file read (an entry per model, task set and condition: kilobytes each).
MAX_LEDGER_BYTES = 64 * 1024 * 1024
#: The fields of a ledger entry and the JSON type each must have (from `LedgerEntry`).
ENTRY_FIELDS: dict[str, type] = {
    f.name: list if str(f.type).startswith("tuple") else str
    for f in dataclasses.fields(LedgerEntry)
    if f.default is dataclasses.MISSING
}
#: The optional fields of a ledger entry: a string or null when present.
OPTIONAL_FIELDS = tuple(
    f.name for f in dataclasses.fields(LedgerEntry) if f.default is not dataclasses.MISSING
)
LEGACY_FIELDS: dict[str, type] = {
    "identity": str,
    "model_id": str,
    "revision": str,
    "task_set": str,
    "condition": str,
    "task_ids": list,
    "runs": list,
}


def check_entries(entries: Any, where: str, fields: dict[str, type] = ENTRY_FIELDS) -> None:
    """Refuse (`LedgerError`, naming the field) entries that are not objects of `fields`
    (`ENTRY_FIELDS`), or whose lists are not lists of strings."""
    if not isinstance(entries, list):
        raise LedgerError(f"{where}: `entries` must be a list")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise LedgerError(f"{where}: entries[{i}] must be an object")
        for name, kind in fields.items():
            value = entry.get(name)
            if not isinstance(value, kind) or (
                isinstance(value, list) and not all(isinstance(v, str) for v in value)
            ):
                wanted = "a list of strings" if kind is list else "a string"
                raise LedgerError(f"{where}: entries[{i}].{name} must be {wanted}")
        for name in OPTIONAL_FIELDS if fields is ENTRY_FIELDS else ():
            if not isinstance(entry.get(name), str | None):
                raise LedgerError(f"{where}: entries[{i}].{name} must be a string or null")


def read_ledger(path: Path) -> dict[str, Any]:
    """The ledger in `path` through the bounded reader, every entry checked before use; an
    empty one when the file does not exist yet."""
    if not os.path.lexists(path):
        return {"schema_version": LEDGER_SCHEMA, "entries": []}
    try:
        data = read_document(path, MAX_LEDGER_BYTES)
        check_kind(data, "ledger", path)  # by its schema_version: a ledger has no `kind`
    except InputError as error:
        raise LedgerError(f"{path}: {error.message}") from None
    if isinstance(data, dict) and data.get("schema_version") == LEGACY_SCHEMA:
        check_entries(data.get("entries"), str(path), LEGACY_FIELDS)
        return upgraded(data)
    if not isinstance(data, dict) or data.get("schema_version") != LEDGER_SCHEMA:
        raise LedgerError(f"{path}: not a {LEDGER_SCHEMA} ledger")
    check_entries(data.get("entries"), str(path))
    return data


def upgraded(legacy: dict[str, Any]) -> dict[str, Any]:
    """A sweep-ledger/1 ledger as /2: per model id, revision and condition, its task ids kept
    as legacy keys (matched by id: its task set is only a hash, so their content is lost)."""
    ledger: dict[str, Any] = {"schema_version": LEDGER_SCHEMA, "entries": []}
    for entry in legacy["entries"]:
        _add(ledger["entries"], entry["model_id"], entry["revision"], entry["condition"],
             entry["task_ids"], entry["runs"])  # fmt: skip
    return ledger


def _add(
    entries: list[dict[str, Any]],
    model_id: str,
    revision: str,
    condition: str,
    keys: Sequence[str],
    runs: Sequence[str],
    revision_served: str | None = None,
) -> None:
    wanted = (model_id, revision, revision_served, condition)
    entry = next(
        (
            e
            for e in entries
            if (e["model_id"], e["revision"], e.get("revision_served"), e["condition"]) == wanted
        ),
        None,
    )
    if entry is None:
        entry = {"model_id": model_id, "revision": revision, "condition": condition,
                 "tasks": [], "runs": []}  # fmt: skip
        if revision_served is not None:
            entry["revision_served"] = revision_served
        entries.append(entry)
    entry["tasks"] = sorted(set(entry["tasks"]) | set(keys))
    entry["runs"] = sorted(set(entry["runs"]) | set(runs))


def observed_for(ledger: dict[str, Any], model: ModelProvenance) -> dict[str, list[str]]:
    """Per condition, the content keys earlier runs observed with this model (one model
    however spelled: `pyapp.predict.exploratory.same_model`): the `previously_observed` of a
    new sweep (`previously_seen` maps them to its held-out tasks)."""
    return keys_by_condition(
        ledger["entries"], model.model_id, model.revision, model.revision_served
    )


def seen_in(
    previously: Mapping[str, Sequence[str]],
    tasks: Sequence[Task],
    conditions: Sequence[str],
    protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL,
) -> dict[str, tuple[str, ...]]:
    """Per condition, the ids of this task set's held-out tasks the keys name (the one rule,
    `pyapp.predict.exploratory.previously_seen`) that a profile under the run's chain
    `protocol` predicts; conditions with none left out."""
    seen = {
        c: previously_seen(previously.get(c, ()), tasks, ledger_task_ids(tasks, c, protocol))
        for c in conditions
    }
    return {c: ids for c, ids in seen.items() if ids}


def ledger_task_ids(
    tasks: Sequence[Task], condition: str, protocol: ChainProtocol = DEFAULT_CHAIN_PROTOCOL
) -> frozenset[str]:
    """The tasks whose observation under `condition` a ledger records (this file, the page's
    IndexedDB one): the held-out tasks its profile predicts (a chain's: those the run's
    chain `protocol` routes, the others made no call); none for a control condition."""

    if condition not in MODEL_CONDITIONS:
        return frozenset()
    return frozenset(t.id for t in heldout_tasks(tasks, condition, protocol))


def record_trace(ledger: dict[str, Any], trace: Trace) -> dict[str, Any]:
    """The ledger with every held-out model-condition task the trace observed added, by
    content under the trace's model id and revision."""
    if trace.model is None:
        return ledger
    tasks = {t.id: t for t in tasks_of_trace(trace)}
    protocol = protocol_of(trace.run.terms)
    entries = [dict(e) for e in ledger["entries"]]
    for condition in trace.run.conditions:
        heldout = ledger_task_ids(tuple(tasks.values()), condition, protocol)
        ids = {t.task_id for t in trace.trials if t.condition == condition and t.task_id in heldout}
        if not ids:
            continue
        keys = [content_sha256(tasks[i]) for i in sorted(ids)]
        _add(entries, trace.model.model_id, trace.model.revision, condition, keys,
             [trace.run.run_id], trace.model.revision_served)  # fmt: skip
    return {"schema_version": LEDGER_SCHEMA, "entries": entries}
