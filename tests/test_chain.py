"""The hash chain (issue 23 §2): every record of a sweep names the hash of the one before it,
each freeze commits to the chain head, and `reproduce` re-walks it.

The two reproducers of the issue printed `ok` before the chain existed: a held-out trial
deleted (summary counts fixed), and a profile trial edited from wrong to right with the
profile hash recomputed by the project's own `freeze_profile`. Traces come from a scripted
adapter (a TEST FIXTURE, never model evidence).
"""

from __future__ import annotations

import copy
import itertools
import json
from dataclasses import replace
from typing import Any

import pytest
from asyncrun import run
from test_integrity import answer
from tracecheck import as_trace_2

from pyapp.cli.main import main
from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.predict import freeze_profile, score_trace
from pyapp.records import ScriptedAdapter, genesis, read_trace, sha256_of, summarise, to_json
from pyapp.tasks import TaskParams, generate
from pyapp.verify import limitations
from pyapp.verify.reproduce import reproduce

CONDITIONS = ("model-only", "model-program")
TASKS = {t.id: t for t in generate(TaskParams())}


@pytest.fixture(scope="module")
def finished() -> dict[str, Any]:
    model = ScriptedAdapter(answer)
    sweep = Sweep(params=TaskParams(), conditions=CONDITIONS, model=model.provenance)
    assert run(run_phase(sweep, "measure", model)) == "finished"
    freeze(sweep)
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    document = to_json(sweep.trace())
    assert reproduce(document) == []
    return document


def recounted(document: dict[str, Any]) -> dict[str, Any]:
    """The summary fixed to the trials, as the issue's forger fixed it."""
    document["summary"] = to_json(summarise(read_trace(document).trials))
    return document


def cli_reproduce(tmp_path, capsys, document: dict[str, Any]) -> tuple[int, str]:
    import json

    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document), "utf-8")
    status = main(["reproduce", str(path)])
    return status, capsys.readouterr().out


def test_deleting_a_held_out_trial_is_a_broken_link(finished, tmp_path, capsys) -> None:
    """Reproducer 1: `model-only/recurrence-2` deleted, summary counts fixed."""
    forged = copy.deepcopy(finished)
    ids = [t["trial_id"] for t in forged["trials"]]
    index = ids.index("model-only/recurrence-2")
    del forged["trials"][index]
    recounted(forged)
    only = next(c for c in score_trace(read_trace(forged)).conditions)
    assert only.scores.n == 5  # what `score` alone would report
    status, out = cli_reproduce(tmp_path, capsys, forged)
    assert status == 1, out
    assert f"MISMATCH $.trials[{index}].prev_sha256: first broken link" in out
    assert f"$.trials[{index}].sequence: sequence gap" in out


def test_a_profile_trial_edited_to_right_with_its_hash_recomputed_is_caught(
    finished, tmp_path, capsys
) -> None:
    """Reproducer 2: a wrong profile trial made right (its completion, verdict and the
    summary), the profile hash recomputed with `freeze_profile`."""
    forged = copy.deepcopy(finished)
    index, trial = next(
        (i, t)
        for i, t in enumerate(forged["trials"])
        if t["condition"] == "model-only" and t["task_id"] == "add-1"
    )
    assert trial["correct"] is False
    right = str(TASKS["add-1"].answer)
    trial["completion"]["text"] = right
    trial["completion"]["output_tokens"] = trial["output_tokens"] = len(right)
    trial.update(result=int(right), correct=True, outcome="correct")
    recounted(forged)
    trace = read_trace(forged)
    for record, typed in zip(forged["freezes"], trace.freezes, strict=True):
        record["profile_sha256"] = freeze_profile(trace, typed).sha256
    found = [str(m) for m in reproduce(forged)]
    assert any(m.startswith(f"$.trials[{index + 1}].prev_sha256: first broken link") for m in found)
    status, out = cli_reproduce(tmp_path, capsys, forged)
    assert status == 1 and "first broken link" in out


@pytest.mark.parametrize("how", ["inserted", "reordered", "edited-freeze", "edited-load"])
def test_inserted_reordered_and_edited_records_break_the_chain(finished, how) -> None:
    forged = copy.deepcopy(finished)
    trials = forged["trials"]
    if how == "inserted":
        extra = copy.deepcopy(trials[3])
        trials.insert(4, extra)
    elif how == "reordered":
        trials[2]["sequence"], trials[3]["sequence"] = trials[3]["sequence"], trials[2]["sequence"]
        trials[2], trials[3] = trials[3], trials[2]
    elif how == "edited-freeze":
        forged["freezes"][0]["frozen_at"] = forged["freezes"][0]["frozen_at"][:-5] + "0.000Z"
    else:
        forged["model"]["loads"][0]["setup_ms"] = 1.0
    recounted(forged)
    assert any("first broken link" in m.message for m in reproduce(forged)), how


def test_every_kind_of_record_is_on_one_chain_from_the_genesis(finished) -> None:
    trace = read_trace(finished)
    records = [*trace.trials, *trace.freezes, *trace.interruptions, *trace.journal]
    records += list(trace.model.loads) if trace.model else []
    ordered = sorted(records, key=lambda r: r.sequence)
    assert [r.sequence for r in ordered] == list(range(1, len(ordered) + 1))
    assert ordered[0].prev_sha256 == genesis(trace.run.run_id, trace.run.created_at)
    for before, after in itertools.pairwise(ordered):
        assert after.prev_sha256 == sha256_of(before)
    # each freeze commits to the head at its moment, and its profile hash covers it
    freeze_record = trace.freezes[0]
    assert freeze_profile(trace, freeze_record).chain_head == freeze_record.prev_sha256


