"""Hand-edited but plausible traces: each one reproduces, or is refused in one line that
names what is wrong — by `python -m pyapp reproduce`, `report`, and the page's "Open a
trace" (`trace_open`) — never with a traceback.

The traces are made by a scripted adapter (a TEST FIXTURE, never model evidence) on a small
task set: one with a frozen profile, held-out trials and two interruptions, and the same
document as trace/1 wrote it (`as_trace_1`).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from asyncrun import run
from test_integrity import FlakyAdapter, as_trace_1
from test_session import Page, known_model
from test_session import call as page_call
from test_session import document as page_document
from tracecheck import rechained

from pyapp.browser import bridge, handle, open_run
from pyapp.cli.main import main
from pyapp.conditions import run_supplied
from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.records import TRACE_2_FIELDS, ScriptedAdapter, ScriptedReply, to_json
from pyapp.tasks import TaskParams
from pyapp.verify.reproduce import reproduce

SMALL = TaskParams(primitives_per_op=1, probe_pairs=1)
CONDITIONS = ("supplied-program", "model-only", "controlled-chain")


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    """A finished sweep: measure, freeze, held-out; the first held-out generation fails twice
    (`not_loaded`: two interruptions of a trial observed afterwards)."""
    model = FlakyAdapter(lambda n: False)
    sweep = Sweep(params=SMALL, conditions=CONDITIONS, model=model.provenance)
    assert run(run_phase(sweep, "measure", model)) == "finished"
    freeze(sweep)
    first = model.count
    model.broken = lambda n: n in (first + 1, first + 2)
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    trace = to_json(sweep.trace())
    assert len(trace["interruptions"]) == 2 and reproduce(trace) == []
    return trace


@pytest.fixture(scope="module")
def trace_1(document: dict[str, Any]) -> dict[str, Any]:
    """The document as trace/1 wrote it; its interruptions as trace/1 recorded them (a page
    closed mid-trial, the trial attempted again and observed later)."""
    old = as_trace_1(document)
    old["interruptions"] = [
        {"trial_id": i["trial_id"], "at": i["at"], "reason": "page-closed", "partial": None}
        for i in document["interruptions"]
    ]
    return old


def edited(document: dict[str, Any], change: Any) -> dict[str, Any]:
    """The document changed by `change`, its hash chain recomputed as a forger would (the
    chain's own checks are in tests/test_chain.py): each test sees the check it is about."""
    copied = copy.deepcopy(document)
    change(copied)
    try:
        return rechained(copied)
    except Exception:  # not readable as a trace: refused by name where it is read
        return copied


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`python -m pyapp ARGV` in-process: (exit status, stdout, stderr), never a traceback."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return status, out, err


def opened(document: dict[str, Any]) -> dict[str, Any]:
    """The page's "Open a trace" reply for the document (`trace_open`)."""
    request = {"type": "trace_open", "id": 1, "trace_json": json.dumps(document)}
    reply: dict[str, Any] = json.loads(handle(json.dumps(request)))
    assert reply["ok"] or reply["error"]["code"] == "bad_request", reply
    return reply


def write(tmp_path: Path, document: object) -> str:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


# ---- revision_note ----------------------------------------------------------------------


def test_a_null_revision_note_beside_a_model_is_one_mismatch_naming_the_field(
    capsys, tmp_path, document
) -> None:
    """The schema: `revision_note` is null only without a model or in a trace upgraded from
    trace/1; a trace/2 with a model records it (re-derived from the model's provenance)."""
    nulled = edited(document, lambda d: d.update(revision_note=None))
    status, out, err = cli(capsys, "reproduce", write(tmp_path, nulled))
    assert status == 1 and err == ""
    (mismatch,) = [line for line in out.splitlines() if line.startswith("MISMATCH")]
    expected = document["revision_note"]
    assert mismatch == (
        "MISMATCH $.revision_note: is null, but a trace/2 with a model records its revision in "
        f"words (null only without a model or in trace/1): expected {json.dumps(expected)}"
    )
    reply = opened(nulled)
    assert reply["ok"] and not reply["result"]["ok"]
    assert [m.split(":")[0] for m in reply["result"]["trace_mismatches"]] == ["$.revision_note"]


def test_a_null_revision_note_is_legal_without_a_model_and_in_trace_1(trace_1) -> None:
    supplied = to_json(run_supplied(SMALL))
    assert supplied["model"] is None and supplied["revision_note"] is None
    assert reproduce(supplied) == []
    assert reproduce(edited(trace_1, lambda d: d.update(revision_note=None))) == []


def test_a_wrong_revision_note_is_named_in_json_terms(document) -> None:
    wrong = edited(document, lambda d: d.update(revision_note="pinned: main"))
    assert [str(m) for m in reproduce(wrong)] == [
        f'$.revision_note: is "pinned: main", but the model\'s provenance gives '
        f"{json.dumps(document['revision_note'])}"
    ]


def test_a_null_generation_in_trace_2_is_named(document) -> None:
    nulled = edited(document, lambda d: d["run"].update(generation=None))
    assert [m.where for m in reproduce(nulled)] == ["$.run.generation"]


# ---- optional fields null or removed -----------------------------------------------------


def fields_of(document: dict[str, Any]) -> list[tuple[Any, ...]]:
    """One path per (record, field) of the document: each top-level field, and the fields of
    the first model, load, freeze, interruption, journal entry and trial of each condition
    (chain calls included). Tasks and free maps (registers, prompt hashes) are left out: they
    are compared whole with the regenerated ones (`test_reproduce`)."""
    paths: list[tuple[Any, ...]] = []
    seen: set[tuple[Any, ...]] = set()

    def walk(node: Any, path: tuple[Any, ...], kind: tuple[Any, ...]) -> None:
        if isinstance(node, list):
            for i, item in enumerate(node):
                tag = item.get("condition") if isinstance(item, dict) else None
                walk(item, (*path, i), (*kind, "[]", tag))
        elif isinstance(node, dict) and path[-1:] not in (("registers",), ("prompt_templates",)):
            for key, value in node.items():
                if (*kind, key) not in seen and path[:1] != ("tasks",):
                    seen.add((*kind, key))
                    paths.append((*path, key))
                    walk(value, (*path, key), (*kind, key))

    walk(document, (), ())
    return paths


def where_of(path: tuple[Any, ...]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


@pytest.mark.parametrize("action", ["null", "removed"])
def test_every_field_null_or_removed_reproduces_or_is_named(document, action) -> None:
    """`reproduce` never raises; a document that no longer fits the records is refused at
    the field edited (a removed one: its record, with the key named)."""
    paths = fields_of(document)
    assert len(paths) > 150  # every record type of the trace is reached
    for path in paths:
        doc = copy.deepcopy(document)
        holder = doc
        for key in path[:-1]:
            holder = holder[key]
        if action == "null":
            holder[path[-1]] = None
        else:
            del holder[path[-1]]
        found = [str(m) for m in reproduce(doc)]
        invalid = [m for m in found if "not a valid trace" in m]
        if action == "null":
            assert all(m.startswith(where_of(path) + ":") for m in invalid), (path, invalid)
        else:
            named = f"{where_of(path[:-1])}: not a valid trace: missing keys ['{path[-1]}']"
            assert all(m.startswith(named) for m in invalid), (path, invalid)


def test_an_empty_trial_list_reproduces_or_names_the_freeze(capsys, tmp_path, document):
    supplied = to_json(run_supplied(SMALL))
    empty = edited(supplied, lambda d: d.update(trials=[]))
    empty["summary"] = {k: 0 for k in empty["summary"]}
    status, out, _ = cli(capsys, "reproduce", write(tmp_path, empty))
    # every record re-derives, but no held-out task was observed: not a complete run
    assert status == 1 and "0 trials re-derived exactly" in out and "MISMATCH" not in out
    assert "INCOMPLETE: 6 of 6 held-out tasks of supplied-program have no trial" in out

    no_trials = edited(document, lambda d: d.update(trials=[]))
    wheres = {m.where for m in reproduce(no_trials)}
    gaps = {w for w in wheres if w.endswith(".sequence")}  # the chain: trials are missing
    assert gaps and wheres - gaps == {"$.freezes[0].after_trials"}  # nothing scored past
    assert opened(no_trials)["ok"]


# ---- the header's schema_version against the body ----------------------------------------


@pytest.mark.parametrize(
    ("relabel", "problem"),
    [
        (
            lambda doc, old: edited(doc, lambda d: d.update(schema_version="trace/1")),
            "$.schema_version: says 'trace/1', but the document records trace/2's "
            "revision_note, run.generation (trace/1 never recorded them)",  # faults: [] is none
        ),
        (
            lambda doc, old: edited(old, lambda d: d.update(schema_version="trace/2")),
            "$.schema_version: says 'trace/2', but the document has none of trace/2's fields "
            f"({', '.join(TRACE_2_FIELDS)})",
        ),
        (
            lambda doc, old: edited(doc, lambda d: d.update(schema_version="trace/2")),
            "$.schema_version: says 'trace/2', but its records carry trace/3's hash chain "
            "(prev_sha256): a trace/3 document says 'trace/3'",
        ),
        (
            lambda doc, old: edited(doc, lambda d: d.update(schema_version="trace/5")),
            "$.schema_version: expected one of ['trace/4'], got 'trace/5'",
        ),
    ],
    ids=[
        "trace-3-body-says-trace-1",
        "trace-1-body-says-trace-2",
        "chained-says-trace-2",
        "trace-5",
    ],
)
def test_a_schema_version_the_body_contradicts_is_one_line(
    capsys, tmp_path, document, trace_1, relabel, problem
) -> None:
    path = write(tmp_path, relabel(document, trace_1))
    for argv in (("reproduce", path), ("score", path)):
        status, _, err = cli(capsys, *argv)
        assert status == 1 and err.startswith(f"error: {path}: not a valid trace: {problem}")
        assert len(err.splitlines()) == 1
    reply = opened(relabel(document, trace_1))
    assert not reply["ok"] and problem in reply["error"]["message"]


# ---- trace/1 documents --------------------------------------------------------------------


def test_a_trace_1_document_whose_interrupted_trial_was_attempted_again_reproduces(
    trace_1,
) -> None:
    """trace/1 did not record when an interruption happened (the upgrade numbers them last):
    its re-attempted trial is not "already observed" before it."""
    assert {i["trial_id"] for i in trace_1["interruptions"]} <= {
        t["trial_id"] for t in trace_1["trials"]
    }
    assert reproduce(trace_1) == []


def test_report_and_open_a_trace_read_a_trace_1_document(capsys, tmp_path, trace_1) -> None:
    reply = opened(trace_1)
    assert reply["ok"] and reply["result"]["ok"], reply
    header = json.loads(reply["result"]["header_json"])
    assert header["schema_version"] == "trace/4" and header["revision_note"] is None
    trials = [json.loads(text) for text in reply["result"]["trials_json"]]
    assert [t["sequence"] for t in trials] == sorted(t["sequence"] for t in trials)
    assert open_run(trace_1).ok

    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "trace.json").write_text(json.dumps(trace_1), encoding="utf-8")
    status, out, err = cli(capsys, "report", str(folder), "--out", str(tmp_path / "r.html"))
    assert status == 0 and "re-derives exactly" in out, out + err


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda d: d.update(freezes=[None]), "$.freezes[0]: expected an object (FreezeRecord)"),
        (lambda d: d.update(freezes=5), "$.freezes: expected an array"),
        (lambda d: d.update(freezes="x"), "$.freezes: expected an array"),
        (lambda d: d["freezes"][0].update(after_trials="3"), "$.freezes[0].after_trials:"),
        (lambda d: d.update(trials=5), "$.trials: expected an array"),
        (lambda d: d.update(trials={"a": 1}), "$.trials: expected an array"),
        (lambda d: d.update(interruptions=5), "$.interruptions: expected an array"),
        (lambda d: d.update(interruptions=[7]), "$.interruptions[0]: expected an object"),
    ],
    ids=[
        "freeze-null",
        "freezes-number",
        "freezes-text",
        "after-trials-text",
        "trials-number",
        "trials-object",
        "interruptions-number",
        "interruption-number",
    ],
)
def test_a_malformed_trace_1_body_is_one_line_naming_the_field(
    capsys, monkeypatch, tmp_path, trace_1, change, named
) -> None:
    path = write(tmp_path, edited(trace_1, change))
    status, _, err = cli(capsys, "reproduce", path)
    assert status == 1 and err.startswith(f"error: {path}: not a valid trace: {named}"), err
    assert len(err.splitlines()) == 1
    # the page resuming such a stored sweep: a refused request, never an internal error
    monkeypatch.setattr(bridge, "SESSION", None)
    request = {"type": "sweep_resume", "id": 1, "trace_json": json.dumps(edited(trace_1, change))}
    reply = json.loads(handle(json.dumps(request)))
    assert not reply["ok"] and reply["error"]["code"] == "bad_request"
    assert named in reply["error"]["message"]


