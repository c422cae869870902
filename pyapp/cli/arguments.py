"""Argument types and option groups the commands share: a TCP port (`port`), a seed
(`seed`) and the task set's options (`seeded`)."""

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
    p.add_argument("--preset", metavar="NAME", help=PRESET_HELP)


PRESET_HELP = (
    f"a named task set ({', '.join(PRESETS)}; pyapp/tasks/presets.py): design is 6 trials per "
    "op, calibration-60/-300 60 or 300 with operands stratified by digit count, a ladder's "
    "rung adds 220 held-out tasks of its magnitudes; --param applies after it"
)
"""The `--preset` help every command shares (the names are checked by
`pyapp.host.files.param_overrides`: a ladder's name is refused with its rungs named)."""
