"""The ETA's recordings (`tests/fixtures/eta/*.json`), which `tests/site/test_eta.py` replays on a
fake clock: each trial's phase, condition, wall ms (from its start to the next trial's start;
the last, its own), its model calls, and the answer tokens its calls were to write, known
before it ran (what Python tells the page's ETA in `TrialStart.answer_tokens` and
`PlanLeft.work`).

A recording is made from a real sweep's trace — the product's own command, e.g.

    python -m pyapp sweep --model subject --backend wasm --preset calibration-60 --consent \
        --out runs/eta
    python scripts/eta_recordings.py record runs/eta tests/fixtures/eta/quiet-calibration-60.json \
        --preset calibration-60 --note "2 cores, nothing else running"

and checked against the plan it ran: the preset's tasks (the recording's `preset` and `seed`;
the two oldest recordings name neither: calibration-60 and -300 at the default seed) in the
plan's order (`pyapp.experiment.plan`: condition by condition, each over the phase's tasks in
the task set's order). Every row's phase, condition and model calls (a chain's route length
tells the held-out tasks apart) must be the plan's, and its answer tokens are re-derived; the
durations are the recording's own.

    python scripts/eta_recordings.py            # rewrite the recordings' derived columns
    python scripts/eta_recordings.py --check    # exit 1 unless they already hold them
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from pyapp.browser import answer_tokens, model_calls
from pyapp.conditions import ALL_CONDITIONS
from pyapp.records import read_kind, read_trace
from pyapp.tasks import DEFAULT_SEED, generate, preset_params

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "tests" / "fixtures" / "eta"
OLDEST = {  # recorded before a recording named its preset and seed
    "loaded-calibration-60": "calibration-60",
    "loaded-calibration-300": "calibration-300",
}
COLUMNS = ["phase", "condition", "ms", "calls", "answer_tokens"]
NOTE = (
    "; answer_tokens: the tokens its model calls were to write, known before it ran, re-derived"
    " from the preset's tasks (seed {seed}) in the plan's order by scripts/eta_recordings.py"
)


def preset_and_seed(name: str, document: dict[str, Any]) -> tuple[str, int]:
    if "preset" in document:
        return str(document["preset"]), int(document["seed"])
    if name in OLDEST:
        return OLDEST[name], DEFAULT_SEED
    raise SystemExit(f"{name}: the recording names no preset and seed")


def sized(name: str, document: dict[str, Any]) -> dict[str, Any]:
    """The recording with each trial's answer tokens (the fifth column), checked against the
    plan of its preset and seed (a row's model calls not given yet, None: the plan's)."""
    preset, seed = preset_and_seed(name, document)
    rows = [list(row)[:4] for row in document["trials"]]
    tasks = generate(preset_params(preset, seed))
    out: list[list[Any]] = []
    for phase, split in (("measure", "profile"), ("heldout", "heldout")):
        chosen = [t for t in tasks if t.split == split]
        for condition in ALL_CONDITIONS:
            for task in chosen:
                if len(out) == len(rows):
                    raise SystemExit(f"{name}: fewer recorded trials than the plan")
                row = rows[len(out)]
                expected = [phase, condition, model_calls(condition, task)]
                if row[3] is None:  # a new recording: the calls the trial was planned to make
                    row[3] = expected[2]
                if [row[0], row[1], row[3]] != expected:
                    raise SystemExit(f"{name}: trial {len(out)} is {row}, the plan {expected}")
                out.append([*row, answer_tokens(condition, task)])
    if len(out) != len(rows):
        raise SystemExit(f"{name}: more recorded trials than the plan")
    source = str(document["source"]).split("; answer_tokens:")[0]
    head = {"preset": preset, "seed": seed} if "preset" in document else {}
    return {**head, "source": source + NOTE.format(seed=seed), "trials": out, "columns": COLUMNS}


def _ms(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp() * 1000


def from_trace(run: Path, preset: str, note: str) -> dict[str, Any]:
    """A recording of the sweep in `run` (its trace.json): the trials in the order they ran,
    each one's wall ms from its start to the next one's start (the last: to its own end)."""
    trace = read_trace(read_kind(run / "trace.json", "trace"))  # the one bounded reader
    seed = trace.run.seed
    if trace.run.task_params != preset_params(preset, seed):
        raise SystemExit(f"{run}: its tasks are not the {preset} preset's at seed {seed}")
    if trace.draw is not None or trace.interruptions:
        raise SystemExit(f"{run}: sealed or interrupted: record an unsealed run in one session")
    split = {t.id: t.split for t in trace.tasks}
    trials = sorted(trace.trials, key=lambda t: t.sequence)
    rows: list[list[Any]] = []
    for i, trial in enumerate(trials):
        start = trial.started_at
        end = trials[i + 1].started_at if i + 1 < len(trials) else trial.ended_at
        if start is None or end is None:
            raise SystemExit(f"{run}: trial {trial.trial_id} has no time stamps")
        phase = "measure" if split[trial.task_id] == "profile" else "heldout"
        rows.append([phase, trial.condition, round(_ms(end) - _ms(start)), None])
    model = trace.model
    where = f"{model.model_id} on {model.backend_actual}" if model is not None else "no model"
    source = (
        f"{where} ({trace.environment.runtime}): python -m pyapp sweep"
        f" --preset {preset} --seed {seed} (all four conditions, unsealed), {note}; each trial's"
        " wall time from its start to the next trial's start (the last: its own), from the"
        " trace's time stamps, and the model calls it was planned to make"
        " (scripts/eta_recordings.py record)"
    )
    return sized("", {"preset": preset, "seed": seed, "source": source, "trials": rows})


def write(path: Path, document: dict[str, Any]) -> None:
    path.write_text(json.dumps(document, separators=(",", ":"), ensure_ascii=False), "utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="check, write nothing")
    sub = parser.add_subparsers(dest="command")
    record = sub.add_parser("record", help="a new recording from a sweep's run folder")
    record.add_argument("run", type=Path, help="the sweep's --out folder (its trace.json)")
    record.add_argument("into", type=Path, help="the recording to write (tests/fixtures/eta/)")
    record.add_argument("--preset", required=True, help="the preset the sweep ran")
    record.add_argument("--note", required=True, help="where it ran (cores, load)")
    args = parser.parse_args(argv)
    if args.command == "record":
        write(args.into, from_trace(args.run, args.preset, args.note))
        return 0
    stale = []
    for path in sorted(FOLDER.glob("*.json")):
        document = json.loads(path.read_text("utf-8"))
        text = json.dumps(sized(path.stem, document), separators=(",", ":"), ensure_ascii=False)
        if path.read_text("utf-8") != text:
            stale.append(path.name)
            if not args.check:
                path.write_text(text, "utf-8")
    if args.check and stale:
        print("stale: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
