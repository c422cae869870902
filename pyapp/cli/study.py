"""`python -m pyapp study DIR`: a matrix folder's answer (docs/study.md); `python -m pyapp
study-receipt PLAN --out DIR`: a confirmatory plan's hypotheses frozen first
(docs/comparison.md).

    python -m pyapp study-receipt examples/comparison-subjects.toml --out runs/cmp
    python -m pyapp matrix examples/comparison-subjects.toml --out runs/cmp
    python -m pyapp study runs/cmp --markdown docs/comparison.md
    python -m pyapp study-receipt PLAN --check runs/cmp/study-receipt.json

Writes DIR/study.json and DIR/study.html (and --markdown FILE) — their only writer — and
prints the answer. Exit status: 0 written; 1 bad data (no matrix.json, no done cell that
re-derives); 2 bad usage; 130 stopped by Ctrl-C (nothing written; run it again).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pyapp.cli.arguments import check_output
from pyapp.errors import UsageError
from pyapp.host import check_output_folder, input_file, input_folder, output_file, output_folder
from pyapp.matrix import (
    OWN_ENTRIES,
    check_receipt,
    claim_folder,
    expand,
    hold_folder,
    make_receipt,
    now,
    read_plan,
    read_receipt,
    site_of,
    write_receipt,
)
from pyapp.predict import DEFAULT_BOOTSTRAP_SEED, DEFAULT_RESAMPLES
from pyapp.study import STUDY_HTML, STUDY_JSON, run_study

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
        plan = Path(args.plan) if args.plan else None
        doc = run_study(folder, args.resamples, args.bootstrap_seed, markdown, plan)
    except KeyboardInterrupt:
        print("\nstudy stopped: nothing written (run it again)", file=sys.stderr)
        return 130
    for line in [v.text for v in doc.hypotheses] + [r.text for r in doc.residuals]:
        print(line)
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
    p.add_argument(
        "--plan",
        type=input_file,
        help="the plan whose hypotheses are read now (default: the one matrix.json names); "
        "those not frozen unchanged in DIR/study-receipt.json are post hoc",
    )
    p.set_defaults(func=cmd_study)
    add_receipt_parser(sub)


def cmd_study_receipt(args: argparse.Namespace) -> int:
    plan_path = Path(args.plan)
    plan = read_plan(plan_path)
    cells = expand(plan, plan_path)  # the whole plan checked, hypotheses included
    if args.check:
        receipt = read_receipt(Path(args.check))
        lines = check_receipt(receipt, plan)
        print(f"study receipt {receipt.fingerprint} ({receipt.created_at}): fingerprint matches")
        for line in lines:
            print(line)
        if lines and lines[0].startswith("another plan"):
            return 1
        print(f"{len(receipt.hypotheses)} preregistered hypotheses; {len(lines)} deviation(s)")
        return 0
    if not plan.hypotheses:
        raise UsageError(f"{plan_path} has no [[hypotheses]]: nothing to freeze")
    out = check_output_folder(args.out, "--out")
    claim_folder(out, "matrix.json", "matrix", OWN_ENTRIES)
    out.mkdir(parents=True, exist_ok=True)
    with hold_folder(out, f"python -m pyapp study-receipt {plan_path}", wait=None):
        receipt = make_receipt(plan, plan_path, cells, now(), site_of(plan, plan_path))
        path = write_receipt(out, receipt)
    print(
        f"wrote {path}: {len(receipt.hypotheses)} hypotheses frozen, fingerprint "
        f"{receipt.fingerprint}"
    )
    return 0


def add_receipt_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "study-receipt",
        help="freeze a plan's [[hypotheses]] before its matrix runs (docs/comparison.md)",
        description="Write DIR/study-receipt.json (once, before any cell starts): the plan's "
        "hash, its hypotheses, each cell's model, digest, rung parameters and seed, the "
        "bootstrap and permutation seeds, the prior exposure and a fingerprint. With --check "
        "FILE: verify a receipt and list what changed in the plan since (post hoc).",
    )
    p.add_argument("plan", type=input_file, help="the plan, a TOML file with [[hypotheses]]")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--out", type=output_folder, help="the matrix output folder")
    what.add_argument("--check", type=input_file, help="a study-receipt.json to check")
    p.set_defaults(func=cmd_study_receipt)
