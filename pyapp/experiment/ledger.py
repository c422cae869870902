"""The ledger of observed held-out tasks across sweeps, kept in a file (the sweep CLI's; the
page keeps its own in IndexedDB).

A sweep whose held-out tasks were observed in an earlier run with the same model identity
(`pyapp.records.model.identity_sha256`) and the same task set (seed, task parameters,
generator version) is exploratory: the sweep CLI reads this file before it starts a sweep
and passes what it holds as `previously_observed`, and records every held-out task its
sweep observed. The file is JSON:

    {"schema_version": "sweep-ledger/1",
     "entries": [{"identity": sha256, "model_id", "revision", "task_set": sha256,
                  "condition", "task_ids": [...], "runs": [run ids]}]}
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyapp.conditions.run import MODEL_CONDITIONS
from pyapp.errors import InputError, LabError
from pyapp.predict.predictor import heldout_tasks
from pyapp.records.base import to_json
from pyapp.records.documents import read_document
from pyapp.records.model import ModelProvenance, identity_sha256
from pyapp.records.trace import Trace
from pyapp.tasks.taskset import GENERATOR_VERSION, Task, TaskParams, generate

LEDGER_SCHEMA = "sweep-ledger/1"


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
#: The fields of a ledger entry and the JSON type each must have.
ENTRY_FIELDS: dict[str, type] = {
    "identity": str,
    "model_id": str,
    "revision": str,
    "task_set": str,
    "condition": str,
    "task_ids": list,
    "runs": list,
}


def check_entries(entries: Any, where: str) -> None:
    """Refuse (`LedgerError`, naming the field) entries that are not objects of
    `ENTRY_FIELDS`, or whose `task_ids` / `runs` are not lists of strings."""
    if not isinstance(entries, list):
        raise LedgerError(f"{where}: `entries` must be a list")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise LedgerError(f"{where}: entries[{i}] must be an object")
        for name, kind in ENTRY_FIELDS.items():
            value = entry.get(name)
            if not isinstance(value, kind) or (
                isinstance(value, list) and not all(isinstance(v, str) for v in value)
            ):
                wanted = "a list of strings" if kind is list else "a string"
                raise LedgerError(f"{where}: entries[{i}].{name} must be {wanted}")


def read_ledger(path: Path) -> dict[str, Any]:
    """The ledger in `path` through the bounded reader, every entry checked before use; an
    empty one when the file does not exist yet."""
    if not os.path.lexists(path):
        return {"schema_version": LEDGER_SCHEMA, "entries": []}
    try:
        data = read_document(path, MAX_LEDGER_BYTES)
    except InputError as error:
        raise LedgerError(f"{path}: {error.message}") from None
    if not isinstance(data, dict) or data.get("schema_version") != LEDGER_SCHEMA:
        raise LedgerError(f"{path}: not a {LEDGER_SCHEMA} ledger")
    check_entries(data.get("entries"), str(path))
    return data


def observed_for(
    ledger: dict[str, Any], model: ModelProvenance, params: TaskParams
) -> dict[str, list[str]]:
    """Per condition, the held-out task ids earlier runs observed with this identity and
    task set (the `previously_observed` of a new sweep)."""
    identity, task_set = identity_sha256(model), task_set_sha256(params)
    seen: dict[str, list[str]] = {}
    for entry in ledger["entries"]:
        if entry.get("identity") == identity and entry.get("task_set") == task_set:
            ids = seen.setdefault(str(entry.get("condition")), [])
            ids.extend(str(i) for i in entry.get("task_ids", []) if str(i) not in ids)
    return seen


def ledger_task_ids(tasks: Sequence[Task], condition: str) -> frozenset[str]:
    """The tasks whose observation under `condition` a ledger records (this file, the page's
    IndexedDB one): the held-out tasks its profile predicts; none for a control condition."""

    if condition not in MODEL_CONDITIONS:
        return frozenset()
    return frozenset(t.id for t in heldout_tasks(tasks, condition))


def _key(entry: dict[str, Any]) -> tuple[Any, Any, Any]:
    return entry.get("identity"), entry.get("task_set"), entry.get("condition")


def record_trace(ledger: dict[str, Any], trace: Trace) -> dict[str, Any]:
    """The ledger with every held-out model-condition task the trace observed added."""
    if trace.model is None:
        return ledger

    tasks = generate(trace.run.task_params)
    identity = identity_sha256(trace.model)
    task_set = task_set_sha256(trace.run.task_params, trace.run.generator_version)
    entries = [dict(e) for e in ledger["entries"]]
    for condition in trace.run.conditions:
        heldout = ledger_task_ids(tasks, condition)
        ids = [t.task_id for t in trace.trials if t.condition == condition and t.task_id in heldout]
        if not ids:
            continue
        key = (identity, task_set, condition)
        entry = next(
            (
                e
                for e in entries
                if (e.get("identity"), e.get("task_set"), e.get("condition")) == key
            ),
            None,
        )
        if entry is None:
            entry = {
                "identity": identity,
                "model_id": trace.model.model_id,
                "revision": trace.model.revision,
                "task_set": task_set,
                "condition": condition,
                "task_ids": [],
                "runs": [],
            }
            entries.append(entry)
        entry["task_ids"] = sorted(set(entry["task_ids"]) | set(ids))
        entry["runs"] = sorted(set(entry["runs"]) | {trace.run.run_id})
    return {"schema_version": LEDGER_SCHEMA, "entries": entries}
