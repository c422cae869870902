"""What the CLI's commands share with the sweep package: paths, the usage error, atomic
writes and the `--param` parser. It sits below both (`pyapp.host`), so that `pyapp.sweep`
needs nothing from `pyapp.cli`."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyapp.errors import InputError, RecordError
from pyapp.errors import UsageError as UsageError  # re-exported for the sweep
from pyapp.records import loads_document, task_params
from pyapp.tasks import LADDERS, PRESETS

if TYPE_CHECKING:
    from pyapp.tasks import TaskParams

REPO_ROOT = Path(__file__).resolve().parents[2]
EXPORTS = REPO_ROOT / "exports"


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def write_atomically(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a crash never leaves a torn file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; written files are ordinary
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _path(text: str) -> str:
    if "\x00" in text:
        raise argparse.ArgumentTypeError("a NUL byte in a path")
    return text


def input_file(text: str) -> str:
    """An argparse type: a file the command reads (through `pyapp.records.documents`)."""
    return _path(text)


def input_folder(text: str) -> str:
    """An argparse type: a folder the command reads files from."""
    return _path(text)


def output_file(text: str) -> str:
    """An argparse type: a file the command writes (checked by `check_output` first)."""
    return _path(text)


def output_folder(text: str) -> str:
    """An argparse type: a folder the command writes into (`check_output_folder` first)."""
    return _path(text)


PATH_TYPES = (input_file, input_folder, output_file, output_folder)
"""Every argparse type that marks a path: tests/test_cli_paths.py walks the parser for them
and feeds each hostile files."""


def check_output_folder(path: str, option: str) -> Path:
    """`path` as an output folder, refused (`UsageError`, exit 2) before any work when it is
    a file (or anything but a folder), lies under a file, or cannot be created or written."""
    if "\x00" in path:
        raise UsageError(f"{option}: a NUL byte in the path")
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise UsageError(f"{option} {path}: not a folder")
    folder = target
    while not folder.exists() and folder != folder.parent:
        if os.path.lexists(folder):  # a dangling symlink
            raise UsageError(f"{option} {path}: {folder} is a broken link")
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"{option} {path}: {folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: the folder {folder} is not writable")
    return target


def param_overrides(
    items: list[str] | None, seed: int, preset: str | None = None
) -> dict[str, Any]:
    """`--preset NAME` then `--param KEY=VALUE` overrides as JSON values (a `--param` applies
    after the preset, so it changes one parameter of it), checked by the same code the page
    uses. A ladder's name is refused: a run is one task set (one rung)."""

    if preset is not None and preset in LADDERS:
        raise UsageError(
            f"--preset {preset!r} is a ladder, not one task set: choose one of its rungs "
            f"({', '.join(LADDERS[preset])}), or name the ladder in a matrix plan's axes.presets"
        )
    if preset is not None and preset not in PRESETS:
        raise UsageError(f"unknown --preset {preset!r}; known: {', '.join(PRESETS)}")
    overrides: dict[str, Any] = dict(PRESETS[preset]) if preset is not None else {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--param expects KEY=VALUE, got {item[:80]!r}")
        try:  # deep JSON, NaN, 41-digit numbers, repeated keys: one line, exit 2
            overrides[key] = loads_document(value, f"--param {key}")
        except InputError as error:
            raise UsageError(f"--param {key}: {error.message}") from None
    try:
        task_params(seed, overrides)
    except RecordError as error:
        raise UsageError(f"task parameters: {error}") from None
    return overrides


def task_params_of(args: argparse.Namespace) -> TaskParams:
    """The task parameters a command's `--seed`, `--preset` and `--param` ask for."""
    overrides = param_overrides(args.param, args.seed, getattr(args, "preset", None))
    return task_params(args.seed, overrides)
