"""Hostile matrix output folders (issue 39): a folder is a record, not a cache.

Each reproducer of the issue fails on the old code: `cells/` deleted while matrix.json says
done (it said "2 done" and summarised nothing), an edited cell (it counted as done), a
foreign cell folder, a second plan reusing a preset name with other parameters (its data
were summarised under the new parameters), a `simulate` run's folder as `--out` (its
summary.json was overwritten), `.stop` a folder (a traceback), symlinks, and two commands
on one folder (neither refused nor waited).

A matrix of two synthetic cells is run once; each test works on a copy of its folder.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLAN = """
name = "hostile folders"
[axes]
models = ["independent"]
seeds = [1, 2]
presets = ["tiny"]
conditions = [["model-only"]]

[parameter_sets.tiny]
primitives_per_op = 2
probe_pairs = 1
determinants = 0
derivatives = 0
"""
S1, S2 = "independent_native_tiny_mo_s1", "independent_native_tiny_mo_s2"


def matrix(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COMPOSITION_LAB_MATRIX_HOOKS"}
    return subprocess.run(
        [sys.executable, "-m", "pyapp", "matrix", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def states(out: Path) -> dict[str, dict[str, Any]]:
    return {c["cell"]["name"]: c for c in read(out / "matrix.json")["cells"]}


def refused(result: subprocess.CompletedProcess[str], *expected: str) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert all(text in lines[0] for text in expected), lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(plan, folder) of a finished matrix."""
    folder = tmp_path_factory.mktemp("made")
    plan = folder / "plan.toml"
    plan.write_text(PLAN, encoding="utf-8")
    out = folder / "out"
    done = matrix(str(plan), "--out", str(out), "--jobs", "2")
    assert done.returncode == 0, done.stderr
    return plan, out


