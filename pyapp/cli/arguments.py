"""Argument types and option groups the commands share: a TCP port (`port`), a seed
(`seed`), a count of at least one (`positive`) and the task set's options (`seeded`)."""

from __future__ import annotations

import argparse

from pyapp.tasks.taskset import DEFAULT_SEED, PRESETS, SEED_LIMIT


def port(text: str) -> int:
    """An argparse type: a TCP port number 0–65535 (0 picks a free port)."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a port number") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{number} is not a port number (0-65535)")
    return number


def positive(text: str) -> int:
    """An argparse type: a whole number of at least 1 (at most 10**9)."""
    value = int(text) if text.isdigit() and len(text) <= 10 else 0
    if not 1 <= value <= 10**9:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a whole number of at least 1")
    return value


def seed(text: str) -> int:
    """An argparse type: a seed 0 <= seed < 2**64."""
    try:
        value = int(text) if len(text) <= 30 else -1
    except ValueError:
        value = -1
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"{text[:30]!r} is not a seed (0 <= seed < 2**64)")
    return value


def seeded(p: argparse.ArgumentParser) -> None:
    """The task set's options: `--seed`, `--param` and `--preset` (`tasks`, `run`)."""
    p.add_argument("--seed", type=seed, default=DEFAULT_SEED, help="task seed (1729)")
    p.add_argument(
        "--param",
        action="append",
        metavar="KEY=VALUE",
        help="override a task parameter, e.g. primitives_per_op=100",
    )
    p.add_argument(
        "--preset",
        choices=list(PRESETS),
        help="a named calibration set (design: 6 trials per op; calibration-60; "
        "calibration-300, operands stratified by digit count); --param applies after it",
    )
