"""`python -m pyapp study DIR [--markdown FILE] [--resamples N] [--bootstrap-seed S]`.

Reads the matrix output folder DIR (`matrix.json` and every done cell's trace, each
re-derived), builds the study (`pyapp.study.build`) and writes `DIR/study.json` and
`DIR/study.html` atomically — and FILE with `--markdown` (into its results block when it
has one: docs/study.md) — then prints the answer. The same
folder gives the same bytes every time (sorted iteration, a seeded bootstrap, nothing of
when or where), so a study interrupted by Ctrl-C (nothing is written before the end) or
rerun after the matrix was resumed gives the study of one run straight through.
"""

from __future__ import annotations

import os
from pathlib import Path

from pyapp.host import write_atomically
from pyapp.matrix import (
    RECEIPT_NAME,
    Hypothesis,
    StudyReceipt,
    check_entry,
    hold_folder,
    read_plan,
    read_receipt,
)
from pyapp.records import check_kind, document_text, read_document, read_text
from pyapp.study.build import build_study
from pyapp.study.cells import read_matrix
from pyapp.study.record import StudyDocument
from pyapp.study.render import study_html, study_markdown

STUDY_JSON = "study.json"
STUDY_HTML = "study.html"


def hypotheses_now(folder: Path, plan: Path | None) -> tuple[Hypothesis, ...]:
    """The plan's hypotheses now: `plan`'s, or those of the plan matrix.json names (none
    when that file is gone)."""
    path = plan if plan is not None else Path(read_matrix(folder).plan)
    if plan is None and not path.is_file():
        return ()
    return read_plan(path).hypotheses


def folder_receipt(folder: Path) -> StudyReceipt | None:
    """The folder's study receipt, its fingerprint checked; None when it has none."""
    path = folder / RECEIPT_NAME
    check_entry(path, "file")
    return read_receipt(path) if os.path.lexists(path) else None


def run_study(
    folder: Path,
    resamples: int,
    seed: int,
    markdown: Path | None = None,
    plan: Path | None = None,
) -> StudyDocument:
    """Build the study of `folder` and write its files (`InputError` on bad data). The
    study holds the folder's lock (`pyapp.matrix.folder`: one writer at a time, a `matrix`
    or another `study` on the same folder is refused in one line), and a `study.json` or
    `study.html` already there must be a plain file, and the JSON a study's, before it is
    replaced."""
    with hold_folder(folder, "study", wait=None):
        for name in (STUDY_JSON, STUDY_HTML):
            check_entry(folder / name, "file")
        if os.path.lexists(folder / STUDY_JSON):
            check_kind(read_document(folder / STUDY_JSON), "study", folder / STUDY_JSON)
        receipt = folder_receipt(folder)
        doc = build_study(folder, resamples, seed, receipt, hypotheses_now(folder, plan))
        texts = {
            folder / STUDY_JSON: document_text(doc, "study"),
            folder / STUDY_HTML: study_html(doc),
        }
        if markdown is not None:
            texts[markdown] = markdown_into(markdown, doc)
        for path, text in texts.items():
            write_atomically(path, text)
    return doc


MAX_MARKDOWN_BYTES = 4_000_000
"""The largest Markdown file whose results block the study rewrites."""
BEGIN, END = "<!-- study-results:begin", "<!-- study-results:end -->"
"""The markers of a generated results block in a hand-written Markdown file (docs/study.md)."""


def markdown_into(path: Path, doc: StudyDocument) -> str:
    """The Markdown to write to `path`: the study alone, or — when `path` is a document with
    a results block (`BEGIN` … `END`) — that document with only the block replaced (headings
    one level down), so the method written by hand beside it stays."""
    current = read_text(path, MAX_MARKDOWN_BYTES) if path.exists() else ""
    if BEGIN not in current or END not in current:
        return study_markdown(doc)
    start = current.index("\n", current.index(BEGIN)) + 1
    end = current.index(END)
    return current[:start] + "\n" + study_markdown(doc, heading="###") + "\n" + current[end:]