@pytest.fixture
def copy(made: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    plan, out = made
    target = tmp_path / "out"
    shutil.copytree(out, target, symlinks=True)
    return plan, target


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file's bytes, but the folder lock's note (who holds it: each command writes it)."""
    files = [p for p in folder.rglob("*") if p.is_file() and p != folder / ".lock"]
    return {str(p.relative_to(folder)): p.read_bytes() for p in files}


@pytest.mark.parametrize("deleted", ["cells", f"cells/{S1}", f"cells/{S1}/seed-1"])
def test_a_cell_whose_files_are_missing_runs_again_and_matrix_json_says_why(
    copy: tuple[Path, Path], deleted: str
) -> None:
    """The reproducer: with cells/ deleted and matrix.json saying done, the command exited 0,
    said "2 done", ran nothing, and summary.json listed both cells done with no data."""
    plan, out = copy
    shutil.rmtree(out / deleted)
    gone = {S1, S2} if deleted == "cells" else {S1}
    result = matrix(str(plan), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert f"{2 - len(gone)} done already, {len(gone)} to run" in result.stderr
    after = states(out)
    for name in gone:
        assert "its files are" in after[name]["reset"] and f"cells/{name}/" in after[name]["reset"]
        assert (out / "cells" / name / "seed-1" if name == S1 else out / "cells" / name).exists()
    summary = read(out / "summary.json")
    assert [row["evidence"] for row in summary["cells"]] == ["synthetic", "synthetic"]
    assert all(row["conditions"] for row in summary["cells"]) and not summary["left_out"]


def test_an_edited_cell_does_not_rederive_is_left_out_and_never_run_over(
    copy: tuple[Path, Path],
) -> None:
    from pyapp.matrix import files_sha256  # here: the old code lacks it

    plan, out = copy
    trace = out / "cells" / S1 / "seed-1" / "trace.json"
    document = read(trace)
    document["trials"][-1]["correct"] = not document["trials"][-1]["correct"]
    trace.write_text(json.dumps(document), encoding="utf-8")
    before = snapshot(out / "cells" / S1)
    for _ in range(2):  # the second time from the cached check: the same answer
        result = matrix(str(plan), "--out", str(out))
        assert result.returncode == 1, result.stderr
        assert "1 done already, 0 to run, 1 whose files do not re-derive" in result.stderr
        assert f"failed: {S1}: does not re-derive" in result.stdout
        assert "continue with" not in result.stderr  # running it again would not run it
        state = states(out)[S1]
        assert state["status"] == "failed" and state["error"].startswith("does not re-derive")
        assert state["checked"]["sha256"] == files_sha256(
            out / "cells" / S1, ("seed-1/trace.json", "seed-1/predictions.json", "summary.json")
        )
        assert snapshot(out / "cells" / S1) == before  # never run over
        summary = read(out / "summary.json")
        assert [row["cell"]["name"] for row in summary["cells"]] == [S2]
        assert [row["cell"] for row in summary["left_out"]] == [S1]
        assert all(S1 not in row["cells"] for row in summary["pooled"] + summary["across_seeds"])
    report = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="left-out"' in report and S1 in report


def test_a_foreign_cell_folder_is_refused_naming_the_cell_and_key(
    copy: tuple[Path, Path],
) -> None:
    """Seed 2's folder copied over seed 1's: matrix.json said done, the command believed it."""
    plan, out = copy
    shutil.rmtree(out / "cells" / S1)
    shutil.copytree(out / "cells" / S2, out / "cells" / S1)
    before = snapshot(out)
    line = refused(matrix(str(plan), "--out", str(out)), str(plan), "axes.seeds", f"cell {S1}")
    assert "2 in its trace, 1 in the plan" in line
    assert snapshot(out) == before


def test_a_second_plan_reusing_a_preset_name_with_other_parameters_is_refused(
    copy: tuple[Path, Path], tmp_path: Path
) -> None:
    """It exited 0 and summarised the first plan's data under the second plan's parameters."""
    _, out = copy
    other = tmp_path / "other.toml"
    other.write_text(PLAN.replace("primitives_per_op = 2", "primitives_per_op = 3"), "utf-8")
    before = snapshot(out)
    line = refused(matrix(str(other), "--out", str(out)), str(other), "parameter_sets.tiny")
    assert f"cell {S1}" in line and "primitives_per_op 2 in its trace, 3 in the plan" in line
    assert snapshot(out) == before


def test_a_preset_renamed_is_matched_by_its_task_set(
    copy: tuple[Path, Path], tmp_path: Path
) -> None:
    """Cells are matched by the task set their traces say, not by the preset's name."""
    _, out = copy
    renamed = tmp_path / "renamed.toml"
    renamed.write_text(PLAN.replace("tiny", "small"), "utf-8")
    refused(
        matrix(str(renamed), "--out", str(out)),
        "parameter_sets.small: cell independent_native_small_mo_s1 is cell " + S1,
    )


def test_a_plan_may_add_cells_to_a_folder(copy: tuple[Path, Path], tmp_path: Path) -> None:
    _, out = copy
    grown = tmp_path / "grown.toml"
    grown.write_text(PLAN.replace("seeds = [1, 2]", "seeds = [1, 2, 3]"), "utf-8")
    result = matrix(str(grown), "--out", str(out))
    assert result.returncode == 0 and "2 done already, 1 to run" in result.stderr, result.stderr
    sessions = read(out / "matrix.json")["sessions"]
    assert len({s["plan_sha256"] for s in sessions}) == 2  # the parsed plans' hashes


def test_the_same_plan_written_otherwise_has_the_same_hash(
    copy: tuple[Path, Path], tmp_path: Path
) -> None:
    _plan, out = copy
    respaced = tmp_path / "respaced.toml"
    respaced.write_text("# the same plan\n" + PLAN.replace(" = ", "=") + "\n\n", "utf-8")
    assert matrix(str(respaced), "--out", str(out)).returncode == 0
    sessions = read(out / "matrix.json")["sessions"]
    assert sessions[0]["plan_sha256"] == sessions[-1]["plan_sha256"]


def test_a_simulate_run_folder_is_refused(made: tuple[Path, Path], tmp_path: Path) -> None:
    """`--out` at a simulate run's folder overwrote its summary.json."""
    plan, _ = made
    sim = tmp_path / "sim"
    done = subprocess.run(
        [sys.executable, "-m", "pyapp", "simulate", "--model", "independent", "--seeds", "1..1",
         "--out", str(sim)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    before = snapshot(sim)
    for dry_run in ([], ["--dry-run"]):
        refused(
            matrix(str(plan), "--out", str(sim), *dry_run),
            str(sim / "summary.json"),
            "a simulate run's summary.json",
            "not a matrix's summary.json",
        )
    (sim / "summary.json").unlink()  # no summary left: its other files still say whose it is
    refused(matrix(str(plan), "--out", str(sim)), "not a matrix folder: it holds 'seed-1'")
    assert not (sim / ".lock").exists() and set(snapshot(sim)) == set(before) - {"summary.json"}


def _replace_with_folder(out: Path, name: str) -> None:
    target = out / name
    if target.exists():
        target.unlink()
    target.mkdir()


def _replace_with_link(out: Path, name: str) -> None:
    target = out / name
    moved = out.parent / f"moved-{target.name}"
    target.rename(moved)
    target.symlink_to(moved)


ENTRIES = [
    ("a folder as .stop", lambda out: _replace_with_folder(out, ".stop"), ".stop: not a plain"),
    ("matrix.json a link", lambda out: _replace_with_link(out, "matrix.json"), "symbolic link"),
    ("a cell folder a link", lambda out: _replace_with_link(out, f"cells/{S1}"), "symbolic link"),
    ("cells a link", lambda out: _replace_with_link(out, "cells"), "cells: a symbolic link"),
    ("the lock a link", lambda out: (out / ".lock").symlink_to(out / "x"), ".lock: a symbolic"),
    ("a cell's lock a folder", lambda out: _replace_with_folder(out, f"cells/{S1}/.lock"), "not a"),
]


@pytest.mark.parametrize(("name", "change", "expected"), ENTRIES, ids=[e[0] for e in ENTRIES])
def test_links_and_entries_that_are_not_plain_are_refused_in_one_line(
    copy: tuple[Path, Path], name: str, change: Any, expected: str
) -> None:
    """`DIR/.stop` being a folder ended in `IsADirectoryError`; links were followed."""
    plan, out = copy
    (out / ".lock").unlink(missing_ok=True)
    change(out)
    refused(matrix(str(plan), "--out", str(out)), expected)


def test_a_matrix_json_of_another_kind_is_refused(copy: tuple[Path, Path]) -> None:
    plan, out = copy
    shutil.copy(out / "cells" / S1 / "seed-1" / "predictions.json", out / "matrix.json")
    refused(
        matrix(str(plan), "--out", str(out)),
        "matrix.json: a predictions document",
        "not a matrix's matrix.json",
    )


def test_a_second_command_on_a_held_folder_is_refused_or_waits(copy: tuple[Path, Path]) -> None:
    """Two commands on one folder neither refused nor waited: matrix.json lost a session."""
    plan, out = copy
    with open(out / ".lock", "a+", encoding="utf-8") as lock:  # another command, holding it
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.write("python -m pyapp matrix (a test holding the folder)\n")
        lock.flush()
        refused(matrix(str(plan), "--out", str(out)), f"{out}: in use by", "--wait")
        waiting = subprocess.Popen(
            [sys.executable, "-m", "pyapp", "matrix", str(plan), "--out", str(out), "--wait"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        )  # fmt: skip
        assert waiting.stderr is not None
        assert "waiting for" in waiting.stderr.readline()  # it waits: the lock is still held
    _output, errors = waiting.communicate(timeout=300)
    assert waiting.returncode == 0, errors
    assert "2 done already, 0 to run" in errors
    assert len(read(out / "matrix.json")["sessions"]) == 2


def test_two_commands_at_once_run_every_cell_once_and_lose_no_session(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN, encoding="utf-8")
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "pyapp", "matrix", str(plan), "--out", str(out), "--wait"]
    both = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        for _ in range(2)
    ]
    ended = [(p.communicate(timeout=300), p.returncode) for p in both]
    assert [code for _, code in ended] == [0, 0], ended
    record = read(out / "matrix.json")
    assert len(record["sessions"]) == 2 and all(s["ended_at"] for s in record["sessions"])
    assert sorted(s["cells_run"] for s in record["sessions"]) == [0, 2]
    assert all(c["attempts"] == 1 and c["status"] == "done" for c in record["cells"])


def test_a_browser_cell_run_under_other_options_is_refused_naming_the_key(
    tmp_path: Path,
) -> None:
    """Options that shape a browser cell's result (here `page_params`) are recorded per cell
    as it first ran; a plan that changes them for a cell with files is refused (checked in
    process: a browser cell's run is tests/browser/test_matrix_browser.py's)."""
    from pyapp.errors import InputError
    from pyapp.matrix import CellState, FilesCheck, check_match, expand, read_plan, result_options

    path = tmp_path / "plan.toml"
    path.write_text(
        '[axes]\nmodels = ["fixture"]\nseeds = [1]\n'
        '[options]\nconsent = true\npage_params = { model_step_delay_ms = "5" }\n',
        encoding="utf-8",
    )
    plan = read_plan(path)
    cell = expand(plan, path)[0]
    ran_under = {**result_options(plan, cell), "page_params": {"model_step_delay_ms": "9"}}
    state = CellState(cell, "done", True, 1, None, None, 0.0, 0, None, (), None, options=ran_under)
    check_match(plan, path, tmp_path, state, None)  # no files: nothing to contradict
    files = FilesCheck("0" * 64, True, None, None)
    with pytest.raises(InputError, match=rf"options.page_params: cell {cell.name} in .* was run"):
        check_match(plan, path, tmp_path, state, files)
    same = CellState(cell, "done", True, 1, None, None, 0.0, 0, None, (), None,
                     options=result_options(plan, cell))  # fmt: skip
    check_match(plan, path, tmp_path, same, files)


def test_simulate_refuses_a_matrix_folder_and_touches_nothing(
    copy: tuple[Path, Path], tmp_path: Path
) -> None:
    """`simulate --out` a matrix's folder wrote its seed folders and replaced the matrix's
    summary.json; it is refused before any work, and its own folder is still reused."""
    _, out = copy
    before = snapshot(out)

    def simulate(folder: Path) -> subprocess.CompletedProcess[str]:
        argv = ["simulate", "--model", "independent", "--seeds", "1..1", "--out", str(folder)]
        return subprocess.run(
            [sys.executable, "-m", "pyapp", *argv], capture_output=True, text=True, cwd=ROOT
        )

    refused(simulate(out), "summary.json", "matrix")
    assert snapshot(out) == before
    (out / "summary.json").unlink()  # a matrix before its summary: its entries are foreign
    refused(simulate(out), "not a simulation folder", "a matrix or sweep run")
    mine = tmp_path / "sim"
    assert simulate(mine).returncode == 0
    assert simulate(mine).returncode == 0, "a simulate folder is simulate's to write again"
