"""The answer in one picture: per condition, each predictor's Brier skill against its frozen
reference and against climatology, with its interval, drawn once for the page's step 4, the
report and the study (`skill_svg`). A skill that is undefined (constant outcomes) is said in
words in its row; one below −1 is drawn at the axis's edge with its value written. Colour is
the condition's (`pyapp.report.plots.COLOURS`), the predictor is told by fill (the product
filled, the state-aware predictor hollow) and the reference by shape (climatology: circle;
frozen reference: square); each row's verdict in words is written at its end. Classes the
tests read: `skill` (points), `skill-value`, `undefined`, `verdict`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pyapp.report.markup import Markup, el
from pyapp.report.plots import (
    COLOURS,
    HOLLOW,
    OTHER_COLOUR,
    TOP,
    W,
    marker,
    svg_line,
    svg_text,
)


@dataclass(frozen=True)
class SkillPoint:
    """One row of the skill picture: one predictor's Brier skill against one reference."""

    condition: str
    """The condition (its colour)."""
    predictor: str
    """`product` (filled marker) or `state-aware` (hollow)."""
    reference: str
    """`climatology` (circle) or `frozen reference` (square)."""
    skill: float | None
    """1 − Brier / Brier(reference); None when undefined (`note` says why)."""
    low: float | None = None
    """The interval's low end (−inf: unbounded below); None without an interval."""
    high: float | None = None
    """The interval's high end; None without an interval."""
    note: str | None = None
    """What is said instead of, or beside, the number (why it is undefined)."""
    verdict: str | None = None
    """The verdict in words (`beats climatology`, `fails against climatology`, `cannot
    say`), written at the row's end; None for a row that carries none."""


SKILL_LEFT, SKILL_RIGHT, SKILL_ROW = 205, 285, 16
UNDEFINED = {"fill": "#b3261e", "class": "undefined"}
"""How an undefined skill's words are drawn."""
SKILL_AXIS = (-1.0, 1.0)
"""The skill axis: a skill below −1 is drawn at the edge with its value written."""


def _signed(v: float) -> str:
    return "−∞" if v == -math.inf else f"{v:+.2f}".replace("-", "−")


def _skill_text(p: SkillPoint) -> str:
    if p.skill is None:
        return p.note or "undefined"
    value = _signed(p.skill)
    if p.low is not None and p.high is not None:
        return f"{value} [{_signed(p.low)}, {_signed(p.high)}]"
    return value


def skill_svg(points: Sequence[SkillPoint], label: str | None, subtitle: str) -> Markup:
    """The answer in one picture: per condition, each predictor's Brier skill against its
    frozen reference and against climatology (above 0: better than the reference; an
    interval wholly above 0 is what "beats" means), the interval where there is one, and
    "undefined" in words where the skill is."""
    title = "Skill: each predictor against its reference and against climatology"
    conditions = list(dict.fromkeys(p.condition for p in points))
    rows = len(points) + len(conditions)
    height = TOP + 20 + rows * SKILL_ROW + 44
    lo, hi = SKILL_AXIS
    right = W - SKILL_RIGHT

    def sx(v: float) -> float:
        return SKILL_LEFT + (min(max(v, lo), hi) - lo) / (hi - lo) * (right - SKILL_LEFT)

    parts: list[Markup] = [svg_text(12, 18, title, 14, {"font-weight": 600})]
    parts.append(svg_text(12, 34, subtitle, 11, {"fill": "#5f6368"}))
    if label:
        words = label[0].upper() + label[1:] + "."
        attrs = {"font-weight": 700, "fill": "#b06000", "class": "fixture"}
        parts.append(svg_text(12, 50, words, 11, attrs))
    top, bottom = TOP, TOP + 8 + rows * SKILL_ROW
    box = {"x": SKILL_LEFT, "y": top, "width": right - SKILL_LEFT, "height": bottom - top}
    parts.append(el("rect", {**box, "fill": "none", "stroke": "#999"}))
    for v in (-1.0, -0.5, 0.0, 0.5, 1.0):
        attrs = {"text-anchor": "middle", "class": "tick"}
        parts.append(svg_text(sx(v), bottom + 14, f"{v:g}".replace("-", "−"), 11, attrs))
        grid = {"stroke": "#777" if v == 0 else "#ddd", "stroke-width": 1 if v == 0 else 0.5}
        parts.append(svg_line(sx(v), top, sx(v), bottom, **grid))
    words = "Brier skill (0: no better than the reference; 1: perfect)"
    parts.append(
        svg_text((SKILL_LEFT + right) / 2, bottom + 30, words, 12, {"text-anchor": "middle"})
    )
    y = top + 6
    for condition in conditions:
        y += SKILL_ROW
        parts.append(svg_text(12, y, condition, 12, {"font-weight": 600}))
        colour = COLOURS.get(condition, OTHER_COLOUR)
        for p in (p for p in points if p.condition == condition):
            y += SKILL_ROW
            name = f"{p.predictor} · {p.reference}"
            parts.append(svg_text(24, y, name, 11))
            shape = "circle" if p.reference == "climatology" else "square"
            hollow = p.predictor == HOLLOW
            text = f"{condition}, {name}: {_skill_text(p)}"
            group: list[Markup] = []
            if p.skill is not None:
                if p.low is not None and p.high is not None:
                    bar = {"stroke": colour, "stroke-width": 2}
                    group.append(svg_line(sx(p.low), y - 4, sx(p.high), y - 4, **bar))
                group.append(marker(shape, sx(p.skill), y - 4, colour, text, "skill", hollow))
                if p.skill < lo:
                    group.append(svg_text(sx(lo) + 8, y, "◀ off the axis", 10))
                attrs = {"class": "skill-value"}
                group.append(svg_text(right + 8, y, _skill_text(p), 11, attrs))
            else:  # said in words where the number would be; the whole reason in its title
                words = svg_text(right + 8, y, "undefined", 11, {**UNDEFINED, "class": "undefined"})
                group.append(
                    el("g", None, el("title", None, f"{condition}, {name}: {text}"), words)
                )
            if p.verdict:
                tone = {"beats climatology": "#137333", "fails against climatology": "#b3261e"}
                style: dict[str, object] = {"fill": tone.get(p.verdict, "#202124")}
                style |= {"font-weight": 600, "class": "verdict"}
                group.append(svg_text(right + 132, y, p.verdict, 11, style))
            parts.append(el("g", {"data-series": condition, "data-predictor": p.predictor}, *group))
    attrs = {"viewBox": f"0 0 {W} {height}", "width": "100%", "role": "img"}
    return el(
        "svg",
        {**attrs, "aria-label": title, "preserveAspectRatio": "xMinYMin meet"},
        el("title", None, title),
        *parts,
    )
