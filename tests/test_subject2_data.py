"""The second subject's curriculum (`--curriculum primitives+recurrences`, issue 36) is disjoint
from every held-out task the studies give it.

`scripts/subject_data.py` (standard library only) regenerates the `primitives+recurrences`
stream: the primitives as the first subject's (same exclusions), and whole affine recurrences
of one and two updates with |a| in 50..99. Every shipped preset and study-ladder rung
(`pyapp.tasks.taskset.PRESETS`, whatever rungs exist) draws |a| ≤ 49, so no held-out
recurrence can be a training example; the test reads the ranges, then checks the examples
themselves against the held-out compositions of every preset for seeds 1729 and 1..100 (by
registers, parsed from each prompt) and, for seed 1729, against the rendered model-only and
model-program prompts verbatim. Determinants and derivatives never appear. The first
subject's recipe, and so its digest, is unchanged by the curriculum option.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from pyapp.conditions import whole_task_prompt
from pyapp.records import RECURRENCES, REFERENCE, prompts
from pyapp.tasks import SplitMix64, taskset

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import subject_data  # noqa: E402

RECIPE = subject_data.RECURRENCES_RECIPE
SEEDS = (taskset.DEFAULT_SEED, *range(1, 101))
"""The plans' seeds: the default and 1..100."""
STRIDE = 3
"""CI walks every third batch of the 900 (14,400 examples); the `long` test walks them all."""
JSON_REGISTERS = re.compile(r"\nRegisters:\n(\{[^\n]*\})\n\nQuestion: ")
PROSE_REGISTER = re.compile(r"Register (\w+) holds (-?\d+)\.")
UPDATES = re.compile(r"Compute x_(\d+) \(after \1 updates\)\.(\nProgram:)?$")


def parse(example: subject_data.Example) -> tuple[dict[str, int], int]:
    """The registers and the number of updates a recurrence example's prompt states."""
    prompt = example.prompt
    tail = prompt.rsplit("\n\nRegisters:\n", 1)[-1]
    match = JSON_REGISTERS.search(prompt)
    if example.encoding == "json":
        assert match is not None, prompt[-200:]
        registers = json.loads(match.group(1))
    else:
        registers = {name: int(value) for name, value in PROSE_REGISTER.findall(tail)}
    updates = UPDATES.search(prompt)
    assert updates is not None, prompt[-200:]
    return registers, int(updates.group(1))


def heldout_recurrences(preset: str, seed: int) -> set[tuple[int, int, int, int]]:
    """(a, b, x0, updates) of every held-out recurrence of `preset` and `seed`, drawn by the
    generator's own family table (registers only: the oracles are not needed here)."""
    p = taskset.preset_params(preset, seed)
    rng = SplitMix64(p.seed)
    found = set()
    for row in taskset.FAMILY_TABLE:
        for i in range(row.count(p)):
            registers = row.registers(rng, p, i)
            if row.prefix == "recurrence":
                steps = row.steps(p, i)
                assert steps is not None
                found.add((registers["a"], registers["b"], registers["x0"], steps))
    return found


def test_the_generator_walk_matches_the_task_sets() -> None:
    for preset in taskset.PRESETS:
        tasks = taskset.generate(taskset.preset_params(preset))
        wanted = {
            (t.registers["a"], t.registers["b"], t.registers["x0"], t.steps)
            for t in tasks
            if t.family == "affine_recurrence"
        }
        assert heldout_recurrences(preset, taskset.DEFAULT_SEED) == wanted


def test_the_curriculum_multipliers_are_disjoint_from_every_rung() -> None:
    low, high = RECIPE["recurrence_a"]  # type: ignore[misc]
    assert (low, high) == (50, 99)
    assert taskset.PRESETS  # every preset and ladder rung there is, whatever their names
    for preset in taskset.PRESETS:
        rung = taskset.preset_params(preset)
        assert rung.recurrence_a[1] < low, (preset, rung.recurrence_a)


@pytest.fixture(scope="module")
def heldout() -> set[tuple[int, int, int, int]]:
    found: set[tuple[int, int, int, int]] = set()
    for preset in taskset.PRESETS:
        for seed in SEEDS:
            found |= heldout_recurrences(preset, seed)
    assert len(found) > 100
    return found


def heldout_prompts() -> set[str]:
    """Every held-out composition's model-only and model-program prompt of seed 1729."""
    found = set()
    for preset in taskset.PRESETS:
        for task in taskset.generate(taskset.preset_params(preset)):
            if task.group == "composition":
                for condition in ("model-only", "model-program"):
                    found.add(whole_task_prompt(task, condition).text)  # type: ignore[arg-type]
    return found


