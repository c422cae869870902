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

from pyapp.report.page import render_report
from pyapp.report.run_folder import RunInputError, Verification, read_run_folder, verify


def build_report(folder: Path) -> tuple[str, Verification]:
    """The report of a run folder and what re-deriving it found (`RunInputError` if unreadable)."""
    run = read_run_folder(folder)
    verification = verify(run)
    return render_report(run, verification), verification


__all__ = ["RunInputError", "Verification", "build_report"]