def test_a_trace_1_freeze_after_more_trials_than_there_are_is_named(trace_1) -> None:
    """Not "missing keys ['sequence']" (the upgrade numbers it after every trial)."""
    found = reproduce(edited(trace_1, lambda d: d["freezes"][0].update(after_trials=999)))
    assert [m.where for m in found] == ["$.freezes[0].after_trials"]


# ---- what the writer of a completion or a model record guarantees -------------------------


NO_GENERATION = (
    "(null only when no generation ran: then failure says why, text is empty, output_tokens, "
    "output_token_ids, generation_ms and time_to_first_token_ms null)"
)
"""The rule a null finish_reason breaks, as `reproduce` words it."""


def first(document: dict[str, Any], condition: str) -> int:
    """The index of the first observed trial of `condition` (each one made model calls)."""
    return next(i for i, t in enumerate(document["trials"]) if t["condition"] == condition)


def whole_task(document: dict[str, Any]) -> tuple[int, str]:
    """The last model-only trial (`7`, finish `eos`, 1 output token), held out: no frozen
    profile hashes its token counts; and its completion's path."""
    i = max(i for i, t in enumerate(document["trials"]) if t["condition"] == "model-only")
    completion = document["trials"][i]["completion"]
    assert (completion["finish_reason"], completion["output_tokens"]) == ("eos", 1)
    return i, f"$.trials[{i}].completion"


