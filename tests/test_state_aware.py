"""The state-aware predictor, older predictions documents still read, calibration presets."""

import json
import math
from collections import Counter
from pathlib import Path

import pytest
from asyncrun import in_thread

from pyapp.cli.main import main
from pyapp.predict import ASSUMPTIONS_3, read_predictions, state_aware
from pyapp.records import Trace, from_json, to_json
from pyapp.synthetic import run_seed, shipped
from pyapp.tasks import PRESETS, TaskParams, generate, preset_params
from pyapp.verify import reproduce_predictions

ROOT = Path(__file__).resolve().parents[1]


def rows(digit_counts, right_when):
    out = []
    for d in digit_counts:
        step = state_aware.Step("mul", 10 ** (d - 1) + 1, 7, (10 ** (d - 1) + 1) * 7)
        out.append((state_aware.features(step), right_when(d)))
    return out


def test_the_fit_finds_the_direction_of_the_state_dependence():
    data = rows([1, 2, 3, 4, 5, 6] * 20, lambda d: d <= 3)
    beta = state_aware.fit_logistic(data)
    small = state_aware._sigmoid(sum(b * x for b, x in zip(beta, data[0][0], strict=True)))
    large = state_aware._sigmoid(sum(b * x for b, x in zip(beta, data[5][0], strict=True)))
    assert small > 0.8 and large < 0.2


def test_the_prior_keeps_one_sided_small_samples_finite():
    beta = state_aware.fit_logistic(rows([4, 5, 4, 5, 4, 5], lambda d: True))
    assert all(math.isfinite(b) for b in beta)
    p = state_aware._sigmoid(sum(b * x for b, x in zip(beta, rows([4], bool)[0][0], strict=True)))
    assert 0.8 < p < 0.99  # shrunk from the plug-in 1.0
    assert state_aware.fit_logistic([]) == (0.0,) * len(state_aware.FEATURES)


def test_state_aware_composes_exact_intermediates_and_never_extrapolates():
    tasks = generate(TaskParams())
    recurrence = next(t for t in tasks if t.id == "recurrence-2")
    steps = state_aware.program_steps(recurrence.program, dict(recurrence.registers))
    assert [s.op for s in steps] == list(recurrence.operations)
    assert steps[-1].result == recurrence.answer
    model = state_aware.StateAwareModel(
        state_aware.FEATURES,
        state_aware.PRIOR,
        tuple(
            state_aware.OpStateModel(op, 6, 3, (0.0, -1.0, 0.0, 0.0, 0.0), None, (0,) * 5, (1,) * 5)
            for op in ("add", "sub", "mul")
        ),
        "",
    )
    huge = state_aware.Step("mul", 10**8, 10**8, 10**16)
    # clamped to max_digits - 3 = 1 at most: σ(-1), not σ(-6)
    assert state_aware.step_probability(model, huge) == pytest.approx(1 / (1 + math.e))


NEWER_FROZEN_FIELDS = (
    "chain_head", "task_set", "state_aware", "reference_probability", "terms", "draw_seed"
)  # fmt: skip
"""A frozen profile's fields that no predictions/1-3 document holds."""


