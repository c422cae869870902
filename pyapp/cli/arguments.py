"""Argument types and option groups the commands share: a TCP port (`port`), a seed
(`seed`), a count of at least one (`positive`), the task set's options (`seeded`), the chain
protocol (`chain_protocol_option`) and the check of an output file (`check_output`)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pyapp.errors import UsageError
from pyapp.records import CHAIN_PROTOCOL_NAMES, DEFAULT_CHAIN_PROTOCOL
from pyapp.tasks import DEFAULT_SEED, PRESETS, SEED_LIMIT


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
    p.add_argument("--preset", metavar="NAME", help=PRESET_HELP)


PRESET_HELP = (
    f"a named task set ({', '.join(PRESETS)}; pyapp/tasks/presets.py): design is 6 trials per "
    "op, calibration-60/-300 60 or 300 with operands stratified by digit count, a ladder's "
    "rung adds 220 held-out tasks of its magnitudes; --param applies after it"
)
"""The `--preset` help every command shares (the names are checked by
`pyapp.host.files.param_overrides`: a ladder's name is refused with its rungs named)."""


def chain_protocol_option(
    p: argparse.ArgumentParser, default: str | None = DEFAULT_CHAIN_PROTOCOL.name
) -> None:
    """`--chain-protocol NAME` (`sweep`, `simulate`): the controlled chain's protocol, the
    design's unless chosen (`pyapp.records.terms`); `sweep` takes no default, so that
    `--resume` tells an explicit choice from the recorded one."""
    p.add_argument(
        "--chain-protocol",
        choices=CHAIN_PROTOCOL_NAMES,
        default=default,
        help="the controlled chain's protocol: design (the default: 6 calls a route, "
        "determinants and derivatives unsupported) or extended (chain-extended/1: every "
        "family routed, 7 calls, 3,584 input tokens, 105 s a route)",
    )


def sealed_option(p: argparse.ArgumentParser) -> None:
    """`--sealed` (`sweep`, `simulate`): a sealed run, whose held-out tasks are drawn after
    every profile is frozen, from the seed the freezes seal (`pyapp.predict.sealing`)."""
    p.add_argument(
        "--sealed",
        action="store_true",
        help="sealed held-out tasks: drawn (generator tasks/2) only after every profile is "
        "frozen, from a seed hashed from the task seed, the model identity and the frozen "
        "profiles (docs/audit.md); default: unsealed, held-out tasks from the task seed",
    )
    p.add_argument(
        "--study-seal",
        metavar="FILE",
        help="sealed under a study-level seal (what `matrix` passes for a plan's "
        'sealed = "study"): while FILE does not exist the run stops at its freeze; once '
        "the study has written it (study-seal/1: every run of the task seed, each one's own "
        "seal) the held-out tasks are drawn from it (docs/audit.md)",
    )


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
