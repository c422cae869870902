"""`DIR/summary.json`: a row per cell, and pooled numbers only where pooling is allowed.

The summary never says more than the cells it read: only cells `done` — their files
re-derived (`pyapp.matrix.cellfiles`) — are read; a cell whose files do not re-derive, or
whose predictions cannot be read, is left out of every row and pooled number and named in
`left_out` with the reason.

Each finished cell's predictions document is read through the records reader
(`pyapp.predict.predictions.read_predictions`, which also upgrades older versions); its row
holds the evidence label and, per condition, the scores of both predictors (the product and
the state-aware one) with a descriptive 95% interval of each Brier score.

Pooling follows the rule of `pyapp.predict.compare` (`incompatibilities`): runs whose task
sets differ are not mixed. Cells are pooled only when everything but the seed is the same
— model, backend, task parameters, condition set, generator and prompt versions — and their
evidence label is the same (fixture, synthetic and model cells are never pooled together;
the seeds pooled are named). A pooled score is `pyapp.predict.predictor.score` over the
cells' predictions and observations together, each task id prefixed by its cell.

The predictors' difference across seeds (`across_seeds`) is Compare's, over the same groups
of cells — a group of one cell included, where it says that the interval is undefined: each
cell's paired difference (`skill.difference` of its predictions, product − state-aware over
its held-out tasks), their mean and 95 % Student-t interval over cells
(`pyapp.predict.skill.across_runs`), shown in Compare's words
(`pyapp.predict.compare.across_runs_text`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from interpreter import LabError
from pyapp.host import write_atomically
from pyapp.matrix.cells import Cell
from pyapp.matrix.state import DOES_NOT_REDERIVE, MatrixRecord
from pyapp.predict import (
    ACROSS_RUNS_DEFINITION,
    Z_95,
    ConditionResult,
    Observation,
    Prediction,
    PredictionsDocument,
    Scores,
    across_runs_text,
    incompatibilities,
    read_predictions,
    run_differences,
    score,
    skill,
)
from pyapp.records import document_text, protocol_of, read_kind

SUMMARY_SCHEMA = "matrix-summary/1"
NOTE = (
    "Descriptive. Intervals of Brier scores are normal approximations over the scored "
    "observations (descriptive, not tests). Pooled rows combine only cells that differ in "
    "their seed alone and share one evidence label; fixture and synthetic cells are never "
    "model evidence."
)


@dataclass(frozen=True)
class PredictorScores:
    """One predictor's scores over one set of held-out observations."""

    n: int
    """Scored observations."""
    brier_final_proxy: float | None
    """Brier score against final correctness (naive proxy)."""
    brier_final_interval: tuple[float, float] | None
    """Descriptive 95% interval of it (normal approximation; null below two observations)."""
    brier_all_steps: float | None
    """Controlled chains: Brier score against all-step correctness."""
    brier_all_steps_interval: tuple[float, float] | None
    """Descriptive 95% interval of it."""
    cost_mae_ms: float | None
    """Mean absolute cost error, milliseconds."""


@dataclass(frozen=True)
class ConditionScores:
    """Both predictors under one condition of one cell."""

    condition: str
    """The condition."""
    exploratory: bool
    """The frozen profile is exploratory (held-out tasks were seen before the freeze)."""
    product: PredictorScores
    """The product of primitive rates."""
    state_aware: PredictorScores | None
    """The state-aware predictor (null in documents older than it)."""


@dataclass(frozen=True)
class CellRow:
    """One cell of the matrix."""

    cell: Cell
    """The cell."""
    status: str
    """Where it stands (`matrix.json`)."""
    evidence: str | None
    """The evidence label of its predictions (`model`, `fixture`, `synthetic`); null until
    it has predictions."""
    predictions: str | None
    """Its predictions document, relative to the matrix folder."""
    conditions: tuple[ConditionScores, ...]
    """Scores per condition."""


@dataclass(frozen=True)
class PooledRow:
    """Scores over cells that differ in their seed alone."""

    model: str
    """The model's canonical identity."""
    backend: str
    """Backend (`native` for synthetic cells)."""
    preset: str
    """The task parameter set."""
    evidence: str
    """The one evidence label of every pooled cell."""
    condition: str
    """The condition."""
    seeds: tuple[int, ...]
    """The seeds pooled."""
    cells: tuple[str, ...]
    """The cells pooled."""
    product: PredictorScores
    """The product predictor over every pooled observation."""
    state_aware: PredictorScores | None
    """The state-aware predictor over the same observations (null when a cell lacks it)."""