def on_completion(document: dict[str, Any], i: int, **fields: Any) -> dict[str, Any]:
    """The document with fields of trial i's completion edited (and the trial's own token
    counts, which are the completion's, kept in step with them)."""

    def change(d: dict[str, Any]) -> None:
        d["trials"][i]["completion"].update(fields)
        for name in ("input_tokens", "output_tokens"):
            if name in fields:
                d["trials"][i][name] = fields[name]

    return edited(document, change)


def test_a_null_finish_beside_generated_text_is_one_mismatch_naming_the_rule(
    capsys, tmp_path, document
) -> None:
    """The issue's example: finish null is legal only when no generation ran."""
    i, at = whole_task(document)
    nulled = on_completion(document, i, finish_reason=None)
    status, out, err = cli(capsys, "reproduce", write(tmp_path, nulled))
    assert status == 1 and err == ""
    (mismatch,) = [line for line in out.splitlines() if line.startswith("MISMATCH")]
    assert mismatch == (
        f"MISMATCH {at}.finish_reason: is null, but the completion records text, "
        f"output_tokens, generation_ms, no failure {NO_GENERATION}"
    )
    reply = opened(nulled)
    assert reply["ok"] and not reply["result"]["ok"]
    # the page names the trial and the field where the CLI names the JSON path (issue 25)
    from pyapp.records import read_trace
    from pyapp.report import named

    page_line = named(mismatch.removeprefix("MISMATCH "), read_trace(nulled))
    assert page_line.startswith(nulled["trials"][i]["trial_id"] + " · completion.finish_reason:")
    assert reply["result"]["trace_mismatches"] == [page_line]


