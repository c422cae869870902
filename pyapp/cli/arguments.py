"""Argument types and option groups the commands share: a TCP port (`port`), a seed
(`seed`), the task set's options (`seeded`) and the check of an output file
(`check_output`)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pyapp.errors import UsageError
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


def check_output(path: str, option: str) -> Path:
    """`path` as an output file, refused (exit 2) before any work when it is a folder,
    lies under a file, or its folder cannot be written."""
    target = Path(path)
    if "\x00" in path:
        raise UsageError(f"{option}: a NUL byte in the path")
    if target.is_dir():
        raise UsageError(f"{option} {path}: is a directory, not a file")
    if os.path.lexists(target) and not target.is_symlink() and not target.is_file():
        raise UsageError(f"{option} {path}: not a regular file (a FIFO, device or socket)")
    if target.is_symlink() and target.exists() and not target.is_file():
        raise UsageError(f"{option} {path}: links to something that is not a regular file")
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"{option} {path}: {folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: the folder {folder} is not writable")
    return target
