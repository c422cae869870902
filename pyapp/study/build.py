"""A study from a matrix folder's cells: groups, slices, answers (`build_study`).

Cells are pooled only within a group — cells that differ in their seed and in the rung of
one ladder alone (`pyapp.study.cells.identity_of`); different models, backends, protocols,
prompt versions, condition sets or task sets are separate groups, never pooled. Per group
and condition the slices are: every rung (or the one preset) × {all families, each family},
then — when the group holds two or more rungs of one ladder — the same pooled over the rungs,
labelled so, with rung-aware climatology as the reference. A group's answer per condition is
its pooled slice's (all families), or its one preset's. Iteration is sorted throughout and
the bootstrap is seeded: the same cells give the same document.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pyapp.conditions import MODEL_CONDITIONS
from pyapp.errors import InputError
from pyapp.matrix import Hypothesis, MatrixRecord, StudyReceipt
from pyapp.predict import (
    ACROSS_SEEDS,
    ALL_FAMILIES,
    ANSWER_LABEL,
    BOOTSTRAP,
    CALIBRATION_BINS,
    CLIMATOLOGY,
    MIN_TASKS,
    REFERENCE,
    RUNG_AWARE,
    SKILL_HALF_WIDTH,
    Answer,
    ScoredTask,
    SliceFigures,
    answer,
    degenerate_flags,
    difference_answer,
    headline,
    scored_tasks,
    slice_figures,
)
from pyapp.records import protocol_of
from pyapp.study.cells import ReadCell, Skipped, key_of, read_cells
from pyapp.study.record import (
    STUDY_SCHEMA,
    StudyCell,
    StudyDocument,
    StudyGroup,
    StudyMethod,
    StudySlice,
)
from pyapp.study.verdicts import cell_source, judge_hypotheses, residual_tests, settings_of

POOLING = (
    "Cells are pooled only when they differ in their seed and in the rung of one ladder alone "
    "(same kind, model, revision, dtype, backend, evidence, generator and prompt versions, "
    "decoding, faults, condition set, exploratory or not, chain protocol); anything else is a "
    "separate group. "
    "Rows pooled over a ladder's rungs say so and use rung-aware climatology. "
    "Only complete cells are used: a cell not run, not finished, or cut short (a held-out "
    "task of a condition without its trial after the freeze, or a condition never frozen: "
    "the count `reproduce` makes) is left out of every figure and flagged with what it "
    "lacks — a run cut short loses the tasks it would have observed last, not a random "
    "sample, so its task set is not the one the others share."
)
ANSWERS = (
    "Per condition and predictor, from the group's pooled slice (all families) or its one "
    "preset's: beats climatology when the skill's percentile-bootstrap interval lies above 0, "
    "fails against climatology when it lies below 0, cannot say when it spans 0, when the "
    f"outcomes are constant or when n < {MIN_TASKS}. Descriptive, never a test."
)
NOT_EVIDENCE = {
    "synthetic": "synthetic validation model: NOT model evidence",
    "fixture": "test fixture: NOT model evidence",
    "reference-subject": "the locally trained reference subject, never a pretrained LLM",
}


def method(resamples: int, seed: int) -> StudyMethod:
    return StudyMethod(
        outcome="final correctness of each held-out task (the product's naive proxy)",
        reference=f"{CLIMATOLOGY}; pooled over a ladder: {RUNG_AWARE}",
        frozen_reference=REFERENCE + ", frozen with each run's profile",
        intervals=(
            f"{BOOTSTRAP}: {resamples} resamples with replacement within each rung, seed "
            f"{seed}; the 2.5th and 97.5th percentiles",
            f"{ACROSS_SEEDS}: the figure per seed, mean ± t·sd/√k over the k seeds",
        ),
        resamples=resamples,
        bootstrap_seed=seed,
        min_tasks=MIN_TASKS,
        calibration_bins=CALIBRATION_BINS,
        skill_half_width=SKILL_HALF_WIDTH,
        pooling=POOLING,
        answers=ANSWERS,
    )


def _rung_order(cell: ReadCell) -> tuple[int, str]:
    return (cell.rung or 0, cell.preset or cell.cell.preset)


def _conditions(cells: Sequence[ReadCell]) -> list[str]:
    found = {str(r.frozen.profile.condition) for c in cells for r in c.doc.conditions}
    return [c for c in MODEL_CONDITIONS if c in found] + sorted(found - set(MODEL_CONDITIONS))


def _slice(
    tasks: Sequence[ScoredTask], condition: str, scope: str, family: str, pooled: bool, **kw: int
) -> StudySlice:
    fig = slice_figures(
        tasks, condition=condition, scope=scope, family=family, pooled_over_rungs=pooled, **kw
    )
    answers = tuple(a for p in ("product", "state-aware") if (a := answer(fig, p)) is not None)
    return StudySlice(fig, tuple(degenerate_flags(fig)), answers, difference_answer(fig))


def _slices_of(
    tasks: Sequence[ScoredTask], condition: str, scope: str, pooled: bool, **kw: int
) -> list[StudySlice]:
    """All families, then each family present (sorted)."""
    found = [_slice(tasks, condition, scope, ALL_FAMILIES, pooled, **kw)]
    for family in sorted({t.family for t in tasks}):
        chosen = [t for t in tasks if t.family == family]
        found.append(_slice(chosen, condition, scope, family, pooled, **kw))
    return found


def _tasks(cells: Sequence[ReadCell], condition: str) -> list[ScoredTask]:
    found: list[ScoredTask] = []
    for cell in cells:
        stratum = cell.preset or cell.cell.preset
        for result in cell.doc.conditions:
            if result.frozen.profile.condition == condition:
                found += scored_tasks(result, cell.cell.name, cell.seed, stratum)
    return found


def _title(first: ReadCell, task_sets: str, seeds: Sequence[int]) -> str:
    model = _model(first, short=True)
    label = NOT_EVIDENCE.get(first.doc.evidence, first.doc.evidence)
    if any(r.frozen.exploratory for r in first.doc.conditions):
        label += "; EXPLORATORY profiles (held-out tasks seen before the freeze)"
    conditions = ", ".join(first.cell.conditions) or "default conditions"
    if not first.cell.conditions or "controlled-chain" in first.cell.conditions:
        conditions += f" (chain protocol {protocol_of(first.trace.run.terms).version})"
    shown = ", ".join(str(s) for s in seeds)
    return f"{model}, {first.cell.backend}, {task_sets}, seeds {shown}, {conditions} — {label}"


def _model(first: ReadCell, short: bool = False) -> str:
    """The model in words: a synthetic spec, or id@revision (dtype) — never a path."""
    frozen = first.doc.conditions[0].frozen if first.doc.conditions else None
    if first.cell.kind == "synthetic":
        return first.cell.model_key
    if frozen is None:
        return first.cell.model
    revision = frozen.model_revision[:12] if short else frozen.model_revision
    return f"{frozen.model_id}@{revision} ({frozen.model_dtype})"


def build_group(cells: Sequence[ReadCell], resamples: int, seed: int) -> StudyGroup:
    """One group's slices and answers (its cells share one identity)."""
    cells = sorted(cells, key=lambda c: (_rung_order(c), c.seed, c.cell.name))
    first = cells[0]
    rungs = list(dict.fromkeys(c.preset or c.cell.preset for c in cells))
    task_sets = first.ladder or rungs[0]
    pooled = first.ladder is not None and len(rungs) > 1
    seeds = sorted({c.seed for c in cells})
    slices: list[StudySlice] = []
    answers: list[Answer] = []
    differences: list[str] = []
    for condition in _conditions(cells):
        tasks = _tasks(cells, condition)
        if not tasks:
            continue
        leads = []
        for rung in rungs:
            chosen = [t for t in tasks if t.stratum == rung]
            if chosen:
                made = _slices_of(chosen, condition, rung, False, resamples=resamples, seed=seed)
                slices += made
                leads.append(made[0])
        lead = leads[0]  # without pooling the group holds one task set
        if pooled:
            scope = f"pooled over {first.ladder} ({len(rungs)} rungs, rung-aware climatology)"
            pooled_slices = _slices_of(
                tasks, condition, scope, True, resamples=resamples, seed=seed
            )
            slices += pooled_slices
            lead = pooled_slices[0]
        answers += lead.answers
        differences += [lead.difference] if lead.difference else []
    return StudyGroup(
        key=key_of(first.identity),
        identity=first.identity,
        title=_title(first, task_sets, seeds),
        evidence=first.doc.evidence,
        model=_model(first),
        backend=first.cell.backend,
        task_sets=task_sets,
        ladder=first.ladder,
        rungs=tuple(rungs),
        seeds=tuple(seeds),
        cells=tuple(c.cell.name for c in cells),
        answers=tuple(answers),
        differences=tuple(differences),
        slices=tuple(slices),
    )


