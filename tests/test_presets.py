"""Named task sets (issue 34): the `subject-ladder` rungs as the study measured them, the
preset a task set *is* found from its parameters, and every place a task set is chosen by
name — `sweep --preset` (parsed and resolved without a browser), `simulate`/`tasks
--preset`, and a matrix plan whose `axes.presets` names a ladder."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyapp.cli import parser
from pyapp.cli.main import main
from pyapp.errors import UsageError
from pyapp.matrix import expand, read_plan
from pyapp.sweep import options_for_resume, options_from_args
from pyapp.tasks import (
    CALIBRATION_RANGES,
    PRESETS,
    TaskParams,
    generate,
    preset_of,
    preset_params,
    presets,
)

RUNG_MAGNITUDES = {  # docs/study.md and /work/shared PLATFORM-NOTES, "Measured in turn 4"
    1: {"recurrence_a": (2, 3), "recurrence_b": (1, 9), "recurrence_x0": (1, 9),
        "coordinate": (1, 9), "coefficient": (1, 3), "point": (1, 3)},
    2: {"recurrence_a": (2, 9), "recurrence_b": (1, 9), "recurrence_x0": (1, 9),
        "coordinate": (1, 30), "coefficient": (1, 9), "point": (1, 3)},
    3: {"recurrence_a": (2, 9), "recurrence_b": (1, 99), "recurrence_x0": (1, 99),
        "coordinate": (10, 99), "coefficient": (1, 9), "point": (1, 9)},
    4: {"recurrence_a": (2, 49), "recurrence_b": (1, 9999), "recurrence_x0": (1, 999),
        "coordinate": (1, 999), "coefficient": (1, 99), "point": (1, 99)},
}  # fmt: skip


def test_the_subject_ladder_has_four_rungs_as_measured() -> None:
    assert presets.LADDERS["subject-ladder"] == tuple(f"subject-ladder/{i}" for i in range(1, 5))
    for rung, magnitudes in RUNG_MAGNITUDES.items():
        p = preset_params(f"subject-ladder/{rung}", seed=901)
        assert p.primitives_per_op == 296 and p.operand_digits == "stratified"
        assert p.addsub_magnitude == tuple(CALIBRATION_RANGES["addsub_magnitude"])  # type: ignore[arg-type]
        assert p.recurrence_steps == (1, 2, 3) * 40
        assert (p.determinants, p.derivatives) == (50, 50)
        for name, pair in magnitudes.items():
            assert getattr(p, name) == pair, (rung, name)
        assert p.recurrence_a[1] <= 49  # a second subject is trained on |a| in 50..99
        assert all(getattr(p, n)[0] >= 1 for n in magnitudes)  # zero in no range
        tasks = generate(p)
        heldout = [t for t in tasks if t.split == "heldout"]
        assert len(heldout) == 220
        profile = [t for t in tasks if t.split == "profile" and t.group == "primitive"]
        assert len(profile) == 3 * 296
    # rung 4 is the design's held-out magnitudes
    design = TaskParams()
    assert all(getattr(design, n) == v for n, v in RUNG_MAGNITUDES[4].items())


def test_the_preset_of_a_task_set_comes_from_its_parameters() -> None:
    for name in PRESETS:
        for seed in (0, 7, 1729):
            assert preset_of(preset_params(name, seed)) == name
    assert preset_of(TaskParams(primitives_per_op=3)) is None
    custom = preset_params("subject-ladder/2", 5)
    assert preset_of(TaskParams(**{**custom.__dict__, "determinants": 49})) is None
    assert presets.ladder_of("subject-ladder/3") == ("subject-ladder", 3)
    assert presets.ladder_of("calibration-300") is None
    assert presets.rungs_of("subject-ladder") == presets.LADDERS["subject-ladder"]


def sweep_args(*extra: str) -> object:
    return parser().parse_args(["sweep", "--model", "fixture", "--out", "runs/x", *extra])


def test_sweep_preset_then_param_resolves_to_the_runs_overrides() -> None:
    options = options_from_args(sweep_args("--preset", "subject-ladder/2", "--seed", "11"))
    assert options.params == PRESETS["subject-ladder/2"] and options.seed == 11
    changed = options_from_args(
        sweep_args("--preset", "subject-ladder/2", "--param", "determinants=3")
    )
    assert changed.params == {**PRESETS["subject-ladder/2"], "determinants": 3}  # --param last
    assert options_from_args(sweep_args("--param", "determinants=3")).params == {"determinants": 3}


@pytest.mark.parametrize(
    ("preset", "words"),
    [
        ("subject-ladder", "is a ladder, not one task set: choose one of its rungs"),
        ("nonesuch", "unknown --preset 'nonesuch'; known: design"),
    ],
)
def test_sweep_refuses_a_ladder_or_an_unknown_preset(preset: str, words: str) -> None:
    with pytest.raises(UsageError, match=words):
        options_from_args(sweep_args("--preset", preset))


def test_sweep_resume_refuses_another_preset() -> None:
    recorded = options_from_args(sweep_args("--preset", "subject-ladder/1")).to_json()
    args = parser().parse_args(["sweep", "--resume", "--out", "runs/x"])
    assert options_for_resume(args, recorded, "run.json").params == PRESETS["subject-ladder/1"]
    again = parser().parse_args(["sweep", "--resume", "--out", "x", "--preset", "subject-ladder/1"])
    assert options_for_resume(again, recorded, "run.json").seed == recorded["seed"]
    other = parser().parse_args(["sweep", "--resume", "--out", "x", "--preset", "subject-ladder/2"])
    with pytest.raises(UsageError, match=r"--params .* differs from the sweep.s recorded"):
        options_for_resume(other, recorded, "run.json")


def test_tasks_and_simulate_take_a_rung_and_refuse_a_ladder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["tasks", "--preset", "subject-ladder/1", "--seed", "3"]) == 0
    assert "recurrence-120" in capsys.readouterr().out
    code = main(["simulate", "--model", "independent", "--seeds", "1..1",
                 "--preset", "subject-ladder", "--out", str(tmp_path / "o")])  # fmt: skip
    assert code == 2
    assert "choose one of its rungs (subject-ladder/1" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_matrix_plan_naming_a_ladder_makes_a_cell_per_rung(tmp_path: Path) -> None:
    plan_path = tmp_path / "plan.toml"
    plan_path.write_text(
        '[axes]\nmodels = ["independent"]\nseeds = [11, 12]\n'
        'presets = ["design", "subject-ladder"]\n'
        '[[exclude]]\npreset = "subject-ladder"\nseed = 12\n',
        encoding="utf-8",
    )
    cells = expand(read_plan(plan_path), plan_path)
    rungs = [(c.preset, c.ladder, c.rung, c.seed) for c in cells if c.ladder]
    assert rungs == [(f"subject-ladder/{i}", "subject-ladder", i, 11) for i in range(1, 5)]
    assert [(c.preset, c.ladder, c.rung) for c in cells if not c.ladder] == [
        ("design", None, None),
        ("design", None, None),
    ]
    assert all(c.params == PRESETS[c.preset] for c in cells)
    named = [c.name for c in cells if c.rung == 3]
    assert named == ["independent_native_subject-ladder-3_default_s11"]
