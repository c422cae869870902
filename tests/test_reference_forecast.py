"""The reference forecast of every Brier skill score is frozen with the profile (issue 25
§8): the profile's pooled success rate is a field of each freeze record
(`reference_probability`), covered by the profile hash and the receipt; `score` uses the
frozen value, `reproduce` re-derives it and names a difference. Traces written before it
was frozen (trace/3 without the field) still reproduce, and derive it from the profile.
Traces come from a scripted adapter (a TEST FIXTURE, never model evidence)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from asyncrun import run
from promptread import chain_value
from tracecheck import assert_valid_trace, rechained

from pyapp.cli.main import main
from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.predict import freeze_profile, score_trace, skill
from pyapp.records import ScriptedAdapter, ScriptedReply, read_trace, to_json
from pyapp.tasks import TaskParams
from pyapp.verify import (
    limitations,
    make_receipt,
    read_receipt,
    receipt_mismatches,
    reproduce_predictions,
)
from pyapp.verify.reproduce import reproduce

PARAMS = TaskParams(primitives_per_op=3, probe_pairs=1, recurrence_steps=(2,), determinants=1)


def answer(prompt: str, caps: object) -> ScriptedReply:
    """Right on the chain calls whose value is even, one off on the others (a fixture)."""
    value = chain_value(prompt)[0]
    return ScriptedReply(str(value + value % 2), input_tokens=40, output_tokens=3)


@pytest.fixture(scope="module")
def run_with_receipt() -> tuple[dict[str, Any], dict[str, Any]]:
    model = ScriptedAdapter(answer)
    sweep = Sweep(params=PARAMS, conditions=("controlled-chain",), model=model.provenance)

    async def protocol() -> dict[str, Any]:
        await run_phase(sweep, "measure", model)
        freeze(sweep)
        receipt = to_json(make_receipt(sweep.trace()))  # before any held-out trial
        await run_phase(sweep, "heldout", model)
        return receipt  # type: ignore[return-value]

    receipt = run(protocol())
    return to_json(sweep.trace()), receipt  # type: ignore[return-value]


def rehashed(document: dict[str, Any]) -> dict[str, Any]:
    """The document with its profile hashes and chain recomputed, as a forger (or the code
    before the field existed) would have written them."""
    for _ in range(2):  # the chain head moves the profile hash, which moves the chain
        rechained(document)
        typed = read_trace(document)
        for record, frozen in zip(document["freezes"], typed.freezes, strict=True):
            record["profile_sha256"] = freeze_profile(typed, frozen).sha256
    rechained(document)
    return document


def test_the_freeze_records_the_pooled_rate_and_everything_shows_that_value(
    run_with_receipt,
) -> None:
    trace_json, receipt = run_with_receipt
    assert_valid_trace(trace_json)
    trace = read_trace(trace_json)
    record = trace.freezes[0]
    result = score_trace(trace).conditions[0]
    ops = result.frozen.profile.ops
    pooled = sum(o.successes for o in ops) / sum(o.trials for o in ops)
    assert 0 < pooled < 1
    assert trace_json["freezes"][0]["reference_probability"] == pooled
    assert record.reference_probability == pooled
    assert result.frozen.reference_probability == pooled
    assert result.skill is not None and result.skill.reference_probability == pooled
    assert receipt["freezes"][0]["reference_probability"] == pooled
    assert reproduce(trace_json) == []
    document = json.loads(json.dumps(to_json(score_trace(trace))))
    assert document["conditions"][0]["frozen"]["reference_probability"] == pooled
    assert reproduce_predictions(trace_json, document) == []
    document["conditions"][0]["frozen"]["reference_probability"] = 0.5
    found = [m.where for m in reproduce_predictions(trace_json, document)]
    assert found == ["$.conditions[0].frozen.reference_probability"]


def test_score_uses_the_frozen_value_and_reproduce_names_a_rederivation_that_differs(
    run_with_receipt, monkeypatch
) -> None:
    trace_json, _ = run_with_receipt
    frozen = trace_json["freezes"][0]["reference_probability"]
    real = skill.pooled_rate

    def changed(successes: Any, trials: Any) -> float | None:  # the code changed
        value = real(successes, trials)
        return None if value is None else value / 2

    monkeypatch.setattr(skill, "pooled_rate", changed)
    result = score_trace(read_trace(trace_json)).conditions[0]
    assert result.skill is not None and result.skill.reference_probability == frozen
    assert [m.where for m in reproduce(trace_json)] == ["$.freezes[0].reference_probability"]


def test_an_edited_reference_forecast_is_named_even_with_every_hash_recomputed(
    run_with_receipt,
) -> None:
    trace_json, receipt = run_with_receipt
    edited = copy.deepcopy(trace_json)
    edited["freezes"][0]["reference_probability"] = 0.5
    wheres = {m.where for m in reproduce(edited)}
    assert {"$.freezes[0].reference_probability", "$.freezes"} <= wheres  # and the hash
    forged = rehashed(edited)
    assert [m.where for m in reproduce(forged)] == ["$.freezes[0].reference_probability"]
    assert score_trace(read_trace(forged)).conditions[0].frozen.reference_probability == 0.5
    found = [m.where for m in receipt_mismatches(read_trace(forged), read_receipt(receipt))]
    assert "receipt $.freezes[0].reference_probability" in found
    other = copy.deepcopy(receipt)  # an edited receipt: its fingerprint, and the field
    other["freezes"][0]["reference_probability"] = 0.5
    found = [m.where for m in receipt_mismatches(read_trace(trace_json), read_receipt(other))]
    assert "receipt $.freezes[0].reference_probability" in found
    assert "receipt $.fingerprint" in found


def test_a_trace_written_before_the_field_still_reproduces_and_derives_it(
    run_with_receipt,
) -> None:
    trace_json, receipt = run_with_receipt
    older = copy.deepcopy(trace_json)
    for record in older["freezes"]:
        del record["reference_probability"]
    older = rehashed(older)
    assert older["freezes"][0]["profile_sha256"] != trace_json["freezes"][0]["profile_sha256"]
    assert reproduce(older) == []
    assert any("reference forecast not frozen" in line for line in limitations(older))
    result = score_trace(read_trace(older)).conditions[0]
    assert result.frozen.reference_probability is None
    assert result.skill is not None
    assert result.skill.reference_probability == trace_json["freezes"][0]["reference_probability"]
    document = json.loads(json.dumps(to_json(score_trace(read_trace(older)))))
    for condition in document["conditions"]:  # as the code before the field wrote it
        del condition["frozen"]["reference_probability"]
    assert reproduce_predictions(older, document) == []
    old_receipt = to_json(make_receipt(read_trace(older)))
    assert old_receipt["freezes"][0]["reference_probability"] is None
    del old_receipt["freezes"][0]["reference_probability"]  # as receipts before it were
    assert receipt_mismatches(read_trace(older), read_receipt(old_receipt)) == []
    assert receipt["freezes"][0]["reference_probability"] is not None


def test_the_command_line_prints_the_frozen_reference(run_with_receipt, tmp_path: Path, capsys):
    trace_json, receipt = run_with_receipt
    (tmp_path / "t.json").write_text(json.dumps(trace_json), "utf-8")
    (tmp_path / "r.json").write_text(json.dumps(receipt), "utf-8")
    pooled = trace_json["freezes"][0]["reference_probability"]
    assert main(["reproduce", str(tmp_path / "t.json"), "--receipt", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert f"controlled-chain: profile {receipt['freezes'][0]['profile_sha256'][:12]}" in out
    assert f"reference forecast {pooled:.3f} (pooled profile rate)" in out
    assert main(["score", str(tmp_path / "t.json")]) == 0
    out = capsys.readouterr().out
    assert f"= {pooled:.3f} (frozen with the profile)" in out
