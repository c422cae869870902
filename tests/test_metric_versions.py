"""The Wilson bounds at k = 0 and k = n are exact (metrics/2), and documents made before
re-derive under the version they were made with (metrics/1): reproduce of an old trace and
its predictions stays ok, a new one holds the exact bounds."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pyapp.cli.main import main
from pyapp.predict import (
    METRIC_VERSION,
    calibration_cells,
    frozen_as_recorded,
    score_trace,
    wilson_interval,
)
from pyapp.records import read_trace, to_json
from pyapp.synthetic import parse_spec, run_seed
from pyapp.tasks import TaskParams
from pyapp.verify import limitations, reproduce_predictions
from pyapp.verify.reproduce import reproduce

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_the_wilson_bounds_at_k_0_and_k_n_are_exactly_0_and_1():
    # the reproducer: (60, 60) gave 0.9999999999999998, (0, 6) gave 2.8e-17
    assert wilson_interval(60, 60)[1] == 1.0
    assert wilson_interval(300, 300)[1] == 1.0
    assert wilson_interval(0, 6)[0] == 0.0
    assert all(wilson_interval(n, n)[1] == 1.0 for n in range(1, 1001))
    assert all(wilson_interval(0, n)[0] == 0.0 for n in range(1, 1001))
    # elsewhere the interval is the one it was
    for k, n in ((1, 6), (5, 6), (30, 60), (59, 60)):
        assert wilson_interval(k, n) == wilson_interval(k, n, version="metrics/1")


def test_the_older_metric_version_keeps_its_numbers():
    assert wilson_interval(0, 6, version="metrics/1")[0] == 2.7755575615628914e-17
    assert wilson_interval(60, 60, version="metrics/1")[1] == 0.9999999999999998
    with pytest.raises(ValueError, match="unknown metric version"):
        wilson_interval(1, 2, version="metrics/9")
    cells = calibration_cells([0.0] * 6, [False] * 6, version="metrics/1")
    assert cells[0].wilson_low == 2.7755575615628914e-17
    assert calibration_cells([0.0] * 6, [False] * 6)[0].wilson_low == 0.0


def test_an_old_trace_3_and_its_predictions_reproduce_under_metrics_1(capsys):
    """tests/fixtures/trace-3-metrics-1.json and predictions-4-metrics-1.json were written by
    the code before metrics/2 (commit 495938b, `python -m pyapp simulate --model
    independent:p_mul=1.0 --seeds 7..7 --conditions model-only`): its mul probes all failed,
    so its profile holds wilson_low 2.7755575615628914e-17."""
    trace_path = FIXTURES / "trace-3-metrics-1.json"
    predictions_path = FIXTURES / "predictions-4-metrics-1.json"
    recorded = json.loads(predictions_path.read_text(encoding="utf-8"))
    lows = [op["wilson_low"] for op in recorded["conditions"][0]["frozen"]["profile"]["ops"]]
    assert 2.7755575615628914e-17 in lows
    status = main(["reproduce", str(trace_path), "--predictions", str(predictions_path)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "freeze of model-only made under metrics/1" in out
    assert "every number in" in out
    trace = read_trace(json.loads(trace_path.read_text(encoding="utf-8")))
    assert frozen_as_recorded(trace, trace.freezes[0])[1] == "metrics/1"


def test_a_new_run_holds_the_exact_bounds_and_reproduces():
    run = run_seed(parse_spec("independent:p_mul=1.0"), TaskParams(seed=7), ["model-only"])
    profile = run.predictions.conditions[0].frozen.profile
    assert [op.wilson_low for op in profile.ops if op.successes == 0] == [0.0]
    assert all(op.wilson_high == 1.0 for op in profile.ops if op.successes == op.trials)
    document = to_json(run.trace)
    assert reproduce(document) == []
    assert reproduce_predictions(document, to_json(run.predictions)) == []
    assert not any("metrics/1" in line for line in limitations(document))
    assert frozen_as_recorded(run.trace, run.trace.freezes[0])[1] == METRIC_VERSION


def test_where_the_profile_cannot_tell_the_versions_apart_the_document_does():
    # A profile with no op at k = 0 or k = n hashes alike under both versions; a predictions
    # document made before metrics/2 still re-derives (its calibration cells under
    # metrics/1), and one mixing the versions does not.
    run = run_seed(parse_spec("independent:p_mul=0.5"), TaskParams(seed=3), ["model-only"])
    ops = run.predictions.conditions[0].frozen.profile.ops
    assert all(0 < op.successes < op.trials for op in ops if op.op == "mul")
    document = to_json(run.trace)
    old = to_json(score_trace(run.trace, ("metrics/1", METRIC_VERSION)))
    new = to_json(run.predictions)
    assert old != new  # its calibration cells have one at k = 0 or k = n
    assert reproduce_predictions(document, old) == []
    mixed = json.loads(json.dumps(new))
    mixed["conditions"][0]["scores"] = old["conditions"][0]["scores"]
    mixed["conditions"][0]["state_aware"] = new["conditions"][0]["state_aware"]
    assert mixed not in (new, old)
    assert reproduce_predictions(document, mixed) != []


def test_a_trace_whose_freeze_no_version_explains_is_a_mismatch():
    run = run_seed(parse_spec("independent"), TaskParams(seed=2), ["model-only"])
    broken = replace(run.trace, freezes=(replace(run.trace.freezes[0], profile_sha256="0" * 64),))
    with pytest.raises(ValueError, match="recorded hash"):
        score_trace(broken)


def test_an_empty_calibration_bin_carries_no_interval_under_metrics_2():
    """Issue 37: an empty bin printed the interval [0, 1] as if it had been measured."""
    empty = calibration_cells([0.1, 0.1], [True, False])[4]
    assert empty.n == 0 and (empty.wilson_low, empty.wilson_high) == (None, None)
    old = calibration_cells([0.1, 0.1], [True, False], version="metrics/1")[4]
    assert (old.wilson_low, old.wilson_high) == (0.0, 1.0)  # as documents made before hold
    # a document made before, with [0, 1] in its empty bins, still re-derives exactly
    trace = json.loads((FIXTURES / "trace-3.json").read_text(encoding="utf-8"))
    document = json.loads((FIXTURES / "predictions-4.json").read_text(encoding="utf-8"))
    assert any(c["n"] == 0 and c["wilson_high"] == 1.0 for c in cells_of(document))
    assert reproduce_predictions(trace, document) == []


def cells_of(document: object) -> list[dict]:
    if isinstance(document, dict):
        if "wilson_low" in document and "observed_rate" in document:
            return [document]
        return [c for v in document.values() for c in cells_of(v)]
    if isinstance(document, list):
        return [c for v in document for c in cells_of(v)]
    return []