def audit(steps: range, heldout: set[tuple[int, int, int, int]]) -> dict[str, int]:
    """Walk the stream's batches of `steps`: every example a primitive or a one- or
    two-update recurrence in range, none a held-out task."""
    prompt_set = heldout_prompts()
    low, high = RECIPE["recurrence_a"]  # type: ignore[misc]
    ceiling = max(taskset.preset_params(p).recurrence_a[1] for p in taskset.PRESETS)
    counts: dict[str, int] = {}
    for step in steps:
        for example in subject_data.batch(step, recipe=RECIPE):
            assert example.prompt not in prompt_set
            assert "triangle" not in example.prompt and "derivative" not in example.prompt
            if example.op in subject_data.OPS:
                assert "Question: Compute a " in example.prompt
                assert (example.op, example.a, example.b) not in subject_data.excluded_operations()
                counts[example.op] = counts.get(example.op, 0) + 1
                continue
            assert example.op == "affine_recurrence"
            assert example.template_id in (prompts.INTEGER_ANSWER, prompts.REGISTER_PROGRAM)
            registers, updates = parse(example)
            assert list(registers) == ["a", "b", "x0"] and updates in (1, 2)
            assert ceiling < low <= abs(registers["a"]) <= high
            assert 1 <= abs(registers["b"]) <= 9 and 1 <= abs(registers["x0"]) <= 99
            assert (registers["a"], registers["b"], registers["x0"], updates) not in heldout
            key = f"{example.template_id}/{updates}"
            counts[key] = counts.get(key, 0) + 1
    return counts


def test_no_heldout_composition_is_in_the_stream(heldout: set[tuple[int, int, int, int]]) -> None:
    counts = audit(range(0, int(RECIPE["steps"]), STRIDE), heldout)  # type: ignore[call-overload]
    # both halves and every recurrence cell are there
    assert set(counts) == {
        *subject_data.OPS,
        *(f"{t}/{u}" for t in (prompts.INTEGER_ANSWER, prompts.REGISTER_PROGRAM) for u in (1, 2)),
    }
    recurrences = sum(v for k, v in counts.items() if "/" in k)
    assert 0.45 < recurrences / sum(counts.values()) < 0.55


@pytest.mark.long
def test_no_heldout_composition_is_in_the_whole_stream(
    heldout: set[tuple[int, int, int, int]],
) -> None:
    audit(range(int(RECIPE["steps"])), heldout)  # type: ignore[call-overload]


def test_a_heldout_recurrence_would_be_caught(heldout: set[tuple[int, int, int, int]]) -> None:
    # the audit's checks can fail: a held-out task rendered as a training example is found
    task = next(t for t in taskset.generate(taskset.preset_params("design")) if t.steps is not None)
    for template_id, encoding in (
        (prompts.INTEGER_ANSWER, "json"),
        (prompts.REGISTER_PROGRAM, "prose"),
    ):
        example = subject_data.render_recurrence(
            dict(task.registers), task.steps, template_id, encoding
        )
        registers, updates = parse(example)
        assert (registers["a"], registers["b"], registers["x0"], updates) in heldout
        if template_id == prompts.INTEGER_ANSWER and encoding == task.encoding:
            assert example.prompt in heldout_prompts()


def test_the_recurrence_examples_are_the_generators_prompts_and_replies() -> None:
    registers = {"a": 61, "b": -3, "x0": 17}
    for template_id in (prompts.INTEGER_ANSWER, prompts.REGISTER_PROGRAM):
        example = subject_data.render_recurrence(registers, 2, template_id, "json")
        question = (
            "Let x_(k+1) = a * x_k + b, starting from x_0 = x0. Compute x_2 (after 2 updates)."
        )
        assert (
            example.prompt
            == prompts.render_task_prompt(template_id, registers, question, "json").text
        )
    assert example.reply == json.dumps(
        {"op": "add", "args": [{"op": "mul", "args": [{"ref": "a"}, {"op": "add", "args": [
            {"op": "mul", "args": [{"ref": "a"}, {"ref": "x0"}]}, {"ref": "b"}]}]}, {"ref": "b"}]}
    )  # fmt: skip
    integer = subject_data.render_recurrence(registers, 2, prompts.INTEGER_ANSWER, "json")
    assert integer.reply == str(61 * (61 * 17 - 3) - 3)


def test_both_recipes_are_the_ones_recorded() -> None:
    # the first subject's recipe is unchanged by the curriculum option
    assert subject_data.recipe_digest() == REFERENCE.recipe["recipe_sha256"]
    assert subject_data.CURRICULA[subject_data.DEFAULT_CURRICULUM] is subject_data.RECIPE
    assert "curriculum" not in subject_data.RECIPE
    assert subject_data.recipe_digest(RECIPE) == RECURRENCES.recipe["recipe_sha256"]
    for key in ("steps", "batch", "data_seed", "model_seed", "data_version", "warm_start"):
        assert RECURRENCES.recipe[key] == RECIPE[key], key
    assert RECURRENCES.recipe["curriculum"] == RECIPE["curriculum"]
    assert subject_data.CURRICULA[str(RECIPE["curriculum"])] is RECIPE
    # the two streams differ from the first batch on
    assert subject_data.batch(0) != subject_data.batch(0, recipe=RECIPE)
