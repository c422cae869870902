"""`python -m pyapp study DIR`: a matrix folder's answer (docs/study.md).

    python -m pyapp matrix examples/study-subject.toml --out runs/study
    python -m pyapp study runs/study --markdown runs/study/study.md

Writes DIR/study.json and DIR/study.html (and --markdown FILE) — their only writer — and
prints the answer. Exit status: 0 written; 1 bad data (no matrix.json, no done cell that
re-derives); 2 bad usage; 130 stopped by Ctrl-C (nothing written; run it again).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pyapp.cli.arguments import check_output
from pyapp.host.files import input_folder, output_file
from pyapp.predict.intervals import DEFAULT_BOOTSTRAP_SEED, DEFAULT_RESAMPLES
from pyapp.study.command import STUDY_HTML, STUDY_JSON, run_study

MAX_RESAMPLES = 100_000


def _resamples(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a number of resamples") from None
    if not 100 <= value <= MAX_RESAMPLES:
        raise argparse.ArgumentTypeError(f"{value}: --resamples must be 100..{MAX_RESAMPLES}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a seed") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"{value}: --bootstrap-seed must be 0 <= S < 2**63")
    return value


def cmd_study(args: argparse.Namespace) -> int:
    markdown = check_output(args.markdown, "--markdown") if args.markdown else None
    folder = Path(args.dir)
    try:
        doc = run_study(folder, args.resamples, args.bootstrap_seed, markdown)
    except KeyboardInterrupt:
        print("\nstudy stopped: nothing written (run it again)", file=sys.stderr)
        return 130
    for line in doc.answer:
        print(line)
    for flag in doc.flags:
        print(flag)
    written = [folder / STUDY_JSON, folder / STUDY_HTML, *([markdown] if markdown else [])]
    print(f"wrote {', '.join(str(p) for p in written)}")
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "study",
        help="a matrix folder's answer: study.json, study.html (docs/study.md)",
        description="Re-derive every done cell of a matrix output folder from its trace, pool "
        "cells that differ in seed and rung alone, and write DIR/study.json and "
        "DIR/study.html: the plain-language answer first, every figure with its named "
        "intervals (docs/study.md).",
    )
    p.add_argument("dir", type=input_folder, help="a matrix output folder (matrix.json, cells/)")
    p.add_argument("--markdown", type=output_file, help="also write the study as Markdown")
    p.add_argument(
        "--resamples",
        type=_resamples,
        default=DEFAULT_RESAMPLES,
        help=f"bootstrap resamples ({DEFAULT_RESAMPLES})",
    )
    p.add_argument(
        "--bootstrap-seed",
        type=_seed,
        default=DEFAULT_BOOTSTRAP_SEED,
        help=f"seed of the bootstrap's draws ({DEFAULT_BOOTSTRAP_SEED})",
    )
    p.set_defaults(func=cmd_study)
