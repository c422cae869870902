"""One rule for "exploratory", page and CLI alike (issue 23 §7).

A profile made after seeing its held-out instances is exploratory. The rule is written once
(`pyapp.predict.exploratory`): held-out tasks are keyed by their content (registers and
question, not their id) under the model's id and revision, per condition; a journal prompt
before the freeze that shows a held-out task's question with its register values counts as
seeing it. Reproducers of the two implementations before it:

* the page keyed its ledger by task id, so a new seed of the same model was falsely
  exploratory (ids repeat across seeds);
* the CLI keyed by the full load identity, so the same tasks re-run on another backend after
  seeing the results were falsely confirmatory;
* a journal prompt that showed a held-out task was not counted at all.

The page's path is driven through the Python bridge exactly as site/experiment.js drives it
(it stores `trial_done.heldout_content` under the model and condition, and sends its whole
ledger as `ledger`: Python keeps this model's entries). Scripted adapters: TEST FIXTURES,
never model evidence.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from asyncrun import run
from test_integrity import answer
from test_session import Page, call

from pyapp.experiment import (
    Sweep,
    freeze,
    observed_for,
    read_ledger,
    record_trace,
    run_phase,
    seen_in,
)
from pyapp.predict import content_sha256, model_names, reveals, same_model
from pyapp.records import WHOLE_TASK_CAPS, JournalEntry, ScriptedAdapter
from pyapp.tasks import TaskParams, generate

CONDITIONS = ["model-only"]


class PageLedger:
    """site/store.js's ledger as site/experiment.js fills and reads it: every entry is sent
    whole (`sweep_start`'s `ledger`), and Python keeps the model's."""

    def __init__(self) -> None:
        self.records: set[tuple[str, str, str | None, str, str]] = set()

    def note(
        self, events: list[dict[str, Any]], model_id: str, revision: str, served: str | None
    ) -> None:
        for e in events:
            if e["type"] == "trial_done" and e["heldout_observed"]:
                key = e.get("heldout_content") or e["task_id"]  # noteObserved(trial, content)
                self.records.add((model_id, revision, served, e["condition"], key))

    def entries(self) -> list[dict[str, Any]]:
        """SweepStore.ledger(): one entry per model, revision, commit served, condition."""
        grouped: dict[tuple[str, str, str | None, str], list[str]] = {}
        for m, r, served, condition, key in sorted(self.records, key=str):
            grouped.setdefault((m, r, served, condition), []).append(key)
        return [
            {"key": f"{m}@{r}|{served or ''}|{c}", "model_id": m, "revision": r,
             "revision_served": served, "condition": c, "task_ids": sorted(keys)}
            for (m, r, served, c), keys in grouped.items()
        ]  # fmt: skip


def page_sweep(
    ledger: PageLedger, seed: int, model: ScriptedAdapter | None = None
) -> dict[str, Any]:
    """One sweep on the page (measure, freeze, held-out); its frozen profile."""
    model = model or ScriptedAdapter(answer)
    page = Page(model)
    p = model.provenance
    who = (p.model_id, p.revision, p.revision_served)
    started = call(page, "sweep_start", seed=seed, conditions=CONDITIONS, ledger=ledger.entries())
    assert started["ok"], started
    assert call(page, "sweep_run", phase="measure")["ok"]
    [frozen] = call(page, "sweep_freeze")["result"]["frozen"]
    assert call(page, "sweep_run", phase="heldout")["ok"]
    ledger.note(page.events, *who)
    return frozen


def test_the_page_a_new_seed_of_the_same_model_is_confirmatory() -> None:
    ledger = PageLedger()
    first = page_sweep(ledger, 1729)
    assert first["exploratory"] is False
    # another seed: the same ids, other tasks: nothing of it was seen
    other = page_sweep(ledger, 1730)
    assert other["exploratory"] is False, other["exploratory_reason"]
    # the same seed again: every held-out task was seen
    again = page_sweep(ledger, 1729)
    assert again["exploratory"] is True
    assert "earlier session" in again["exploratory_reason"]


def test_the_page_keeps_legacy_ledger_records_as_seen_by_id() -> None:
    """Records stored before content keys hold task ids: matched by id (errs towards
    exploratory, never towards confirmatory)."""
    ledger = PageLedger()
    ledger.records.add(("fixture/scripted", "none", None, "model-only", "recurrence-1"))
    frozen = page_sweep(ledger, 1729)
    assert frozen["exploratory"] is True and "recurrence-1" in frozen["exploratory_reason"]


def cli_sweep(model: ScriptedAdapter, ledger: dict[str, Any], params: TaskParams) -> Any:
    """One sweep as the sweep CLI runs it: the ledger's keys for the model, the one rule."""
    keys = observed_for(ledger, model.provenance)
    sweep = Sweep(params=params, conditions=tuple(CONDITIONS), model=model.provenance)
    sweep.previously_observed = seen_in(keys, sweep.tasks, sweep.conditions)
    assert run(run_phase(sweep, "measure", model)) == "finished"
    [frozen] = freeze(sweep)
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    return frozen, record_trace(ledger, sweep.trace())


def on_backend(model: ScriptedAdapter, backend: str) -> ScriptedAdapter:
    other = ScriptedAdapter(answer)
    other._provenance = replace(
        model.provenance, backend_requested=backend, backend_actual=backend, threads=8
    )
    return other


def test_the_cli_the_same_model_on_another_backend_after_seeing_is_exploratory() -> None:
    model = ScriptedAdapter(answer)
    empty = read_ledger(Path("/nonexistent/ledger.json"))
    first, ledger = cli_sweep(model, empty, TaskParams())
    assert first.exploratory is False
    elsewhere = on_backend(model, "wasm" if model.provenance.backend_actual != "wasm" else "webgpu")
    second, ledger = cli_sweep(elsewhere, ledger, TaskParams())
    assert second.exploratory is True
    assert "earlier session" in (second.exploratory_reason or "")
    # a new seed of the same model: other tasks, confirmatory
    third, _ = cli_sweep(model, ledger, TaskParams(seed=1730))
    assert third.exploratory is False


def test_a_legacy_cli_ledger_is_read_as_seen_by_id(tmp_path: Path) -> None:
    import json

    path = tmp_path / "ledger.json"
    entry = {
        "identity": "0" * 64,
        "model_id": "fixture/scripted",
        "revision": "none",
        "task_set": "1" * 64,
        "condition": "model-only",
        "task_ids": ["determinant-2"],
        "runs": ["r"],
    }
    path.write_text(json.dumps({"schema_version": "sweep-ledger/1", "entries": [entry]}))
    model = ScriptedAdapter(answer)
    frozen, ledger = cli_sweep(model, read_ledger(path), TaskParams())
    assert frozen.exploratory is True and "determinant-2" in (frozen.exploratory_reason or "")
    assert ledger["schema_version"] == "sweep-ledger/2"


def journal_entry(prompt: str) -> JournalEntry:
    model = ScriptedAdapter(answer)
    completion = run(model.generate(prompt, WHOLE_TASK_CAPS))
    return JournalEntry(at="2026-01-01T00:00:00+00:00", prompt=prompt, caps=WHOLE_TASK_CAPS,
                        completion=completion)  # fmt: skip


def leaking_prompt(task_id: str, *, with_values: bool = True) -> str:
    task = next(t for t in generate(TaskParams()) if t.id == task_id)
    values = ", ".join(f"{k} = {v}" for k, v in task.registers.items()) if with_values else ""
    return f"Between us: {values}. {task.question} What do you get?"


def journal_sweep(prompts: list[str]) -> Any:
    model = ScriptedAdapter(answer)
    sweep = Sweep(
        params=TaskParams(),
        conditions=tuple(CONDITIONS),
        model=model.provenance,
        journal=[journal_entry(p) for p in prompts],
    )
    assert run(run_phase(sweep, "measure", model)) == "finished"
    [frozen] = freeze(sweep)
    return frozen, sweep


def test_a_journal_prompt_that_shows_a_heldout_task_before_the_freeze_is_seeing_it() -> None:
    frozen, sweep = journal_sweep([leaking_prompt("recurrence-2")])
    assert frozen.exploratory is True
    assert "journal" in (frozen.exploratory_reason or "")
    assert "recurrence-2" in (frozen.exploratory_reason or "")
    # the trace re-derives: reproduce recomputes the same exploratory profile and hash
    from pyapp.records import to_json
    from pyapp.verify.reproduce import reproduce

    assert reproduce(to_json(sweep.trace())) == []


def test_a_journal_prompt_without_the_register_values_is_not_seeing_it() -> None:
    frozen, _ = journal_sweep([leaking_prompt("recurrence-2", with_values=False), "Hello?"])
    assert frozen.exploratory is False


def test_reveals_needs_every_value_as_a_whole_number() -> None:
    task = next(t for t in generate(TaskParams()) if t.id == "recurrence-1")
    prompt = leaking_prompt("recurrence-1")
    assert reveals(prompt, task)
    value = str(abs(task.registers["b"]))
    assert not reveals(prompt.replace(value, value + "7"), task)  # 99757 is not 9975
    assert content_sha256(task) != content_sha256(
        replace(task, registers={**task.registers, "b": 1})
    )
    assert content_sha256(task) == content_sha256(replace(task, id="renamed", encoding="prose"))


# ---- one model however spelled (issue 37 §5) ----------------------------------------------
#
# Reproducers (each failed on the code before: the ledgers compared ids and revisions as
# written): the model id spelled in another case, or the revision pinned to the commit the
# branch had resolved to, made the same model's held-out tasks unseen — confirmatory.

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def spelled(model_id: str, revision: str, served: str | None = None) -> ScriptedAdapter:
    other = ScriptedAdapter(answer)
    other._provenance = replace(
        other.provenance, model_id=model_id, revision=revision, revision_served=served
    )
    return other


def test_the_canonical_identity() -> None:
    hub = model_names("Org/Tiny-Chat", "main", COMMIT)
    assert same_model(hub, model_names("org/tiny-chat", "main"))
    assert same_model(hub, model_names("ORG/TINY-CHAT", COMMIT.upper()))
    assert not same_model(hub, model_names("org/tiny-chat", "dev"))
    assert not same_model(hub, model_names("org/other", "main", COMMIT))
    # a branch name is compared as written (branches are case-sensitive), a commit folded
    assert not same_model(model_names("a/b", "Main"), model_names("a/b", "main"))


def test_the_cli_the_model_id_in_another_case_is_the_same_model() -> None:
    empty = read_ledger(Path("/nonexistent/ledger.json"))
    first, ledger = cli_sweep(spelled("Org/Tiny-Chat", "main"), empty, TaskParams())
    assert first.exploratory is False
    again, _ = cli_sweep(spelled("org/tiny-chat", "main"), ledger, TaskParams())
    assert again.exploratory is True and "earlier session" in (again.exploratory_reason or "")


def test_the_cli_a_revision_pinned_to_the_commit_served_is_the_same_model() -> None:
    empty = read_ledger(Path("/nonexistent/ledger.json"))
    first, ledger = cli_sweep(spelled("org/tiny", "main", COMMIT), empty, TaskParams())
    assert first.exploratory is False
    assert ledger["entries"][0]["revision_served"] == COMMIT
    pinned, _ = cli_sweep(spelled("org/tiny", COMMIT, COMMIT), ledger, TaskParams())
    assert pinned.exploratory is True
    # another branch that served another commit: another model
    other, _ = cli_sweep(spelled("org/tiny", "dev", "f" * 40), ledger, TaskParams())
    assert other.exploratory is False


def test_the_page_the_model_id_in_another_case_is_the_same_model() -> None:
    ledger = PageLedger()
    first = page_sweep(ledger, 1729, spelled("Org/Tiny-Chat", "main", COMMIT))
    assert first["exploratory"] is False
    again = page_sweep(ledger, 1729, spelled("org/tiny-chat", COMMIT.upper()))
    assert again["exploratory"] is True, again
