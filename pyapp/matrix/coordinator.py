"""`python -m pyapp matrix PLAN --out DIR`: check the plan, run what is unfinished, record.

The command checks the whole plan first (`pyapp.matrix.cells.expand`; nothing starts on a
bad plan), refuses a folder made by another command, takes the folder's lock (one writer at
a time: a second command is refused, or waits with `--wait`; `pyapp.matrix.folder`), opens
`DIR/matrix.json` (`pyapp.matrix.state`), decides from each cell's own files which cells
are done, which run and which do not re-derive (`pyapp.matrix.cellfiles.review`, which also
refuses a plan that changes a cell the folder holds), hands the cells to run to the engine
at once (`pyapp.matrix.engines`), records each attempt as it comes back, shows the progress
line, re-derives what ran, and at the end writes `DIR/summary.json` and `DIR/report.html`
(`pyapp.matrix.summary`, `pyapp.matrix.report`).

Ctrl-C (or SIGTERM) once: the stop file `DIR/.stop` is created; no further cell starts and
each running cell receives SIGINT — the sweep's own clean stop at the end of its trial —
and the command waits for them, records them `interrupted` and says how to continue (the
same command again). Twice: the stop file says `now` and each running cell gets a second
SIGINT (the sweep's own "stop now": the trial in flight is recorded as interrupted); the
command records those cells `interrupted` and ends. Killed outright, the command takes its
cells' processes with it (`PR_SET_PDEATHSIG`); their files stay consistent and the next
invocation resumes them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from pyapp.matrix.cellfiles import Review, review
from pyapp.matrix.cells import Cell, check_engine_resources, describe, expand, site_of
from pyapp.matrix.check import plan_sha256
from pyapp.matrix.engines import Engine, LocalEngine, RayEngine, default_jobs
from pyapp.matrix.folder import STOP_NAME, check_entry, claim_folder, hold_folder
from pyapp.matrix.plan import Plan, read_plan
from pyapp.matrix.progress import Progress
from pyapp.matrix.report import write_report
from pyapp.matrix.runner import Attempt, Job, command, folder_of, job_for
from pyapp.matrix.seals import SEALS_NAME, Sealer, with_seal
from pyapp.matrix.state import DOES_NOT_REDERIVE, CellState, MatrixFile, Session, now
from pyapp.matrix.study_receipt import RECEIPT_NAME, require_receipt
from pyapp.matrix.summary import write_summary
from pyapp.records import JSON
from pyapp.sweep import handling_stops


@dataclass(frozen=True)
class Invocation:
    """The command's arguments."""

    plan: Path
    out: Path
    engine: str
    jobs: int | None
    address: str | None
    dry_run: bool
    hooks: dict[str, JSON]
    wait: bool = False
    """Another command holds the folder: wait for it (else refuse)."""


OWN_ENTRIES = frozenset(
    {"matrix.json", "summary.json", "report.html", "cells", "ledger.json", ".lock", STOP_NAME}
    | {RECEIPT_NAME, SEALS_NAME}
)
"""What a matrix folder holds (a folder holding anything else and no matrix.json was made by
another command)."""


def fixed_options(plan: Plan, plan_path: Path, out: Path, hooks: dict[str, JSON]) -> dict[str, Any]:
    """The keyword arguments every job of the plan shares."""
    ledger = plan.options.ledger
    if ledger not in ("cell", "shared"):
        ledger = str((plan_path.parent / ledger).resolve())
    return {
        "out": str(out.resolve()),
        "site": str(site_of(plan, plan_path)),
        "ledger": ledger,
        "consent": plan.options.consent,
        "timeout_s": plan.options.timeout_s,
        "page_params": dict(plan.options.page_params or {}),
        "chromium_flags": tuple(plan.options.chromium_flags),
        "hooks": hooks,
        "stop_file": str(out.resolve() / ".stop"),
        "chain_protocol": plan.options.chain_protocol,
        "sealed": plan.options.sealed is True,
    }


def open_folder(inv: Invocation, plan: Plan, cells: Sequence[Cell]) -> tuple[MatrixFile, Review]:
    """The folder's matrix.json brought up to the plan, every cell decided from its files
    (written unless this is a dry run); refusals in one line."""
    claim_folder(inv.out, "matrix.json", "matrix", OWN_ENTRIES)
    check_entry(inv.out / STOP_NAME, "file")
    check_entry(inv.out / "cells", "folder")
    check_entry(inv.out / SEALS_NAME, "folder")
    state = MatrixFile.open(inv.out, inv.plan, plan.name, list(cells))
    decided = review(plan, inv.plan, inv.out, state, cells, save=not inv.dry_run)
    return state, decided


