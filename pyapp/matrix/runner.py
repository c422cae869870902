"""The cell runner: one attempt at one cell, the only code the two engines share.

A cell runs as a subprocess, `python -m pyapp simulate ...` or `python -m pyapp sweep ...`,
writing the same files those commands write today into `DIR/cells/NAME/` (its output and
errors go to `cell.log` there). A subprocess rather than a call in this process because:

- resume is the sweep's own: an unfinished browser cell is run again as `sweep --resume`
  on its folder, and the sweep's files (run.json, trials.jsonl, trace.json) say what is left;
- a cell is a process: Ctrl-C reaches it as SIGINT (the sweep's own clean stop), a crash of
  a browser or a model takes down that cell and nothing else, and a Ray task is just "run
  this cell";
- the child asks the kernel to kill it when the process that started it dies
  (`PR_SET_PDEATHSIG`), so a lost Ray worker leaves no sweep behind to race its retry.

A cell is never run twice at once: the runner holds an exclusive lock on `cells/NAME/.lock`
(shared with the child, so the lock lasts until both have exited) before it looks at the
folder, and a finished cell (a `done` run.json; a simulate's summary.json) is never run
again — a retried Ray task that finds its cell done returns at once.

Test hooks (`COMPOSITION_LAB_MATRIX_HOOKS`, JSON, read by the command and passed in each
job): `kill_worker_once = {"marker": FILE, "cell": SUBSTRING, "after_trials": N}` SIGKILLs
the process running the cell once N trials are recorded, unless FILE exists (it is created
first): a lost worker, injected. `fail_once = {"marker": FILE, "cell": SUBSTRING}` makes the
cell's next attempt a command that fails at once (before any trial), unless FILE exists (it is
created first): a cell failing before its freeze, injected.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pyapp.host import REPO_ROOT
from pyapp.matrix.cells import Cell
from pyapp.matrix.state import now
from pyapp.records import JSON, from_json, read_document, to_json

HOOKS_VARIABLE = "COMPOSITION_LAB_MATRIX_HOOKS"
PR_SET_PDEATHSIG = 1
POLL_S = 0.25
AttemptStatus = Literal["done", "interrupted", "paused", "failed"]


@dataclass(frozen=True)
class Job:
    """Everything one attempt at a cell needs, as plain JSON values (Ray ships it)."""

    cell: dict[str, JSON]
    """The cell (`Cell` as JSON)."""
    out: str
    """The matrix's output folder (absolute; on a cluster, a shared filesystem)."""
    site: str
    """The built site browser cells serve."""
    ledger: str
    """`cell`, `shared` or a ledger file."""
    consent: bool
    """The plan's consent (browser cells)."""
    timeout_s: float | None
    """A browser cell's `--timeout`."""
    page_params: dict[str, str]
    """The page's extra query parameters."""
    chromium_flags: tuple[str, ...]
    """Extra Chromium flags."""
    hooks: dict[str, JSON]
    """Test hooks (empty in normal use)."""
    stop_file: str
    """While this file exists, no cell starts and running cells are asked to stop (the
    matrix command creates it on Ctrl-C; on a cluster it is on the shared filesystem)."""
    chain_protocol: str = "design"
    """The plan's chain protocol (`--chain-protocol` of every cell's command)."""
    sealed: bool = False
    """The plan's `options.sealed` is true (`--sealed` of every cell's command)."""
    study_seal: str | None = None
    """The plan's `options.sealed` is `study`: the study seal file of the cell's task seed
    (`--study-seal FILE` of its command; `pyapp.matrix.seals`)."""


@dataclass(frozen=True)
class Attempt:
    """What one attempt at a cell came to."""

    name: str
    """The cell."""
    status: AttemptStatus
    """How it ended."""
    ran: bool
    """False when the cell was already finished and nothing ran."""
    resumed: bool
    """The attempt continued an earlier one (`sweep --resume`)."""
    exit_code: int | None
    """The command's exit status."""
    started_at: str
    """UTC start."""
    ended_at: str
    """UTC end."""
    seconds: float
    """Wall seconds."""
    error: str | None
    """Why it did not finish (the command's last line of output)."""
    command: tuple[str, ...]
    """The command line."""
    worker: str
    """Host name and process id of the process that ran it."""
    attempts: int
    """Attempts at this cell so far, this one included (the headers in its cell.log)."""


def folder_of(job: Job, cell: Cell) -> Path:
    return Path(job.out) / "cells" / cell.name


def finished(cell: Cell, folder: Path) -> bool:
    """Whether the cell's own files say it is done."""
    if cell.kind == "synthetic":
        seed = folder / f"seed-{cell.seed}"
        return all(p.exists() for p in (folder / "summary.json", seed / "predictions.json"))
    return sweep_status(folder) == "done"


