"""The task set: seeded generation of tasks (``taskset``), the named task sets — calibration
presets and the rungs of difficulty ladders — (``presets``), the exact oracles that confirm
every answer by a different route (``oracles``, ``sympy_oracle``) and the seeded generator
(``rng``)."""

from pyapp.tasks.presets import CALIBRATION_RANGES, LADDERS, PRESETS, ladder_of, rungs_of
from pyapp.tasks.rng import SplitMix64
from pyapp.tasks.sympy_oracle import check, sympy_answer
from pyapp.tasks.taskset import (
    DEFAULT_SEED,
    FAMILY_TABLE,
    GENERATOR_VERSION,
    GENERATOR_VERSIONS,
    MAX_COUNT,
    MAX_TASKS,
    PRIMITIVE_OPS,
    PROGRAMS,
    SEALED_GENERATOR_VERSION,
    SEED_LIMIT,
    Task,
    TaskLike,
    TaskParams,
    draw_heldout,
    generate,
    preset_of,
    preset_params,
    sealed_tasks,
)

__all__ = [
    "CALIBRATION_RANGES",
    "DEFAULT_SEED",
    "FAMILY_TABLE",
    "GENERATOR_VERSION",
    "GENERATOR_VERSIONS",
    "LADDERS",
    "MAX_COUNT",
    "MAX_TASKS",
    "PRESETS",
    "PRIMITIVE_OPS",
    "PROGRAMS",
    "SEALED_GENERATOR_VERSION",
    "SEED_LIMIT",
    "SplitMix64",
    "Task",
    "TaskLike",
    "TaskParams",
    "check",
    "draw_heldout",
    "generate",
    "ladder_of",
    "preset_of",
    "preset_params",
    "rungs_of",
    "sealed_tasks",
    "sympy_answer",
]
