"""Measure the reference subject and write docs/subject.md from real sweeps (issue 26).

    .venv/bin/python bench/subject.py [--runs build/subject-runs] [--fresh] [--native-only]

Runs (each skipped when its folder already holds predictions.json, unless --fresh):
* in the browser (WASM, fp32; `python -m pyapp sweep --model subject`): `design` and
  `calibration-60` (its parameters passed as --param), seed 1729, all four conditions;
* natively (`python -m pyapp sweep --model subject --backend native`: the same sweep under
  onnxruntime, fp32): `design`, `calibration-60` and `calibration-300`, seed 1729.
Then it compares browser and native verdicts trial by trial on the shared seed and presets,
and writes docs/subject.md: the recipe and what training measured, the expectation (written
before any sweep), accuracy by op and digit count, profiles, both predictors' Brier scores
with bootstrap intervals, calibration cells and cost errors. It prints the figures; it
asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyapp.records import SUBJECT_LABEL  # noqa: E402
from pyapp.tasks import PRESETS  # noqa: E402

SUBJECT = ROOT / "tests" / "fixtures" / "subject"
DOC = ROOT / "docs" / "subject.md"
BOOTSTRAP = 2000
EXPECTATION = """\
*Written before any sweep of the subject was run.* The subject was trained on exactly the
calls a controlled chain makes (one primitive, in the chain-step prompt) and never on a
composition. We therefore expect (1) its controlled-chain route success to be predicted
better by the product of its primitive rates than its whole-task model-only success, whose
prompts (recurrence, determinant, derivative questions) it never saw and on which it will
most likely answer with a confident wrong integer, so that the product predictor, fed by
primitive rates that are far from zero on small operands, over-predicts whole tasks; (2) its
model-program trees to be right for the trained primitives and wrong for compositions (it
only ever wrote one-operation programs); (3) its rates to fall with operand digits, mul
fastest; (4) chains to fail mostly at the large intermediate values of the later recurrence
steps, beyond the six digits it was trained on. Small held-out cells (six compositions per
seed) make every Brier interval wide: these are descriptions of one subject, not tests."""


def sweep_args(preset: str) -> list[str]:
    return [f"--param={key}={json.dumps(value)}" for key, value in PRESETS[preset].items()]


def subject_sweep(backend: str, preset: str, out: Path) -> None:
    command = [sys.executable, "-m", "pyapp", "sweep", "--model", "subject", "--backend",
               backend, "--dtype", "fp32", "--seed", "1729", "--consent", "--out", str(out),
               *sweep_args(preset)]  # fmt: skip
    print("$", " ".join(command), flush=True)
    subprocess.run(command, cwd=ROOT, check=True)


def browser_run(preset: str, out: Path) -> None:
    subject_sweep("wasm", preset, out)


def native_run(preset: str, out: Path) -> None:
    subject_sweep("native", preset, out)


def load(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    read = lambda name: json.loads((folder / name).read_text(encoding="utf-8"))  # noqa: E731
    return read("trace.json"), read("predictions.json")


def agreement(browser: dict[str, Any], native: dict[str, Any]) -> tuple[int, list[str]]:
    """Trials compared by (task, condition): how many, and those whose verdict differs."""
    verdict = lambda t: (t["outcome"], t["result"])  # noqa: E731
    theirs = {(t["task_id"], t["condition"]): verdict(t) for t in native["trials"]}
    differ, n = [], 0
    for trial in browser["trials"]:
        key = (trial["task_id"], trial["condition"])
        if key in theirs:
            n += 1
            if verdict(trial) != theirs[key]:
                differ.append(f"{key[0]} {key[1]}: browser {verdict(trial)}, native {theirs[key]}")
    return n, differ


def digits(value: int) -> int:
    return len(str(abs(value)))


def accuracy_by_digits(trace: dict[str, Any]) -> list[str]:
    """Model-only exact-answer rate of the profile primitives by op and larger operand."""
    tasks = {t["id"]: t for t in trace["tasks"]}
    cells: dict[tuple[str, int], list[bool]] = {}
    for trial in trace["trials"]:
        task = tasks[trial["task_id"]]
        if trial["condition"] != "model-only" or task["group"] != "primitive":
            continue
        size = max(digits(v) for v in task["registers"].values())
        cells.setdefault((task["family"], size), []).append(bool(trial["correct"]))
    top = max(d for _, d in cells) if cells else 0
    rows = [f"| op | {' | '.join(f'{d} digits' for d in range(1, top + 1))} |",
            f"|---|{'---|' * top}"]  # fmt: skip
    for op in ("add", "sub", "mul"):
        shown = []
        for d in range(1, top + 1):
            got = cells.get((op, d), [])
            shown.append(f"{sum(got) / len(got):.2f} ({len(got)})" if got else "—")
        rows.append(f"| {op} | {' | '.join(shown)} |")
    return rows


def brier_interval(predictions: list[float], outcomes: list[bool]) -> tuple[float, float] | None:
    """95% bootstrap interval of the Brier score over held-out tasks (fixed seed)."""
    if not predictions:
        return None
    rng = random.Random(1729)
    n = len(predictions)
    scores = []
    for _ in range(BOOTSTRAP):
        pick = [rng.randrange(n) for _ in range(n)]
        scores.append(sum((predictions[i] - outcomes[i]) ** 2 for i in pick) / n)
    scores.sort()
    return scores[int(0.025 * BOOTSTRAP)], scores[int(0.975 * BOOTSTRAP) - 1]


def _f(value: float | None, digits_: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits_}f}"


def condition_rows(name: str, predictions: dict[str, Any]) -> list[str]:
    rows = []
    for result in predictions["conditions"]:
        condition = result["frozen"]["profile"]["condition"]
        ops = ", ".join(
            f"{p['op']} {_f(p['rate'], 2)} [{p['wilson_low']:.2f}, {p['wilson_high']:.2f}]"
            for p in result["frozen"]["profile"]["ops"]
        )
        predictors = [("product", result["predictions"], result["scores"])]
        if result.get("state_aware"):
            state = result["state_aware"]
            predictors.append(("state-aware", state["predictions"], state["scores"]))
        observed = {o["task_id"]: o for o in result["observations"]}
        for label, preds, scores in predictors:
            pairs = [
                (p["probability"], observed[p["task_id"]]["final_correct"])
                for p in preds
                if p["probability"] is not None and p["task_id"] in observed
            ]
            interval = brier_interval([p for p, _ in pairs], [o for _, o in pairs])
            shown = f"[{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "—"
            cost = scores["cost"]
            cells = "; ".join(
                f"{c['low']:.1f}-{c['high']:.1f}: {c['n']} pred {_f(c['mean_predicted'], 2)} "
                f"obs {_f(c['observed_rate'], 2)}"
                for c in scores["calibration_final"]
                if c["n"]
            )
            rows.append(
                f"| {name} | {condition} | {label} | {ops} | {scores['n']} | "
                f"{_f(scores['brier_final_proxy'])} {shown} | {_f(scores['brier_all_steps'])} | "
                f"{_f(cost['mean_absolute_error_ms'], 1)} / "
                f"{_f(cost['mean_signed_error_ms'], 1)} | "
                f"{cells or '—'} |"
            )
    return rows


def degeneracy(predictions: dict[str, Any]) -> str:
    """Issue 26's bar on calibration-60: at least two ops with a model-only profile rate in
    [0.2, 0.95] (the fall with digits is in the accuracy table)."""
    for result in predictions["conditions"]:
        if result["frozen"]["profile"]["condition"] == "model-only":
            rates = {p["op"]: p["rate"] for p in result["frozen"]["profile"]["ops"]}
            inside = [op for op, r in rates.items() if r is not None and 0.2 <= r <= 0.95]
            verdict = "met" if len(inside) >= 2 else "NOT met"
            shown = ", ".join(f"{op} {_f(r, 2)}" for op, r in rates.items())
            return f"model-only profile rates {shown}: ops in [0.2, 0.95]: {inside} ({verdict})"
    return "no model-only condition"


def write_doc(runs: dict[str, Path]) -> str:
    info = json.loads((SUBJECT / "subject.json").read_text(encoding="utf-8"))
    rates = info["eval_exact_rate"]
    training = [
        f"| {op} | " + " | ".join(f"{rates[f'{op}/{d}']:.2f}" for d in range(1, 7)) + " |"
        for op in ("add", "sub", "mul")
    ]
    agree_lines = []
    for preset in ("design", "calibration-60"):
        browser, native = f"browser-{preset}", f"native-{preset}"
        if browser in runs and native in runs:
            n, differ = agreement(load(runs[browser])[0], load(runs[native])[0])
            agree_lines.append(f"- `{preset}`, seed 1729: {n} trials compared, "
                               f"{n - len(differ)} identical verdicts and results")  # fmt: skip
            agree_lines += [f"  - differs: {d}" for d in differ[:20]]
    table = ["| run | condition | predictor | profile (rate [Wilson 95%]) | n held-out | "
             "Brier final (proxy) [bootstrap 95%] | Brier all-steps | cost error ms "
             "(abs / signed) | calibration cells (final) |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, folder in runs.items():
        table += condition_rows(name, load(folder)[1])
    widest = runs.get("native-calibration-300") or next(iter(runs.values()))
    bar = [
        f"- `{name}`: {degeneracy(load(folder)[1])}"
        for name, folder in runs.items()
        if "calibration-60" in name
    ]
    text = f"""# The reference subject, measured

