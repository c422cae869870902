"""site/eta.js under Node, replayed on a fake clock from recorded trials (issue 41): each
recorded trial advances the clock by its recorded wall time, and at every trial the shown
range and its midpoint are compared with the time that really remained.

The recordings (`tests/fixtures/eta/*.json`: phase, condition, wall ms from a trial's start
to the next one's, model calls, and the answer tokens the trial was to write, known before it
ran, re-derived from the recorded sweep's task set by `scripts/eta_recordings.py`) come from
real sweeps of the reference subject in the page, calibration-60 and -300 on 2 cores (their
`source` says how): at the default seed under a CI run's load (`loaded-*`) and on the quiet
machine (`quiet-*`); at seeds 11 and 12 on the quiet machine and beside the non-browser suite
(`seed11-*`, `seed12-*`, each set recorded after a change to the estimator was chosen, to
decide it); at seeds 13, 14 and 15 on the quiet machine (`seed13-*`, `seed14-*`, `seed15-*`,
checks of the rule as it stands, added whatever they showed).
The control's trials run first and take milliseconds: until a model call has been timed the
page gives no number (and says so), so the checkpoints count from the model trials on — the
range from the 21st model trial, the midpoint from the first tenth of them.

Issue 41 asks the range to hold the truth at >= 90 % of checkpoints and the midpoint to be
within ±25 % after a tenth of the run. The recordings that miss it are `MISSED`, with their
figures; all the checkpoints pooled are `POOLED`. An estimate of a condition not yet run rests
on another condition's time per call, a ratio that differs between runs by more than ±25 %,
and a loaded machine's speed swings up to 4 x within a run (docs/page.md has the table).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ETA = ROOT / "site" / "eta.js"
RECORDED = sorted((ROOT / "tests" / "fixtures" / "eta").glob("*.json"))
MISSED = {  # recording: (range, midpoint) shares measured, where one is under 90 %
    "loaded-calibration-300": (0.986, 0.818),
    "loaded-calibration-60": (0.919, 0.786),
    "seed11-loaded-calibration-60": (0.851, 0.477),
    "seed12-loaded-calibration-300": (0.990, 0.767),
    "seed12-loaded-calibration-60": (0.960, 0.760),
    "seed13-quiet-calibration-60": (0.994, 0.843),
}
ANSWERS = {"model-only": "integer", "controlled-chain": "integer", "model-program": "program"}

SCRIPT = """
import { Eta, etaText, etaRange } from %(module)s;
const [trials, answers, resumeAt] = %(data)s;
function leftOf(rows) {
  const groups = new Map();
  for (const [phase, condition, , calls, size] of rows) {
    const key = `${phase}/${condition}`;
    const answer = answers[condition] ?? "none";
    const g = groups.get(key) ?? { phase, condition, trials: 0, calls: 0, answer, work: 0 };
    g.trials += 1;
    g.calls += calls;
    // Python's PlanLeft.work: the measure phase's only (a held-out answer's length stays
    // out of the page until it is observed)
    const known = phase === "measure" ? size : null;
    g.work = known == null || g.work == null ? null : g.work + known;
    groups.set(key, g);
  }
  return [...groups.values()];
}
let eta = new Eta(leftOf(trials));
let now = 0;
const out = [];
trials.forEach(([phase, condition, ms, calls, size], i) => {
  if (resumeAt.includes(i)) eta = new Eta(leftOf(trials.slice(i)), trials.slice(0, i));
  const estimate = eta.estimate(now);
  out.push({ estimate, text: etaText(estimate), range: etaRange(estimate) });
  // as the page: TrialStart's answer_tokens and calls
  eta.started(phase, condition, now, phase === "measure" ? size : null, calls);
  now += ms;
  eta.finished(phase, condition, now);
});
console.log(JSON.stringify(out));
"""


def replay(trials: list[list[Any]], resume_at: list[int] = []) -> list[dict[str, Any]]:  # noqa: B006
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    data = json.dumps([trials, ANSWERS, resume_at])
    script = SCRIPT % {"module": json.dumps(ETA.as_uri()), "data": data}
    done = subprocess.run(  # the script on stdin: a long recording exceeds argv's limit
        [node, "--input-type=module", "-"],
        input=script,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: list[dict[str, Any]] = json.loads(done.stdout)
    return result


@functools.cache
def replayed(path: Path) -> list[dict[str, Any]]:
    """The recording at `path` replayed straight through (once a session: it is slow)."""
    return replay(recorded(path))


def recorded(path: Path) -> list[list[Any]]:
    trials: list[list[Any]] = json.loads(path.read_text("utf-8"))["trials"]
    return trials


def truths(trials: list[list[Any]]) -> list[float]:
    """What really remained before each trial, in seconds."""
    left, out = sum(t[2] for t in trials), []
    for t in trials:
        out.append(left / 1000)
        left -= t[2]
    return out


def scores(trials: list[list[Any]], shown: list[dict[str, Any]]) -> tuple[float, float]:
    """The share of checkpoints whose range holds the truth (from the 21st model trial) and
    whose midpoint is within ±25 % of it, or 2 s near the end (from a tenth of the model
    trials)."""
    model = [i for i, t in enumerate(trials) if t[1] != "supplied-program"]
    truth = truths(trials)
    ranged = [i for i in range(model[20], len(trials))]
    inside = [
        e is not None and e["low_s"] <= truth[i] <= e["high_s"]
        for i in ranged
        for e in [shown[i]["estimate"]]
    ]
    middled = range(model[len(model) // 10], len(trials))
    near = [
        e is not None and abs(e["mid_s"] - truth[i]) <= max(0.25 * truth[i], 2.0)
        for i in middled
        for e in [shown[i]["estimate"]]
    ]
    return sum(inside) / len(inside), sum(near) / len(near)


def _met_or_missed(path: Path) -> Any:
    if path.stem not in MISSED:
        return path
    inside, near = MISSED[path.stem]
    reason = f"issue 41 not met here: range {inside:.1%}, midpoint {near:.1%} (docs/page.md)"
    return pytest.param(path, marks=pytest.mark.xfail(strict=True, reason=reason))


@pytest.mark.parametrize(
    "path", [_met_or_missed(p) for p in RECORDED], ids=[p.stem for p in RECORDED]
)
def test_the_range_holds_the_truth_and_its_middle_is_near_it(path: Path) -> None:
    trials = recorded(path)
    shown = replayed(path)
    inside, near = scores(trials, shown)
    print(f"{path.stem}: range holds the truth at {inside:.1%}, midpoint near it at {near:.1%}")
    if path.stem in MISSED:  # the figures docs/page.md gives are the ones measured
        assert (inside, near) == pytest.approx(MISSED[path.stem], abs=0.001)
    assert inside >= 0.90
    assert near >= 0.90


POOLED = (0.981, 0.923)  # every recording's checkpoints together: range, midpoint


def test_over_every_recording_the_range_and_the_midpoint_hold_at_nine_checkpoints_in_ten() -> None:
    """All the recordings' checkpoints together: the range holds the truth and the midpoint is
    within ±25 % at the shares `POOLED` pins (docs/page.md gives them, and how they moved as
    recordings were added)."""
    inside = near = ranged = middled = 0
    for path in RECORDED:
        trials = recorded(path)
        a, b = scores(trials, replayed(path))
        model = [i for i, t in enumerate(trials) if t[1] != "supplied-program"]
        n_range, n_mid = len(trials) - model[20], len(trials) - model[len(model) // 10]
        inside, ranged = inside + round(a * n_range), ranged + n_range
        near, middled = near + round(b * n_mid), middled + n_mid
    print(f"range {inside / ranged:.1%} of {ranged}, midpoint {near / middled:.1%} of {middled}")
    assert (inside / ranged, near / middled) == pytest.approx(POOLED, abs=0.001)
    assert inside / ranged >= 0.90
    assert near / middled >= 0.90


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_after_a_resume_the_earlier_sessions_trials_count(path: Path) -> None:
    trials = recorded(path)
    straight = replayed(path)
    points = [len(trials) // 3, len(trials) // 2, 2 * len(trials) // 3]
    resumed = replay(trials, points)
    for i in points:  # the estimate right after a resume is the one before it
        before, after = straight[i]["estimate"], resumed[i]["estimate"]
        assert after is not None and before is not None
        assert after["mid_s"] == pytest.approx(before["mid_s"], rel=0.05), i
    # and so is every later one: a resume loses nothing
    assert scores(trials, resumed) == pytest.approx(scores(trials, straight), abs=0.005)


def test_no_number_before_a_model_call_is_timed_and_the_text_is_short() -> None:
    trials = recorded(RECORDED[0])
    shown = replay(trials)
    first_model = next(i for i, t in enumerate(trials) if t[1] != "supplied-program")
    # the control's milliseconds say nothing about the model's seconds: no number yet (the
    # old estimate showed "4–6 s" here with minutes left)
    assert all(s["estimate"] is None for s in shown[: first_model + 1])
    assert shown[0]["text"] == "time left: known once a model trial has been timed"
    later = shown[first_model + 30]
    assert later["text"].startswith("about ") and later["text"].endswith(" left")
    assert later["range"].startswith("between ")


def _estimate(script: str) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    head = f"import {{ Eta, KIN }} from {json.dumps(ETA.as_uri())};"
    done = subprocess.run(
        [node, "--input-type=module", "-e", head + script],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    estimate: dict[str, Any] = json.loads(done.stdout)
    return estimate


def test_the_point_shown_is_the_groups_mean_not_the_middle_of_the_range() -> None:
    """One group, 20 trials timed (alternately 50 and 150 ms: mean 100 ms), 30 left: the point
    shown is 30 × 100 ms, within a range widened for the mean's error and drift."""
    estimate = _estimate(
        "const left = [{phase: 'measure', condition: 'model-only', trials: 50, calls: 50,"
        " answer: 'integer'}];"
        "const eta = new Eta(left); let now = 0;"
        "for (let i = 0; i < 20; i++) { eta.started('measure', 'model-only', now);"
        " now += i % 2 ? 150 : 50; eta.finished('measure', 'model-only', now, 1); }"
        "console.log(JSON.stringify(eta.estimate(now)));"
    )
    assert estimate["mid_s"] == pytest.approx(30 * 0.100)
    assert estimate["low_s"] < estimate["mid_s"] < estimate["high_s"]


