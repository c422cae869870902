"""Every CLI command that takes a path, fed hostile files (issue 24).

The walk enumerates the argparse parser: every argument whose type is one of the path
types of `pyapp.host.files` (`PATH_TYPES`), so a command added later joins by marking its
paths. A house check makes sure it does: an argument named like a path must carry one.
Each case runs in a subprocess with a deadline and must end in exit 1 or 2 with one error
line and no traceback. Outputs are never a device: `/dev/zero` is given as a link to it
(replacing the link would be harmless; the command must refuse it anyway)."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pyapp.cli import parser
from pyapp.host import files as common
from pyapp.records import MAX_DOCUMENT_BYTES

ROOT = Path(__file__).resolve().parents[1]
DEADLINE_S = 60
PATHLIKE = re.compile(
    r"(^|_)(out|dir|folder|file|path|trace|predictions|registers|program|ledger|site|csv|markdown)($|_)"
)
"""Argument names that say "a path": each must carry a path type."""
REQUIRED: dict[str, str] = {
    "condition": "supplied-program",
    "model": "independent",
    "seeds": "1..1",
}
"""Values for required arguments that are not paths (add one when a command needs it)."""
KINDS = {
    common.input_file: ("fifo", "folder", "dev-zero", "latin-1", "oversized"),
    common.input_folder: ("fifo", "empty-folder", "dev-zero", "latin-1", "oversized"),
    common.output_file: ("fifo", "folder", "dev-zero-link", "under-a-file"),
    common.output_folder: ("fifo", "a-file", "dev-zero-link", "under-a-file"),
}


def subcommands() -> dict[str, argparse.ArgumentParser]:
    top = parser()
    action = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def path_arguments() -> list[tuple[str, str, Any]]:
    """(command, dest, path type) of every path argument of every command."""
    found = []
    for name, sub in subcommands().items():
        for action in sub._actions:
            if action.type in common.PATH_TYPES:
                found.append((name, action.dest, action.type))
    return found


def test_every_argument_named_like_a_path_is_marked_as_one() -> None:
    unmarked = [
        (name, action.dest)
        for name, sub in subcommands().items()
        for action in sub._actions
        if PATHLIKE.search(action.dest) and action.type not in common.PATH_TYPES
    ]
    assert not unmarked, f"mark these with a type from pyapp.host.files.PATH_TYPES: {unmarked}"
    assert len(path_arguments()) >= 15


def hostile(kind: str, tmp: Path) -> Path:
    path = tmp / f"hostile-{kind}"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind in ("folder", "empty-folder"):
        path.mkdir()
    elif kind == "dev-zero":
        return Path("/dev/zero")  # only ever read
    elif kind == "dev-zero-link":
        path.symlink_to("/dev/zero")
    elif kind in ("latin-1", "a-file"):
        path.write_bytes(b'{"caf\xe9": 1}')
    elif kind == "oversized":
        with open(path, "wb") as handle:
            handle.truncate(MAX_DOCUMENT_BYTES + 1)  # sparse: no disk used, never read
    else:
        assert kind == "under-a-file"
        (tmp / "plain").write_text("x", encoding="utf-8")
        path = tmp / "plain" / "below"
    return path


def neutral(kind: Any, tmp: Path, control: Path) -> str:
    """A harmless value for a path argument that is not the one under test."""
    if kind is common.input_file:
        return str(control)
    if kind is common.input_folder:
        return str(control.parent)
    return str(tmp / f"neutral-{kind.__name__}")


def argv_for(command: str, dest: str, value: Path, tmp: Path, control: Path) -> list[str]:
    sub = subcommands()[command]
    argv = [command]
    # a required group of alternatives (`--out | --check`) needs one: the one under test, or
    # else its first
    chosen = set()
    for group in sub._mutually_exclusive_groups:
        if group.required:
            dests = [a.dest for a in group._group_actions]
            chosen.add(dest if dest in dests else dests[0])
    for action in sub._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        under_test = action.dest == dest
        if not under_test and not action.required and action.dest not in chosen:
            continue
        text = str(value) if under_test else None
        if text is None and action.type in common.PATH_TYPES:
            text = neutral(action.type, tmp, control)
        if text is None:
            assert action.dest in REQUIRED, f"{command}: add a value for {action.dest}"
            text = REQUIRED[action.dest]
        argv += [text] if not action.option_strings else [action.option_strings[0], text]
    return argv


@pytest.fixture(scope="module")
def control(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("control")
    trace = folder / "trace.json"
    done = subprocess.run(
        [sys.executable, "-m", "pyapp", "run", "--condition", "supplied-program", "--out", trace],
        cwd=ROOT,
        capture_output=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode == 0
    return trace


CASES = [
    (command, dest, kind)
    for command, dest, path_type in path_arguments()
    for kind in KINDS[path_type]
]


@pytest.mark.parametrize(
    ("command", "dest", "kind"), CASES, ids=[f"{c}-{d}-{k}" for c, d, k in CASES]
)
def test_a_hostile_path_ends_in_one_line_exit_1_or_2(
    tmp_path, control, command, dest, kind
) -> None:
    argv = argv_for(command, dest, hostile(kind, tmp_path), tmp_path, control)
    done = subprocess.run(
        [sys.executable, "-m", "pyapp", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,  # a FIFO that hangs the command fails the test here
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in done.stderr + done.stdout, (argv, done.stderr)
    assert done.returncode in (1, 2), (argv, done.returncode, done.stdout, done.stderr)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 or done.stdout.count('"ok": false') == 1, (argv, done.stderr)
    assert not Path("/dev/zero").is_file()  # never replaced by a written file