Generated by `bench/subject.py` from real sweeps of the subject in `tests/fixtures/subject`
({SUBJECT_LABEL}). Every number here is evidence about this subject, never about a
pretrained LLM.

## The subject and its training

{info["parameters"]:,} parameters; recipe `{json.dumps(info["recipe"], sort_keys=True)}`
(digest {info["recipe_sha256"][:12]}…, data generator `{info["data_version"]}`; rebuild with
`python3 scripts/train_subject.py`, see the README). Exact-answer rate at the end of training
on evaluation examples never trained on (25 per cell, both operands of that many digits,
integer-answer/1, JSON):

| op | 1 | 2 | 3 | 4 | 5 | 6 digits |
|---|---|---|---|---|---|---|
{chr(10).join(training)}

## The expectation, written before the numbers

{EXPECTATION}

## Is it a non-degenerate learner?

The bar set before training (issue 26): on `calibration-60`, at least two ops with profile
success rates between 0.2 and 0.95, and success falling with operand digits (next table).

{chr(10).join(bar) or "- no calibration-60 run yet"}

## Accuracy by op and digit count (model-only profile, `{widest.name}`)

Rate (trials) by the larger operand's digit count:

{chr(10).join(accuracy_by_digits(load(widest)[0]))}

## Profiles, predictions and scores

