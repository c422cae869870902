"""The predictors' difference across runs (issue 25 §8): Compare, the matrix and the
validation report give Brier(product) − Brier(state-aware) over seeds with one definition
(`pyapp.predict.skill.across_runs` over each run's paired difference) and in one wording
(`pyapp.predict.compare.across_runs_text`); from one seed they say that the interval is
undefined instead of printing one. Runs come from synthetic models (never model
evidence)."""

from __future__ import annotations

from pathlib import Path

import pytest
from asyncrun import in_thread

from pyapp.matrix import (
    NOTE,
    SUMMARY_SCHEMA,
    MatrixSummary,
    across_seeds_rows,
    expand,
    read_plan,
    render,
)
from pyapp.predict import compare, skill
from pyapp.synthetic import (
    across_seeds_lines,
    parse_spec,
    render_markdown,
    run_seeds,
    seed_differences,
    validate_structure,
)
from pyapp.tasks import TaskParams

PLAN = """
name = "test: the difference across seeds"
[axes]
models = ["size-dependent:slope=1.2"]
seeds = { first = 1, last = LAST }
presets = ["tiny"]
conditions = [["model-only", "controlled-chain"]]

[parameter_sets.tiny]
primitives_per_op = 2
probe_pairs = 1
determinants = 0
derivatives = 0
"""
TINY = TaskParams(primitives_per_op=2, probe_pairs=1, determinants=0, derivatives=0)


def cells_and_runs(tmp_path: Path, last: int):
    """A plan's cells, each with the predictions of its seed (run here, natively)."""
    path = tmp_path / "plan.toml"
    path.write_text(PLAN.replace("LAST", str(last)), encoding="utf-8")
    cells = expand(read_plan(path), path)
    spec = parse_spec(cells[0].model_key)
    seeds = [cell.seed for cell in cells]
    runs = in_thread(run_seeds, spec, TINY, seeds, ("model-only", "controlled-chain"))
    return [(cell, run.predictions) for cell, run in zip(cells, runs, strict=True)]


def per_run(found, condition: str) -> list[float]:
    values = []
    for _, doc in found:
        result = next(c for c in doc.conditions if c.frozen.profile.condition == condition)
        assert result.skill is not None and result.skill.difference is not None
        values.append(result.skill.difference.mean)
    return values


def test_the_matrix_gives_comparess_difference_across_seeds(tmp_path) -> None:
    found = cells_and_runs(tmp_path, 3)
    rows = across_seeds_rows(found)
    assert {r.condition for r in rows} == {"model-only", "controlled-chain"}
    names = [cell.name for cell, _ in found]
    summary = compare.summary(names, [doc for _, doc in found])
    for row in rows:
        values = per_run(found, row.condition)
        assert row.seeds == (1, 2, 3) and row.differences == tuple(values)
        assert row.across == skill.across_runs(values)
        assert row.across is not None and row.across.low is not None  # three seeds
        shown = next(r for r in summary if r[0] == compare.ACROSS_RUNS and r[2] == row.condition)
        assert row.shown == shown[compare.SUMMARY_HEADER.index(compare.ACROSS_RUNS_COLUMN)]
        assert row.shown == f"{row.across.mean:.3f} [{row.across.low:.3f}, {row.across.high:.3f}]"
    matrix = MatrixSummary(
        SUMMARY_SCHEMA, "composition-lab-matrix-summary", "t", NOTE, (), (), tuple(rows)
    )
    html = render(matrix, {})
    assert (
        "The predictors&#x27; difference across seeds" in html or "difference across seeds" in html
    )
    assert compare.ACROSS_RUNS_DEFINITION.split(":")[0] in html
    assert all(row.shown in html for row in rows)


def test_a_one_seed_matrix_says_the_interval_is_undefined(tmp_path) -> None:
    found = cells_and_runs(tmp_path, 1)
    rows = across_seeds_rows(found)
    assert len(rows) == 2
    for row in rows:
        assert row.seeds == (1,) and row.across is not None
        assert row.across.low is None and row.across.high is None
        assert row.across.mean == per_run(found, row.condition)[0]
        assert row.shown.endswith("(1 run: interval undefined, it needs two or more seeds)")
        assert "[" not in row.shown
    matrix = MatrixSummary(
        SUMMARY_SCHEMA, "composition-lab-matrix-summary", "t", NOTE, (), (), tuple(rows)
    )
    html = render(matrix, {})
    assert html.count("interval undefined") == 2 and "1 run" in html


def tiny_validation(seeds: int):
    def run():
        return validate_structure(
            parse_spec("size-dependent:slope=1.2"),
            "design",
            TaskParams(),
            range(1, seeds + 1),
            lambda: 0.0,
        )

    return in_thread(run)


def test_the_validation_report_gives_the_same_difference_across_seeds() -> None:
    result = tiny_validation(3)
    runs = in_thread(run_seeds, parse_spec("size-dependent:slope=1.2"), TaskParams(), range(1, 4))
    differences = seed_differences(result)
    assert set(differences) == {"model-only", "model-program", "controlled-chain"}
    text = render_markdown([result], "test", {"seeds": 3}, [], [])
    for condition, per_seed in differences.items():
        expected = per_run([(None, run.predictions) for run in runs], condition)
        assert list(per_seed) == [1, 2, 3] and list(per_seed.values()) == expected
        shown = compare.across_runs_text(expected)
        assert shown == compare.across_runs_text(list(per_seed.values()))
        line = (
            f"- size-dependent (design), {condition}: {compare.ACROSS_RUNS} "
            f"{compare.ACROSS_RUNS_COLUMN} {shown} (3 runs)"
        )
        assert line in text
    assert compare.ACROSS_RUNS_DEFINITION in text


def test_one_seed_of_validation_says_the_interval_is_undefined() -> None:
    lines = across_seeds_lines([tiny_validation(1)])
    rows = [line for line in lines if line.startswith("- ")]
    assert len(rows) == 3
    assert all("(1 run: interval undefined, it needs two or more seeds) (1 run)" in r for r in rows)


@pytest.mark.parametrize("values", [[], [0.25]])
def test_across_runs_text_never_makes_up_an_interval(values) -> None:
    shown = compare.across_runs_text(values)
    assert "[" not in shown
    assert shown == (
        "—" if not values else "0.250 (1 run: interval undefined, it needs two or more seeds)"
    )
