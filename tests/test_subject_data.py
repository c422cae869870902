"""The reference subject's training data never contains a task of the default seed (issue 26).

`scripts/subject_data.py` (standard library only, so this runs in CI without torch)
regenerates the whole training stream of the committed recipe. No prompt of any task of seed
1729 under any preset (`design`, `calibration-60`, `calibration-300`; profile and held-out;
the model-only and model-program prompts) and no chain step of any controlled route (the
held-out recurrences' steps with the correct routed values, and the primitives' single step)
appears in it verbatim; and the stream holds single primitives only.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from pyapp.conditions.run import call_step, plan_route, whole_task_prompt
from pyapp.records import prompts
from pyapp.records.subject import SUBJECT_RECIPE
from pyapp.tasks import taskset

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import subject_data  # noqa: E402

QUESTION = re.compile(r"\n\nQuestion: Compute a [-+*] b\.(\nProgram:)?$")


def task_prompts() -> set[str]:
    """Every prompt a run of the default seed sends, under every preset and condition."""
    found: set[str] = set()
    for preset in taskset.PRESETS:
        for task in taskset.generate(taskset.preset_params(preset, taskset.DEFAULT_SEED)):
            for condition in ("model-only", "model-program"):
                found.add(whole_task_prompt(task, condition).text)  # type: ignore[arg-type]
            plan = plan_route(task)
            outputs: list[int] = []
            for planned in plan or ():
                step = call_step(planned, task.registers, outputs, task.encoding)
                found.add(step.prompt.text)
                outputs.append(subject_data.result(planned.op, step.left, step.right))
    return found


@pytest.fixture(scope="module")
def stream() -> list[subject_data.Example]:
    return list(subject_data.training_stream())


def test_no_task_prompt_of_the_default_seed_is_in_the_training_data(
    stream: list[subject_data.Example],
) -> None:
    wanted = task_prompts()
    assert len(wanted) > 1000  # three presets, two whole-task conditions, chain steps
    trained = {example.prompt for example in stream}
    overlap = wanted & trained
    assert not overlap, sorted(overlap)[:3]


def test_the_stream_is_the_recipe_and_holds_single_primitives_only(
    stream: list[subject_data.Example],
) -> None:
    assert len(stream) == int(SUBJECT_RECIPE["steps"]) * int(SUBJECT_RECIPE["batch"])
    templates = {prompts.INTEGER_ANSWER, prompts.CHAIN_STEP, prompts.REGISTER_PROGRAM}
    for example in stream:
        assert example.template_id in templates
        assert QUESTION.search(example.prompt), example.prompt[-80:]
        assert example.prompt.count("Compute") == 1 + 3 * (
            example.template_id == prompts.REGISTER_PROGRAM
        )
        most = subject_data.MUL_MAX_DIGITS if example.op == "mul" else subject_data.MAX_DIGITS
        assert min(example.digits) >= 1 and max(example.digits) <= most
    # stratified by digit count: every (digits of a, digits of b) cell is well populated
    cells: dict[tuple[int, int], int] = {}
    for example in stream:
        cells[example.digits] = cells.get(example.digits, 0) + 1
    # (short operands weigh more from `short_operands_from_step` on; every cell keeps a share)
    assert len(cells) == 36 and min(cells.values()) > len(stream) / 36 / 20


def test_the_stream_is_deterministic_and_not_a_task_seed_stream() -> None:
    first = subject_data.batch(7)
    assert first == subject_data.batch(7)
    assert first != subject_data.batch(8)
    # its draws are SHA-256 counter-mode, never SplitMix64: no task seed gives them
    rng = subject_data.CounterRng(f"{subject_data.DOMAIN}:0:7:0")
    assert rng.u64() != taskset.SplitMix64(0).next_u64()


def test_every_task_operation_of_the_default_seed_is_excluded() -> None:
    excluded = subject_data.excluded_operations()
    for preset in taskset.PRESETS:
        for task in taskset.generate(taskset.preset_params(preset)):
            if task.family in taskset.PRIMITIVE_OPS:
                a, b = task.registers["a"], task.registers["b"]
                assert (task.family, a, b) in excluded and (task.family, b, a) in excluded