def test_a_completion_that_generated_nothing_is_legal_with_finish_null() -> None:
    """An input over the cap: finish null, failure input_budget, nothing generated."""
    over = FlakyAdapter(lambda n: False)
    over._replies = lambda prompt, caps: ScriptedReply("7", input_tokens=caps.max_input_tokens + 1)
    sweep = Sweep(
        params=SMALL, conditions=("model-only", "controlled-chain"), model=over.provenance
    )
    assert run(run_phase(sweep, "measure", over)) == "finished"
    trace = to_json(sweep.trace())
    completions = [t["completion"] or t["chain"]["calls"][0]["completion"] for t in trace["trials"]]
    assert {(c["finish_reason"], c["failure"]["code"]) for c in completions} == {
        (None, "input_budget")
    }
    assert reproduce(trace) == []


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        (
            {"finish_reason": "length"},
            "output_tokens",
            "is 1, but finish_reason 'length' stops at the call's max_new_tokens: expected 256",
        ),
        (
            {"output_tokens": None},
            "output_tokens",
            "is null, but finish_reason 'eos' ended a generation, which counts its output "
            "tokens (null only when none ran or it broke down)",
        ),
        (
            {"output_token_ids": [5, 6]},
            "output_tokens",
            "is 1, but output_token_ids holds 2 ids",
        ),
        (
            {"input_tokens": 1025},
            "input_tokens",
            "is 1025, over the call's max_input_tokens 1024, but the completion does not fail "
            "input_budget (over the cap nothing is generated)",
        ),
    ],
    ids=["length-not-the-cap", "eos-uncounted", "ids", "over-input"],
)
def test_a_contradictory_whole_task_completion_is_one_mismatch(
    document, fields, field, message
) -> None:
    """Edits the judge reads the same way: the verdict still re-derives, so the one
    mismatch is the broken rule."""
    i, at = whole_task(document)
    found = [str(m) for m in reproduce(on_completion(document, i, **fields))]
    assert found == [f"{at}.{field}: {message}"]


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        (
            {"finish_reason": None, "text": "", "output_tokens": None, "generation_ms": None},
            "finish_reason",
            f"is null, but the completion records no failure {NO_GENERATION}",
        ),
        (
            {"failure": {"code": "not_loaded", "message": "x"}},
            "finish_reason",
            "is \"eos\", but failure 'not_loaded' gives null (null only for bad_request, busy, "
            "input_budget, not_loaded; timeout and cancelled their own; any other failure error)",
        ),
        (
            {"finish_reason": "timeout", "failure": {"code": "cancelled", "message": "x"}},
            "finish_reason",
            'is "timeout", but failure \'cancelled\' gives "cancelled" (null only for '
            "bad_request, busy, input_budget, not_loaded; timeout and cancelled their own; any "
            "other failure error)",
        ),
        (
            {"finish_reason": "cancelled"},
            "failure",
            "is null, but finish_reason 'cancelled' records failure 'cancelled'",
        ),
        (
            {
                "finish_reason": None,
                "text": "",
                "output_tokens": None,
                "generation_ms": None,
                "failure": {"code": "input_budget", "message": "x"},
            },
            "input_tokens",
            "is 100, within the call's max_input_tokens 1024, but the completion fails "
            "input_budget",
        ),
    ],
    ids=[
        "finish-null-no-failure",
        "eos-with-failure",
        "timeout-cancelled",
        "cancelled-no-failure",
        "budget-within-cap",
    ],
)
def test_a_finish_and_failure_that_contradict_are_named_at_the_completion(
    document, fields, field, message
) -> None:
    """The judge then reads a failure, so the trial's verdict is re-derived differently
    too; at the completion itself exactly one line names the broken rule."""
    i, at = whole_task(document)
    found = reproduce(on_completion(document, i, **fields))
    assert [str(m) for m in found if m.where.startswith(at)] == [f"{at}.{field}: {message}"]
    assert all(m.where.startswith(f"$.trials[{i}]") or m.where == "$.summary" for m in found)


