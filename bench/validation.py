"""Validation of the instrument against synthetic models of known error structure.

Runs each shipped synthetic structure (pyapp/synthetic/structures/*.toml) through the page's
protocol natively for many task seeds, with the design's calibration set and a
digit-stratified one (calibration-60); estimates each held-out trial's true success
probability by Monte Carlo; checks every stated expectation with a 95% interval over seeds
and its power; writes docs/validation.md (generated whole) and docs/validation/*.svg, and
prints the checks.

Usage:
    .venv/bin/python bench/validation.py                  # the committed report (long)
    .venv/bin/python bench/validation.py --jobs 2         # the same, two processes
    .venv/bin/python bench/validation.py --quick --out /tmp/v   # a smoke run (seconds)
    .venv/bin/python bench/validation.py --render-only    # re-render from the saved results

The results of the last run are kept in build/validation-results.pickle (with its options),
so the report can be rendered again without running anything.

Everything it reports is synthetic: never model evidence.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyapp.report.figures import calibration_svg  # noqa: E402
from pyapp.synthetic.checks import (  # noqa: E402
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    MARGIN_BRIER,
    MARGIN_P,
    all_checks,
)
from pyapp.synthetic.language import STRUCTURES, parse_spec  # noqa: E402
from pyapp.synthetic.report import render_markdown  # noqa: E402
from pyapp.synthetic.validation import StructureResult, validate_structure  # noqa: E402
from pyapp.tasks.taskset import preset_params  # noqa: E402

PRESETS = ("design", "calibration-60")
SAVED = ROOT / "build" / "validation-results.pickle"
QUICK = {"seeds": 2, "calibration_seeds": 1, "mc_seeds": 1, "mc_draws": 5}


def one(job: tuple[str, str, int, int, int]) -> StructureResult:
    """One structure under one preset (a process of its own with `--jobs`)."""
    model, preset, seeds, mc_seeds, mc_draws = job
    return validate_structure(
        parse_spec(model),
        preset,
        preset_params(preset),
        range(1, seeds + 1),
        mc_seeds,
        mc_draws,
        time.perf_counter,
    )


def options_of(args: argparse.Namespace) -> dict[str, object]:
    """Every option of the run, for the report's header."""
    return {
        "structures": ", ".join(args.structures),
        "presets": ", ".join(PRESETS),
        "seeds, design": f"1..{args.seeds}",
        "seeds, calibration-60": f"1..{args.calibration_seeds}",
        "Monte Carlo seeds (design; calibration-60 half)": args.mc_seeds,
        "Monte Carlo draws per trial": args.mc_draws,
        "Monte Carlo model seeds": "1000000 + draw (each its own specification, own stream)",
        "bootstrap": f"{BOOTSTRAP_RESAMPLES} resamples of seeds, seed {BOOTSTRAP_SEED}",
        "margin, mean p − observed": MARGIN_P,
        "margin and effect, Brier difference": MARGIN_BRIER,
        "conditions": "model-only, model-program, controlled-chain",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few seeds (smoke run)")
    parser.add_argument("--out", default=str(ROOT / "docs"), help="folder for validation.md")
    parser.add_argument("--seeds", type=int, default=200, help="seeds per structure (design)")
    parser.add_argument("--calibration-seeds", type=int, default=40, help="seeds, calibration-60")
    parser.add_argument("--mc-seeds", type=int, default=20, help="seeds with a Monte Carlo truth")
    parser.add_argument("--mc-draws", type=int, default=50, help="Monte Carlo draws per trial")
    parser.add_argument("--jobs", type=int, default=1, help="processes (structures in parallel)")
    parser.add_argument(
        "--structures", default=",".join(STRUCTURES), help="shorthands, comma-separated"
    )
    parser.add_argument("--render-only", action="store_true", help="render the saved results")
    args = parser.parse_args(argv)
    if args.render_only:
        out = args.out
        with SAVED.open("rb") as handle:
            saved_args, results = pickle.load(handle)  # our own file, written below
        saved_args.out = out
        return write_report(saved_args, results)
    results = run(args)
    if not args.quick:
        SAVED.parent.mkdir(exist_ok=True)
        with SAVED.open("wb") as handle:
            pickle.dump((args, results), handle)
    return write_report(args, results)


def run(args: argparse.Namespace) -> list[StructureResult]:
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    args.structures = [s.strip() for s in args.structures.split(",") if s.strip()]
    jobs = [
        (
            model,
            preset,
            seeds,
            min(args.mc_seeds if preset == "design" else args.mc_seeds // 2, seeds),
            args.mc_draws,
        )
        for preset, seeds in (("design", args.seeds), ("calibration-60", args.calibration_seeds))
        for model in args.structures
    ]
    results: list[StructureResult] = []

    def done(result: StructureResult) -> None:
        results.append(result)
        print(
            f"[{len(results)}/{len(jobs)}] {result.spec.structure:<15} {result.preset:<15} "
            f"{result.seeds} seeds, {result.trials} trials in {result.seconds:.1f} s",
            file=sys.stderr,
            flush=True,
        )

    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            for result in pool.map(one, jobs):
                done(result)
    else:
        for job in jobs:
            done(one(job))
    return results


def write_report(args: argparse.Namespace, results: list[StructureResult]) -> int:
    out = Path(args.out)
    figures_dir = out / "validation"
    figures_dir.mkdir(parents=True, exist_ok=True)
    figures = []
    for result in results:
        name = f"calibration-{result.spec.structure}-{result.preset}.svg"
        (figures_dir / name).write_text(calibration_svg(result), encoding="utf-8")
        figures.append(name)
    report = out / "validation.md"
    command = "python bench/validation.py" + (" --quick" if args.quick else "")
    checks = all_checks(results)
    report.write_text(
        render_markdown(results, command, options_of(args), figures, checks), encoding="utf-8"
    )
    for c in checks:
        verdict = {None: "REPORT", True: "HOLDS", False: "DOES NOT HOLD"}[c.holds]
        print(
            f"{verdict}: {c.structure}/{c.preset}: {c.statistic}: {c.estimate:+.3f} "
            f"[{c.low:+.3f}, {c.high:+.3f}] ({c.claim}; power {c.power})"
        )
    print(f"\nwrote {report} and {len(figures)} figures in {figures_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
