"""`DIR/study.json`: a study's answer and every figure behind it, as typed records.

`python -m pyapp study` is its only writer (`pyapp.study.command`); `python -m pyapp schema`
generates `exports/study.schema.json` from these records (a docstring per field), drift-
checked like the other schemas. The confirmatory layer comes first (the study receipt, each
hypothesis's verdict, the residual tests), then the plain-language answer (`answer`), then the
flags, the method (every interval's name, the bootstrap's resamples and seed), the groups of
cells that may be pooled and each group's slices, and every cell with what was done with it.

Nothing in it depends on when or where the study ran (no times, no run ids, no paths): the
same cells give the same bytes — a matrix folder resumed after a Ctrl-C gives the study of
one run straight through.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pyapp.predict import Answer, SliceFigures
from pyapp.records import JSON, json_schema
from pyapp.study.verdicts import ResidualTest, Verdict

STUDY_SCHEMA: Literal["study/2"] = "study/2"
SCHEMA_ID = "https://composition-lab.invalid/schemas/study.schema.json"


@dataclass(frozen=True)
class StudyMethod:
    """How every figure was computed (docs/study.md)."""

    outcome: str
    """What an outcome is (final correctness of a held-out task)."""
    reference: str
    """The reference forecast of the skill scores (climatology; rung-aware when pooled)."""
    frozen_reference: str
    """The other reference shown beside it (each run's frozen pooled profile rate)."""
    intervals: tuple[str, ...]
    """The intervals' names, each described."""
    resamples: int
    """Bootstrap resamples of every bootstrap interval."""
    bootstrap_seed: int
    """Seed of the bootstrap's draws (Python's `random`)."""
    min_tasks: int
    """Below this many tasks a slice gets no answer and a flag."""
    calibration_bins: int
    """Bins of the reliability diagrams and of the binned decomposition."""
    skill_half_width: float
    """The half-width of the skill interval `tasks_needed` asks for."""
    pooling: str
    """What may be pooled, and what never is."""
    answers: str
    """How the answer's sentences are made (the templates)."""


@dataclass(frozen=True)
class StudySlice:
    """One slice: its figures, its flags and its answers."""

    figures: SliceFigures
    """Every figure (`pyapp.predict.slices`)."""
    flags: tuple[str, ...]
    """Its degenerate-score flags (`pyapp.predict.flags.degenerate_flags`)."""
    answers: tuple[Answer, ...]
    """Each predictor's answer (beats climatology, fails, cannot say)."""
    difference: str | None
    """Which predictor's Brier score is lower, as far as the interval says; null without
    the state-aware predictor."""


@dataclass(frozen=True)
class StudyGroup:
    """Cells that differ in their seed and rung of one ladder alone: pooled."""

    key: str
    """A short identity of the group (SHA-256 prefix of `identity`)."""
    identity: str
    """Everything the group's cells share, as canonical JSON: kind, model (id, revision,
    dtype, chat-template options), backend, evidence, generator and prompt versions,
    decoding settings, injected faults, condition set, exploratory or not, the chain protocol
    when it is not the design's, and the task sets (a ladder, a preset or a custom parameter
    set)."""
    title: str
    """The group in words."""
    evidence: str
    """The cells' evidence label (`model`, `reference-subject`, `fixture`, `synthetic`)."""
    model: str
    """The model: a synthetic specification, or id@revision (dtype)."""
    backend: str
    """The backend of its cells."""
    task_sets: str
    """A ladder's name, a preset's, or `custom parameters …`."""
    ladder: str | None
    """The ladder when the cells are rungs of one; null otherwise."""
    rungs: tuple[str, ...]
    """The presets (rungs) of its cells, easiest first."""
    seeds: tuple[int, ...]
    """The task seeds of its cells."""
    cells: tuple[str, ...]
    """Its cells."""
    answers: tuple[Answer, ...]
    """The answer per condition and predictor: from the slice pooled over the ladder (all
    families), or the one preset's slice."""
    differences: tuple[str, ...]
    """Per condition, which predictor's Brier score is lower (as far as the interval says)."""
    slices: tuple[StudySlice, ...]
    """Per condition × rung × family, then pooled over the ladder's rungs."""


@dataclass(frozen=True)
class StudyCell:
    """A cell of the matrix and what the study did with it."""

    name: str
    """The cell (its folder under `cells/`)."""
    status: str
    """Its status in matrix.json."""
    seed: int
    """Its task seed (from its trace when used; else from matrix.json)."""
    preset: str | None
    """The preset its trace's task parameters are (`pyapp.tasks.taskset.preset_of`), never
    the name written down; null for a custom parameter set or a cell not read."""
    ladder: str | None
    """The ladder whose rung `preset` is; null otherwise."""
    rung: int | None
    """The rung's place on the ladder (1 the easiest); null otherwise."""
    group: str | None
    """The key of the group it is pooled in; null when it is left out."""
    used: bool
    """Whether its numbers are in the study."""
    note: str | None
    """Why it is left out, or what disagreed; null when nothing did."""


@dataclass(frozen=True)
class StudyDocument:
    """study.json: a study's answer first, then every figure behind it."""

    schema_version: Literal["study/2"]
    """Version of this schema (study/2: the confirmatory layer first)."""
    kind: Literal["composition-lab-study"]
    """Document kind."""
    receipt: str | None
    """The study receipt the hypotheses were frozen in (its fingerprint and time, in words);
    null when the folder has none (every hypothesis is then post hoc)."""
    hypotheses: tuple[Verdict, ...]
    """Each hypothesis's verdict (`pyapp.study.verdicts`): the receipt's, preregistered, then
    the plan's post-hoc ones (no verdict) — first, before every descriptive figure."""
    residuals: tuple[ResidualTest, ...]
    """The model-identity residual tests (two or more models), per condition and family."""
    answer: tuple[str, ...]
    """The plain-language answer, first line first: a degenerate headline when there is one
    (`DEGENERATE: all N held-out outcomes are 0 …`), then templated from the numbers only,
    labelled descriptive (the confirmatory hypotheses are the test)."""
    flags: tuple[str, ...]
    """Degenerate scores and incomplete data, in words."""
    name: str | None
    """The plan's name."""
    cells_done: int
    """Cells of the plan that are done."""
    cells_planned: int
    """Cells of the plan."""
    method: StudyMethod
    """How every figure was computed."""
    groups: tuple[StudyGroup, ...]
    """The groups of pooled cells."""
    cells: tuple[StudyCell, ...]
    """Every cell of the plan, in name order."""


def study_schema() -> dict[str, JSON]:
    return json_schema(StudyDocument, schema_id=SCHEMA_ID, title="Composition Lab study.json")
