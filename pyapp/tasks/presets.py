"""Named task sets: the calibration presets and the rungs of difficulty ladders, as
task-parameter overrides (plain JSON values, as `--param` takes them), written once.

A **preset** is one named task set; `pyapp.tasks.taskset.preset_params(name, seed)` turns it
into `TaskParams` and `preset_of(params)` finds the preset a task set *is* (by its parameters,
never by a name someone wrote down). A **ladder** is an ordered list of presets, its
**rungs**, from the easiest held-out set to the hardest; every rung of a ladder shares its
profile (the calibration set) and its held-out counts and differs only in the held-out
magnitudes, so the rungs of one ladder may be pooled (with each rung's own base rate as the
reference: docs/study.md). Every command that chooses a task set takes these names:
`tasks`/`run`/`simulate`/`sweep --preset NAME`, the matrix plan's `axes.presets` (where a
ladder's name stands for its rungs), and the page's calibration-set choice
(`site/lab_protocol.js` `PRESETS`, generated).

| name                  | profile (per op)          | held-out                                     |
|-----------------------|---------------------------|----------------------------------------------|
| design                | 6 (the design's 24 tasks) | 2 recurrences, 2 determinants, 2 derivatives |
| calibration-60        | 60, digit-stratified      | as design                                    |
| calibration-300       | 300, digit-stratified     | as design                                    |
| subject-ladder/1 … /4 | 300, digit-stratified     | 120 recurrences (1, 2, 3 updates × 40), 50   |
|                       |                           | determinants, 50 derivatives; magnitudes by  |
|                       |                           | rung (below)                                 |

`subject-ladder` is the ladder the reference subject's study uses (docs/study.md). Its
magnitudes, easiest first (zero is in no range: a reply `00` counts as right for an answer
of 0, so a rung with zero operands would measure that, not arithmetic):

| rung | recurrence a | b      | x0    | coordinates | coefficients | point |
|------|--------------|--------|-------|-------------|--------------|-------|
| 1    | 2–3          | 1–9    | 1–9   | 1–9         | 1–3          | 1–3   |
| 2    | 2–9          | 1–9    | 1–9   | 1–30        | 1–9          | 1–3   |
| 3    | 2–9          | 1–99   | 1–99  | 10–99       | 1–9          | 1–9   |
| 4    | 2–49         | 1–9999 | 1–999 | 1–999       | 1–99         | 1–99  |

Rung 4 is the design's magnitudes. |a| stays at most 49 on every rung (a second subject is
trained on |a| in 50–99 and tested for disjointness against these presets).

This module holds data only (it imports nothing from the task generator), so the generator
can re-export it.
"""

from __future__ import annotations

from typing import Final

CALIBRATION_RANGES: dict[str, object] = {
    "operand_digits": "stratified",
    "addsub_magnitude": [1, 999_999],
    "mul_magnitude": [1, 99_999],
}
"""The calibration sets' primitive operands: digit-stratified, 1 to 6 digits (add, sub) or
5 (mul)."""

CALIBRATION_PRESETS: dict[str, dict[str, object]] = {
    "design": {},
    "calibration-60": {"primitives_per_op": 56, **CALIBRATION_RANGES},
    "calibration-300": {"primitives_per_op": 296, **CALIBRATION_RANGES},
}
"""Named calibration sets. Each op gets `primitives_per_op` isolated probes plus four
encoding-probe tasks: `design` is the design's 6 trials per op (seed 1729 gives the pinned
24 tasks), `calibration-60` 60 and `calibration-300` 300 per op, their operands stratified
by digit count from 1 digit up to 6 (add, sub) or 5 (mul), so a profile sees the small
operands that compositions' steps see as well as large ones. These three are the presets the
reference subject's training data excludes (`scripts/subject_data.py`)."""

LADDER_HELDOUT: dict[str, object] = {
    "recurrence_steps": [1, 2, 3] * 40,
    "determinants": 50,
    "derivatives": 50,
}
"""The held-out counts every rung of `subject-ladder` shares: 120 recurrences (1, 2 and 3
updates, 40 each, interleaved), 50 determinants, 50 derivatives."""

_SUBJECT_RUNGS: tuple[dict[str, object], ...] = (
    {
        "recurrence_a": [2, 3],
        "recurrence_b": [1, 9],
        "recurrence_x0": [1, 9],
        "coordinate": [1, 9],
        "coefficient": [1, 3],
        "point": [1, 3],
    },
    {
        "recurrence_a": [2, 9],
        "recurrence_b": [1, 9],
        "recurrence_x0": [1, 9],
        "coordinate": [1, 30],
        "coefficient": [1, 9],
        "point": [1, 3],
    },
    {
        "recurrence_a": [2, 9],
        "recurrence_b": [1, 99],
        "recurrence_x0": [1, 99],
        "coordinate": [10, 99],
        "coefficient": [1, 9],
        "point": [1, 9],
    },
    {
        "recurrence_a": [2, 49],
        "recurrence_b": [1, 9_999],
        "recurrence_x0": [1, 999],
        "coordinate": [1, 999],
        "coefficient": [1, 99],
        "point": [1, 99],
    },
)


def _rungs(ladder: str, magnitudes: tuple[dict[str, object], ...]) -> dict[str, dict[str, object]]:
    """A ladder's rungs `LADDER/1` … `LADDER/N`: the calibration-300 profile, the shared
    held-out counts and each rung's magnitudes."""
    profile = CALIBRATION_PRESETS["calibration-300"]
    return {
        f"{ladder}/{i}": {**profile, **LADDER_HELDOUT, **rung}
        for i, rung in enumerate(magnitudes, start=1)
    }


LADDER_RUNGS: dict[str, dict[str, object]] = _rungs("subject-ladder", _SUBJECT_RUNGS)
"""Every ladder's rungs, by name (`subject-ladder/1` …), as task-parameter overrides."""

LADDERS: dict[str, tuple[str, ...]] = {
    "subject-ladder": tuple(name for name in LADDER_RUNGS if name.startswith("subject-ladder/")),
}
"""Difficulty ladders: name → its rungs, easiest first."""

PRESETS: dict[str, dict[str, object]] = {**CALIBRATION_PRESETS, **LADDER_RUNGS}
"""Every named task set (calibration presets, then ladder rungs), as task-parameter
overrides; the page lists them in this order."""

LADDER_SEPARATOR: Final = "/"
"""A rung's name is `LADDER/N` (N from 1, the easiest)."""


def ladder_of(preset: str) -> tuple[str, int] | None:
    """`(ladder, rung)` of a rung's name (`subject-ladder/2` → ("subject-ladder", 2)); None
    for a preset that is no ladder's rung."""
    for ladder, rungs in LADDERS.items():
        if preset in rungs:
            return ladder, rungs.index(preset) + 1
    return None


def rungs_of(name: str) -> tuple[str, ...] | None:
    """A ladder's rungs, easiest first; None when `name` is not a ladder."""
    return LADDERS.get(name)


def describe(name: str) -> str:
    """One line on a preset or ladder, for help texts."""
    if name in LADDERS:
        rungs = LADDERS[name]
        return f"{name}: a ladder of {len(rungs)} rungs ({rungs[0]} … {rungs[-1]})"
    place = ladder_of(name)
    if place is not None:
        return f"{name}: rung {place[1]} of {len(LADDERS[place[0]])} of {place[0]}"
    return name