Both predictors (the product of primitive rates, and the state-aware one). Brier scores use
the final-answer proxy (all-step correctness for controlled chains in its own column); the
interval is a bootstrap over the held-out tasks (2,000 resamples, seed 1729), descriptive
only. `python -m pyapp report RUN` draws the calibration and cost plots of any run below.

{chr(10).join(table)}

## Browser and native agree

Browser (WASM, transformers.js, fp32) against native (onnxruntime, fp32), same greedy
decoding, trial by trial (outcome and parsed result):

{chr(10).join(agree_lines) or "- no shared runs yet"}

Runs: {", ".join(f"`{n}`" for n in runs)} (folders under the bench's `--runs`).
"""
    DOC.write_text(text, encoding="utf-8")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=Path, default=ROOT / "build" / "subject-runs")
    parser.add_argument("--fresh", action="store_true", help="run again even when done")
    parser.add_argument("--native-only", action="store_true", help="skip the browser sweeps")
    args = parser.parse_args()
    plan = [(f"native-{p}", native_run, p) for p in ("design", "calibration-60", "calibration-300")]
    if not args.native_only:
        plan = [(f"browser-{p}", browser_run, p) for p in ("design", "calibration-60")] + plan
    runs = {}
    for name, runner, preset in plan:
        folder = args.runs / name
        if args.fresh or not (folder / "predictions.json").is_file():
            if folder.exists():  # a sweep folder is never written over: start it again
                shutil.rmtree(folder)
            runner(preset, folder)
        runs[name] = folder
    print(write_doc(runs))


if __name__ == "__main__":
    main()
