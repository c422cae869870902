"""Issue 37 §4 and §5 (evidence): audit by re-execution, and the evidence label re-derived.

Reproducers (each failed on the code before):

* a synthetic run's held-out answer flipped to correct, the chain recomputed and the summary
  fixed: every record re-derived, `reproduce` said ok. A synthetic trace is now always
  re-executed from the specification it records (`pyapp.synthetic.rerun`) and each
  completion compared field by field;
* a synthetic run relabelled as a model run (source `hub`, evidence `model`, the trials'
  labels and identity hash recomputed, the chain recomputed): it reproduced and `score`
  printed "evidence: model". The label is now re-derived from the specification or the
  synthetic virtual clock, and a mismatch is refused by `reproduce` and `score`.

`reproduce --rerun` re-executes a local ONNX model through the native backend; where it is
absent the command says so and re-derives the files alone. The re-execution itself
(`pyapp.verify.rerun`) is tested with a scripted model standing for a local one."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from asyncrun import in_thread, run
from test_integrity import answer
from tracecheck import rechained

from pyapp.audit import audit, rerunner
from pyapp.cli.main import main
from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.predict import freeze_profile
from pyapp.records import (
    VIRTUAL_CLOCK,
    Caps,
    Completion,
    ScriptedAdapter,
    identity_sha256,
    read_trace,
    revision_note,
    summarise,
    to_json,
)
from pyapp.synthetic import parse_spec, run_seed, synthetic_rerun
from pyapp.tasks import TaskParams

SMALL = TaskParams(primitives_per_op=1, probe_pairs=1, recurrence_steps=(2,), determinants=1)


@pytest.fixture(scope="module")
def synthetic() -> dict[str, Any]:
    spec = parse_spec("independent:p_add=0.3,p_sub=0.3,p_mul=0.3")
    seed_run = in_thread(run_seed, spec, SMALL, ("model-only", "controlled-chain"))
    document: dict[str, Any] = to_json(seed_run.trace)
    return document


def cli(tmp_path: Path, capsys, document: object, *args: str) -> tuple[int, str]:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document), "utf-8")
    status = in_thread(main, [args[0] if args else "reproduce", str(path), *args[1:]])
    out, err = capsys.readouterr()
    return status, out + err


def flipped(document: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A wrong held-out answer made right, as a forger recomputing every hash would."""
    forged = copy.deepcopy(document)
    trial = next(
        t for t in forged["trials"]
        if t["condition"] == "model-only" and not t["correct"] and t["failure"] is None
        and t["task_id"].startswith(("recurrence", "determinant"))
    )  # fmt: skip
    right = str(trial["expected"])
    trial["completion"]["text"] = right
    trial.update(result=trial["expected"], correct=True, outcome="correct")
    rechained(forged)
    forged["summary"] = to_json(summarise(read_trace(forged).trials))
    return forged, trial["trial_id"]


def test_an_honest_synthetic_trace_is_re_executed_exactly(synthetic, tmp_path, capsys) -> None:
    result = synthetic_rerun(read_trace(synthetic))
    assert result is not None and not isinstance(result, str)
    assert result.exact and result.mismatches == () and result.trials == len(synthetic["trials"])
    calls = sum(len(t["chain"]["calls"]) for t in synthetic["trials"] if t["chain"])
    assert result.completions == calls + sum(1 for t in synthetic["trials"] if t["completion"])
    status, out = cli(tmp_path, capsys, synthetic)
    assert status == 0, out
    assert f"all {result.completions} completions of {result.trials} trials" in out
    assert "every field identical" in out


def test_a_flipped_held_out_answer_is_found_by_re_execution(synthetic, tmp_path, capsys) -> None:
    forged, trial_id = flipped(synthetic)
    status, out = cli(tmp_path, capsys, forged)
    assert status == 1, out
    mismatches = [line for line in out.splitlines() if line.startswith("MISMATCH ")]
    assert mismatches and all(".completion.text: recorded" in m for m in mismatches), out
    assert trial_id in mismatches[0]


def relabelled(document: dict[str, Any], drop_spec: bool = False) -> dict[str, Any]:
    """A synthetic run relabelled as a model run, every hash recomputed."""
    forged = copy.deepcopy(document)
    forged["model"].update(source="hub", evidence="model")
    if drop_spec:
        forged["model"]["synthetic"] = None
    model = read_trace(forged).model
    assert model is not None
    identity = identity_sha256(model)
    forged["revision_note"] = revision_note(model)
    for trial in forged["trials"]:
        if trial["evidence"] != "control":
            trial["evidence"] = "model"
            trial["evidence_note"] = (
                "Model evidence: output of the loaded model under this condition."
            )
            trial["model_identity"] = identity
    return refrozen(forged)


def refrozen(forged: dict[str, Any]) -> dict[str, Any]:
    """Every hash recomputed, the freezes' profile hashes too (they hold the model), as a
    forger with the project's code would (tests/test_receipt.py's forger)."""
    for _ in range(2):  # the chain head moves the profile hash, which moves the chain
        rechained(forged)
        typed = read_trace(forged)
        for record, freeze_record in zip(forged["freezes"], typed.freezes, strict=True):
            record["profile_sha256"] = freeze_profile(typed, freeze_record).sha256
    rechained(forged)
    forged["summary"] = to_json(summarise(read_trace(forged).trials))
    return forged


