import copy

import pytest

from pyapp.conditions import run_supplied
from pyapp.records import to_json
from pyapp.verify.reproduce import reproduce


@pytest.fixture(scope="module")
def document():
    return to_json(run_supplied())


def tampered(document, change):
    doc = copy.deepcopy(document)
    change(doc)
    return [str(m) for m in reproduce(doc)]


def test_an_untouched_trace_reproduces(document):
    assert reproduce(document) == []


def set_in(path_value):
    def change(doc):
        *path, last = path_value[0]
        node = doc
        for key in path:
            node = node[key]
        node[last] = path_value[1](node[last]) if callable(path_value[1]) else path_value[1]

    return change


TAMPERINGS = {
    "task answer": ((["tasks", 0, "answer"], lambda v: v + 1), "$.tasks[0]"),
    "task register": ((["tasks", 5, "registers", "a"], 7), "$.tasks[5]"),
    "task program": (
        (["tasks", 0, "program", "op"], "sub"),
        "$.tasks[0]",
    ),
    "trial expected": ((["trials", 1, "expected"], lambda v: v - 1), "$.trials[1]"),
    "trial result": ((["trials", 2, "result"], lambda v: v + 1), "$.trials[2].result"),
    "trial verdict": ((["trials", 3, "correct"], False), "$.trials[3].correct"),
    "trial step": (
        (["trials", 8, "steps", 0, "result"], lambda v: v + 1),
        "$.trials[8].steps",
    ),
    "trial program": (
        (["trials", 4, "program_text"], '{"op":"add","args":[{"ref":"a"},{"ref":"a"}]}'),
        "$.trials[4]",
    ),
    "evidence label": ((["trials", 0, "evidence"], "model"), "$.trials[0]"),
    "summary": ((["summary", "correct"], 23), "$.summary"),
    "seed": ((["run", "task_params", "seed"], 1730), "$.tasks[0]"),
    "generator version": ((["run", "generator_version"], "tasks/0"), "generator_version"),
    "prompt hash": (
        (["run", "prompt_templates", "integer-answer/1"], "0" * 64),
        "prompt_templates",
    ),
}


@pytest.mark.parametrize("name", sorted(TAMPERINGS))
def test_tampering_is_caught(document, name):
    change, where = TAMPERINGS[name]
    mismatches = tampered(document, set_in(change))
    assert mismatches, f"tampering with the {name} went unnoticed"
    assert any(where in m for m in mismatches), mismatches


def test_a_removed_trial_changes_the_summary(document):
    mismatches = tampered(document, lambda doc: doc["trials"].pop())
    assert any("$.summary" in m for m in mismatches)


def test_a_duplicated_trial_is_caught(document):
    mismatches = tampered(document, lambda doc: doc["trials"].append(doc["trials"][0]))
    assert any("duplicate trial" in m for m in mismatches)


def test_a_document_that_is_not_a_trace_is_reported(document):
    assert reproduce({"hello": 1})
    mismatches = tampered(document, lambda doc: doc.pop("summary"))
    assert mismatches and "not a valid trace" in mismatches[0]