@dataclass(frozen=True)
class AcrossSeedsRow:
    """The predictors' difference across the seeds of cells that differ in their seed alone
    (a group of one cell too), as Compare says it."""

    model: str
    """The model's canonical identity."""
    backend: str
    """Backend (`native` for synthetic cells)."""
    preset: str
    """The task parameter set."""
    evidence: str
    """The one evidence label of every cell of the group."""
    condition: str
    """The condition."""
    seeds: tuple[int, ...]
    """The seeds whose cells have a paired difference (both predictors scored a task)."""
    cells: tuple[str, ...]
    """Those cells."""
    differences: tuple[float, ...]
    """Each cell's Brier(product) − Brier(state-aware), paired over its held-out tasks (its
    predictions' `skill.difference`), in the order of `seeds`."""
    across: skill.Interval | None
    """`skill.across_runs(differences)`: the mean and its 95 % interval over seeds; no bounds
    from one seed (the interval is undefined), null with none."""
    shown: str
    """The difference as Compare shows it (`across_runs_text`)."""


@dataclass(frozen=True)
class LeftOut:
    """A cell of the plan whose files the summary does not use."""

    cell: str
    """The cell's name."""
    reason: str
    """Why (`does not re-derive: …`, or why its predictions could not be read)."""


@dataclass(frozen=True)
class MatrixSummary:
    """summary.json of a matrix."""

    schema_version: str
    """`matrix-summary/1`."""
    kind: str
    """`composition-lab-matrix-summary`."""
    name: str | None
    """The plan's name."""
    note: str
    """What the numbers are and are not."""
    cells: tuple[CellRow, ...]
    """A row per cell of the plan."""
    pooled: tuple[PooledRow, ...]
    """Pooled rows (only cells of the same task parameters and evidence)."""
    across_seeds: tuple[AcrossSeedsRow, ...] = ()
    """The predictors' difference across seeds, per group of cells that differ in their seed
    alone (one-cell groups included)."""
    across_seeds_note: str = ACROSS_RUNS_DEFINITION
    """What `across_seeds` is, in Compare's words."""
    left_out: tuple[LeftOut, ...] = ()
    """Cells of the plan left out of every row and number, with the reason."""


def brier_interval(
    probabilities: Sequence[float], outcomes: Sequence[bool]
) -> tuple[float, float] | None:
    """Descriptive 95% interval of a Brier score: mean ± z·sd/√n of the squared errors."""
    n = len(probabilities)
    if n < 2:
        return None
    errors = [(p - float(o)) ** 2 for p, o in zip(probabilities, outcomes, strict=True)]
    mean = math.fsum(errors) / n
    sd = math.sqrt(math.fsum((e - mean) ** 2 for e in errors) / (n - 1))
    half = Z_95 * sd / math.sqrt(n)
    return round(max(0.0, mean - half), 6), round(min(1.0, mean + half), 6)


def predictor_scores(
    predictions: Sequence[Prediction], observations: Sequence[Observation], chain: bool
) -> PredictorScores:
    scores: Scores = score(predictions, observations, chain)
    by_task = {p.task_id: p for p in predictions}
    pairs = [
        (by_task[o.task_id].probability, o)
        for o in observations
        if o.task_id in by_task and by_task[o.task_id].probability is not None
    ]
    final = brier_interval([p or 0.0 for p, _ in pairs], [o.final_correct for _, o in pairs])
    steps = (
        [(p or 0.0, bool(o.all_steps_correct)) for p, o in pairs if o.all_steps_correct is not None]
        if chain
        else []
    )
    return PredictorScores(
        n=scores.n,
        brier_final_proxy=scores.brier_final_proxy,
        brier_final_interval=final,
        brier_all_steps=scores.brier_all_steps,
        brier_all_steps_interval=brier_interval([p for p, _ in steps], [s for _, s in steps])
        if chain
        else None,
        cost_mae_ms=scores.cost.mean_absolute_error_ms,
    )


def predictions_path(cell: Cell) -> str:
    """Where a cell's predictions document is, relative to the matrix folder."""
    inner = f"seed-{cell.seed}/predictions.json" if cell.kind == "synthetic" else "predictions.json"
    return f"cells/{cell.name}/{inner}"


def read_cell(out: Path, cell: Cell) -> PredictionsDocument | None:
    path = out / predictions_path(cell)
    return read_predictions(read_kind(path, "predictions")) if path.exists() else None


def condition_scores(result: ConditionResult) -> ConditionScores:
    chain = result.frozen.profile.condition == "controlled-chain"
    aware = result.state_aware
    return ConditionScores(
        condition=result.frozen.profile.condition,
        exploratory=result.frozen.exploratory,
        product=predictor_scores(result.predictions, result.observations, chain),
        state_aware=None
        if aware is None
        else predictor_scores(aware.predictions, result.observations, chain),
    )


def _prefixed(
    cell: str, result: ConditionResult, state_aware: bool
) -> tuple[list[Prediction], list[Observation]]:
    source = (
        result.state_aware.predictions if state_aware and result.state_aware else result.predictions
    )
    predictions = [replace(p, task_id=f"{cell}/{p.task_id}") for p in source]
    observations = [replace(o, task_id=f"{cell}/{o.task_id}") for o in result.observations]
    return predictions, observations