def sweep_status(folder: Path) -> str | None:
    """The status a sweep's run.json records (None without one)."""
    path = folder / "run.json"
    if not path.exists():
        return None
    try:
        data = read_document(path)
    except Exception:
        return "unreadable"
    return str(data.get("status")) if isinstance(data, dict) else "unreadable"


def ledger_of(job: Job, folder: Path) -> str:
    if job.ledger == "cell":
        return str(folder / "ledger.json")
    if job.ledger == "shared":
        return str(Path(job.out) / "ledger.json")
    return job.ledger


def command(job: Job, cell: Cell, folder: Path, resume: bool) -> list[str]:
    """The `python -m pyapp` arguments of this attempt."""
    params = [f"--param={k}={_json(v)}" for k, v in cell.params.items()]
    conditions = ["--conditions", ",".join(cell.conditions)] if cell.conditions else []
    if cell.kind == "synthetic":
        seeds = f"{cell.seed}..{cell.seed}"
        return [
            "simulate",
            "--model",
            cell.model_key,
            "--seeds",
            seeds,
            *params,
            *conditions,
            "--chain-protocol",
            job.chain_protocol,
            *_sealing(job),
            "--out",
            str(folder),
        ]
    native = cell.backend == "native"  # no page: no site, page parameters or Chromium flags
    tail = ["--consent"] if job.consent else []
    tail += ["--out", str(folder), "--ledger", ledger_of(job, folder)]
    tail += [] if native else ["--site", job.site]
    if job.timeout_s is not None:
        tail += ["--timeout", str(job.timeout_s)]
    if cell.folder:
        tail += ["--model-folder", cell.folder]
    tail += ["--study-seal", job.study_seal] if job.study_seal else []
    if resume:
        return ["sweep", "--resume", *tail]
    model = ["--model", cell.model, "--backend", cell.backend, "--seed", str(cell.seed)]
    for option, value in (
        ("--dtype", cell.dtype),
        ("--revision", cell.revision),
        ("--model-host", cell.host),
    ):
        model += [option, value] if value else []
    extra = [] if native else [f"--page-param={k}={v}" for k, v in job.page_params.items()]
    extra += [] if native else [f"--chromium-flag={flag}" for flag in job.chromium_flags]
    protocol = ["--chain-protocol", job.chain_protocol, *(["--sealed"] if job.sealed else [])]
    return ["sweep", *model, *params, *conditions, *protocol, *extra, *tail]


def _sealing(job: Job) -> list[str]:
    if job.study_seal:
        return ["--study-seal", job.study_seal]
    return ["--sealed"] if job.sealed else []


def _json(value: JSON) -> str:
    return json.dumps(value, separators=(",", ":"))


_LIBC = ctypes.CDLL(None, use_errno=True)
"""Loaded here, never between fork and exec (loading a library there can deadlock)."""


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL it when the thread that started it dies."""
    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def run_cell(job: Job) -> Attempt:
    """One attempt at the cell of `job` (or nothing, if its files say it is done or the stop
    file exists). The stop file appearing, or a KeyboardInterrupt here: the cell is sent
    SIGINT — the sweep then stops at the end of its trial and writes its files — and is
    waited for."""

    cell: Cell = from_json(Cell, job.cell)
    folder = folder_of(job, cell)
    folder.mkdir(parents=True, exist_ok=True)
    worker = f"{socket.gethostname()}:{os.getpid()}"
    with open(folder / ".lock", "a+", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        started_at, t0 = now(), time.monotonic()
        log = folder / "cell.log"
        done, stopping = finished(cell, folder), Path(job.stop_file).exists()
        if done or stopping:
            return Attempt(
                cell.name,
                "done" if done else "interrupted",
                False,
                False,
                None,
                started_at,
                now(),
                0.0,
                None,
                (),
                worker,
                _attempts(log),
            )
        resume = cell.kind == "browser" and (folder / "run.json").exists()
        argv = _fail_once_hook(job.hooks, cell) or command(job, cell, folder, resume)
        with log.open("ab") as output:
            output.write(f"== {started_at} {worker}: python -m pyapp {' '.join(argv)}\n".encode())
            output.flush()
            offset = output.tell()
            process = subprocess.Popen(
                [sys.executable, "-m", "pyapp", *argv],
                cwd=REPO_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches the matrix; it forwards SIGINT once
                pass_fds=(lock.fileno(),),  # the lock lasts until the child has exited too
                preexec_fn=_die_with_parent,
            )
            code, interrupted = _wait(process, Path(job.stop_file), job.hooks, cell, folder)
        status = _status(cell, folder, code, interrupted)
        error = None if status == "done" else _last_line(log, offset)
        return Attempt(
            cell.name,
            status,
            True,
            resume,
            code,
            started_at,
            now(),
            round(time.monotonic() - t0, 3),
            error,
            ("python -m pyapp", *argv),
            worker,
            _attempts(log),
        )


def _wait(
    process: subprocess.Popen[bytes],
    stop: Path,
    hooks: dict[str, JSON],
    cell: Cell,
    folder: Path,
) -> tuple[int, bool]:
    """Wait for the cell's process; forward a stop to it as SIGINT (twice: stop now)."""
    signals_sent = 0
    while True:
        try:
            return process.wait(timeout=POLL_S), signals_sent > 0
        except subprocess.TimeoutExpired:
            pass
        except KeyboardInterrupt:
            signals_sent += _interrupt(process)
            continue
        if signals_sent == 0 and stop.exists():
            signals_sent += _interrupt(process)
        elif signals_sent == 1 and _stop_now(stop):
            signals_sent += _interrupt(process)  # the sweep's second Ctrl-C: stop at once
        _kill_worker_hook(hooks, cell, folder)