def dry_run(inv: Invocation, plan: Plan, cells: Sequence[Cell], jobs: Sequence[Job]) -> int:
    decided = open_folder(inv, plan, cells)[1] if inv.out.is_dir() else None
    to_run = set(decided.run) if decided else {cell.name for cell in cells}
    not_rederiving = set(decided.not_rederiving) if decided else set()
    print(f"{len(cells)} cells (dry run: nothing runs)")
    for cell, job in zip(cells, jobs, strict=True):
        folder = folder_of(job, cell)
        argv: list[str] = []
        if cell.name in not_rederiving:
            state = "does not re-derive, would not run"
        elif cell.name not in to_run:
            state = "done, would not run"
        else:
            resume = cell.kind == "browser" and (folder / "run.json").exists()
            state = "would resume" if resume else "would run"
            argv = command(job, cell, folder, resume)
        print(f"  [{state}] {describe(cell)}")
        if argv:
            print(f"      python -m pyapp {' '.join(argv)}")
    return 0


def make_engine(inv: Invocation, plan: Plan, cells: Sequence[Cell]) -> Engine:
    if inv.engine == "local":
        return LocalEngine(inv.jobs or default_jobs())
    engine = RayEngine(
        inv.address,
        plan.options.retries,
        (
            plan.options.cpus_per_browser_cell,
            plan.options.cpus_per_synthetic_cell,
            plan.options.cpus_per_native_cell,
        ),
    )
    check_engine_resources(cells, engine.gpus(), inv.plan)
    return engine


class StopSignal:
    """Ctrl-C / SIGTERM: first the stop file, then (twice) KeyboardInterrupt."""

    def __init__(self, stop_file: Path, again: str) -> None:
        self.stop_file = stop_file
        self.again = again
        self.stopping = False

    def handler(self, signum: int, frame: FrameType | None) -> None:
        if self.stopping:
            self.stop_file.write_text("now\n", encoding="utf-8")  # running cells: stop at once
            raise KeyboardInterrupt
        self.stopping = True
        self.stop_file.touch()
        print(
            f"\n{signal.Signals(signum).name}: no further cell starts; running cells stop at the "
            f"end of their trial (Ctrl-C again: stop now). Continue later with: {self.again}",
            file=sys.stderr,
        )

    def installed(self) -> contextlib.AbstractContextManager[None]:
        return handling_stops(self.handler)


def record(state: MatrixFile, name: str, result: Attempt | BaseException) -> bool:
    """Record one attempt; True when something ran."""
    if isinstance(result, BaseException):
        first = (str(result).strip().splitlines() or [""])[0][:300]
        state.update(
            name,
            status="failed",
            ended_at=now(),
            error=f"the engine lost the cell: {type(result).__name__}: {first}",
        )
        return True
    current = state.cell(name)
    if not result.ran:
        if result.status == "done" and current.status != "done":
            state.update(name, status="done", error=None)
        elif current.status == "running":
            state.update(name, status="pending")
        return False
    state.update(
        name,
        status=result.status,
        attempts=result.attempts,
        started_at=result.started_at,
        ended_at=result.ended_at,
        seconds=round(current.seconds + result.seconds, 3),
        exit_code=result.exit_code,
        error=result.error,
        command=result.command,
        worker=result.worker,
    )
    return True


def again_command(inv: Invocation) -> str:
    engine = "" if inv.engine == "local" else f" --engine {inv.engine}"
    engine += f" --address {inv.address}" if inv.address else ""
    return f"python -m pyapp matrix {inv.plan} --out {inv.out}{engine}"


def run(inv: Invocation) -> int:
    plan = read_plan(inv.plan)
    cells = expand(plan, inv.plan)
    fixed = fixed_options(plan, inv.plan, inv.out, inv.hooks)
    jobs = [job_for(cell, **fixed) for cell in cells]
    if plan.options.sealed == "study":
        jobs = [with_seal(job, inv.out, cell) for job, cell in zip(jobs, cells, strict=True)]
    if inv.dry_run:
        return dry_run(inv, plan, cells, jobs)
    claim_folder(inv.out, "matrix.json", "matrix", OWN_ENTRIES)  # before the lock is made
    require_receipt(inv.out, plan)  # hypotheses: frozen before any cell starts
    engine = make_engine(inv, plan, cells)  # before anything is written
    try:
        inv.out.mkdir(parents=True, exist_ok=True)
        with hold_folder(inv.out, f"python -m pyapp matrix {inv.plan}", inv.wait):
            return run_held(inv, plan, cells, jobs, engine)
    except BaseException:  # refused or failed before (or after) the cells ran
        engine.close()  # closing twice is harmless
        raise


