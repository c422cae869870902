"""site/eta.js under Node, driven by a scripted clock (issue 25 item 4): the ETA is estimated
per phase and condition from what has been measured, is a range while a group left has no
timed trial, and is never the elapsed time spread evenly over trials."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pyapp.experiment.phases import Sweep, plan
from pyapp.records.model import ScriptedAdapter, ScriptedReply
from pyapp.tasks.taskset import preset_params

ETA = Path(__file__).resolve().parents[2] / "site" / "eta.js"

# What one trial takes under the scripted clock (ms): the calibration-60 fixture run.
COST_MS = {"model-only": 300.0, "supplied-program": 2.0, "model-program": 550.0}

SCRIPT = """
import { Eta, etaText } from %(module)s;
const [left, trials, checkpoints] = %(data)s;
const eta = new Eta(left);
let now = 1000;
const out = {};
trials.forEach(([phase, condition, ms], i) => {
  const estimate = eta.estimate(now);
  if (checkpoints.includes(i)) out[i] = { estimate, text: etaText(estimate) };
  eta.started(phase, condition, now);
  now += ms;
  eta.finished(phase, condition, now);
});
out.end = eta.estimate(now);
console.log(JSON.stringify(out));
"""


def node_eta(left: list[dict[str, object]], trials: list[list[object]], at: list[int]) -> dict:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    script = SCRIPT % {"module": json.dumps(ETA.as_uri()), "data": json.dumps([left, trials, at])}
    done = subprocess.run(
        [node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    result: dict = json.loads(done.stdout)
    return result


def calibration_run() -> tuple[list[dict[str, object]], list[list[object]]]:
    """The plan of a calibration-60 sweep (measure, then held-out) and each trial's cost."""
    model = ScriptedAdapter(lambda prompt, caps: ScriptedReply("7"))
    conditions = tuple(COST_MS)
    sweep = Sweep(preset_params("calibration-60", 1729), conditions, model.provenance)
    trials: list[list[object]] = []
    left: list[dict[str, object]] = []
    for phase in ("measure", "heldout"):
        pending = plan(sweep, phase)
        for condition in conditions:
            n = sum(1 for c, _ in pending if c == condition)
            left.append({"phase": phase, "condition": condition, "trials": n})
        trials += [[phase, c, COST_MS[c]] for c, _ in pending]
    return left, trials


def test_the_eta_is_per_condition_and_a_range_until_measured() -> None:
    left, trials = calibration_run()
    total = len(trials)
    first_program = next(i for i, t in enumerate(trials) if t[1] == "model-program")
    at = [0, 1, 225, first_program + 1, total - 1]
    out = node_eta(left, trials, at)

    def truth(i: int) -> float:  # what really remains before trial i, in seconds
        return sum(float(ms) for _, _, ms in trials[i:]) / 1000  # type: ignore[misc]

    assert out["0"]["estimate"] is None  # nothing timed: no number, and it says so
    assert out["0"]["text"] == "ETA: known once the first trial has been timed"

    at225 = out["225"]["estimate"]
    elapsed = truth(0) - truth(225)
    naive = elapsed / 225 * (total - 225)  # the old estimate: elapsed spread evenly
    assert at225["unmeasured"]  # model-program not timed yet: a range, named
    assert at225["low_s"] <= truth(225) <= at225["high_s"]
    assert abs(naive - truth(225)) > 0.2 * truth(225)  # the old estimate misled by > 20 %
    assert "a range until" in out["225"]["text"] and "–" in out["225"]["text"]

    # every group left has been timed: one number, exact under constant per-group costs
    later = out[str(first_program + 1)]["estimate"]
    print(f"at 225/{total}: truth {truth(225):.1f} s, naive {naive:.1f} s, range {at225}")
    if not later["unmeasured"]:
        assert later["low_s"] == pytest.approx(truth(first_program + 1))
    last = out[str(total - 1)]["estimate"]
    assert last["unmeasured"] == [] and last["low_s"] == pytest.approx(truth(total - 1))
    assert out["end"]["high_s"] == 0
