"""Validation of the instrument against synthetic models of known error structure.

Runs each shipped synthetic structure (pyapp/synthetic/structures/*.toml) through the page's
protocol natively for the task seeds of a named seed list, with the design's calibration set
and a digit-stratified one (calibration-60); checks every statistic against its committed
expectation (docs/validation/expectations.json, computed from the structures' parameters by
scripts/validation_expectations.py — a seed list without one is refused), its controlled
chains under the list's chain protocol (`ci-extended`: `chain-extended/1`, which routes
determinants and derivatives too; every other list: the design's `chain-design/1`); writes
docs/validation.md (generated whole, with the mutation table of scripts/mutants.py) and
docs/validation/*.svg, and prints the checks.

Usage:
    .venv/bin/python bench/validation.py --jobs 2            # the committed report (seeds `full`)
    .venv/bin/python bench/validation.py --seeds reduced     # a smaller committed seed list
    .venv/bin/python bench/validation.py --seeds ci-extended --no-report  # extended chains
    .venv/bin/python bench/validation.py --quick --out /tmp/v   # a smoke run (seeds `smoke`)
    .venv/bin/python bench/validation.py --render-only       # re-render from the saved results

The results of the last run are kept in build/validation-results.pickle (with its options),
so the report can be rendered again without running anything. `--save-runs F` keeps every
seed's trace and `--rederive F` re-derives those traces' predictions with the code as it is
(the metric mutants of scripts/mutants.py are judged on one shared run that way); `--json F`
writes every check's verdict.

Everything it reports is synthetic: never model evidence.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from interpreter import LabError  # noqa: E402
from pyapp.records import chain_protocol  # noqa: E402
from pyapp.report import calibration_svg  # noqa: E402
from pyapp.synthetic import (  # noqa: E402  # noqa: E402  # noqa: E402  # noqa: E402
    STRUCTURES,
    Check,
    SeedRun,
    StructureResult,
    list_protocol,
    plans,
    read_expectations,
    render_markdown,
    result_checks,
    shipped,
    validate_structure,
)
from pyapp.tasks import preset_params  # noqa: E402

PRESETS = ("design", "calibration-60")
SAVED = ROOT / "build" / "validation-results.pickle"
MUTANTS = ROOT / "docs" / "validation" / "mutants.json"
Job = tuple[str, str, tuple[int, int], list[SeedRun] | None, bool, str]
"""(structure, preset, seeds, saved runs to re-derive, keep the runs, chain protocol name)."""


def one(job: Job) -> tuple[StructureResult, list[SeedRun] | None]:
    """One structure under one preset (a process of its own with `--jobs`)."""
    structure, preset, (first, last), runs, keep, protocol = job
    kept: list[SeedRun] = []

    def clock() -> float:
        return time.perf_counter()

    result = validate_structure(
        shipped(structure),
        preset,
        preset_params(preset),
        range(first, last + 1),
        clock,
        runs=runs,
        keep=kept if keep else None,
        protocol=chain_protocol(protocol),
    )
    return result, (kept if keep else None)


def options_of(args: argparse.Namespace, lists: dict[str, Any]) -> dict[str, object]:
    """Every option of the run, for the report's header."""
    seeds = lists[args.seeds]
    return {
        "structures": ", ".join(args.structures),
        "presets": ", ".join(PRESETS),
        "seed list": f"`{args.seeds}`",
        "seeds, design": f"{seeds['design'][0]}..{seeds['design'][1]}",
        "seeds, calibration-60": f"{seeds['calibration-60'][0]}..{seeds['calibration-60'][1]}",
        "expectations": "`docs/validation/expectations.json` (scripts/validation_expectations.py)",
        "interval": "95% normal, the larger of the run's and the planned between-seed spread",
        "conditions": "model-only, model-program, controlled-chain",
        "chain protocol": f"`{list_protocol(args.seeds).version}`",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="full", help="a committed seed list")
    parser.add_argument("--quick", action="store_true", help="the `smoke` seed list")
    parser.add_argument("--out", default=str(ROOT / "docs"), help="folder for validation.md")
    parser.add_argument("--jobs", type=int, default=1, help="processes (structures in parallel)")
    parser.add_argument("--structures", default=",".join(STRUCTURES), help="comma-separated")
    parser.add_argument("--presets", default=",".join(PRESETS), help="comma-separated")
    parser.add_argument("--render-only", action="store_true", help="render the saved results")
    parser.add_argument("--no-report", action="store_true", help="checks only (no files)")
    parser.add_argument("--json", help="write every check's verdict to this file")
    parser.add_argument("--save-runs", help="keep every seed's trace in this file (pickle)")
    parser.add_argument("--rederive", help="re-derive the traces saved by --save-runs")
    args = parser.parse_args(argv)
    try:
        return _main(args)
    except LabError as error:
        print(f"error: {error.message}", file=sys.stderr)
        return 1


