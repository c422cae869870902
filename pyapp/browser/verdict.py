"""The verdict step 4 leads with (issue 41): the run's answer in words and one picture.

`run_verdict` turns a predictions document into a `RunVerdict`: the first line (a run whose
held-out outcomes are all 0 says so there), every degenerate flag, per condition each
predictor's verdict against climatology (beats / fails / cannot say), the answer in full
sentences and the skill picture (`pyapp.report.skill_plot`). The flags and the words are
`pyapp.predict.flags`' (the study's one flag function and answer templates); this module
only arranges them for the page.

STUB: until the study branch's `pyapp.predict.flags` is merged, the verdict below says that
it is a stub and draws the frozen-reference skill the document already holds; it is replaced
by the flag function and answer templates before this branch is finished.
"""

from __future__ import annotations

from pyapp.predict.predictions import PredictionsDocument
from pyapp.protocol.results import RunVerdict, VerdictRow
from pyapp.report.plots import scored
from pyapp.report.skill_plot import SkillPoint, skill_svg

STUB_WORDS = "STUB (flags not merged yet)"


def run_verdict(doc: PredictionsDocument, label: str | None = None) -> RunVerdict | None:
    """The run's verdict; None while no condition has held-out observations."""
    results = scored(doc)
    if not results:
        return None
    points: list[SkillPoint] = []
    rows = []
    for result in results:
        condition = result.frozen.profile.condition
        skill = result.skill
        for name, p in (
            ("product", skill.product if skill else None),
            ("state-aware", skill.state_aware if skill else None),
        ):
            if p is not None:
                points.append(SkillPoint(condition, name, "frozen reference", p.skill))
        rows.append(VerdictRow(condition, "cannot say", STUB_WORDS, "cannot say", STUB_WORDS))
    subtitle = "Frozen reference: the profile's pooled rate. " + STUB_WORDS
    return RunVerdict(
        headline=STUB_WORDS,
        flags=(),
        rows=tuple(rows),
        sentences=(),
        skill_svg=skill_svg(points, label, subtitle),
    )
