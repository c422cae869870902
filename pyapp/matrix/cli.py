"""The command line of `python -m pyapp matrix` (docs/scale.md).

    python -m pyapp matrix examples/matrix-synthetic.toml --out runs/study
    python -m pyapp matrix PLAN --out DIR --jobs 2
    python -m pyapp matrix PLAN --out DIR --engine ray [--address ADDR]
    python -m pyapp matrix PLAN --out DIR --dry-run
    python -m pyapp matrix PLAN --out DIR --wait      # after the command that holds DIR

Exit status: 0 every cell done; 1 a bad plan (one line naming the file and the key), a
folder refused (another command's, in use, a symlink where a file or folder belongs) or a
cell failed (or does not re-derive); 2 bad usage (e.g. --engine ray without Ray); 130
stopped by Ctrl-C (the same command continues).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from pyapp.errors import UsageError
from pyapp.host import check_output_folder, input_file, output_folder
from pyapp.matrix.coordinator import Invocation, run
from pyapp.matrix.runner import HOOKS_VARIABLE


def _jobs(text: str) -> int:
    try:
        jobs = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a number of jobs") from None
    if not 1 <= jobs <= 256:
        raise argparse.ArgumentTypeError(f"{jobs}: --jobs must be 1..256")
    return jobs


def cmd_matrix(args: argparse.Namespace) -> int:
    hooks_text = os.environ.get(HOOKS_VARIABLE, "")
    try:
        hooks = json.loads(hooks_text) if hooks_text else {}
    except ValueError:
        raise UsageError(f"{HOOKS_VARIABLE} is not JSON") from None
    if args.engine == "local" and args.address:
        raise UsageError("--address is for --engine ray")
    if args.engine == "ray" and args.jobs:
        raise UsageError("--jobs is for --engine local (Ray places cells by their resources)")
    out = Path(args.out) if args.dry_run else check_output_folder(args.out, "--out")
    invocation = Invocation(
        Path(args.plan), out, args.engine, args.jobs, args.address, args.dry_run, hooks, args.wait
    )
    return run(invocation)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "matrix",
        help="run a study's plan: models x seeds x presets x conditions x backends",
        description="Run every unfinished cell of a PLAN (TOML; exports/matrix-plan.schema.json)"
        ": each cell one `simulate` (synthetic) or `sweep` (browser) run in DIR/cells/NAME/; "
        "DIR/matrix.json, summary.json and report.html (see docs/scale.md).",
    )
    p.add_argument("plan", type=input_file, help="the plan, a TOML file")
    p.add_argument(
        "--out",
        type=output_folder,
        required=True,
        help="output folder (a shared filesystem on a cluster)",
    )
    p.add_argument("--engine", choices=["local", "ray"], default="local", help="where cells run")
    p.add_argument("--jobs", type=_jobs, help="local engine: cells at once (default: one per core)")
    p.add_argument("--address", help="ray engine: the cluster's address (default: a local one)")
    p.add_argument("--dry-run", action="store_true", help="print the cells and what would run")
    p.add_argument(
        "--wait",
        action="store_true",
        help="another command holds DIR: wait for it to end (default: refuse at once)",
    )
    p.set_defaults(func=cmd_matrix)
