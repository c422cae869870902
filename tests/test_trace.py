import json

import pytest
from asyncrun import in_thread
from tracecheck import assert_valid_trace

from pyapp.cli import schemas
from pyapp.conditions import run_supplied
from pyapp.errors import RecordError
from pyapp.host import EXPORTS
from pyapp.records import (
    SCHEMA_VERSION,
    BrowserInfo,
    Trace,
    Trial,
    document_text,
    field_docs,
    from_json,
    loads,
    strip_volatile,
    to_json,
)
from pyapp.tasks import TaskParams


@pytest.fixture(scope="module")
def trace():
    return run_supplied()


def test_committed_schemas_match_the_records():
    for name, schema in in_thread(schemas).items():
        committed = json.loads((EXPORTS / name).read_text(encoding="utf-8"))
        assert committed == schema, f"{name} drifted: run `python -m pyapp schema`"


def test_supplied_program_trace_is_24_correct_controls(trace):
    document = to_json(trace)
    assert_valid_trace(document)
    assert next(iter(document)) == "schema_version"
    assert document["schema_version"] == SCHEMA_VERSION
    assert trace.summary.trials == trace.summary.correct == 24
    assert trace.summary.model_evidence_trials == 0
    assert trace.model is None
    for trial in trace.trials:
        assert trial.evidence == "control"
        assert "not model evidence" in trial.evidence_note
        assert trial.failure is None and trial.prompt is None
        assert trial.timings.generation_ms is None
        # issue 23 §8: a whole-task or control verification is one integer equality, not a
        # timed phase (it was two back-to-back clock reads): null
        assert trial.timings.verification_ms is None and trial.timings.total_ms >= 0
        assert trial.steps and trial.steps[-1].result == trial.result == trial.expected
    assert trace.environment.runtime == "cpython"
    assert trace.environment.clock.declared_resolution_ms > 0


def test_trace_round_trips_through_json(trace):
    assert loads(document_text(trace, "trace")) == trace


def test_every_record_field_is_documented():
    schema = in_thread(schemas)["trace.schema.json"]
    for name, definition in schema["$defs"].items():
        if name == "Program":
            continue
        for field, prop in definition["properties"].items():
            assert prop.get("description"), f"{name}.{field} has no docstring"


def test_from_json_names_the_path_of_a_type_error(trace):
    document = to_json(trace)
    document["trials"][3]["result"] = "12"
    with pytest.raises(RecordError) as caught:
        from_json(Trace, document)
    assert caught.value.path == "$.trials[3].result"
    document = to_json(trace)
    document["trials"][0]["surprise"] = 1
    with pytest.raises(RecordError, match="unexpected keys"):
        from_json(Trace, document)
    document = to_json(trace)
    document["trials"][0]["correct"] = 1
    with pytest.raises(RecordError):
        from_json(Trace, document)


def test_field_docs_reads_docstrings_under_fields():
    docs = in_thread(field_docs, Trial)
    assert docs["evidence"].startswith("`control`, `fixture`, `synthetic` or `model`")


def test_browser_environment_and_other_seeds_validate():
    browser = BrowserInfo(user_agent="test", cross_origin_isolated=True, hardware_concurrency=2)
    trace = run_supplied(TaskParams(seed=7, primitives_per_op=5), browser)
    assert_valid_trace(to_json(trace))
    assert trace.summary.correct == trace.summary.trials == 33


def test_strip_volatile_makes_two_runs_of_a_seed_equal(trace):
    again = run_supplied()
    a, b = to_json(trace), to_json(again)
    assert a != b  # run ids and timings differ
    assert strip_volatile(a) == strip_volatile(b)


def test_the_python_version_is_never_silently_cut() -> None:
    """Issue 25 item 12: CPython keeps 80 characters of the compiler in `sys.version`;
    Pyodide's is longer. The recorded string says it was cut and closes what it opened."""
    import sys

    from pyapp.records import python_description

    v = sys.version_info
    cut = (
        f"{v.major}.{v.minor}.{v.micro} (main, Sep 14 2026, 03:03:51) [Clang 23.0.0git "
        "(https:/github.com/llvm/llvm-project e5927fecf8a6ce89e1a4eac5b8"
    )
    said = python_description(cut)
    assert said.endswith(
        "e5927fecf8a6ce89e1a4eac5b8…)] (compiler name cut by CPython at 80 characters)"
    )
    whole = f"{v.major}.{v.minor}.{v.micro} (main, May  9 2026, 07:35:25) [GCC 12.2.0]"
    assert python_description(whole) == whole
    assert python_description().startswith(f"{v.major}.{v.minor}.{v.micro}")
