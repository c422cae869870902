"""An output folder that is a record, not a cache: one writer, plain entries, its own kind.

What a command that keeps a record in a folder (`matrix`, and `study DIR` on the same kind
of folder) uses before it reads or writes anything there:

    hold_folder(out, "matrix", wait)     one writer at a time: an exclusive lock on
                                         DIR/.lock, held for the whole command; a second
                                         command waits (`wait`) or is refused in one line
                                         naming the holder (`folder_in_use`, exit 1)
    check_entry(path, "file"|"folder")   a symlink, or an entry that is not a plain file /
                                         folder, is refused in one line (`bad_output_folder`)
    claim_folder(out, RECORD, kind, own)  a folder made by another command (a `simulate` or
                                         `sweep` run: no RECORD, entries it does not make, a
                                         summary.json of another kind) is refused
    StateFile(path).write(text)           atomic writes (a temporary file and a rename) that
                                         merge nothing unread: a file changed since this
                                         command last read or wrote it is never overwritten

A lock is `fcntl.flock` (on a cluster's shared filesystem, one with working locks: see
docs/scale.md), released by the kernel when the process ends, however it ends; the lock
file stays (removing it would race a waiting command).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import stat
import sys
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pyapp.errors import InputError
from pyapp.host import write_atomically
from pyapp.records import check_kind, read_document

LOCK_NAME = ".lock"
CELL_ENTRIES = frozenset({LOCK_NAME, "cell.log"})
"""What the matrix keeps in a cell's folder beside the command's own files (the cell's lock
and log, `pyapp.matrix.runner`): a `simulate` or `sweep` run there is the cell's."""
STOP_NAME = ".stop"
MAX_LOCK_NOTE_BYTES = 1_000


def _refuse(path: Path, message: str) -> InputError:
    return InputError("bad_output_folder", message, path=str(path))


def check_entry(path: Path, want: Literal["file", "folder"]) -> None:
    """Refuse `path` when it exists as a symlink or as anything but a plain `want`."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as error:  # a name too long, a part that is a file, ...
        raise _refuse(path, f"cannot be looked at: {error.strerror or error}") from None
    if stat.S_ISLNK(mode):
        raise _refuse(path, "a symbolic link: refused (this folder is a record, not links)")
    plain = stat.S_ISREG(mode) if want == "file" else stat.S_ISDIR(mode)
    if not plain:
        article = "a plain file" if want == "file" else "a folder"
        raise _refuse(path, f"not {article}: refused (move it away)")


def check_entries(paths: Iterable[tuple[Path, Literal["file", "folder"]]]) -> None:
    for path, want in paths:
        check_entry(path, want)


def _note(command: str) -> str:
    started = datetime.now(UTC).isoformat(timespec="seconds")
    return f"{command} (pid {os.getpid()} on {socket.gethostname()}, since {started})\n"


@contextlib.contextmanager
def hold_folder(out: Path, command: str, wait: bool | None) -> Iterator[None]:
    """Hold `out`'s folder lock for the block: the one writer of the folder's records. A
    second holder is waited for (`wait`), or refused in one line naming it (`wait` None: the
    command has no `--wait`, and the refusal offers none)."""
    path = out / LOCK_NAME
    check_entry(path, "file")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError as error:
        raise _refuse(path, f"cannot open the folder's lock: {error.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _refuse(path, "not a plain file: refused (move it away)")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, MAX_LOCK_NOTE_BYTES, 0).decode("utf-8", "replace").strip()
            holder = holder.splitlines()[0] if holder else "another command"
            if not wait:
                offer = "" if wait is None else ", or add --wait"
                raise InputError(
                    "folder_in_use",
                    f"in use by {holder}: one writer at a time (run again when it has "
                    f"ended{offer})",
                    path=str(out),
                ) from None
            print(f"{out}: waiting for {holder} to end", file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, _note(command).encode("utf-8"), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def claim_folder(
    out: Path, record: str, kind: str, own: frozenset[str], others: str = "a simulate or sweep"
) -> None:
    """Refuse `out` unless it is empty, missing, or a folder of this kind: its `record`
    (e.g. `matrix.json`) of `kind`, or — before the first record — only entries in `own`.
    A `summary.json` must be this kind's too (`<kind>-summary`): another command's is
    refused, naming it (`others`: the commands the refusal suggests made the folder)."""
    if not out.is_dir():
        return
    check_entry(out / record, "file")
    summary = out / "summary.json"
    if summary.name in own and os.path.lexists(summary):
        check_entry(summary, "file")
        check_kind(read_document(summary), f"{kind}-summary", summary)
    if os.path.lexists(out / record):
        return
    foreign = sorted(name for name in os.listdir(out) if name not in own)
    if foreign:
        raise _refuse(
            out,
            f"not a {kind} folder: it holds {foreign[0]!r} and no {record} (made by another "
            f"command, such as {others} run?): use another output folder",
        )


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


class StateFile:
    """A record file written whole and atomically, that never overwrites what it did not
    read: `seen()` when it is read, `write()` refuses if the file changed since."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.last: tuple[int, int, int] | None = _signature(path)

    def seen(self) -> None:
        """The file as it is now is the one this command read."""
        self.last = _signature(self.path)

    def write(self, text: str) -> None:
        check_entry(self.path, "file")
        if _signature(self.path) != self.last:
            raise InputError(
                "bad_output_folder",
                "changed by something else while this command held the folder: not "
                "overwritten (nothing is merged); run the command again",
                path=str(self.path),
            )
        write_atomically(self.path, text)
        self.last = _signature(self.path)
