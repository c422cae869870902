"""Hostile matrix plans (issue 39): each reproducer of the issue is refused in one line
naming the file and the key (exit 1) — or, where the plan is fine, runs — before anything
is allocated or started.

Every command runs as a subprocess under a 1 GiB address-space limit, so that a plan that
would grow without bound (the old seed list) fails here instead of taking the machine.
The checks themselves are `pyapp/matrix/check.py`; random plans: tests/test_plan_property.py.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from pyapp.matrix import MAX_FOLDER_CHARS, folder_name

ROOT = Path(__file__).resolve().parents[1]
ADDRESS_SPACE_BYTES = 1024**3
TINY = """
[parameter_sets.tiny]
primitives_per_op = 1
probe_pairs = 1
determinants = 0
derivatives = 0
"""


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))


def matrix(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyapp", "matrix", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        preexec_fn=_limit_memory,
    )


def plan_of(tmp_path: Path, axes: str, rest: str = "") -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(f"[axes]\n{axes}\n{rest}", encoding="utf-8")
    return path


def refused(result: subprocess.CompletedProcess[str], plan: Path, expected: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    assert len(lines) == 1, result.stderr[-2000:]
    assert lines[0].startswith(f"error: {plan}: ") and expected in lines[0], lines[0]


SEED_RANGES = [
    ("{ first = 0, last = 999999999 }", "axes: 1,000,000,000 cells: more than 100,000"),
    ("{ first = 0, last = 18446744073709551615 }", "axes: 18,446,744,073,709,551,616 cells"),
    ("{ first = 0, last = 100000000000000000000000 }", "axes.seeds.last: seed 1000000"),
    ("[18446744073709551616]", "axes.seeds[0]: seed 18446744073709551616 is outside"),
    ("[1, 2, 1]", "axes.seeds[2]: a duplicate of axes.seeds[0]"),
]


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
@pytest.mark.parametrize(("seeds", "expected"), SEED_RANGES)
def test_seed_ranges_are_counted_and_bounded_before_anything_is_listed(
    tmp_path: Path, seeds: str, expected: str, dry_run: bool
) -> None:
    """The reproducers: a billion seeds grew past 5 GB (with --dry-run too); ranges reaching
    2^64-1 or 10^23 ended in an OverflowError traceback; seed 2^64 passed the plan check."""
    plan = plan_of(tmp_path, f'models = ["independent"]\nseeds = {seeds}')
    out = tmp_path / "out"
    result = matrix(str(plan), "--out", str(out), *(["--dry-run"] if dry_run else []))
    refused(result, plan, expected)
    assert not out.exists()


NUMBERS = [
    ("[options]\ntimeout_s = nan", "options.timeout_s: nan is not a finite number"),
    ("[options]\ntimeout_s = -1", "options.timeout_s: -1.0 is outside (0, 86400]"),
    ("[options]\ntimeout_s = 86401", "options.timeout_s: 86401.0 is outside (0, 86400]"),
    ("[options]\ncpus_per_synthetic_cell = nan", "options.cpus_per_synthetic_cell: nan is"),
    ("[options]\ncpus_per_browser_cell = 0", "options.cpus_per_browser_cell: 0.0 is outside"),
    ("[options]\nretries = 101", "options.retries: 101 is outside [0, 100]"),
]


@pytest.mark.parametrize(("options", "expected"), NUMBERS)
def test_numbers_must_be_finite_and_in_their_documented_range(
    tmp_path: Path, options: str, expected: str
) -> None:
    plan = plan_of(tmp_path, 'models = ["independent"]\nseeds = [1]', options)
    refused(matrix(str(plan), "--out", str(tmp_path / "out"), "--dry-run"), plan, expected)


DUPLICATES = [
    ('presets = ["design", "design"]', "", "axes.presets[1]: a duplicate of axes.presets[0]"),
    (
        'conditions = [["model-only", "controlled-chain"], ["controlled-chain", "model-only"]]',
        "",
        "axes.conditions[1]: a duplicate of axes.conditions[0]",
    ),
    (
        'presets = ["tiny", "small"]',
        TINY + TINY.replace("tiny", "small"),
        "parameter_sets.small: the same task parameters as parameter_sets.tiny",
    ),
    (
        'presets = ["design", "mine"]',
        "[parameter_sets.mine]\nprobe_pairs = 6\n",
        "parameter_sets.mine: the same task parameters as axes.presets[0] ('design')",
    ),
    (
        'presets = ["tiny"]',
        TINY + "[[exclude]]\nseed = 2\n[[exclude]]\nseed = 2\n",
        "exclude[1]: a duplicate of exclude[0]",
    ),
]


@pytest.mark.parametrize(("axis", "rest", "expected"), DUPLICATES)
def test_duplicates_are_refused_on_every_axis_naming_both_keys(
    tmp_path: Path, axis: str, rest: str, expected: str
) -> None:
    """`presets = ["design", "design"]` was silently folded into one cell."""
    plan = plan_of(tmp_path, f'models = ["independent"]\nseeds = [1, 2]\n{axis}', rest)
    refused(matrix(str(plan), "--out", str(tmp_path / "out"), "--dry-run"), plan, expected)


def test_a_60_kb_model_specification_is_one_line(tmp_path: Path) -> None:
    """It ended in `OSError: File name too long`."""
    spec = "independent:p_add=0.0" + "0" * 60_000 + "5"
    plan = plan_of(tmp_path, f'models = ["{spec}"]\nseeds = [1]')
    refused(matrix(str(plan), "--out", str(tmp_path / "out"), "--dry-run"), plan, "axes.models[0]")


def test_a_long_model_specification_gets_a_derived_folder_name(tmp_path: Path) -> None:
    """400 characters with `cells/` present ended in `OSError: File name too long`: the
    cell's folder name is derived — cut, and a hash of the whole name — never the raw spec."""
    spec = "independent:p_add=0.0" + "0" * 380 + "5"
    plan = plan_of(tmp_path, f'models = ["{spec}"]\nseeds = [1]')
    out = tmp_path / "out"
    (out / "cells").mkdir(parents=True)
    result = matrix(str(plan), "--out", str(out), "--dry-run")
    assert result.returncode == 0, result.stderr
    folder = result.stdout.split(f"--out {out}/cells/")[1].split()[0]
    assert len(folder) <= MAX_FOLDER_CHARS and folder.startswith("independent-p-add=0.0")
    written = spec.replace(":", "-").replace("_", "-")  # the slug of the spec
    assert folder == folder_name(f"{written}_native_design_default_s1")


def test_a_short_name_is_its_own_folder_name() -> None:
    assert folder_name("independent_native_design_default_s1") == (
        "independent_native_design_default_s1"
    )
    long = "x" * 500
    assert folder_name(long) != folder_name(long + "y") and len(folder_name(long)) <= 120