def _main(args: argparse.Namespace) -> int:
    if args.render_only:
        out = args.out
        with SAVED.open("rb") as handle:
            saved_args, results, checks = pickle.load(handle)  # our own file, written below
        saved_args.out = out
        return write_report(saved_args, results, checks, read_expectations()["seed_lists"])
    if args.quick:
        args.seeds = "smoke"
    args.structures = [s.strip() for s in args.structures.split(",") if s.strip()]
    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    data = read_expectations()
    found = {(s, p): plans(data, args.seeds, s, p) for s in args.structures for p in presets}
    lists = data["seed_lists"]
    saved: dict[tuple[str, str], list[SeedRun]] = {}
    if args.rederive:
        with open(args.rederive, "rb") as handle:
            saved = pickle.load(handle)  # our own file (--save-runs)
    protocol = list_protocol(args.seeds).name
    jobs: list[Job] = [
        (s, p, tuple(lists[args.seeds][p]), saved.get((s, p)), bool(args.save_runs), protocol)  # type: ignore[misc]
        for p in presets
        for s in args.structures
    ]
    results, checks, kept = run(jobs, found, args.jobs)
    if args.save_runs:
        with open(args.save_runs, "wb") as handle:
            pickle.dump(kept, handle)
    if args.json:
        Path(args.json).write_text(json.dumps([_check_json(c) for c in checks], indent=1))
    if not args.quick and not args.no_report and args.seeds == "full":
        SAVED.parent.mkdir(exist_ok=True)
        with SAVED.open("wb") as handle:
            pickle.dump((args, results, checks), handle)
    if args.no_report:
        return 0
    return write_report(args, results, checks, lists)


def _check_json(c: Check) -> dict[str, Any]:
    return {
        "structure": c.structure,
        "preset": c.preset,
        "statistic": c.statistic,
        "verdict": c.verdict,
        "estimate": c.estimate,
        "low": c.low,
        "high": c.high,
        "band": [c.plan.low, c.plan.high],
    }


def run(
    jobs: list[Job], found: dict[tuple[str, str], Any], processes: int
) -> tuple[list[StructureResult], list[Check], dict[tuple[str, str], list[SeedRun]]]:
    results: list[StructureResult] = []
    checks: list[Check] = []
    kept: dict[tuple[str, str], list[SeedRun]] = {}

    def done(result: StructureResult, runs: list[SeedRun] | None) -> None:
        results.append(result)
        checks.extend(result_checks(result, found[(result.spec.structure, result.preset)]))
        if runs is not None:
            kept[(result.spec.structure, result.preset)] = runs
        print(
            f"[{len(results)}/{len(jobs)}] {result.spec.structure:<15} {result.preset:<15} "
            f"{len(result.seeds)} seeds, {result.trials} trials in {result.seconds:.1f} s",
            file=sys.stderr,
            flush=True,
        )

    if processes > 1:
        with ProcessPoolExecutor(processes) as pool:
            for result, runs in pool.map(one, jobs):
                done(result, runs)
    else:
        for job in jobs:
            done(*one(job))
    return results, checks, kept


def write_report(
    args: argparse.Namespace,
    results: list[StructureResult],
    checks: list[Check],
    lists: dict[str, Any],
) -> int:
    out = Path(args.out)
    figures_dir = out / "validation"
    figures_dir.mkdir(parents=True, exist_ok=True)
    figures = []
    for result in results:
        name = f"calibration-{result.spec.structure}-{result.preset}.svg"
        (figures_dir / name).write_text(calibration_svg(result), encoding="utf-8")
        figures.append(name)
    report = out / "validation.md"
    command = "python bench/validation.py" + (
        " --quick" if args.quick else f" --seeds {args.seeds}"
    )
    mutants = json.loads(MUTANTS.read_text(encoding="utf-8")) if MUTANTS.exists() else None
    report.write_text(
        render_markdown(results, command, options_of(args, lists), figures, checks, mutants),
        encoding="utf-8",
    )
    for c in checks:
        print(
            f"{c.verdict.upper()}: {c.structure}/{c.preset}: {c.statistic}: {c.estimate:+.3f} "
            f"[{c.low:+.3f}, {c.high:+.3f}] (band [{c.plan.low:+.3f}, {c.plan.high:+.3f}])"
        )
    print(f"\nwrote {report} and {len(figures)} figures in {figures_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