def test_durations_read_as_people_say_them() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    script = (
        f"import {{ etaText }} from {json.dumps(ETA.as_uri())};"
        "console.log(JSON.stringify([5, 100, 599, 7500].map((s) =>"
        " etaText({low_s: s, high_s: s, mid_s: s, unmeasured: []}))));"
    )
    done = subprocess.run(
        [node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert json.loads(done.stdout) == [
        "about 5 s left",
        "about 1 min 40 s left",
        "about 9 min 59 s left",
        "about 2 h 5 min left",
    ]


def test_trials_that_write_more_answer_tokens_are_estimated_to_take_longer() -> None:
    """One group whose trials take 10 ms + 5 ms per answer token: 20 timed (2 and 4 tokens,
    alternately), 10 left writing 8 tokens each. The estimate is the group's mean moved by its
    own measured slope: 10 × (10 + 5 × 8) ms, not 10 × its mean (25 ms); with no sizes known
    (an older state) it stays the mean."""

    def run(work: str, size: str) -> dict[str, Any]:
        return _estimate(
            "const left = [{phase: 'measure', condition: 'model-only', trials: 30, calls: 30,"
            f" answer: 'integer', work: {work}}}];"
            "const eta = new Eta(left); let now = 0;"
            "for (let i = 0; i < 20; i++) { const tokens = i % 2 ? 4 : 2;"
            f" eta.started('measure', 'model-only', now, {size});"
            " now += 10 + 5 * tokens; eta.finished('measure', 'model-only', now, 1); }"
            "console.log(JSON.stringify(eta.estimate(now)));"
        )

    sized = run("20 * 3 + 10 * 8", "tokens")  # 20 timed, averaging 3, and 10 left
    assert sized["mid_s"] == pytest.approx(10 * (10 + 5 * 8) / 1000)
    assert sized["low_s"] < sized["mid_s"] < sized["high_s"]
    assert run("null", "null")["mid_s"] == pytest.approx(10 * 25 / 1000)


def test_the_recordings_answer_tokens_are_the_scripts() -> None:
    """The recordings' answer tokens are what scripts/eta_recordings.py re-derives from the
    recorded sweeps' task sets (their durations untouched)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "eta_recordings.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr


def test_trials_left_that_make_no_model_call_are_not_given_the_timed_ones_time() -> None:
    """A held-out chain group: two routes timed (4 and 6 calls, 400 and 600 ms, as the page
    tells them: TrialStart.calls), four tasks left whose family has no route (no call).
    Nothing of the group's time is left: not 4 × its 500 ms mean per trial (the old
    estimate: 2 s with milliseconds left)."""
    estimate = _estimate(
        "const eta = new Eta([{phase: 'heldout', condition: 'controlled-chain', trials: 6,"
        " calls: 10, answer: 'integer'}]);"
        "const c = 'controlled-chain';"
        "eta.started('heldout', c, 0, null, 4); eta.finished('heldout', c, 400);"
        "eta.started('heldout', c, 400, null, 6); eta.finished('heldout', c, 1000);"
        "console.log(JSON.stringify(eta.estimate(1000)));"
    )
    assert estimate["mid_s"] == 0 and estimate["high_s"] == 0


def test_a_condition_not_yet_run_is_scaled_from_its_kins_latest_calls() -> None:
    """Model-only timed over 100 trials, the first 50 slow (100 ms: the engine compiling as it
    goes), the latest 50 at 30 ms; 100 chain trials (one call each) not run yet. The chain is
    estimated from model-only's latest calls: 100 × 30 ms × the geometric middle of KIN.kind,
    not from its mean over every call (65 ms, the old estimate)."""
    estimate = _estimate(
        "const eta = new Eta([{phase: 'measure', condition: 'model-only', trials: 100, calls: 100,"
        " answer: 'integer'}, {phase: 'measure', condition: 'controlled-chain', trials: 100,"
        " calls: 100, answer: 'integer'}]); let now = 0;"
        "for (let i = 0; i < 100; i++) { eta.started('measure', 'model-only', now);"
        " now += i < 50 ? 100 : 30; eta.finished('measure', 'model-only', now, 1); }"
        "const [lo, hi] = KIN.kind;"
        "console.log(JSON.stringify({...eta.estimate(now), middle: Math.sqrt(lo * hi)}));"
    )
    assert estimate["mid_s"] == pytest.approx(100 * 0.030 * estimate["middle"])


def test_a_recording_is_made_from_a_sweeps_trace(tmp_path: Path) -> None:
    """`scripts/eta_recordings.py record` turns a real sweep's trace (here the reference
    subject, native) into a recording: every trial in the order it ran, its wall time to the
    next one's start, the plan's model calls and answer tokens; a sweep of another preset is
    refused."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = tmp_path / "run"
    swept = subprocess.run(
        [sys.executable, "-m", "pyapp", "sweep", "--backend", "native", "--model", "subject",
         "--preset", "calibration-60", "--consent", "--out", str(run)],
        capture_output=True, text=True, timeout=600, env=env, cwd=ROOT,
    )  # fmt: skip
    assert swept.returncode == 0, swept.stderr
    script = [sys.executable, str(ROOT / "scripts" / "eta_recordings.py"), "record", str(run)]
    into = tmp_path / "recording.json"
    note = ["--note", "a test"]
    made = subprocess.run(
        [*script, str(into), "--preset", "calibration-60", *note],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    recording = json.loads(into.read_text("utf-8"))
    trace = json.loads((run / "trace.json").read_text("utf-8"))
    assert (recording["preset"], recording["seed"]) == ("calibration-60", 1729)
    assert "subject/" in recording["source"] and "a test" in recording["source"]
    trials = recording["trials"]
    assert len(trials) == len(trace["trials"]) == 744
    assert [t[:2] for t in trials[:2]] == [["measure", "supplied-program"]] * 2
    assert trials[-1][:2] == ["heldout", "controlled-chain"]
    assert all(t[2] >= 0 for t in trials) and sum(t[3] for t in trials) > 540
    wrong = subprocess.run(
        [*script, str(tmp_path / "other.json"), "--preset", "calibration-300", *note],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert wrong.returncode != 0 and "not the calibration-300 preset's" in wrong.stderr
    assert not (tmp_path / "other.json").exists()
