"""Study-level seals: a plan's `sealed = "study"` (`pyapp.predict.sealing.study_draw_seed`).

Every cell of the plan runs sealed, but the cells of one task seed share their held-out
tasks: each stops at its freeze (`sweep --study-seal FILE` / `simulate --study-seal FILE`
while FILE does not exist), and once every cell of that seed is frozen the matrix makes the
seed's seal from each cell's own seal — re-derived here from the cell's trace, never taken
from what the cell says of itself — writes it to `DIR/seals/seed-N.json` (`study-seal/1`,
`pyapp.host.seal_file`) and runs the cells again: each draws its held-out tasks from the
seal, which its trace records (`HeldoutDraw.study_seal`), and `reproduce` checks that the
seal lists the run's own. Changing any cell's profile after the seal changes the seal, so
the shared held-out tasks did not exist before every profile of the seed was fixed.

A seal file, once written, is never replaced: a cell whose files no longer give the own seal
the file lists (its folder was deleted and run again: a model's measured costs differ run to
run) fails at its draw, saying its own seal is not among the seal's members.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from interpreter import LabError
from pyapp.conditions import MODEL_CONDITIONS
from pyapp.host import write_seal
from pyapp.matrix.cellfiles import folder_of, result_files
from pyapp.matrix.cells import Cell
from pyapp.matrix.runner import Job, awaiting_seal
from pyapp.matrix.state import now
from pyapp.predict import heldout_draw_seed, study_seal_of
from pyapp.records import SealMember, Trace, read_kind, read_trace

SEALS_NAME = "seals"
"""The matrix folder's folder of study seals."""


def seal_path(out: Path, seed: int) -> Path:
    """The study seal file of task seed `seed` in the matrix folder `out`."""
    return out / SEALS_NAME / f"seed-{seed}.json"


def trace_of(out: Path, cell: Cell) -> Trace | None:
    """The cell's trace as its files hold it now; None when there is none it can read."""
    try:
        return read_trace(read_kind(folder_of(out, cell) / result_files(cell)[0], "trace"))
    except (LabError, ValueError, OSError):
        return None


def own_seal(out: Path, cell: Cell, trace: Trace | None = None) -> str | None:
    """The cell's own seal, re-derived from its trace (`trace`, else read from its files;
    the freezes before its draw); None while not every model condition is frozen or the
    trace cannot be read."""
    trace = trace if trace is not None else trace_of(out, cell)
    if trace is None:
        return None
    frozen = {f.condition for f in trace.freezes}
    wanted = [c for c in trace.run.conditions if c in MODEL_CONDITIONS]
    if not wanted or any(c not in frozen for c in wanted):
        return None
    before = [f for f in trace.freezes if trace.draw is None or f.sequence < trace.draw.sequence]
    try:
        return heldout_draw_seed(trace, before)
    except (KeyError, ValueError, OverflowError, ZeroDivisionError):
        return None


@dataclass
class Sealer:
    """Makes each seed's seal once all its cells are frozen, and hands back the jobs that
    can then go on (`ready`)."""

    out: Path
    cells: Sequence[Cell]
    jobs: dict[str, Job]
    """Every cell's job, by cell name."""
    released: set[str] = field(default_factory=set)
    """Cells whose job was handed back to run with their seal."""
    problems: dict[int, str] = field(default_factory=dict)
    """Why a seed's waiting cells cannot go on (by task seed)."""

    def seeds(self) -> list[int]:
        return sorted({c.seed for c in self.cells})

    def waiting(self, cell: Cell) -> bool:
        return awaiting_seal(cell, folder_of(self.out, cell))

    def ready(self) -> list[Job]:
        """The jobs of waiting cells whose seed's seal exists now (made here when every
        cell of the seed is frozen and none has a seal file yet)."""
        ready = []
        for seed in self.seeds():
            group = [c for c in self.cells if c.seed == seed]
            waiting = [c for c in group if c.name not in self.released and self.waiting(c)]
            if not waiting:
                continue
            path = seal_path(self.out, seed)
            if not path.exists() and not self._make(seed, group, path):
                continue
            for cell in waiting:
                self.released.add(cell.name)
                ready.append(self.jobs[cell.name])
        return ready

    def unsealed(self) -> list[str]:
        """Why each seed whose cells wait for its seal has none yet: its cells not frozen
        (one failed before its freeze, or was stopped); running the command again runs them,
        and the waiting cells go on once every one is frozen."""
        lines = []
        for seed in self.seeds():
            if seed in self.problems or seal_path(self.out, seed).exists():
                continue
            group = [c for c in self.cells if c.seed == seed]
            waiting = [c.name for c in group if self.waiting(c)]
            missing = [c.name for c in group if own_seal(self.out, c) is None]
            if waiting and missing:
                verb = "waits" if len(waiting) == 1 else "wait"
                lines.append(
                    f"task seed {seed} is not sealed yet: {', '.join(missing)} did not freeze "
                    f"every profile, so {', '.join(waiting)} {verb} for the seal; running the "
                    "command again runs what did not freeze, then the rest"
                )
        return lines

    def _make(self, seed: int, group: Sequence[Cell], path: Path) -> bool:
        """Write seed `seed`'s seal if every cell of it is frozen (or done); else False."""
        members = []
        for cell in group:
            trace = trace_of(self.out, cell)
            if trace is not None and trace.draw is not None and trace.draw.study_seal is None:
                self.problems[seed] = (
                    f"task seed {seed} cannot be sealed: cell {cell.name} drew its held-out "
                    "tasks from its own seal instead of waiting for the seed's"
                )
                return False
            seal = own_seal(self.out, cell, trace) if trace is not None else None
            if seal is None:
                return False  # not frozen yet (or failed before its freeze)
            members.append(SealMember(cell=cell.name, seal=seal))
        write_seal(path, seed, study_seal_of(members), now())
        return True


def with_seal(job: Job, out: Path, cell: Cell) -> Job:
    """`job` with its cell's study seal file."""
    return replace(job, study_seal=str(seal_path(out.resolve(), cell.seed)))


def seal_problem(
    trace: Trace, group: Sequence[Cell], seals: dict[str, str | None], shared: bool = False
) -> str | None:
    """Why the study seal `trace` drew from is not its seed's (None when it is, or when the
    run drew from its own seal and its seed's cells share none — `shared` says some do): the
    seal must list exactly the plan's cells of that seed (`group`), each with the own seal
    its files give (`seals`, by cell: re-derived from every cell's trace; None where a
    cell's cannot be)."""
    study = None if trace.draw is None else trace.draw.study_seal
    if study is None:
        if shared and trace.draw is not None:
            return (
                "it drew its held-out tasks from its own seal, while other cells of task seed "
                f"{trace.run.task_params.seed} drew theirs from the seed's study seal"
            )
        return None
    listed = {m.cell: m.seal for m in study.members}
    wanted = sorted(c.name for c in group)
    if sorted(listed) != wanted:
        return (
            f"its study seal lists the cells {', '.join(sorted(listed))}; the plan's cells of "
            f"task seed {trace.run.task_params.seed} are {', '.join(wanted)}"
        )
    off = [name for name in wanted if seals.get(name) != listed[name]]
    if off:
        return (
            f"its study seal does not list the frozen profiles of {', '.join(off)} (their "
            "files give another own seal, or none): the seed's cells did not share one seal"
        )
    return None