def run_held(
    inv: Invocation, plan: Plan, cells: Sequence[Cell], jobs: Sequence[Job], engine: Engine
) -> int:
    """The command, holding the folder's lock."""
    state, decided = open_folder(inv, plan, cells)
    stop_file = inv.out / STOP_NAME
    stop_file.unlink(missing_ok=True)
    sha = plan_sha256(plan)
    jobs_n = (inv.jobs or default_jobs()) if inv.engine == "local" else None
    state.begin_session(
        Session(
            now(),
            None,
            "local" if inv.engine == "local" else "ray",
            jobs_n,
            inv.address,
            sha,
            "running",
            0,
        )
    )
    to_run = set(decided.run)
    sealer = None
    if plan.options.sealed == "study":
        sealer = Sealer(inv.out, cells, {c.name: j for c, j in zip(cells, jobs, strict=True)})
    todo = [
        job
        for job, cell in zip(jobs, cells, strict=True)
        if cell.name in to_run and not (sealer and sealer.waiting(cell))
    ]
    todo += sealer.ready() if sealer else []  # waiting cells go on only with their seal
    bad = len(decided.not_rederiving)
    queued = {str(job.cell["name"]) for job in todo}
    held = [c for c in cells if c.name in to_run and c.name not in queued]
    print(
        f"matrix: {len(cells)} cells, {len(cells) - len(todo) - len(held) - bad} done already, "
        f"{len(todo)} to run"
        + (f", {len(held)} frozen, waiting for their seed's study seal" if held else "")
        + (f", {bad} whose files do not re-derive (left as they are)" if bad else "")
        + f" ({inv.engine} engine) -> {inv.out}",
        file=sys.stderr,
    )
    stop = StopSignal(stop_file, again_command(inv))
    ran = drive(engine, todo, state, stop, inv.hooks, sealer)
    for problem in [*sealer.problems.values(), *sealer.unsealed()] if sealer else ():
        print(f"matrix: {problem}", file=sys.stderr)
    try:
        review(plan, inv.plan, inv.out, state, cells, save=True)  # re-derive what ran
    except BaseException:
        state.end_session(ended_at=now(), status="failed", cells_run=ran)
        raise
    counts = state.counts()
    status = (
        "done"
        if counts.get("done", 0) == len(cells)
        else ("interrupted" if stop.stopping else "failed")
    )
    state.end_session(ended_at=now(), status=status, cells_run=ran)
    stop_file.unlink(missing_ok=True)
    return finish(inv, state, cells, status)


def drive(
    engine: Engine,
    todo: Sequence[Job],
    state: MatrixFile,
    stop: StopSignal,
    hooks: dict[str, JSON],
    sealer: Sealer | None = None,
) -> int:
    """Hand every job to the engine, record what comes back; the attempts that ran. Under
    study seals, a seed's cells stopped at their freeze are handed over again once the
    last of them is frozen and the seed's seal made (`pyapp.matrix.seals`)."""

    progress = Progress(sum(1 for c in state.record.cells if c.in_plan))
    ran = 0
    interrupt_after = hooks.get("sigint_after_cells")
    try:
        with stop.installed():
            engine.submit(todo)
            progress.show(state.counts())
            while engine.outstanding():
                finished = engine.wait(timeout=0.5)
                # every start a worker announced before its cell finished is taken first, so
                # a fast cell's "running" never lands after its result
                for name in engine.started():
                    state.update(name, status="running", started_at=now())
                for name, result in finished:
                    if record(state, name, result):
                        ran += 1
                        progress.finished_here += 1
                        if ran == interrupt_after:  # the test hook: Ctrl-C, injected
                            os.kill(os.getpid(), signal.SIGINT)
                if sealer is not None and finished and not stop.stopping:
                    engine.submit(sealer.ready())
                progress.show(state.counts())
    except KeyboardInterrupt:  # the second Ctrl-C: stop now; running cells are resumable
        for cell in state.record.cells:
            if cell.status == "running":
                state.update(cell.cell.name, status="interrupted", error="stopped at once")
        stop.stopping = True
    finally:
        progress.end()
        engine.close()
    return ran


def finish(inv: Invocation, state: MatrixFile, cells: Sequence[Cell], status: str) -> int:
    summary = write_summary(inv.out, state.record)
    write_report(inv.out, summary)
    counts = state.counts()
    shown = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    print(
        f"matrix {status}: {shown}; wrote {inv.out / 'summary.json'}, "
        f"{inv.out / 'report.html'}, {inv.out / 'matrix.json'}"
    )
    for cell in state.record.cells:
        if cell.in_plan and cell.status in ("failed", "paused"):
            print(
                f"  {cell.status}: {cell.cell.name}: {cell.error} (log: "
                f"{inv.out / 'cells' / cell.cell.name / 'cell.log'})"
            )
    if status == "done":
        return 0
    if any(c.in_plan and c.status != "done" and not stuck(c) for c in state.record.cells):
        print(f"continue with: {again_command(inv)}", file=sys.stderr)
    return 130 if status == "interrupted" else 1


def stuck(cell: CellState) -> bool:
    """A cell whose files do not re-derive: running the command again does not run it."""
    return cell.status == "failed" and (cell.error or "").startswith(DOES_NOT_REDERIVE)
