"""One rule for "exploratory", for the page and the command line alike (issue 23 §7).

A profile made after seeing any of its held-out instances is exploratory. What "seeing"
means, written once:

* **Keyed by content, per model and condition.** A held-out task is named by its
  *content* — the SHA-256 of its registers and question (`content_sha256`), never its id,
  which repeats across seeds and presets — together with the model (id and revision: not
  the backend, threads or runtime versions, so seeing results on one backend is seeing them
  for the model) and the condition. A new seed or preset of the same model has other
  contents, so it is not made exploratory by an earlier one; the same tasks re-run on
  another backend are.
* **One model, however it is spelled** (`model_names`, `same_model`). A model id is compared
  case-folded, as the hub resolves it (`Org/Model` and `org/model` are one repository; a
  local id is folded too, erring towards exploratory), and a commit hash in lower case. A
  revision asked as a branch and the commit it resolved to are the same model when the run
  recorded both (`revision` and `revision_served`): a ledger entry names every revision its
  runs recorded, and two models are the same when their folded ids are equal and they share
  a revision. The page (through `sweep_start`'s `ledger`), the sweep CLI's ledger file, and
  the matrix (which runs the sweep CLI) all match a ledger through `keys_by_condition`.
* **Ledgers** (the page's IndexedDB one, the sweep CLI's file) record those content keys as
  held-out trials are observed (`ledger_key`), and a new sweep's `previously_observed` is
  what they hold for its model, per condition; `previously_seen` turns them into the ids of
  this sweep's held-out tasks (an entry recorded before content keys — a bare task id — is
  matched by id, which errs towards exploratory).
* **The journal.** A journal prompt sent before the freeze that contains a held-out task's
  question together with every one of its register values (each as a whole decimal number)
  has shown the model that task: `journal_leaks` (trace/3 journal entries, ordered by the
  timeline; `pyapp.predict.freeze.freeze_profile` applies it).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pyapp.records import JournalEntry
from pyapp.tasks import TaskLike

CONTENT_KEY = "heldout-content/1"
"""The version of the content key's canonical form."""


def content_sha256(task: TaskLike) -> str:
    """The held-out task's content: SHA-256 of the canonical JSON of its registers and
    question (sorted keys, no whitespace), whatever its id, seed or preset."""
    body = {
        "key": CONTENT_KEY,
        "question": task.question,
        "registers": {str(k): int(v) for k, v in task.registers.items()},
    }
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def ledger_key(model_id: str, revision: str, condition: str, task: TaskLike) -> str:
    """The key a ledger records for a held-out observation (the page's IndexedDB key)."""
    return f"{model_id}@{revision}|{condition}|{content_sha256(task)}"


def previously_seen(
    keys: Iterable[str], tasks: Sequence[TaskLike], heldout_ids: Iterable[str]
) -> tuple[str, ...]:
    """The ids of the held-out tasks (`heldout_ids` of `tasks`) that a ledger's keys for
    this model and condition name: by content; a legacy entry (a task id, recorded before
    content keys) by id."""
    keys = set(keys)
    wanted = set(heldout_ids)
    seen = [t.id for t in tasks if t.id in wanted and (content_sha256(t) in keys or t.id in keys)]
    return tuple(sorted(seen))


def _shows_value(prompt: str, value: int) -> bool:
    digits = str(abs(int(value)))
    return re.search(rf"(?<![0-9]){digits}(?![0-9])", prompt) is not None


def reveals(prompt: str, task: TaskLike) -> bool:
    """Whether a prompt shows the task: its question verbatim and every register value."""
    if task.question not in prompt:
        return False
    return all(_shows_value(prompt, v) for v in task.registers.values())


def journal_leaks(
    journal: Sequence[JournalEntry], tasks: Sequence[TaskLike], before_sequence: int | None
) -> dict[str, int]:
    """Held-out tasks a journal prompt showed before the freeze at `before_sequence`: task id
    -> the sequence of the first journal entry that showed it. Entries without a sequence
    (older than trace/3) are not ordered against the freeze and are not counted."""
    if before_sequence is None:
        return {}
    found: dict[str, int] = {}
    for entry in journal:
        if entry.sequence is None or entry.sequence >= before_sequence:
            continue
        for task in tasks:
            if task.id not in found and reveals(entry.prompt, task):
                found[task.id] = entry.sequence
    return found


_COMMIT = re.compile(r"^[0-9a-fA-F]{40}$")


@dataclass(frozen=True)
class ModelNames:
    """A model as the exploratory rule compares it (`model_names`)."""

    model_id: str
    """The id, case-folded."""
    revisions: frozenset[str]
    """Every revision it was recorded under: the one asked for and the commit served (a
    commit hash in lower case)."""


def _revision(text: str) -> str:
    return text.lower() if _COMMIT.match(text) else text


def model_names(model_id: str, revision: str, revision_served: str | None = None) -> ModelNames:
    """The canonical identity of a model for the exploratory rule (module docstring)."""
    served = {_revision(revision_served)} if revision_served else set()
    return ModelNames(model_id.casefold(), frozenset({_revision(revision)} | served))


def same_model(a: ModelNames, b: ModelNames) -> bool:
    """Whether two recorded models are one model for the exploratory rule: the same folded
    id, and a revision in common (a branch and the commit it resolved to, when recorded)."""
    return a.model_id == b.model_id and bool(a.revisions & b.revisions)


def keys_by_condition(
    entries: Iterable[Mapping[str, object]],
    model_id: str,
    revision: str,
    revision_served: str | None = None,
) -> dict[str, list[str]]:
    """Per condition, the content keys ledger entries ({model_id, revision, revision_served
    (optional), condition, tasks or task_ids}) hold for this model (`same_model`)."""
    seen: dict[str, list[str]] = {}
    ours = model_names(model_id, revision, revision_served)
    for entry in entries:
        served = entry.get("revision_served")
        theirs = model_names(
            str(entry.get("model_id")),
            str(entry.get("revision")),
            served if isinstance(served, str) else None,
        )
        if not same_model(ours, theirs):
            continue
        keys = seen.setdefault(str(entry.get("condition")), [])
        tasks = entry.get("tasks", entry.get("task_ids"))
        for key in tasks if isinstance(tasks, list) else []:
            if str(key) not in keys:
                keys.append(str(key))
    return seen
