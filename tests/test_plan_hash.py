"""A plan's hash (`pyapp.matrix.check.plan_sha256`) is what a study receipt freezes: it must
not move when the code learns a new plan option that the plan leaves at its default."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pyapp.matrix import check, plan_sha256, read_plan
from pyapp.records import to_json

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# the hashes the shipped plans had when their receipts were made (comparison-subjects.toml's
# is the one docs/comparison.md's study receipt holds)
RECORDED = {
    "comparison-subjects.toml": "67833d4afcb6b83bb4d80f514248a56182df0128945fdc60142bdaca64c3eb77",
    "study-subject.toml": "e5271bf69564b4a434de668954da77b284daa7145975cfdc0ab264064949dbaa",
    "study-subject-extended.toml": (
        "89d7916e5c5ea45e09cb2d15f15d74303a84bec847fffa1a0a28472589b2035a"
    ),
}


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_shipped_plans_keep_the_hashes_their_receipts_hold(name: str) -> None:
    assert plan_sha256(read_plan(EXAMPLES / name)) == RECORDED[name]


def test_an_option_added_later_is_hashed_only_away_from_its_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`retries` stands in for an option the code learns after a receipt was made: the hash
    the code before it gave is the canonical JSON of the plan without that field."""
    plan = tmp_path / "plan.toml"
    plan.write_text('[axes]\nmodels = ["independent"]\nseeds = [1]\n', encoding="utf-8")
    document = to_json(read_plan(plan))
    assert isinstance(document, dict) and document["options"].pop("retries") == 2
    defaults = to_json(type(read_plan(plan).options)())
    assert isinstance(defaults, dict)
    for name in set(document["options"]) - check.HASHED_OPTIONS:  # later ones, at their old
        if document["options"][name] == check.LEGACY_VALUES.get(name, defaults[name]):  # value
            del document["options"][name]
    document.pop("hypotheses", None)  # outside every plan hash (the study receipt holds them)
    document.pop("prior_exposure", None)
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    before = hashlib.sha256(text.encode("utf-8")).hexdigest()
    monkeypatch.setattr(check, "HASHED_OPTIONS", check.HASHED_OPTIONS - {"retries"})
    assert plan_sha256(read_plan(plan)) == before  # the new option, at its default: no change
    plan.write_text(plan.read_text() + "[options]\nretries = 3\n", encoding="utf-8")
    assert plan_sha256(read_plan(plan)) != before  # set: the plan is another plan


def test_a_plan_silent_on_sealed_is_now_sealed_and_hashes_as_another_plan(tmp_path: Path) -> None:
    """`sealed`'s default changed when it was added (plans before it were unsealed): a plan
    that says `sealed = false` keeps the hash it had; one silent on it now runs sealed, so it
    is another plan, and its old receipt is refused with a line that says what to write."""
    from pyapp.matrix import StudyReceipt, check_receipt

    silent = tmp_path / "silent.toml"
    silent.write_text('[axes]\nmodels = ["independent"]\nseeds = [1]\n', encoding="utf-8")
    unsealed = tmp_path / "unsealed.toml"
    unsealed.write_text(silent.read_text() + "[options]\nsealed = false\n", encoding="utf-8")
    study = tmp_path / "study.toml"
    study.write_text(silent.read_text() + '[options]\nsealed = "study"\n', encoding="utf-8")
    assert read_plan(silent).options.sealed is True
    document = to_json(read_plan(unsealed))
    assert isinstance(document, dict)
    for name in set(document["options"]) - check.HASHED_OPTIONS:
        del document["options"][name]  # the plan as hashed before `sealed` existed
    document.pop("hypotheses", None)
    document.pop("prior_exposure", None)
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    before = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert plan_sha256(read_plan(unsealed)) == before
    hashes = {plan_sha256(read_plan(p)) for p in (silent, unsealed, study)}
    assert len(hashes) == 3
    receipt = StudyReceipt.__new__(StudyReceipt)
    object.__setattr__(receipt, "plan_sha256", before)
    [line] = check_receipt(receipt, read_plan(silent))
    assert "write `sealed = false`" in line
