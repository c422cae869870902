"""Study-level seals (issue 37): a plan's `sealed = "study"` makes the cells of one task
seed share their held-out tasks, drawn only once every one of them is frozen.

Each cell stops at its freeze (`simulate --study-seal FILE` / `sweep --study-seal FILE`
while FILE does not exist); the matrix makes the seed's seal from every cell's own seal,
re-derived from its trace (`DIR/seals/seed-N.json`), and each cell draws from it. The draw
records the seal, `reproduce` checks that it lists the run's own seal, and `study` checks
that the seed's cells shared one seal. Plans are sealed by default now, and a plan whose
hypotheses compare two models must share its held-out tasks (study seal or unsealed).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_matrix import matrix, read, write_plan
from tracecheck import rechained

from pyapp.cli.main import main
from pyapp.errors import InputError
from pyapp.host import read_seal, write_seal
from pyapp.matrix import expand, read_plan, seal_problem
from pyapp.predict import content_sha256, heldout_draw_seed, study_draw_seed, study_seal_of
from pyapp.records import SealMember, read_trace
from pyapp.tasks import draw_heldout
from pyapp.verify.reproduce import reproduce

# Under pytest-xdist (scripts/lab test) the module runs in one process, with the other tests
# that start Ray (tests/browser/test_matrix_browser.py): its sealed study is made once.
pytestmark = pytest.mark.xdist_group("ray")

ROOT = Path(__file__).resolve().parents[1]
PLAN = """
[axes]
models = ["size-dependent", "independent"]
seeds = [1, 2]
presets = ["small"]
conditions = [["model-only", "controlled-chain"]]
[options]
sealed = "study"
[parameter_sets.small]
primitives_per_op = 4
probe_pairs = 2
recurrence_steps = [2, 3]
determinants = 1
derivatives = 1
"""


def traces_of(out: Path) -> dict[str, dict[str, Any]]:
    """Every cell's trace, by cell name."""
    found = {}
    for path in sorted((out / "cells").glob("*/seed-*/trace.json")):
        found[path.parent.parent.name] = read(path)
    for path in sorted((out / "cells").glob("*/trace.json")):
        found[path.parent.name] = read(path)
    return found


def heldout_expected(trace: dict[str, Any]) -> dict[str, object]:
    """The held-out trials' expected answers by trial (what the drawn tasks are)."""
    drawn = trace["draw"]["sequence"]
    return {t["trial_id"]: t.get("expected") for t in trace["trials"] if t["sequence"] > drawn}


@pytest.fixture(scope="module")
def sealed_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("study-seal")
    plan = write_plan(folder, PLAN)
    out = folder / "out"
    result = matrix(str(plan), "--out", str(out), "--jobs", "2")
    assert result.returncode == 0, result.stderr
    return out