def _deduplicated(cells: Sequence[ReadCell]) -> tuple[list[ReadCell], dict[str, str]]:
    """The cells with at most one per (identity, seed, preset): a second is the same tasks
    observed again and is left out, named."""
    kept: dict[tuple[str, int, str | None], ReadCell] = {}
    dropped: dict[str, str] = {}
    for cell in cells:
        key = (cell.identity, cell.seed, cell.preset or cell.cell.preset)
        if key in kept:
            dropped[cell.cell.name] = (
                f"the same seed and task set as {kept[key].cell.name}: the same tasks again, "
                "left out (never pooled twice)"
            )
        else:
            kept[key] = cell
    return list(kept.values()), dropped


def _cell_record(
    item: ReadCell | Skipped, groups: dict[str, str], dropped: dict[str, str]
) -> StudyCell:
    if isinstance(item, Skipped):
        c = item.cell
        return StudyCell(c.name, item.status, c.seed, None, None, None, None, False, item.note)
    name = item.cell.name
    note = dropped.get(name) or item.note
    return StudyCell(
        name,
        "done",
        item.seed,
        item.preset,
        item.ladder,
        item.rung,
        None if name in dropped else groups[name],
        name not in dropped,
        note,
    )


def _answer_lines(groups: Sequence[StudyGroup], first: str | None) -> list[str]:
    """The answer: a degenerate headline first (when there is one), the label, then per group
    its title, answers and differences."""
    lines = ([] if first is None else [first]) + [ANSWER_LABEL]
    for group in groups:
        lines.append(f"{group.title}:")
        lines += [a.text for a in group.answers]
        lines += list(group.differences)
    return lines


