"""Matrix bench (issue 28): cells per minute on the local engine with 1 and 2 jobs and on Ray.

Two plans, each run from scratch by `python -m pyapp matrix` (a subprocess, as a user runs
it) into a fresh folder:

    synthetic   40 cells: 4 synthetic structures × 10 seeds, the design task set, the three
                model conditions (`simulate`, native)
    fixture     8 cells: the tiny-chat TEST FIXTURE × 8 seeds, in the page on WASM, a small
                task set, model-only (`sweep`; pipeline figures, never model evidence)

Printed per plan and engine: wall seconds, cells per minute, and the speed-up over local
with one job. The Ray runs start their own local instance (`ray.init` inside the command);
its start-up is printed separately. Per-cell overhead: for synthetic cells, the median wall
seconds of a cell (matrix.json, the `simulate` subprocess) against the same seed run in
this process (`pyapp.synthetic.simulate.run_seed`): the difference is the process start,
imports and files; for the Ray engine, wall time per cell at one cell per CPU against the
local engine's.

Prints figures; asserts nothing. Takes about ten minutes on two busy cores (the fixture
cells dominate). `--only synthetic` runs the synthetic plan alone.

Usage: .venv/bin/python bench/matrix.py [--only synthetic|fixture] [--no-ray]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PLANS = {
    "synthetic": """
name = "bench: 40 synthetic cells"
[axes]
models = ["independent", "size-dependent:slope=1.2", "correlated:rho=0.9", "cancelling"]
seeds = { first = 1, last = 10 }
""",
    "fixture": """
name = "bench: 8 fixture cells"
[axes]
models = ["fixture"]
seeds = { first = 1, last = 8 }
presets = ["small"]
conditions = [["model-only"]]
backends = ["wasm"]
[parameter_sets.small]
primitives_per_op = 1
probe_pairs = 1
recurrence_steps = [2, 3]
determinants = 1
derivatives = 0
[options]
consent = true
cpus_per_browser_cell = 1
""",
}


def run_matrix(plan: Path, out: Path, *engine: str) -> float:
    t0 = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pyapp", "matrix", str(plan), "--out", str(out), *engine],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    seconds = time.monotonic() - t0
    if result.returncode != 0:
        sys.exit(f"matrix failed ({' '.join(engine)}): {result.stderr[-2000:]}")
    return seconds


def cell_seconds(out: Path) -> list[float]:
    record = json.loads((out / "matrix.json").read_text(encoding="utf-8"))
    return [float(c["seconds"]) for c in record["cells"]]


def in_process_seconds(seeds: range) -> float:
    """Median seconds of one synthetic seed run in this process (no subprocess)."""
    from pyapp.synthetic import parse_spec, run_seed
    from pyapp.tasks import TaskParams

    times = []
    for seed in seeds:
        t0 = time.perf_counter()
        run_seed(parse_spec("size-dependent:slope=1.2"), TaskParams(seed=seed))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def ray_start_seconds() -> float | None:
    code = (
        "import time; t=time.monotonic(); import ray; "
        "ray.init(include_dashboard=False, log_to_driver=False); "
        "print(time.monotonic()-t); ray.shutdown()"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return float(result.stdout.split()[-1]) if result.returncode == 0 else None


def bench(name: str, folder: Path, ray: bool) -> None:
    plan = folder / f"{name}.toml"
    plan.write_text(PLANS[name], encoding="utf-8")
    cells = 40 if name == "synthetic" else 8
    runs = [("local, 1 job", ["--jobs", "1"]), ("local, 2 jobs", ["--jobs", "2"])]
    runs += [("ray (local instance)", ["--engine", "ray"])] if ray else []
    base = None
    medians = {}
    for label, engine in runs:
        out = folder / f"{name}-{label.split(',')[0].split()[0]}-{engine[-1]}"
        seconds = run_matrix(plan, out, *engine)
        base = base or seconds
        medians[label] = statistics.median(cell_seconds(out))
        print(
            f"  {name:<9} {label:<22} {seconds:7.1f} s  {cells / seconds * 60:6.1f} cells/min"
            f"  speed-up {base / seconds:4.2f}x  (median cell {medians[label]:.2f} s)"
        )
    if name == "synthetic":
        inside = in_process_seconds(range(1, 6))
        print(
            f"  per-cell overhead (synthetic): a cell takes {medians['local, 1 job']:.2f} s as "
            f"a subprocess, {inside:.2f} s in-process: {medians['local, 1 job'] - inside:.2f} s "
            "of process start, imports and files"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=list(PLANS))
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    try:
        import ray  # noqa: F401

        ray_ok = not args.no_ray
    except ImportError:
        ray_ok = False
        print("(Ray not installed: pip install '.[cluster]'; the Ray runs are skipped)")
    if ray_ok:
        started = ray_start_seconds()
        print(f"Ray local instance start-up: {started:.1f} s" if started else "Ray: no start")
    with tempfile.TemporaryDirectory(prefix="matrix-bench-") as tmp:
        for name in [args.only] if args.only else list(PLANS):
            bench(name, Path(tmp), ray_ok)


if __name__ == "__main__":
    main()
