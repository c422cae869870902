"""`python -m pyapp study DIR`: a matrix folder's answer — the only writer of `study.json` and
`study.html` (docs/study.md).

    cells.py    the matrix's cells, each re-derived from its trace (the report's reader), its
                preset matched from its parameters, its identity (what it may be pooled with)
    build.py    groups of poolable cells, their slices (condition × rung × family, pooled
                over a ladder's rungs) and answers, from `pyapp.predict.slices` / `flags`
    record.py   study.json's records (generated schema: exports/study.schema.json)
    render.py   study.html (self-contained, the report's plots) and the Markdown
    verdicts.py each hypothesis's verdict (the study receipt's; others post hoc) and the
                model-identity residual tests (docs/comparison.md)
    command.py  the command: read, build, write atomically, print the answer

A matrix's `summary.json` stays per cell and states no answer; the study states it, and only
as far as its numbers go.
"""

from pyapp.study.command import BEGIN, END, STUDY_HTML, STUDY_JSON, markdown_into, run_study
from pyapp.study.record import StudyDocument, study_schema
from pyapp.study.verdicts import judge_hypotheses

__all__ = [
    "BEGIN",
    "END",
    "STUDY_HTML",
    "STUDY_JSON",
    "StudyDocument",
    "judge_hypotheses",
    "markdown_into",
    "run_study",
    "study_schema",
]
