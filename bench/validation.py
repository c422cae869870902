"""Validation of the instrument against synthetic models of known error structure.

Runs each synthetic structure (independent, size-dependent, correlated, cancelling) through
the page's protocol natively for many task seeds, with the design's calibration set and a
digit-stratified one (calibration-60); estimates each held-out trial's true success
probability by Monte Carlo; writes docs/validation.md and docs/validation/*.svg, and prints
the same tables.

Usage:
    .venv/bin/python bench/validation.py                 # the committed report (~10 min on 2 cores)
    .venv/bin/python bench/validation.py --quick --out /tmp/v   # a smoke run (seconds)

Everything it reports is synthetic: never model evidence.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyapp.synthetic.report import (  # noqa: E402
    calibration_svg,
    cells_table,
    checks,
    coverage_table,
    render_markdown,
)
from pyapp.synthetic.spec import STRUCTURES, SyntheticSpec  # noqa: E402
from pyapp.synthetic.validation import StructureResult, validate_structure  # noqa: E402
from pyapp.tasks.taskset import preset_params  # noqa: E402

NOTES_MARKER = "<!-- notes below are kept when bench/validation.py regenerates this file -->"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few seeds (smoke run)")
    parser.add_argument("--out", default=str(ROOT / "docs"), help="folder for validation.md")
    parser.add_argument("--seeds", type=int, default=200, help="seeds per structure (design)")
    parser.add_argument("--calibration-seeds", type=int, default=40, help="seeds, calibration-60")
    parser.add_argument("--mc-seeds", type=int, default=40, help="seeds with a Monte Carlo truth")
    parser.add_argument("--mc-draws", type=int, default=100, help="Monte Carlo draws per trial")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.calibration_seeds, args.mc_seeds, args.mc_draws = 3, 2, 1, 10
    plan = (("design", args.seeds), ("calibration-60", args.calibration_seeds))
    results: list[StructureResult] = []
    for preset, seeds in plan:
        for structure in STRUCTURES:
            result = validate_structure(
                SyntheticSpec(structure),
                preset,
                preset_params(preset),
                range(1, seeds + 1),
                min(args.mc_seeds, seeds) if preset == "design" else min(args.mc_seeds // 2, seeds),
                args.mc_draws,
                time.perf_counter,
            )
            results.append(result)
            print(
                f"{structure:<15} {preset:<15} {result.seeds} seeds, {result.trials} trials in "
                f"{result.seconds:.1f} s ({result.trials / result.seconds:.0f} trials/s incl. "
                "Monte Carlo)",
                file=sys.stderr,
            )

    out = Path(args.out)
    figures_dir = out / "validation"
    figures_dir.mkdir(parents=True, exist_ok=True)
    figures = []
    for result in results:
        name = f"calibration-{result.spec.structure}-{result.preset}.svg"
        (figures_dir / name).write_text(calibration_svg(result), encoding="utf-8")
        figures.append(name)
    report = out / "validation.md"
    notes = NOTES_MARKER + "\n"
    if report.exists() and NOTES_MARKER in report.read_text(encoding="utf-8"):
        notes = NOTES_MARKER + report.read_text(encoding="utf-8").split(NOTES_MARKER, 1)[1]
    command = "python bench/validation.py" + (" --quick" if args.quick else "")
    report.write_text(render_markdown(results, command, figures, notes), encoding="utf-8")

    print("\n".join(cells_table([c for r in results for c in r.cells])))
    print()
    print("\n".join(coverage_table([c for r in results for c in r.coverage])))
    print()
    for name, claim, numbers, holds in checks(results):
        print(f"{'HOLDS' if holds else 'DOES NOT HOLD'}: {name}: {claim}: {numbers}")
    print(f"\nwrote {report} and {len(figures)} figures in {figures_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