def test_a_chain_call_finished_at_length_below_its_cap_is_named(document) -> None:
    i = first(document, "controlled-chain")
    at = f"$.trials[{i}].chain.calls[0].completion"
    call = document["trials"][i]["chain"]["calls"][0]
    assert call["completion"]["finish_reason"] == "eos" and call["caps"]["max_new_tokens"] == 32
    lengthened = edited(
        document,
        lambda d: d["trials"][i]["chain"]["calls"][0]["completion"].update(finish_reason="length"),
    )
    found = [str(m) for m in reproduce(lengthened)]
    # a profile trial: the chain head the freeze committed to is not this trace's any more
    assert found[0] == (
        f"{at}.output_tokens: is {call['completion']['output_tokens']}, but finish_reason "
        "'length' stops at the call's max_new_tokens: expected 32"
    )
    assert all(m.startswith("$.freezes: freeze of ") for m in found[1:])


@pytest.mark.parametrize(
    ("backend", "rule"),
    [
        (
            None,
            "is null, but the last load ($.model.loads[0]) succeeded "
            "(null only when the last load failed)",
        ),
        (
            "wasm",
            "is 'wasm', but the last load ($.model.loads[0]) succeeded on 'scripted' "
            "(the backend never changes silently)",
        ),
    ],
    ids=["null", "other"],
)
def test_a_backend_other_than_the_last_successful_loads_is_named(document, backend, rule) -> None:
    """The model record's backend is the one its last successful load runs on; named in one
    line, not only as "mixed identities" on every trial (the identity hashes the backend)."""
    changed = edited(document, lambda d: d["model"].update(backend_actual=backend))
    found = reproduce(changed)
    identity = [m for m in found if m.where.endswith(".model_identity")]
    frozen = [m for m in found if m.where == "$.freezes" and "recorded hash" in m.message]
    assert identity and all("mixed identities" in m.message for m in identity)
    assert [str(m) for m in found if m not in identity + frozen] == [
        f"$.model.backend_actual: {rule}"
    ]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"backend_actual": None}, "backend_actual: is null, but the load succeeded"),
        ({"error_code": "load_failed"}, "error_code: is 'load_failed', but the load succeeded"),
        (
            {"ok": False, "error_code": None, "backend_actual": None},
            "error_code: is null, but the load failed and must say why",
        ),
        (
            {"ok": False, "error_code": "load_failed"},
            "backend_actual: is 'scripted', but the load failed: no backend runs the model",
        ),
    ],
    ids=["ok-no-backend", "ok-with-error", "failed-unexplained", "failed-with-backend"],
)
def test_a_load_record_that_contradicts_itself_is_named(document, fields, message) -> None:
    changed = edited(document, lambda d: d["model"]["loads"][0].update(fields))
    found = [str(m) for m in reproduce(changed) if m.where.startswith("$.model.loads")]
    assert [m.split(" (")[0] for m in found] == [f"$.model.loads[0].{message}"]