def _stop_now(stop: Path) -> bool:
    """The stop file says `now` (a second Ctrl-C of the matrix command)."""
    try:
        return stop.read_text(encoding="utf-8").strip() == "now"
    except OSError:
        return False


def _interrupt(process: subprocess.Popen[bytes]) -> int:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGINT)
    return 1


def _fail_once_hook(hooks: dict[str, JSON], cell: Cell) -> list[str] | None:
    """The injected fault: the cell's command, once, is one that fails before any trial."""
    hook: Any = hooks.get("fail_once")
    if not isinstance(hook, dict) or str(hook.get("cell", "")) not in cell.name:
        return None
    marker = Path(str(hook["marker"]))
    if marker.exists():
        return None
    marker.write_text(f"failed {cell.name} once\n", encoding="utf-8")
    return ["injected-failure"]


def _kill_worker_hook(hooks: dict[str, JSON], cell: Cell, folder: Path) -> None:
    """The injected fault: this worker process dies (SIGKILL) mid-cell, once."""
    hook: Any = hooks.get("kill_worker_once")
    if not isinstance(hook, dict) or str(hook.get("cell", "")) not in cell.name:
        return
    marker = Path(str(hook["marker"]))
    trials = folder / "trials.jsonl"
    if marker.exists() or not trials.exists():
        return
    with trials.open("rb") as handle:
        count = handle.read().count(b"\n")
    if count >= int(hook.get("after_trials", 1)):
        marker.write_text(f"killed {os.getpid()} after {count} trials\n", encoding="utf-8")
        os.kill(os.getpid(), signal.SIGKILL)


def _attempts(log: Path) -> int:
    """Attempts recorded in a cell's log: one header line each."""
    if not log.exists():
        return 0
    with log.open("rb") as handle:
        return sum(1 for line in handle if line.startswith(b"== "))


def awaiting_seal(cell: Cell, folder: Path) -> bool:
    """The cell stopped at its freeze until its study seal exists (a synthetic cell: its
    frozen trace and no summary; a sweep: run.json paused for it)."""
    if cell.kind == "synthetic":
        seed = folder / f"seed-{cell.seed}"
        return (seed / "trace.json").exists() and not (folder / "summary.json").exists()
    path = folder / "run.json"
    if not path.exists():
        return False
    try:
        data = read_document(path)
    except Exception:
        return False
    paused = data.get("paused") if isinstance(data, dict) else None
    return (
        isinstance(data, dict)
        and data.get("status") == "paused"
        and isinstance(paused, dict)
        and paused.get("code") == "awaiting_study_seal"
    )


def _status(cell: Cell, folder: Path, code: int, interrupted: bool) -> AttemptStatus:
    if finished(cell, folder):
        return "done"
    if awaiting_seal(cell, folder) and not interrupted:
        return "paused"
    recorded = sweep_status(folder) if cell.kind == "browser" else None
    if recorded in ("paused", "interrupted"):
        return recorded  # type: ignore[return-value]
    return "interrupted" if interrupted else "failed"


def _last_line(log: Path, offset: int) -> str | None:
    """The last non-empty line the attempt wrote (at most 500 characters)."""
    with log.open("rb") as handle:
        handle.seek(max(offset, log.stat().st_size - 4096))
        lines = [ln.strip() for ln in handle.read().decode("utf-8", "replace").splitlines()]
    lines = [ln for ln in lines if ln]
    return lines[-1][:500] if lines else None


def job_for(cell: Cell, **fixed: Any) -> Job:
    return Job(cell=to_json(cell), **fixed)
