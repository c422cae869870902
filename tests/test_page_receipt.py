"""The runs list's "Download receipt" where the receipt made at the freeze was not kept
(issue 41): made again from the trace, and said so when made after the held-out phase."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyapp.browser import receipt_of
from pyapp.records import read_trace
from pyapp.report import RunInputError
from pyapp.verify import make_receipt, read_receipt

RUN = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "runs" / "size-dependent"


def test_a_receipt_made_after_the_heldout_phase_says_so_in_its_name() -> None:
    document = json.loads((RUN / "trace.json").read_text("utf-8"))
    remade = receipt_of(document)
    run_id = document["run"]["run_id"]
    assert remade.after_heldout
    assert remade.name == f"receipt-remade-after-heldout-synthetic-{run_id}.json"
    receipt = read_receipt(json.loads(remade.receipt_json))
    assert receipt == make_receipt(read_trace(document))


def test_before_any_heldout_trial_it_is_named_as_a_receipt() -> None:
    document = json.loads((RUN / "trace.json").read_text("utf-8"))
    heldout = {t["id"] for t in document["tasks"] if t["split"] == "heldout"}
    document["trials"] = [t for t in document["trials"] if t["task_id"] not in heldout]
    remade = receipt_of(document)
    assert not remade.after_heldout
    assert remade.name == f"receipt-synthetic-{document['run']['run_id']}.json"


def test_a_run_without_a_freeze_has_no_receipt() -> None:
    document = json.loads((RUN / "trace.json").read_text("utf-8"))
    document["freezes"] = []
    with pytest.raises(RunInputError, match="no freeze yet"):
        receipt_of(document)
