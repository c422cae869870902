"""`python -m pyapp report RUN_DIR --out report.html`: a finished run as one HTML file.

    run_folder.py   read trace.json a trial at a time (+ predictions.json, run.json) and
                    re-derive them
    sections.py     the sections: evidence banner, provenance, profiles, predictions, scores,
                    trials with raw records, interruptions, journal, tasks
    sample.py       long lists: all rows up to a stated number, past it summaries and a sample
    skill_table.py  skill, decomposition and the predictors' paired difference as a table
    plots.py        the page's two plots as inline SVG (calibration: both predictors)
    figures.py      the validation report's figures: a synthetic structure's calibration
                    curves, drawn by plots.py
    skill_plot.py   the answer in one picture: each predictor's skill against its frozen
                    reference and against climatology, per condition
    markup.py       HTML building in which text from a trace is always escaped
    page.py         the document: inline styles, a CSP that forbids every load and script

The file needs nothing but a browser: it opens from disk, makes no request and runs no
script. Its numbers are derived from the trace by the same code as `score` and
`reproduce`; the evidence label is its first section.
"""

from __future__ import annotations

from pathlib import Path

from pyapp.report.figures import calibration_svg
from pyapp.report.markup import Markup, el, escape, join
from pyapp.report.page import CSP, STYLE, render_report
from pyapp.report.plots import (
    COLOURS,
    calibration_series_svg,
    nice_ticks,
    span,
    steps_svg,
    tick_format,
)
from pyapp.report.run_folder import (
    RunFolder,
    RunInputError,
    Verification,
    named,
    read_run_folder,
    read_trace,
    verify,
    verify_documents,
)
from pyapp.report.sections import NOT_EVIDENCE_LABELS, facts, fmt, run_evidence, table
from pyapp.report.skill_plot import SkillPoint, skill_svg


def build_report(folder: Path) -> tuple[str, Verification]:
    """The report of a run folder and what re-deriving it found (`RunInputError` if unreadable)."""
    run = read_run_folder(folder)
    verification = verify(run)
    return render_report(run, verification), verification


__all__ = [
    "COLOURS",
    "CSP",
    "NOT_EVIDENCE_LABELS",
    "STYLE",
    "Markup",
    "RunFolder",
    "RunInputError",
    "SkillPoint",
    "Verification",
    "build_report",
    "calibration_series_svg",
    "calibration_svg",
    "el",
    "escape",
    "facts",
    "fmt",
    "join",
    "named",
    "nice_ticks",
    "read_run_folder",
    "read_trace",
    "render_report",
    "run_evidence",
    "skill_svg",
    "span",
    "steps_svg",
    "table",
    "tick_format",
    "verify",
    "verify_documents",
]