def poolable(names: Sequence[str], docs: Sequence[PredictionsDocument]) -> bool:
    """`compare`'s rule: runs whose task sets differ are not mixed — here the seed is the one
    difference allowed (it is what pooling pools over)."""
    problems = incompatibilities(names, docs)
    return all(problem.startswith("seed differ") for problem in problems)


def _groups(
    found: Sequence[tuple[Cell, PredictionsDocument]],
) -> list[list[tuple[Cell, ConditionResult, str]]]:
    """Cells of the same task key, evidence, condition, frozen versions and chain protocol,
    grouped; a group
    of several cells only when `poolable` (a group of one is always kept)."""
    groups: dict[str, list[tuple[Cell, ConditionResult, str]]] = {}
    for cell, doc in found:
        for result in doc.conditions:
            f = result.frozen
            key = json.dumps(
                [
                    cell.task_key,
                    doc.evidence,
                    f.profile.condition,
                    f.generator_version,
                    sorted(f.prompt_templates.items()),
                    protocol_of(f.terms).version,  # pooled only within one chain protocol
                ]
            )
            groups.setdefault(key, []).append((cell, result, doc.evidence))
    documents = dict((cell.name, doc) for cell, doc in found)
    kept = []
    for members in groups.values():
        names = list(dict.fromkeys(cell.name for cell, _, _ in members))
        if len(members) == 1 or poolable(names, [documents[n] for n in names]):
            kept.append(members)
    return kept


def across_seeds_rows(found: Sequence[tuple[Cell, PredictionsDocument]]) -> list[AcrossSeedsRow]:
    """Per group of cells that differ in their seed alone: the predictors' difference across
    seeds, as Compare computes and words it."""
    rows = []
    for members in _groups(found):
        cell0, result0, evidence = members[0]
        with_difference = [
            (cell, value)
            for cell, result, _ in members
            for value in run_differences([result])  # none where no task was scored by both
        ]
        values = [value for _, value in with_difference]
        rows.append(
            AcrossSeedsRow(
                model=cell0.model_key,
                backend=cell0.backend,
                preset=cell0.preset,
                evidence=evidence,
                condition=result0.frozen.profile.condition,
                seeds=tuple(cell.seed for cell, _ in with_difference),
                cells=tuple(cell.name for cell, _ in with_difference),
                differences=tuple(values),
                across=skill.across_runs(values),
                shown=across_runs_text(values),
            )
        )
    return rows


def pooled_rows(found: Sequence[tuple[Cell, PredictionsDocument]]) -> list[PooledRow]:
    """Pool cells of the same task key, evidence, condition and frozen versions."""
    rows: list[PooledRow] = []
    for members in _groups(found):
        if len(members) < 2:
            continue
        cell0, result0, evidence = members[0]
        chain = result0.frozen.profile.condition == "controlled-chain"
        scored = {}
        for aware in (False, True):
            if aware and any(r.state_aware is None for _, r, _ in members):
                continue
            predictions: list[Prediction] = []
            observations: list[Observation] = []
            for cell, result, _ in members:
                p, o = _prefixed(cell.name, result, aware)
                predictions += p
                observations += o
            scored[aware] = predictor_scores(predictions, observations, chain)
        rows.append(
            PooledRow(
                cell0.model_key,
                cell0.backend,
                cell0.preset,
                evidence,
                result0.frozen.profile.condition,
                tuple(sorted(c.seed for c, _, _ in members)),
                tuple(c.name for c, _, _ in members),
                scored[False],
                scored.get(True),
            )
        )
    return rows


def build_summary(out: Path, record: MatrixRecord) -> MatrixSummary:
    rows: list[CellRow] = []
    found: list[tuple[Cell, PredictionsDocument]] = []
    left_out: list[LeftOut] = []
    for state in record.cells:
        if not state.in_plan:
            continue
        cell = state.cell
        if state.status == "failed" and (state.error or "").startswith(DOES_NOT_REDERIVE):
            left_out.append(LeftOut(cell.name, state.error or DOES_NOT_REDERIVE))
            continue
        doc = None
        if state.status == "done":
            try:
                doc = read_cell(out, cell)
            except (LabError, ValueError) as error:
                left_out.append(LeftOut(cell.name, f"its predictions cannot be read: {error}"))
                continue
            if doc is None:
                left_out.append(LeftOut(cell.name, "its predictions are missing"))
                continue
            found.append((cell, doc))
        rows.append(
            CellRow(
                cell,
                state.status,
                doc.evidence if doc else None,
                predictions_path(cell) if doc else None,
                tuple(condition_scores(r) for r in doc.conditions) if doc else (),
            )
        )
    return MatrixSummary(
        SUMMARY_SCHEMA,
        "composition-lab-matrix-summary",
        record.name,
        NOTE,
        tuple(rows),
        tuple(pooled_rows(found)),
        tuple(across_seeds_rows(found)),
        left_out=tuple(left_out),
    )


def write_summary(out: Path, record: MatrixRecord) -> MatrixSummary:
    summary = build_summary(out, record)
    write_atomically(out / "summary.json", document_text(summary, "matrix-summary"))
    return summary