def test_the_cells_of_a_seed_share_one_draw_made_from_every_ones_own_seal(
    sealed_study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = sealed_study
    traces = traces_of(out)
    assert len(traces) == 4
    for seed in (1, 2):
        seal_file = read(out / "seals" / f"seed-{seed}.json")
        assert seal_file["kind"] == "composition-lab-study-seal"
        group = {n: t for n, t in traces.items() if t["run"]["task_params"]["seed"] == seed}
        assert len(group) == 2
        own = {n: heldout_draw_seed(read_trace(t)) for n, t in group.items()}
        assert len(set(own.values())) == 2  # two models: two profiles, two own seals
        members = [SealMember(cell=n, seal=s) for n, s in sorted(own.items())]
        shared = study_draw_seed(seed, members)
        assert seal_file["draw_seed"] == shared
        for trace in group.values():
            assert trace["run"]["terms"]["sealed"] is True
            assert trace["draw"]["draw_seed"] == shared
            assert trace["draw"]["study_seal"]["members"] == [
                {"cell": m.cell, "seal": m.seal} for m in members
            ]
        first, second = (heldout_expected(t) for t in group.values())
        assert first and first == second  # the same held-out tasks, whatever each model did
    seeds = {t["draw"]["draw_seed"] for t in traces.values()}
    assert len(seeds) == 2  # one seal per task seed
    for name in traces:
        path = next((out / "cells" / name).rglob("trace.json"))
        assert main(["reproduce", str(path)]) == 0, name
        assert "sealed under a study seal" in capsys.readouterr().out
    assert main(["study", str(out), "--resamples", "200"]) == 0
    doc = read(out / "study.json")
    assert "study seal not shared" not in json.dumps(doc)


def test_a_study_sealed_plan_runs_on_ray_as_it_does_locally(
    sealed_study: Path, tmp_path: Path
) -> None:
    """The same plan on a local Ray instance (`--engine ray`, which starts one): the cells
    stop at their freeze, go back to Ray once their seed's seal is made, and draw the same
    held-out tasks as the local run."""
    pytest.importorskip("ray")
    plan = write_plan(tmp_path, PLAN)
    out = tmp_path / "ray"
    result = matrix(str(plan), "--out", str(out), "--engine", "ray")
    assert result.returncode == 0, result.stderr
    assert {c["status"] for c in read(out / "matrix.json")["cells"]} == {"done"}
    for seed in (1, 2):
        ours, theirs = (read(o / "seals" / f"seed-{seed}.json") for o in (out, sealed_study))
        assert (ours["draw_seed"], ours["members"]) == (theirs["draw_seed"], theirs["members"])
    local = traces_of(sealed_study)
    for name, trace in traces_of(out).items():
        timeless = ("drawn_at", "prev_sha256")  # the time of the draw, chained
        ours_draw, local_draw = ({k: v for k, v in t["draw"].items() if k not in timeless}
                                 for t in (trace, local[name]))  # fmt: skip
        assert ours_draw == local_draw, name
        assert heldout_expected(trace) == heldout_expected(local[name]), name


def test_reproduce_refuses_a_study_seal_that_does_not_list_the_runs_own(
    sealed_study: Path, tmp_path: Path
) -> None:
    """A forger who swaps in a seal of other profiles — draw seed recomputed from them and
    the chain made again — is refused: the run's own seal, re-derived from its freezes, is
    not among the members."""
    trace = next(iter(traces_of(sealed_study).values()))
    forged = json.loads(json.dumps(trace))
    members = [
        {"cell": m["cell"], "seal": "0" * 64} for m in forged["draw"]["study_seal"]["members"]
    ]
    forged["draw"]["study_seal"]["members"] = members
    typed = [SealMember(**m) for m in members]
    forged["draw"]["draw_seed"] = study_draw_seed(trace["run"]["task_params"]["seed"], typed)
    found = [str(m) for m in reproduce(rechained(forged))]
    assert any("$.draw.study_seal" in m and "is not among" in m for m in found), found
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(rechained(forged)), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pyapp", "reproduce", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 1 and "$.draw.study_seal" in done.stdout, done.stdout


def test_the_study_checks_each_seal_against_the_other_cells_of_its_seed(
    sealed_study: Path,
) -> None:
    plan = read_plan(sealed_study.parent / "plan.toml")
    cells = expand(plan, sealed_study.parent / "plan.toml")
    traces = {n: read_trace(t) for n, t in traces_of(sealed_study).items()}
    seals = {
        n: heldout_draw_seed(t, [f for f in t.freezes if f.sequence < t.draw.sequence])
        for n, t in traces.items()
    }  # type: ignore[union-attr]
    name, trace = next(iter(traces.items()))
    group = [c for c in cells if c.seed == trace.run.task_params.seed]
    assert seal_problem(trace, group, seals) is None
    sibling = next(c.name for c in group if c.name != name)
    problem = seal_problem(trace, group, seals | {sibling: "f" * 64})
    assert problem is not None and sibling in problem
    extra = replace(group[0], name="another-cell")
    problem = seal_problem(trace, [*group, extra], seals)
    assert problem is not None and "another-cell" in problem
    assert trace.draw is not None
    alone = replace(trace, draw=replace(trace.draw, study_seal=None))  # drew without waiting
    assert seal_problem(alone, group, seals, shared=False) is None  # a plain sealed run
    problem = seal_problem(alone, group, seals, shared=True)
    assert problem is not None and "from its own seal" in problem


def test_a_cell_stops_at_its_freeze_until_its_seal_exists(tmp_path: Path) -> None:
    seal = tmp_path / "seal.json"
    out = tmp_path / "run"
    argv = [
        sys.executable, "-m", "pyapp", "simulate", "--model", "independent", "--seeds", "4",
        "--preset", "subject-ladder/1", "--study-seal", str(seal), "--out", str(out),
    ]  # fmt: skip
    first = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert first.returncode == 3, first.stderr
    assert "stopped at the freeze" in first.stderr
    frozen = read_trace(read(out / "seed-4" / "trace.json"))
    assert frozen.draw is None and frozen.freezes
    assert not any(t.sequence > max(f.sequence for f in frozen.freezes) for t in frozen.trials)
    assert not (out / "summary.json").exists()
    own = heldout_draw_seed(frozen)
    write_seal(seal, 4, study_seal_of([SealMember("someone-else", "1" * 64)]), "now")
    refused = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert refused.returncode == 1 and "is not among" in refused.stderr, refused.stderr
    write_seal(seal, 4, study_seal_of([SealMember("me", own), SealMember("b", "2" * 64)]), "now")
    assert read_seal(seal, 4) is not None
    with pytest.raises(InputError, match="not of this run's seed"):
        read_seal(seal, 5)
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    trace = read(out / "seed-4" / "trace.json")
    assert trace["draw"]["study_seal"]["members"][1] == {"cell": "me", "seal": own}
    assert reproduce(trace) == []


def test_a_study_seal_is_of_one_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--model", "independent", "--seeds", "1..2", "--out", str(tmp_path / "o")]
    assert main([*argv, "--study-seal", str(tmp_path / "seal.json")]) == 2
    assert "one seed only" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_an_edited_seal_file_is_refused(tmp_path: Path) -> None:
    seal = tmp_path / "seal.json"
    write_seal(seal, 4, study_seal_of([SealMember("a", "1" * 64)]), "now")
    document = read(seal)
    document["members"][0]["seal"] = "2" * 64
    seal.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(InputError, match="draw seed is not the one its members give"):
        read_seal(seal, 4)
    seal.write_text(json.dumps({"kind": "composition-lab-trace"}), encoding="utf-8")
    with pytest.raises(InputError, match="not a study seal"):
        read_seal(seal, 4)


def test_a_native_sweep_and_a_synthetic_cell_share_a_seal(tmp_path: Path) -> None:
    """The sweep's path: a native fixture cell pauses at its freeze (run.json says why) and
    is resumed with the seed's seal, which it shares with a synthetic cell."""
    pytest.importorskip("onnxruntime")
    from test_matrix_native import TINY

    plan = write_plan(
        tmp_path,
        '[axes]\nmodels = ["fixture", "independent"]\nseeds = [1]\npresets = ["tiny"]\n'
        'backends = ["native"]\nconditions = [["model-only", "controlled-chain"]]\n'
        '[options]\nconsent = true\nsealed = "study"\n' + TINY,
    )
    out = tmp_path / "out"
    result = matrix(str(plan), "--out", str(out), "--jobs", "2")
    assert result.returncode == 0, result.stderr
    traces = traces_of(out)
    assert len(traces) == 2
    assert len({t["draw"]["draw_seed"] for t in traces.values()}) == 1
    native = out / "cells" / "fixture_native_tiny_mo+cc_s1"
    log = (native / "cell.log").read_text(encoding="utf-8")
    assert log.count("== ") == 2 and "stopped at the freeze" in log  # paused, then resumed
    assert read(native / "run.json")["options"]["study_seal"] == str(
        out.resolve() / "seals" / "seed-1.json"
    )
    for trace in traces.values():
        assert reproduce(trace) == []


def test_plans_are_sealed_by_default_and_a_comparison_must_share_its_tasks(
    tmp_path: Path,
) -> None:
    silent = write_plan(tmp_path, '[axes]\nmodels = ["independent"]\nseeds = [1]\n')
    assert read_plan(silent).options.sealed is True
    compared = (
        '[axes]\nmodels = ["independent", "size-dependent"]\nseeds = [1]\n'
        '[[hypotheses]]\nid = "d"\nstatement = "s"\nmetric = "rate-difference"\n'
        'model = "independent"\nversus = "size-dependent"\ncondition = "model-only"\n'
        'direction = "greater"\n'
    )
    plan = write_plan(tmp_path, compared)
    result = matrix(str(plan), "--out", str(tmp_path / "out"), "--dry-run")
    assert result.returncode == 1
    assert "options.sealed" in result.stderr
    assert 'say sealed = "study"' in result.stderr, result.stderr
    for line in ('[options]\nsealed = "study"\n', "[options]\nsealed = false\n"):
        text = compared.replace("[[hypotheses]]", line + "[[hypotheses]]")
        ok = matrix(str(write_plan(tmp_path, text)), "--out", str(tmp_path / "o"), "--dry-run")
        assert ok.returncode == 0, ok.stderr
    receipt_out = tmp_path / "receipted"
    text = compared.replace("[[hypotheses]]", '[options]\nsealed = "study"\n[[hypotheses]]')
    study_plan = write_plan(tmp_path, text)
    assert main(["study-receipt", str(study_plan), "--out", str(receipt_out)]) == 0
    receipt = read(receipt_out / "study-receipt.json")
    assert receipt["held_out"].startswith("sealed per task seed")
    shutil.rmtree(receipt_out)


def test_a_draw_made_on_resume_is_checked_against_the_ledger(tmp_path: Path) -> None:
    """A native fixture sweep stops at its freeze (its study seal is not made yet). Before it
    is resumed, the ledger records that an earlier sweep of the same model observed the very
    tasks the seal will draw: the draw made on resume takes the ledger in and is exploratory,
    as a draw at the freeze would be (the page's draw: tests/browser/test_sweep_cli.py)."""
    pytest.importorskip("onnxruntime")
    from test_sweep_native import SMALL

    ledger, seal_file, out = tmp_path / "ledger.json", tmp_path / "seal.json", tmp_path / "run"
    argv = [
        sys.executable, "-m", "pyapp", "sweep", "--backend", "native", "--model", "fixture",
        "--consent", "--conditions", "model-only", "--ledger", str(ledger), *SMALL,
        "--out", str(out), "--study-seal", str(seal_file),
    ]  # fmt: skip
    paused = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert paused.returncode == 3, paused.stderr
    drawn = ledger_the_draw(out, ledger, seal_file)
    resumed = subprocess.run(
        [*argv, "--resume"], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert_the_draw_is_exploratory(out, drawn)


def ledger_the_draw(out: Path, ledger: Path, seal_file: Path) -> list[str]:
    """A model-only sweep at `out`, stopped at its freeze, waits for its study seal (seed
    1729): write that seal (its own member and another cell's) and a ledger that says an
    earlier sweep of the same model observed the very tasks the seal draws. Their ids."""
    assert read(out / "run.json")["status"] == "paused"
    frozen = read_trace(read(out / "trace.json"))
    assert frozen.draw is None and frozen.model is not None
    members = [SealMember("a", heldout_draw_seed(frozen)), SealMember("b", "2" * 64)]
    drawn = draw_heldout(frozen.run.task_params, study_draw_seed(1729, members))
    model = frozen.model
    keys = sorted(content_sha256(t) for t in drawn)  # what an earlier sweep observed
    entry = {"model_id": model.model_id, "revision": model.revision, "condition": "model-only",
             "tasks": keys, "runs": ["an-earlier-sweep"]}  # fmt: skip
    if model.revision_served is not None:
        entry["revision_served"] = model.revision_served
    ledger.write_text(json.dumps({"schema_version": "sweep-ledger/2", "entries": [entry]}), "utf-8")
    write_seal(seal_file, 1729, study_seal_of(members), "now")
    return sorted(t.id for t in drawn)


def assert_the_draw_is_exploratory(out: Path, drawn: list[str]) -> None:
    """The resumed sweep at `out` drew `drawn`, found them in the ledger, and says so."""
    trace = read(out / "trace.json")
    (check,) = trace["draw"]["checks"]
    assert check["previously_observed"] == drawn
    assert "observed in an earlier session" in check["exploratory_reason"]
    assert reproduce(trace) == []


def test_a_cell_failing_before_its_freeze_holds_its_seed_until_it_is_run_again(
    tmp_path: Path,
) -> None:
    """One cell of seed 1 fails before its freeze (injected): the other stops at its freeze
    and waits; the matrix says which cell holds the seed's seal. Running the command again
    runs the failed cell, makes the seal and lets the waiting one go on."""
    plan = write_plan(tmp_path, PLAN.replace("seeds = [1, 2]", "seeds = [1]"))
    out, marker = tmp_path / "out", tmp_path / "failed.txt"
    hooks = {"fail_once": {"marker": str(marker), "cell": "independent"}}
    first = matrix(str(plan), "--out", str(out), "--jobs", "2", hooks=hooks)
    assert first.returncode == 1, first.stderr
    assert marker.exists()  # the fault happened
    states = {c["cell"]["name"]: c["status"] for c in read(out / "matrix.json")["cells"]}
    failed = next(n for n in states if n.startswith("independent"))
    waiting = next(n for n in states if n.startswith("size-dependent"))
    assert (states[failed], states[waiting]) == ("failed", "paused")
    assert not (out / "seals" / "seed-1.json").exists()
    assert f"task seed 1 is not sealed yet: {failed} did not freeze" in first.stderr
    assert "continue with:" in first.stderr
    again = matrix(str(plan), "--out", str(out), "--jobs", "2", hooks=hooks)
    assert again.returncode == 0, again.stderr
    assert {c["status"] for c in read(out / "matrix.json")["cells"]} == {"done"}
    traces = traces_of(out)
    assert len({t["draw"]["draw_seed"] for t in traces.values()}) == 1
    assert "not sealed yet" not in again.stderr
