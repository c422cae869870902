"""Adds to each recorded trial of the ETA's recordings (`tests/fixtures/eta/*.json`) the
answer tokens its model calls were to write, known before it ran (`answer_tokens`, what
Python tells the page's ETA in `TrialStart.answer_tokens` and `PlanLeft.work`).

The recordings hold phase, condition, wall ms and model calls, in the order the sweep ran
them; their `source` names the command (`python -m pyapp sweep --model subject --preset P`,
all four conditions, the default task seed and unsealed held-out tasks), so the tasks are
the preset's, regenerated here, in the plan's order (`pyapp.experiment.plan`: condition by
condition, each over the phase's tasks in the task set's order). Every row's phase, condition
and model calls are checked against that plan (a chain's route length tells the held-out
tasks apart), and the recorded durations are written back unchanged.

    python scripts/eta_fixture_sizes.py            # rewrite the recordings with the column
    python scripts/eta_fixture_sizes.py --check    # exit 1 unless they already hold it
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pyapp.browser import answer_tokens, model_calls
from pyapp.conditions import ALL_CONDITIONS
from pyapp.tasks import DEFAULT_SEED, generate, preset_params

ROOT = Path(__file__).resolve().parents[1]
RECORDINGS = {
    "calibration-60": ROOT / "tests" / "fixtures" / "eta" / "subject-calibration-60.json",
    "calibration-300": ROOT / "tests" / "fixtures" / "eta" / "subject-calibration-300.json",
}
COLUMNS = ["phase", "condition", "ms", "calls", "answer_tokens"]
NOTE = (
    "; answer_tokens: the tokens its model calls were to write, known before it ran, re-derived"
    f" from the preset's tasks (seed {DEFAULT_SEED}) in the plan's order by"
    " scripts/eta_fixture_sizes.py"
)


def sized(preset: str, document: dict[str, object]) -> dict[str, object]:
    """The recording with each trial's answer tokens (a fifth column)."""
    rows = [list(row)[:4] for row in document["trials"]]  # type: ignore[attr-defined]
    tasks = generate(preset_params(preset, DEFAULT_SEED))
    out: list[list[object]] = []
    for phase, split in (("measure", "profile"), ("heldout", "heldout")):
        chosen = [t for t in tasks if t.split == split]
        for condition in ALL_CONDITIONS:
            for task in chosen:
                if len(out) == len(rows):
                    raise SystemExit(f"{preset}: fewer recorded trials than the plan")
                row = rows[len(out)]
                expected = [phase, condition, model_calls(condition, task)]
                if [row[0], row[1], row[3]] != expected:
                    raise SystemExit(f"{preset}: trial {len(out)} is {row}, the plan {expected}")
                out.append([*row, answer_tokens(condition, task)])
    if len(out) != len(rows):
        raise SystemExit(f"{preset}: more recorded trials than the plan")
    source = str(document["source"]).split("; answer_tokens:")[0]
    return {"source": source + NOTE, "trials": out, "columns": COLUMNS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="check, write nothing")
    args = parser.parse_args(argv)
    stale = []
    for preset, path in RECORDINGS.items():
        document = json.loads(path.read_text("utf-8"))
        text = json.dumps(sized(preset, document), separators=(",", ":"), ensure_ascii=False)
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