def test_a_resumed_sweep_continues_the_chain_and_journal_entries_join_it(finished) -> None:
    trace = read_trace(finished)
    kept = len(trace.trials) - 3
    document = copy.deepcopy(finished)
    document["trials"] = document["trials"][:kept]
    sweep = Sweep.from_trace(read_trace(recounted(document)))
    model = ScriptedAdapter(answer)
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    resumed = to_json(sweep.trace())
    assert reproduce(resumed) == [] and limitations(resumed) == []


def test_older_documents_reproduce_with_a_line_saying_the_chain_is_absent(
    finished, tmp_path, capsys
) -> None:
    old = as_trace_2(finished)
    assert reproduce(old) == []
    status, out = cli_reproduce(tmp_path, capsys, old)
    assert status == 0
    assert "note: chain absent (recorded before trace/3)" in out
    assert "note: frozen state-aware fit and task set absent" in out
    # without the chain, the deletion is not caught: what the note warns of
    ids = [t["trial_id"] for t in old["trials"]]
    del old["trials"][ids.index("model-only/recurrence-2")]
    assert reproduce(recounted(old)) == []


def test_a_trace_3_document_stripped_of_its_chain_is_refused(finished) -> None:
    stripped = as_trace_2(finished)
    stripped["schema_version"] = "trace/3"
    found = [str(m) for m in reproduce(stripped)]
    assert "$: a trace/3 document whose records carry no chain" in found


class ReloadingAdapter(ScriptedAdapter):
    """A scripted model whose worker was reloaded during its `at`-th generation: a new load
    record appears in its provenance (as the page's model client adds one)."""

    def __init__(self, at: int) -> None:
        super().__init__(answer)
        self.count, self.at = 0, at

    async def generate(self, prompt, caps):  # type: ignore[no-untyped-def]
        self.count += 1
        if self.count == self.at:
            loads = self._provenance.loads
            load = replace(loads[-1], load_id=len(loads) + 1, reason="reload-after-terminate")
            self._provenance = replace(self._provenance, loads=(*loads, load))
        return await super().generate(prompt, caps)


def test_a_reload_joins_the_chain_and_a_resumed_page_keeps_it() -> None:
    """The load record is chained before the next trial, and that trial's event carries the
    new model record beside it (a header change, never the whole header), so a page (or
    sweep folder) that crashes right after it resumes a whole chain."""
    from test_session import Page, call
    from test_session import document as page_document

    page = Page(ReloadingAdapter(at=3))
    call(page, "sweep_start", seed=1729, conditions=["model-only"])
    page.cancel_after = 5
    call(page, "sweep_run", phase="measure")
    carried = [
        json.loads(texts["change"])
        for e, texts in zip(page.events, page.beside, strict=True)
        if e["type"] == "trial_done" and texts["change"]
    ]
    assert len(carried) == 1  # the trial after the reload
    assert [load["load_id"] for load in carried[0]["model"]["loads"]] == [1, 2]
    assert carried[0]["interruptions"] == carried[0]["freezes"] == []
    stored = page.stored()  # what survives a crash now
    again = Page(ScriptedAdapter(answer))
    assert call(again, "sweep_resume", **stored)["ok"]
    document = page_document(again, "sweep_trace", "trace")
    assert [load["load_id"] for load in document["model"]["loads"]] == [1, 2]
    assert reproduce(document) == []


def test_a_trace_2_written_by_the_code_before_trace_3_reproduces_with_its_notes(
    tmp_path, capsys
) -> None:
    """tests/fixtures/trace-2.json and predictions-3.json were written by the code of commit
    4f2b49a (before trace/3; a scripted adapter, a TEST FIXTURE): they reproduce exactly,
    with a line for each check they cannot support."""
    from pathlib import Path

    fixtures = Path(__file__).resolve().parent / "fixtures"
    status = main(
        [
            "reproduce",
            str(fixtures / "trace-2.json"),
            "--predictions",
            str(fixtures / "predictions-3.json"),
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert "note: chain absent (recorded before trace/3)" in out
    assert "note: frozen state-aware fit and task set absent" in out
    assert "every number in" in out


def test_a_page_reloaded_mid_sweep_keeps_every_chained_load() -> None:
    """A reloaded page's model client numbers its loads from 1 again: the sweep keeps the
    loads it chained and adds the new one under the next free number."""
    from test_session import Page, call
    from test_session import document as page_document

    first = Page(ReloadingAdapter(at=2))
    call(first, "sweep_start", seed=1729, conditions=["model-only"])
    first.cancel_after = 3
    call(first, "sweep_run", phase="measure")
    later = ScriptedAdapter(answer)
    fresh = later.provenance.loads[0]
    later._provenance = replace(later.provenance, loads=(replace(fresh, setup_ms=999.5),))
    again = Page(later)
    assert call(again, "sweep_resume", **first.stored())["ok"]
    assert call(again, "sweep_run", phase="measure")["ok"]
    document = page_document(again, "sweep_trace", "trace")
    loads = document["model"]["loads"]
    assert [load["load_id"] for load in loads] == [1, 2, 3] and loads[2]["setup_ms"] == 999.5
    assert reproduce(document) == []
    later_trials = [t for t in document["trials"] if t["sequence"] > loads[2]["sequence"]]
    assert later_trials and {t["load_id"] for t in later_trials} == {3}
