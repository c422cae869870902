"""What each results row carries beside its condition (issue 41): the run's label, but the
reference subject's long label shortened (the caption above the rows carries it whole)."""

from __future__ import annotations

from pyapp.records import EVIDENCE_LABELS, EVIDENCE_ROW_TAGS, SUBJECT_LABEL


def test_rows_carry_a_short_tag_for_the_subject_and_the_label_otherwise() -> None:
    tag = EVIDENCE_ROW_TAGS["reference-subject"]
    assert len(tag) < len(SUBJECT_LABEL) and tag.startswith("reference subject")
    for kind in ("control", "fixture", "synthetic"):  # short already: "not model evidence"
        assert EVIDENCE_ROW_TAGS[kind] == EVIDENCE_LABELS[kind]
    assert EVIDENCE_ROW_TAGS["model"] == ""
    assert set(EVIDENCE_ROW_TAGS) == set(EVIDENCE_LABELS)