def build_study(
    folder: Path,
    resamples: int,
    seed: int,
    receipt: StudyReceipt | None = None,
    current: Sequence[Hypothesis] = (),
) -> StudyDocument:
    """The study of a matrix output folder (`InputError` when no done cell re-derives complete):
    `receipt` the folder's study receipt, `current` the plan's hypotheses now."""
    record, found = read_cells(folder)
    read = [c for c in found if isinstance(c, ReadCell)]
    if not read:
        raise InputError(
            "no_study_data",
            "no done cell is complete and re-derives from its trace: nothing to study "
            f"({len(found)} cell(s); run the matrix first)"
            + "".join(f"; {c.cell.name}: {c.note}" for c in found[:1] if isinstance(c, Skipped)),
            path=str(folder),
        )
    kept, dropped = _deduplicated(read)
    by_identity: dict[str, list[ReadCell]] = {}
    for cell in kept:
        by_identity.setdefault(cell.identity, []).append(cell)
    groups = [build_group(cells, resamples, seed) for cells in by_identity.values()]
    member = {name: g.key for g in groups for name in g.cells}
    cells = tuple(_cell_record(item, member, dropped) for item in found)
    leads = [s.figures for g in groups for s in g.slices if _is_lead(g, s.figures)]
    flags = [] if (first := headline(leads)) is None else [first]
    flags += [w for g in groups for s in g.slices if _is_lead(g, s.figures) for w in s.flags]
    frozen, receipt_words, warning = _receipt_of(record, receipt)
    flags += [warning] if warning else []
    source = cell_source(kept)
    verdicts = judge_hypotheses(current, frozen, source, resamples, seed)
    models = sorted({c.cell.model for c in kept})
    conditions = _conditions(kept)
    residuals = (
        () if frozen is None else residual_tests(source, models, conditions, settings_of(frozen))
    )
    left_out = [c for c in cells if not c.used]
    if left_out:
        flags.append(
            f"INCOMPLETE: {len(left_out)} of {len(cells)} cells are not in this study (not "
            "run, not finished or cut short, not re-derived, or duplicates): the answer and "
            "every pooled figure cover the others only."
        )
        flags += [f"LEFT OUT {c.name}: {c.note}" for c in left_out]
    return StudyDocument(
        schema_version=STUDY_SCHEMA,
        kind="composition-lab-study",
        receipt=receipt_words,
        hypotheses=verdicts,
        residuals=residuals,
        answer=tuple(_answer_lines(groups, headline(leads))),
        flags=tuple(flags),
        name=record.name,
        cells_done=sum(1 for s in record.cells if s.in_plan and s.status == "done"),
        cells_planned=sum(1 for s in record.cells if s.in_plan),
        method=method(resamples, seed),
        groups=tuple(groups),
        cells=cells,
    )


def _receipt_of(
    record: MatrixRecord, receipt: StudyReceipt | None
) -> tuple[StudyReceipt | None, str | None, str | None]:
    """The receipt the study may judge by (None when there is none, or it froze another
    plan than the one whose cells ran), its words, and a flag."""
    if receipt is None:
        return None, None, None
    words = f"study receipt {receipt.fingerprint[:16]}, written {receipt.created_at}"
    ran = {s.plan_sha256 for s in record.sessions}
    if ran - {receipt.plan_sha256}:
        return (
            None,
            words + " (ANOTHER PLAN'S)",
            (
                "STUDY RECEIPT OF ANOTHER PLAN: the cells ran a plan the receipt did not freeze; "
                "every hypothesis is post hoc (no verdict)"
            ),
        )
    return receipt, words, None


def _is_lead(group: StudyGroup, fig: SliceFigures) -> bool:
    """Whether `fig` is a slice a group's answer comes from."""
    if fig.family != ALL_FAMILIES:
        return False
    if group.ladder is not None and len(group.rungs) > 1:
        return fig.pooled_over_rungs
    return True