@pytest.mark.parametrize("drop_spec", [False, True], ids=["spec kept", "spec removed"])
def test_a_synthetic_run_relabelled_model_is_refused(
    synthetic, drop_spec, tmp_path, capsys
) -> None:
    forged = relabelled(synthetic, drop_spec)
    status, out = cli(tmp_path, capsys, forged)
    reason = "virtual clock" if drop_spec else "synthetic model's specification"
    assert status == 1 and "MISMATCH $.model.evidence" in out and reason in out, out
    status, out = cli(tmp_path, capsys, forged, "score")
    assert status == 1 and "evidence: model" not in out and reason in out, out


def test_only_the_virtual_clock_names_a_run_synthetic_without_its_spec(synthetic) -> None:
    forged = relabelled(synthetic, drop_spec=True)
    assert forged["environment"]["clock"]["name"] == VIRTUAL_CLOCK.name
    forged["environment"]["clock"]["name"] = "time.perf_counter_ns"
    refrozen(forged)
    # nothing recorded names it synthetic any longer: only re-execution with the model could
    assert not [m for m in audit(forged).mismatches if m.where == "$.model.evidence"]


@pytest.fixture(scope="module")
def fixture_run() -> dict[str, Any]:
    model = ScriptedAdapter(answer)
    sweep = Sweep(params=SMALL, conditions=("model-only",), model=model.provenance)
    assert run(run_phase(sweep, "measure", model)) == "finished"
    freeze(sweep)
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    return to_json(sweep.trace())


def test_rerun_of_a_model_it_cannot_load_says_so(fixture_run, tmp_path, capsys) -> None:
    """A scripted fixture has no files: `--rerun` says it cannot load it, in one note line,
    and the trace is re-derived from its files alone (exit 0)."""
    status, out = cli(tmp_path, capsys, fixture_run, "reproduce", "--rerun", "--sample", "2")
    assert status == 0 and "note: --rerun: fixture/scripted (scripted) is not a bundled" in out
    assert "re-derived exactly" in out
    with pytest.raises(SystemExit) as refused:  # argparse: one line, exit 2
        cli(tmp_path, capsys, fixture_run, "reproduce", "--rerun", "--sample", "0")
    assert refused.value.code == 2 and "at least 1" in capsys.readouterr().err


def test_a_local_model_re_executed_finds_a_rewritten_answer(fixture_run) -> None:
    """The re-execution of a local model, with a scripted model standing for the native
    backend's generation: greedy fields compared, a rewritten reply named."""
    model = ScriptedAdapter(answer)

    def load(_: object) -> tuple[str, Any, None]:
        def generate(prompt: str, caps: Caps) -> Completion:
            return run(model.generate(prompt, caps))

        return "scripted (standing for the native backend)", generate, None

    honest = audit(fixture_run, rerunner=rerunner(load=load))
    assert honest.rerun is not None and honest.rerun.mismatches == () and honest.ok
    assert not honest.rerun.exact and "text, finish reason and token counts" in honest.rerun.line()
    forged = copy.deepcopy(fixture_run)
    forged["trials"][-1]["completion"]["text"] = "12"
    rechained(forged)
    found = audit(forged, rerunner=rerunner(sample=3, load=load))
    assert found.rerun is not None and found.rerun.trials == 3 and found.rerun.sampled
    every = audit(forged, rerunner=rerunner(load=load))
    assert every.rerun is not None
    assert [m.where for m in every.rerun.mismatches] == [
        f"$.trials[{len(forged['trials']) - 1}].completion.text"
    ]


def test_a_synthetic_runs_generation_record_says_it_has_no_template(synthetic) -> None:
    """Issue 37 stubs: a synthetic model has no chat template and no tokenizer; its run's
    generation record says so, and that its token counts are estimates (bytes / 4)."""
    generation = synthetic["run"]["generation"]
    assert generation["chat_template"].startswith("none: a synthetic model has no chat template")
    assert "ESTIMATES (UTF-8 bytes / 4" in generation["stop_tokens"]


FIXTURE = Path(__file__).resolve().parent / "fixtures" / "tiny-chat"


@pytest.fixture(scope="module")
def native_run() -> dict[str, Any]:
    """The bundled test fixture (a TEST FIXTURE, never model evidence) run natively."""
    pytest.importorskip("onnxruntime")
    from pyapp.native import NativeIdentity, load_native, read_model

    model = load_native(
        read_model((FIXTURE,), "fp32"),
        NativeIdentity("fixture/tiny-chat", "bundled", "bundled-fixture", {}),
    )
    sweep = Sweep(params=SMALL, conditions=("model-only",), model=model.provenance)
    assert run(run_phase(sweep, "measure", model)) == "finished"
    freeze(sweep)
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    return to_json(sweep.trace())


def test_reproduce_rerun_re_executes_the_bundled_fixture(native_run, tmp_path, capsys) -> None:
    status, out = cli(tmp_path, capsys, native_run, "reproduce", "--rerun")
    trials = len(native_run["trials"])
    assert status == 0, out
    assert f"re-executed with fixture/tiny-chat natively (onnxruntime): all {trials} " in out
    forged = copy.deepcopy(native_run)
    trial = forged["trials"][-1]
    trial["completion"]["text"] = "7"
    ids = trial["completion"]["output_token_ids"]
    trial["completion"]["output_token_ids"] = [ids[0] + 1, *ids[1:]] if ids else ids
    rechained(forged)
    status, out = cli(tmp_path, capsys, forged, "reproduce", "--rerun")
    found = [line for line in out.splitlines() if ".completion.text: recorded '7'" in line]
    assert status == 1 and found, out
    assert ids  # the native logits' margin where the two generations part
    assert "they part at token 0, where the top two logits differ by" in found[0], found