def test_a_partial_that_generated_text_beside_a_null_finish_is_named(document) -> None:
    """An interruption's `partial` (`not_loaded`: finish null, nothing generated) keeps the
    rules too; with text put back it is named at its completion."""
    partial = document["interruptions"][0]["partial"]
    assert partial["completion"]["finish_reason"] is None
    assert partial["completion"]["failure"]["code"] == "not_loaded"
    texted = edited(
        document, lambda d: d["interruptions"][0]["partial"]["completion"].update(text="7")
    )
    assert [str(m) for m in reproduce(texted)] == [
        "$.interruptions[0].partial.completion.finish_reason: is null, but the completion "
        f"records text {NO_GENERATION}"
    ]


def test_a_journal_completion_is_held_to_the_same_rules() -> None:
    """The Journal's free prompts are never scored, but their completions are the same
    writer's: a `length` finish short of the recorded caps is named."""
    page = Page(ScriptedAdapter(known_model))
    assert page_call(page, "journal_generate", prompt="What is 2 + 2?")["ok"]
    page_call(page, "sweep_start", seed=1729, conditions=["model-only"])
    trace = page_document(page, "sweep_trace", "trace")
    assert reproduce(trace) == [] and trace["journal"][0]["completion"]["output_tokens"] == 1
    cut = edited(trace, lambda d: d["journal"][0]["completion"].update(finish_reason="length"))
    assert [str(m) for m in reproduce(cut)] == [
        "$.journal[0].completion.output_tokens: is 1, but finish_reason 'length' stops at the "
        "call's max_new_tokens: expected 256"
    ]
