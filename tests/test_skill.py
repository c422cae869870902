"""pyapp.predict.skill (issue 25 item 8): skill against the reference forecast frozen with the
profile, Murphy's decomposition, intervals and the paired difference of the two predictors;
the same numbers in the predictions document, re-derived by `reproduce`."""

from __future__ import annotations

import json
import math
import random

import pytest
from asyncrun import run

from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.predict import brier_score, score_trace, skill
from pyapp.records import ScriptedAdapter, ScriptedReply, to_json
from pyapp.tasks import TaskParams
from pyapp.verify import reproduce_predictions


def test_empty_inputs_are_defined() -> None:
    assert skill.pooled_rate([], []) is None and skill.pooled_rate([0], [0]) is None
    assert skill.brier_skill(0.1, 0.0) is None and skill.brier_skill(None, 0.2) is None
    assert skill.decomposition([], []) is None
    assert skill.mean_interval([]) is None
    one = skill.mean_interval([0.25])
    assert one == skill.Interval(0.25, None, None, 1)
    assert skill.paired_difference([], [], []) is None
    empty = skill.predictor_skill([], [], 0.5)
    assert empty.brier is None and empty.skill is None and empty.brier_reference is None


def test_decomposition_adds_up_to_the_brier_score() -> None:
    rng = random.Random(25)
    for _ in range(200):
        n = rng.randint(1, 30)
        probabilities = [rng.choice([0.0, 0.1, 0.25, 0.5, 0.9, 1.0]) for _ in range(n)]
        outcomes = [rng.random() < 0.4 for _ in range(n)]
        d = skill.decomposition(probabilities, outcomes)
        assert d is not None
        brier = brier_score(probabilities, outcomes)
        assert brier is not None
        assert d.reliability - d.resolution + d.uncertainty == pytest.approx(brier, abs=1e-12)
        assert d.reliability >= 0 and d.resolution >= 0 and 0 <= d.uncertainty <= 0.25


def test_skill_and_interval_by_hand() -> None:
    # forecasts 0.8, 0.2 on outcomes yes, no: Brier 0.04; the reference 0.5 scores 0.25
    s = skill.predictor_skill([0.8, 0.2], [True, False], 0.5)
    assert s.brier is not None and s.brier.mean == pytest.approx(0.04)
    assert s.brier_reference == pytest.approx(0.25)
    assert s.skill == pytest.approx(1 - 0.04 / 0.25)
    # a t interval: values 1, 2, 3 -> mean 2, sd 1, half 4.303 / sqrt(3)
    i = skill.mean_interval([1.0, 2.0, 3.0])
    assert i is not None and i.low == pytest.approx(2 - 4.303 / math.sqrt(3))
    d = skill.paired_difference([1.0, 1.0], [0.0, 0.0], [True, False])
    assert d is not None and d.mean == pytest.approx(0.0)  # (0 - 1) + (1 - 0) over two


def scored_run() -> dict[str, object]:
    """A small finished run whose model answers "7" (wrong on most tasks, right on some)."""
    model = ScriptedAdapter(
        lambda prompt, caps: ScriptedReply("7", input_tokens=9, output_tokens=1)
    )
    params = TaskParams(primitives_per_op=3, probe_pairs=1, recurrence_steps=(2,), determinants=1)
    sweep = Sweep(params=params, conditions=("model-only",), model=model.provenance)

    async def protocol() -> None:
        await run_phase(sweep, "measure", model)
        freeze(sweep)
        await run_phase(sweep, "heldout", model)

    run(protocol())  # a fresh thread: the browser tests leave a loop in this one
    trace: dict[str, object] = to_json(sweep.trace())  # type: ignore[assignment]
    return trace


def test_the_predictions_document_carries_the_skill_and_reproduce_rederives_it() -> None:
    from pyapp.records import read_trace

    trace_json = scored_run()
    doc = score_trace(read_trace(trace_json))
    result = doc.conditions[0]
    s = result.skill
    assert s is not None and s.reference == skill.REFERENCE
    ops = result.frozen.profile.ops
    assert s.reference_probability == sum(o.successes for o in ops) / sum(o.trials for o in ops)
    assert s.product.brier is not None
    assert s.product.brier.mean == pytest.approx(result.scores.brier_final_proxy)
    assert result.state_aware is not None and s.state_aware is not None
    assert s.state_aware.brier is not None
    assert s.state_aware.brier.mean == pytest.approx(result.state_aware.scores.brier_final_proxy)
    assert s.difference is not None
    assert s.difference.mean == pytest.approx(s.product.brier.mean - s.state_aware.brier.mean)

    document = json.loads(json.dumps(to_json(doc)))
    assert reproduce_predictions(trace_json, document) == []
    # a document written before the field existed still re-derives
    older = json.loads(json.dumps(document))
    for condition in older["conditions"]:
        del condition["skill"]
    assert reproduce_predictions(trace_json, older) == []
    # a tampered skill score does not
    document["conditions"][0]["skill"]["product"]["skill"] = 0.99
    found = [str(m) for m in reproduce_predictions(trace_json, document)]
    assert any("skill.product.skill" in m for m in found), found


def test_score_prints_what_each_brier_score_means(tmp_path) -> None:
    import subprocess
    import sys

    path = tmp_path / "trace.json"
    path.write_text(json.dumps(scored_run()), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pyapp", "score", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "reference forecast: the profile's pooled success rate" in done.stdout
    assert "product: Brier " in done.stdout and "skill " in done.stdout
    assert "product − state-aware (paired over tasks):" in done.stdout


def test_intervals_stay_in_the_range_of_what_they_bound() -> None:
    # six tasks, one wrong at certainty: the t interval of the Brier score would reach below 0
    s = skill.predictor_skill([0.0] * 6, [False] * 5 + [True], 0.1)
    assert s.brier is not None and s.brier.low == 0.0 and s.brier.high is not None
    assert s.brier.high <= 1.0
    d = skill.paired_difference([1.0, 0.0], [0.0, 1.0], [False, False])
    assert d is not None and d.low is not None and d.low >= -1.0
