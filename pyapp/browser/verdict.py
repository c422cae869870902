"""The verdict step 4 leads with (issue 41): the run's answer in words and one picture.

`run_verdict` arranges a run's slices (`pyapp.predict.flags.run_figures`: one per scored
condition) for the page: the first line — `pyapp.predict.flags.headline` when any score is
degenerate (a run whose held-out outcomes are all 0 says so there), else each condition's
verdicts in a sentence —, every degenerate flag (`degenerate_flags`), per condition each
predictor's verdict against climatology and why it cannot say (`answer`: beats climatology /
fails against climatology / cannot say), the answer in full sentences (`answer_lines`) and the
skill picture (`pyapp.report.skill_plot`). Every word is the study's flag function's and
answer templates'; nothing here decides a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pyapp.predict import (
    ANSWER_LABEL,
    NamedInterval,
    PredictorFigures,
    SliceFigures,
    answer,
    answer_lines,
    degenerate_flags,
    headline,
)
from pyapp.protocol import RunVerdict, VerdictRow
from pyapp.report import SkillPoint, skill_svg

SUBTITLE = (
    "Climatology: the held-out base rate (bars: 95% percentile bootstrap); frozen reference: "
    "the profile's pooled rate."
)


def _ends(interval: NamedInterval) -> tuple[float | None, float | None]:
    if interval.high is None:
        return None, None
    return (-math.inf if interval.unbounded_below else interval.low), interval.high


def _points(fig: SliceFigures) -> list[SkillPoint]:
    """Each predictor of one slice against climatology (with its interval and verdict) and
    against the frozen reference."""
    points = []
    for p in (fig.product, fig.state_aware):
        if p is None:
            continue
        said = answer(fig, p.predictor)
        low, high = _ends(p.skill_bootstrap)
        points.append(
            SkillPoint(
                fig.condition,
                p.predictor,
                "climatology",
                p.skill,
                low,
                high,
                note=p.skill_undefined,
                verdict=said.verdict if said else None,
            )
        )
        points.append(_frozen(fig, p))
    return points


def _frozen(fig: SliceFigures, p: PredictorFigures) -> SkillPoint:
    undefined = None if p.skill_frozen_reference is not None else "undefined (reference scores 0)"
    return SkillPoint(
        fig.condition, p.predictor, "frozen reference", p.skill_frozen_reference, note=undefined
    )


def _row(fig: SliceFigures) -> VerdictRow:
    product = answer(fig, "product")
    aware = answer(fig, "state-aware")
    return VerdictRow(
        condition=fig.condition,
        product=product.verdict if product else "cannot say",
        product_reason=product.reason if product else "no product prediction",
        state_aware=aware.verdict if aware else None,
        state_aware_reason=aware.reason if aware else None,
    )


def _first_line(figures: Sequence[SliceFigures], rows: Sequence[VerdictRow]) -> str:
    """The degenerate headline, or each condition's verdicts in one sentence."""
    flagged = headline(figures)
    if flagged is not None:
        return flagged
    said = [
        f"{r.condition}: product {r.product}"
        + (f", state-aware {r.state_aware}" if r.state_aware else "")
        for r in rows
    ]
    return f"{ANSWER_LABEL.split(',')[0]}: " + "; ".join(said) + "."


def run_verdict(figures: Sequence[SliceFigures], label: str | None = None) -> RunVerdict | None:
    """A run's verdict from its slices (`pyapp.predict.flags.run_figures`); None while no
    condition has held-out observations. `label`: the run's evidence label when it is not
    model evidence (drawn on the picture)."""
    if not figures:
        return None
    rows = [_row(fig) for fig in figures]
    return RunVerdict(
        headline=_first_line(figures, rows),
        flags=tuple(w for fig in figures for w in degenerate_flags(fig)),
        rows=tuple(rows),
        sentences=tuple(answer_lines(figures)),
        skill_svg=skill_svg([p for fig in figures for p in _points(fig)], label, SUBTITLE),
    )
