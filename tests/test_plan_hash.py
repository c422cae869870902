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
    for name in set(document["options"]) - check.HASHED_OPTIONS:  # later ones, at default
        del document["options"][name]
    document.pop("hypotheses", None)  # outside every plan hash (the study receipt holds them)
    document.pop("prior_exposure", None)
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    before = hashlib.sha256(text.encode("utf-8")).hexdigest()
    monkeypatch.setattr(check, "HASHED_OPTIONS", check.HASHED_OPTIONS - {"retries"})
    assert plan_sha256(read_plan(plan)) == before  # the new option, at its default: no change
    plan.write_text(plan.read_text() + "[options]\nretries = 3\n", encoding="utf-8")
    assert plan_sha256(read_plan(plan)) != before  # set: the plan is another plan
