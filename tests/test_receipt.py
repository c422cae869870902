"""Freeze receipts (issue 23 §3): made at the freeze, before any held-out trial; checked by
`python -m pyapp reproduce TRACE --receipt RECEIPT`. A forger who recomputes the whole hash
chain (and the profile hashes) passes `reproduce` alone, but not the receipt. Traces come
from a scripted adapter (a TEST FIXTURE, never model evidence)."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from asyncrun import run
from test_integrity import answer
from tracecheck import rechained

from pyapp.cli.main import main
from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.predict import freeze_profile, rederive_reference, refit_state_aware
from pyapp.records import ScriptedAdapter, read_trace, summarise, to_json
from pyapp.tasks import TaskParams, generate
from pyapp.verify import make_receipt, read_receipt, receipt_mismatches
from pyapp.verify.reproduce import reproduce

TASKS = {t.id: t for t in generate(TaskParams())}


@pytest.fixture(scope="module")
def run_with_receipt() -> tuple[dict[str, Any], dict[str, Any]]:
    model = ScriptedAdapter(answer)
    sweep = Sweep(params=TaskParams(), conditions=("model-only",), model=model.provenance)
    assert run(run_phase(sweep, "measure", model)) == "finished"
    freeze(sweep)
    receipt = to_json(make_receipt(sweep.trace()))  # before any held-out trial
    assert run(run_phase(sweep, "heldout", model)) == "finished"
    return to_json(sweep.trace()), receipt


def cli(tmp_path: Path, capsys, trace: object, receipt: object) -> tuple[int, str]:
    (tmp_path / "t.json").write_text(json.dumps(trace), "utf-8")
    (tmp_path / "r.json").write_text(json.dumps(receipt), "utf-8")
    status = main(["reproduce", str(tmp_path / "t.json"), "--receipt", str(tmp_path / "r.json")])
    out, err = capsys.readouterr()
    return status, out + err


def test_an_honest_trace_matches_its_receipt(run_with_receipt, tmp_path, capsys) -> None:
    trace, receipt = run_with_receipt
    assert re.fullmatch(r"[0-9a-f]{4}(-[0-9a-f]{4}){4}", receipt["fingerprint"])
    assert receipt["task_set"]["seed"] == 1729 and receipt["freezes"][0]["state_aware"]
    status, out = cli(tmp_path, capsys, trace, receipt)
    assert status == 0 and "every held-out trial came after it" in out


def test_a_forger_who_recomputes_the_chain_is_caught_by_the_receipt(
    run_with_receipt, tmp_path, capsys
) -> None:
    trace, receipt = run_with_receipt
    forged = copy.deepcopy(trace)
    trial = next(t for t in forged["trials"] if t["trial_id"] == "model-only/add-1")
    right = str(TASKS["add-1"].answer)
    trial["completion"]["text"] = right
    trial["completion"]["output_tokens"] = trial["output_tokens"] = len(right)
    trial.update(result=int(right), correct=True, outcome="correct")
    for _ in range(2):  # the chain head moves the profile hash, which moves the chain
        rechained(forged)
        typed = read_trace(forged)
        for record, freeze_record in zip(forged["freezes"], typed.freezes, strict=True):
            fit = refit_state_aware(typed, freeze_record)
            reference = rederive_reference(typed, freeze_record)
            record["state_aware"] = to_json(fit)
            record["reference_probability"] = reference
            record["profile_sha256"] = freeze_profile(
                typed, replace(freeze_record, state_aware=fit, reference_probability=reference)
            ).sha256
    rechained(forged)
    forged["summary"] = to_json(summarise(read_trace(forged).trials))
    assert reproduce(forged) == []  # the chain alone cannot tell
    status, out = cli(tmp_path, capsys, forged, receipt)
    assert status == 1 and "receipt $.chain_head" in out and "profile_sha256" in out


def test_an_edited_receipt_and_another_run_are_named(run_with_receipt) -> None:
    trace, receipt = run_with_receipt
    edited = copy.deepcopy(receipt)
    edited["at"] = "2020-01-01T00:00:00.000+00:00"
    found = [m.where for m in receipt_mismatches(read_trace(trace), read_receipt(edited))]
    assert found == ["receipt $.fingerprint"]
    other = copy.deepcopy(trace)
    other["run"]["run_id"] = "0" * 32
    found = [m.where for m in receipt_mismatches(read_trace(other), read_receipt(receipt))]
    assert "receipt $.run_id" in found


def test_a_bad_receipt_file_is_one_line_exit_1(run_with_receipt, tmp_path, capsys) -> None:
    trace, _ = run_with_receipt
    status, out = cli(tmp_path, capsys, trace, {"kind": "nothing"})
    assert status == 1 and "r.json" in out and "Traceback" not in out


def test_the_receipt_verdict_line_is_printed_in_every_case(
    run_with_receipt, tmp_path, capsys
) -> None:
    """Issue 37 (with issue 39's reproduce change): `reproduce --receipt` prints the
    receipt's own verdict line whether the trace re-derives or not (it printed none when
    the trace had a mismatch of its own)."""
    trace, receipt = run_with_receipt
    status, out = cli(tmp_path, capsys, trace, receipt)
    assert status == 0 and "receipt: ok: the freezes and every record before them" in out
    edited = copy.deepcopy(trace)
    edited["summary"]["correct"] += 1  # after the freeze: the receipt still holds
    status, out = cli(tmp_path, capsys, edited, receipt)
    verdicts = [line for line in out.splitlines() if line.startswith("receipt: ")]
    assert status == 1 and "MISMATCH $.summary" in out, out
    assert len(verdicts) == 1 and verdicts[0].startswith("receipt: ok:"), out
    assert "other mismatch(es) are above" in verdicts[0]
    other = copy.deepcopy(receipt)
    other["run_id"] = "another-run"
    status, out = cli(tmp_path, capsys, trace, other)
    verdicts = [line for line in out.splitlines() if line.startswith("receipt: ")]
    assert status == 1 and len(verdicts) == 1 and verdicts[0].startswith("receipt: FAILED:")


def test_a_document_of_another_kind_as_the_receipt_is_named(
    run_with_receipt, tmp_path, capsys
) -> None:
    """Issue 39: the trace itself given as --receipt: one line, the kind found and wanted."""
    trace, _ = run_with_receipt
    status, out = cli(tmp_path, capsys, trace, trace)
    assert status == 1 and "MISMATCH" not in out, out
    assert out.strip().count("\n") == 0 and "r.json" in out
    assert "a trace (composition-lab-trace), not a freeze receipt" in out
