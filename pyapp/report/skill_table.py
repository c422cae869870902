"""The report's table of what each Brier score means: both predictors' skill against the
reference forecast frozen with the profile (its pooled success rate), Murphy's decomposition,
95 % intervals and the paired difference — the numbers of `pyapp.predict.skill`, as the page's
step 4 shows them (site/profile_views.js)."""

from __future__ import annotations

from collections.abc import Sequence

from pyapp.predict import (
    ConditionResult,
    Interval,
    SliceFigures,
    interval_text,
    signed,
    skill_scores,
)
from pyapp.report.markup import Markup, el, join
from pyapp.report.sections import fmt, table

EXPLANATION = (
    "Against climatology (the held-out base rate, the standard no-skill reference): undefined "
    "when every held-out outcome is equal; interval: percentile bootstrap over tasks. "
    "Against the frozen reference: "
    "Brier skill = 1 − Brier / reference Brier: 1 is perfect, 0 no better than always "
    "forecasting the profile's pooled success rate (frozen with the profile), below 0 worse. "
    "Brier = reliability − resolution + uncertainty. Intervals: 95 % Student-t over held-out "
    "tasks; the difference is paired over the tasks both predictors scored (descriptive, not "
    "a test)."
)


def interval(i: Interval | None, digits: int = 4) -> str:
    if i is None:
        return "—"
    if i.low is None or i.high is None:
        return f"{fmt(i.mean, digits)} (n={i.n}: no interval)"
    return f"{fmt(i.mean, digits)} [{fmt(i.low, digits)}, {fmt(i.high, digits)}]"


def _climatology(figures: Sequence[SliceFigures], condition: str, predictor: str) -> str:
    """The skill against climatology with its bootstrap interval (or why it is undefined)."""
    for fig in figures:
        p = fig.product if predictor == "product" else fig.state_aware
        if fig.condition == condition and p is not None:
            if p.skill is None:
                return p.skill_undefined or "undefined"
            return f"{signed(p.skill)} {interval_text(p.skill_bootstrap)}"
    return "—"


def skill_table(scored: Sequence[ConditionResult], figures: Sequence[SliceFigures] = ()) -> Markup:
    rows: list[list[str]] = []
    for c in scored:
        s = skill_scores(c)
        condition = c.frozen.profile.condition
        for name, p in (("product", s.product), ("state-aware", s.state_aware)):
            if p is None:
                continue
            d = p.decomposition
            rows.append(
                [
                    condition,
                    name,
                    interval(p.brier),
                    _climatology(figures, condition, name),
                    f"{fmt(p.brier_reference, 4)} (forecast {fmt(s.reference_probability)})",
                    fmt(p.skill),
                    fmt(None if d is None else d.reliability, 4),
                    fmt(None if d is None else d.resolution, 4),
                    fmt(None if d is None else d.uncertainty, 4),
                ]
            )
        rows.append([condition, "product − state-aware", interval(s.difference), *["—"] * 6])
    if not rows:
        return join()
    header = [
        "Condition",
        "Predictor",
        "Brier, final answer [95%]",
        "Brier skill against climatology [95%]",
        "Reference Brier (pooled profile rate)",
        "Brier skill against the frozen reference",
        "Reliability",
        "Resolution",
        "Uncertainty",
    ]
    return join(
        table(header, rows, cls="skill", row_header=True),
        el("p", {"class": "muted"}, EXPLANATION),
    )
