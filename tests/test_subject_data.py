"""The reference subject's training data never contains a task of the default seed (issue 26).

`scripts/subject_data.py` (standard library only, so this runs in CI without torch)
regenerates the training stream of the committed recipe: every 40th batch in CI, the whole
stream in the `long` test (deselected by default: `pytest -m long
tests/test_subject_data.py`). No prompt of any task of seed
1729 under any preset (`design`, `calibration-60`, `calibration-300`; profile and held-out;
the model-only and model-program prompts) and no chain step of any controlled route (the
held-out recurrences' steps with the correct routed values, and the primitives' single step)
appears in it verbatim; and the stream holds single primitives only.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pyapp.conditions import call_step, plan_route, whole_task_prompt
from pyapp.records import SUBJECT_RECIPE, prompts
from pyapp.tasks import taskset

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import subject_data  # noqa: E402

QUESTION = re.compile(r"\n\nQuestion: Compute a [-+*] b\.(\nProgram:)?$")


def task_prompts() -> set[str]:
    """Every prompt a run of the default seed sends, under every preset and condition."""
    found: set[str] = set()
    for preset in subject_data.PRESETS:  # the calibration presets (not the later ladders)
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


@dataclass
class Audit:
    """What one pass over (part of) the training stream found: it is walked example by
    example, never held."""

    count: int = 0
    overlap: set[str] = field(default_factory=set)
    odd: list[str] = field(default_factory=list)
    cells: dict[tuple[int, int], int] = field(default_factory=dict)


STEPS = int(SUBJECT_RECIPE["steps"])
BATCH = int(SUBJECT_RECIPE["batch"])
STRIDE = 40
"""CI walks every 40th batch of the stream (19,200 examples, both phases of the digit
weighting); the whole stream (768,000 examples, a few minutes) is walked by the `long`
test below, before a release and whenever the recipe changes."""


def walk(steps: range) -> Audit:
    """One pass over the batches of `steps`, example by example (never held)."""
    wanted = task_prompts()
    assert len(wanted) > 1000  # three presets, two whole-task conditions, chain steps
    templates = {prompts.INTEGER_ANSWER, prompts.CHAIN_STEP, prompts.REGISTER_PROGRAM}
    found = Audit()
    for step in steps:
        for example in subject_data.batch(step):
            found.count += 1
            if example.prompt in wanted:
                found.overlap.add(example.prompt)
            most = subject_data.MUL_MAX_DIGITS if example.op == "mul" else subject_data.MAX_DIGITS
            single = (
                example.template_id in templates
                and QUESTION.search(example.prompt) is not None
                and example.prompt.count("Compute")
                == 1 + 3 * (example.template_id == prompts.REGISTER_PROGRAM)
                and min(example.digits) >= 1
                and max(example.digits) <= most
            )
            if not single and len(found.odd) < 3:
                found.odd.append(example.prompt[-120:])
            found.cells[example.digits] = found.cells.get(example.digits, 0) + 1
    return found


@pytest.fixture(scope="module")
def audit() -> Audit:
    return walk(range(0, STEPS, STRIDE))


def test_no_task_prompt_of_the_default_seed_is_in_the_training_data(audit: Audit) -> None:
    assert audit.count == len(range(0, STEPS, STRIDE)) * BATCH
    assert not audit.overlap, sorted(audit.overlap)[:3]


@pytest.mark.long
def test_no_task_prompt_of_the_default_seed_is_in_the_whole_training_stream() -> None:
    whole = walk(range(STEPS))
    assert whole.count == STEPS * BATCH == sum(1 for _ in subject_data.training_stream())
    assert not whole.overlap, sorted(whole.overlap)[:3]
    assert not whole.odd, whole.odd


def test_the_stream_is_the_recipe_and_holds_single_primitives_only(audit: Audit) -> None:
    # the committed subject was trained on this generator's recipe, step for step
    assert SUBJECT_RECIPE["recipe_sha256"] == subject_data.recipe_digest()
    assert SUBJECT_RECIPE["data_version"] == subject_data.DATA_VERSION
    assert not audit.odd, audit.odd
    # stratified by digit count: every (digits of a, digits of b) cell is populated
    # (short operands weigh more from `short_operands_from_step` on; every cell keeps a share)
    assert len(audit.cells) == 36
    assert min(audit.cells.values()) > audit.count / 36 / 20


def test_the_stream_is_deterministic_and_not_a_task_seed_stream() -> None:
    first = subject_data.batch(7)
    assert first == subject_data.batch(7)
    assert first != subject_data.batch(8)
    # its draws are SHA-256 counter-mode, never SplitMix64: no task seed gives them
    rng = subject_data.CounterRng(f"{subject_data.DOMAIN}:0:7:0")
    assert rng.u64() != taskset.SplitMix64(0).next_u64()


def test_every_task_operation_of_the_default_seed_is_excluded() -> None:
    excluded = subject_data.excluded_operations()
    for preset in subject_data.PRESETS:
        for task in taskset.generate(taskset.preset_params(preset)):
            if task.family in taskset.PRIMITIVE_OPS:
                a, b = task.registers["a"], task.registers["b"]
                assert (task.family, a, b) in excluded and (task.family, b, a) in excluded