@pytest.mark.parametrize(
    ("version", "absent"),
    [
        # `skill` (issue 25) is newer than all three
        ("predictions/3", ("skill",)),
        ("predictions/2", ("state_aware", "skill")),
        ("predictions/1", ("state_aware", "revision_note", "interrupted", "skill")),
    ],
)
def test_both_predictors_side_by_side_and_older_documents_still_read(version, absent):
    run = in_thread(run_seed, shipped("size-dependent"), TaskParams(seed=2), ("model-only",))
    document = to_json(run.predictions)
    assert document["schema_version"] == "predictions/4"
    frozen = document["conditions"][0]["frozen"]
    assert frozen["state_aware"] == document["conditions"][0]["state_aware"]["model"]
    assert frozen["task_set"] == document["task_set"] and frozen["chain_head"]
    result = document["conditions"][0]
    assert [p["task_id"] for p in result["predictions"]] == [
        p["task_id"] for p in result["state_aware"]["predictions"]
    ]
    assert result["state_aware"]["scores"]["n"] == result["scores"]["n"] == 6

    old = json.loads(json.dumps(document))  # as that version wrote it
    old["schema_version"] = version
    old["assumptions"] = list(ASSUMPTIONS_3)
    del old["task_set"]
    for condition in old["conditions"]:
        for key in absent:
            del condition[key]
        for key in NEWER_FROZEN_FIELDS:
            del condition["frozen"][key]
        if condition.get("interrupted"):
            condition["interrupted"]["output_shown"] = 0  # always 0 before predictions/4
        for op in condition["frozen"]["profile"]["ops"]:
            del op["distinct_states"]
        if "state_aware" in condition:
            del condition["state_aware"]["model"]["version"]
    parsed = read_predictions(old)
    assert (parsed.conditions[0].state_aware is None) == ("state_aware" in absent)
    assert parsed.task_set is None and parsed.conditions[0].frozen.state_aware is None
    trace = to_json(run.trace)
    assert reproduce_predictions(trace, old) == []
    old["conditions"][0]["scores"]["n"] = 5
    assert reproduce_predictions(trace, old)


def test_a_trace_without_operand_digits_reads_as_uniform():
    run = in_thread(run_seed, shipped("independent"), TaskParams(seed=2), ("model-only",))
    document = to_json(run.trace)
    del document["run"]["task_params"]["operand_digits"]
    trace = from_json(Trace, document)
    assert trace.run.task_params.operand_digits == "uniform"


def test_presets_give_6_60_300_trials_per_op_and_stratified_digits():
    assert preset_params("design") == TaskParams()
    for name, per_op in (("design", 6), ("calibration-60", 60), ("calibration-300", 300)):
        counts = Counter(t.family for t in generate(preset_params(name)) if t.split == "profile")
        assert counts == {"add": per_op, "sub": per_op, "mul": per_op}, name
    tasks = generate(preset_params("calibration-60", seed=3))
    pairs = {
        (len(str(abs(t.registers["a"]))), len(str(abs(t.registers["b"]))))
        for t in tasks
        if t.family == "add" and t.group == "primitive"
    }
    assert pairs == {(a, b) for a in range(1, 7) for b in range(1, 7)}
    assert set(PRESETS) >= {"design", "calibration-60", "calibration-300"}


def test_the_preset_option_of_the_cli(capsys):
    assert main(["tasks", "--preset", "calibration-60", "--json"]) == 0
    tasks = json.loads(capsys.readouterr().out)
    assert sum(1 for t in tasks if t["family"] == "mul") == 60
    assert main(["tasks", "--preset", "calibration-60", "--param", "primitives_per_op=1"]) == 0


@pytest.mark.parametrize("x", [-700.0, -30.5, -1.0, -1e-9, 0.0, 0.3465, 2.0, 17.25, 700.0])
def test_the_portable_exp_agrees_with_libm(x):
    # basic IEEE operations only, so the page (Pyodide) and `reproduce` get the same bits
    assert state_aware._exp(x) == pytest.approx(math.exp(x), rel=1e-13)


def test_a_predictions_1_document_written_by_the_product_only_version_reads_and_compares(
    capsys,
):
    # tests/fixtures/predictions-1.json: written by the code before the state-aware predictor
    # (commit fcbfa78) from a scripted fixture run; it has no `state_aware` anywhere.
    path = ROOT / "tests" / "fixtures" / "predictions-1.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["schema_version"] == "predictions/1"
    parsed = read_predictions(document)
    assert [c.state_aware for c in parsed.conditions] == [None, None]
    assert parsed.conditions[0].revision_note == "not recorded (predictions/1)"
    assert (
        to_json(parsed)["conditions"][0]["predictions"] == document["conditions"][0]["predictions"]
    )
    assert main(["compare", str(path), str(path)]) == 0
    assert "controlled-chain" in capsys.readouterr().out
