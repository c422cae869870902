"""A study as `study.html` (one self-contained document, like the report: no script, nothing
loaded, the report's styles, CSP and inline SVG plots) and as Markdown (`--markdown FILE`).

Both say the same things in the same order, from the one `StudyDocument`: the hypotheses'
verdicts and the residual tests first (`hypothesis_rows`, `residual_rows`), then the answer,
then the flags, then per group and condition the reliability diagram of both predictors and
success by steps (`pyapp.report.plots`, the report's own drawing) for the slice the answer
comes from, and a table of every slice; then the method and every cell. The table's text is
made once (`slice_rows`) for both.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyapp import __version__
from pyapp.predict import (
    ALL_FAMILIES,
    ANSWER_LABEL,
    NamedInterval,
    PredictorFigures,
    SliceFigures,
    signed,
)
from pyapp.report import (
    CSP,
    STYLE,
    Markup,
    calibration_series_svg,
    el,
    facts,
    join,
    steps_svg,
    table,
)
from pyapp.study.record import StudyDocument, StudyGroup, StudySlice

SLICE_HEADER = (
    "slice",
    "n (seeds)",
    "right (base rate)",
    "mean forecast: product / state-aware",
    "Brier, product",
    "Brier, state-aware",
    "skill vs climatology, product",
    "skill vs climatology, state-aware",
    "skill vs frozen reference: product / state-aware",
    "reliability: product / state-aware",
    "resolution: product / state-aware",
    "Brier(product) − Brier(state-aware)",
    "tasks for ±0.1: product / state-aware",
    "answer: product / state-aware",
)
"""The columns of every slice table (HTML and Markdown)."""


def _short(interval: NamedInterval | None) -> str:
    """`[low, high]` of an interval, or why it has none (the method is in the column's note)."""
    if interval is None:
        return "—"
    if interval.high is None:
        return "(no interval)"
    low = "−∞" if interval.unbounded_below else signed(interval.low)
    return f"[{low}, {signed(interval.high)}]"


def _both(
    p: PredictorFigures, value: float | None, boot: NamedInterval, seeds: NamedInterval
) -> str:
    if value is None:
        return p.skill_undefined or "—"
    return f"{signed(value)} {_short(boot)} boot; {_short(seeds)} t"


def _pair(a: object, b: object) -> str:
    return f"{a} / {b}"


HYPOTHESIS_HEADER = (
    "hypothesis",
    "registration",
    "claim",
    "test",
    "verdict",
    "estimate [95 % bootstrap]",
    "p (one-sided)",
    "p after correction",
    "n",
    "informed by",
)
RESIDUAL_HEADER = (
    "models",
    "condition · family",
    "verdict",
    "mean residual A − B",
    "p",
    "p corrected",
    "n",
)
CONFIRM_NOTE = (
    "Verdicts are given only to hypotheses frozen unchanged in the study receipt (Holm's "
    "correction across them); post-hoc hypotheses are described, never judged. The residual "
    "test: does the subject's identity explain composed outcomes after its frozen state-aware "
    "prediction (a permutation of subject labels within each task; Holm across the tests)."
)


def hypothesis_rows(doc: StudyDocument) -> list[list[str]]:
    """One row per hypothesis (HTML and Markdown)."""
    rows = []
    for v in doc.hypotheses:
        word: str = "POST HOC: no verdict" if v.verdict is None else v.verdict
        if v.verdict == "inconclusive":
            word += f" ({v.reason})"
        estimate = "—" if v.estimate is None else f"{signed(v.estimate)} {_short(v.interval)}"
        rows.append(
            [
                f"{v.id}: {v.statement}",
                v.registration.upper() if v.registration == "post hoc" else v.registration,
                v.claim,
                v.test,
                word,
                estimate,
                _p(v.p_value),
                _p(v.p_corrected),
                str(v.n),
                v.informed_by or "—",
            ]
        )
    return rows


def residual_rows(doc: StudyDocument) -> list[list[str]]:
    return [
        [
            " vs ".join(r.models),
            f"{r.condition} · {r.family}",
            r.verdict + (f" ({r.reason})" if r.reason else ""),
            "—" if r.estimate is None else signed(r.estimate),
            _p(r.p_value),
            _p(r.p_corrected),
            str(r.n),
        ]
        for r in doc.residuals
    ]


def _p(p: float | None) -> str:
    return "—" if p is None else f"{p:.4f}"


def _confirm_html(doc: StudyDocument) -> Markup | None:
    if not doc.hypotheses and not doc.residuals:
        return None
    return el(
        "section",
        {"id": "hypotheses"},
        el("h2", None, "Hypotheses: the confirmatory verdicts"),
        el("p", None, doc.receipt or "NO STUDY RECEIPT: every hypothesis is post hoc"),
        table(HYPOTHESIS_HEADER, hypothesis_rows(doc)) if doc.hypotheses else None,
        el("h3", None, "Model-identity residuals") if doc.residuals else None,
        table(RESIDUAL_HEADER, residual_rows(doc)) if doc.residuals else None,
        el("p", {"class": "muted"}, CONFIRM_NOTE),
    )


def _confirm_markdown(doc: StudyDocument, heading: str) -> list[str]:
    if not doc.hypotheses and not doc.residuals:
        return []
    lines = [f"{heading} Hypotheses: the confirmatory verdicts", ""]
    lines += [doc.receipt or "NO STUDY RECEIPT: every hypothesis is post hoc", ""]
    if doc.hypotheses:
        lines += [*_md_table(HYPOTHESIS_HEADER, hypothesis_rows(doc)), ""]
    if doc.residuals:
        lines += [f"{heading}# Model-identity residuals", ""]
        lines += [*_md_table(RESIDUAL_HEADER, residual_rows(doc)), ""]
    return [*lines, CONFIRM_NOTE, ""]


def slice_rows(slices: Sequence[StudySlice]) -> list[list[str]]:
    """One row of text cells per slice (`SLICE_HEADER`)."""
    rows = []
    for s in slices:
        f, p, a = s.figures, s.figures.product, s.figures.state_aware
        family = "" if f.family == ALL_FAMILIES else f" · {f.family}"
        verdicts = {x.predictor: x.verdict for x in s.answers}
        rows.append(
            [
                f"{f.scope}{family}",
                f"{f.n} ({len(f.seeds)})",
                f"{f.successes} ({f.base_rate:.3f})",
                _pair(f"{p.mean_predicted:.3f}", "—" if a is None else f"{a.mean_predicted:.3f}"),
                _both(p, p.brier, p.brier_bootstrap, p.brier_seeds),
                "—" if a is None else _both(a, a.brier, a.brier_bootstrap, a.brier_seeds),
                _both(p, p.skill, p.skill_bootstrap, p.skill_seeds),
                "—" if a is None else _both(a, a.skill, a.skill_bootstrap, a.skill_seeds),
                _pair(
                    signed(p.skill_frozen_reference),
                    signed(None if a is None else a.skill_frozen_reference),
                ),
                _pair(f"{p.reliability:.4f}", "—" if a is None else f"{a.reliability:.4f}"),
                _pair(f"{p.resolution:.4f}", "—" if a is None else f"{a.resolution:.4f}"),
                "—"
                if f.difference is None
                else f"{signed(f.difference, 4)} {_short(f.difference_bootstrap)} boot; "
                f"{_short(f.difference_seeds)} t",
                _pair(p.tasks_needed or "—", "—" if a is None else a.tasks_needed or "—"),
                _pair(verdicts.get("product", "—"), verdicts.get("state-aware", "—")),
            ]
        )
    return rows


def _lead(group: StudyGroup, condition: str) -> SliceFigures | None:
    """The slice a group's answer for `condition` comes from."""
    pooled = group.ladder is not None and len(group.rungs) > 1
    for s in group.slices:
        f = s.figures
        if f.condition == condition and f.family == ALL_FAMILIES and f.pooled_over_rungs == pooled:
            return f
    return None


def _conditions(group: StudyGroup) -> list[str]:
    return list(dict.fromkeys(s.figures.condition for s in group.slices))


def _plots(fig: SliceFigures, label: str | None) -> Markup:
    series = [("product", "product", fig.product.calibration)]
    if fig.state_aware is not None:
        series.append(("state-aware", "state-aware", fig.state_aware.calibration))
    calibration = calibration_series_svg(
        series,
        label,
        x_label="predicted probability (both predictors)",
        title=f"Reliability of both predictors — {fig.condition}",
    )
    points = [(r.steps, r.n, r.successes, r.mean_product, r.mean_state_aware) for r in fig.by_steps]
    steps = steps_svg(points, label, f"Success by steps — {fig.condition}")
    return join(
        el("figure", {"class": "plot"}, calibration), el("figure", {"class": "plot"}, steps)
    )


NOTE = (
    "Each interval is 95 %: “boot” a percentile bootstrap over tasks (resamples within each "
    "rung; resamples and seed under Method), “t” Student-t across seeds. Skill vs climatology: "
    "1 − Brier / Brier of the slice's base rate (pooled rows: each rung's own). Answers are "
    "descriptive, templated from these numbers only."
)


def _group_html(group: StudyGroup) -> Markup:
    label = (
        None if group.evidence in ("model", "reference-subject") else group.title.split(" — ")[-1]
    )
    parts: list[object] = [el("h2", None, group.title)]
    parts.append(el("ul", {"class": "answers"}, [el("li", None, a.text) for a in group.answers]))
    for condition in _conditions(group):
        lead = _lead(group, condition)
        chosen = [s for s in group.slices if s.figures.condition == condition]
        parts.append(el("h3", None, condition))
        if lead is not None:
            where = f"The plots: {lead.scope}, all families (the slice the answer comes from)."
            parts += [el("p", {"class": "muted"}, where), _plots(lead, label)]
        flagged = [w for s in chosen for w in s.flags]
        if flagged:
            parts.append(el("ul", {"class": "degenerate"}, [el("li", None, w) for w in flagged]))
        parts.append(table(list(SLICE_HEADER), slice_rows(chosen), cls="slices", row_header=True))
    parts.append(el("p", {"class": "muted"}, NOTE))
    return el("section", {"id": f"group-{group.key}"}, parts)


def _method_rows(doc: StudyDocument) -> list[tuple[str, object]]:
    m = doc.method
    return [
        ("outcome", m.outcome),
        ("reference", m.reference),
        ("beside it", m.frozen_reference),
        *(("interval", text) for text in m.intervals),
        ("fewest tasks for an answer", m.min_tasks),
        ("reliability diagram", f"{m.calibration_bins} equal-width bins"),
        ("tasks for ±0.1", f"the delta method on the slice's own variance (±{m.skill_half_width})"),
        ("pooling", m.pooling),
        ("answers", m.answers),
    ]


def _cell_rows(doc: StudyDocument) -> list[list[str]]:
    return [
        [
            c.name,
            c.status,
            str(c.seed),
            c.preset or "custom",
            "—" if c.ladder is None else f"{c.ladder} rung {c.rung}",
            c.group or "—",
            "yes" if c.used else "no",
            c.note or "",
        ]
        for c in doc.cells
    ]


def _cells_count(doc: StudyDocument) -> str:
    """How many cells are done, and how many of them the study uses (a cell cut short or
    not re-derived is done but left out)."""
    used = sum(1 for c in doc.cells if c.used)
    return f"{doc.cells_done} of {doc.cells_planned} done, {used} used"


CELL_HEADER = ["cell", "status", "seed", "preset (from its trace)", "rung", "group", "used", "note"]


def study_html(doc: StudyDocument) -> str:
    """study.html: the answer first, nothing loaded, nothing run."""
    title = f"Composition Lab study — {doc.name or 'unnamed plan'}"
    head = el(
        "head",
        None,
        el("meta", {"charset": "utf-8"}),
        el("meta", {"http-equiv": "Content-Security-Policy", "content": CSP}),
        el("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}),
        el("title", None, title),
        el("style", None, Markup(STYLE)),
    )
    label = doc.answer.index(ANSWER_LABEL)
    headline = [el("p", {"class": "degenerate"}, el("strong", None, x)) for x in doc.answer[:label]]
    body = el(
        "body",
        None,
        el("header", None, el("h1", None, title)),
        _confirm_html(doc),
        el(
            "section",
            {"id": "answer"},
            headline,
            el("p", None, el("strong", None, ANSWER_LABEL)),
            el("ul", None, [el("li", None, line) for line in doc.answer[label + 1 :]]),
        ),
        el("section", {"id": "flags", "class": "degenerate"}, [el("p", None, f) for f in doc.flags])
        if doc.flags
        else None,
        el(
            "main",
            None,
            [_group_html(g) for g in doc.groups],
            el("section", {"id": "method"}, el("h2", None, "Method"), facts(_method_rows(doc))),
            el(
                "section",
                {"id": "cells"},
                el("h2", None, f"Cells: {_cells_count(doc)}"),
                table(CELL_HEADER, _cell_rows(doc), cls="cells"),
            ),
        ),
        el(
            "footer",
            {"class": "muted"},
            el(
                "p",
                None,
                f"Written by python -m pyapp study (pyapp {__version__}) from the matrix "
                "folder's cells, each re-derived from its trace. study.json holds every number.",
            ),
        ),
    )
    return "<!doctype html>\n" + el("html", {"lang": "en"}, head, body) + "\n"


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]


def study_markdown(doc: StudyDocument, heading: str = "##") -> str:
    """The study as Markdown (the same order and text as study.html, without the plots)."""
    label = doc.answer.index(ANSWER_LABEL)
    lines = _confirm_markdown(doc, heading)
    lines += [f"{heading} Answer", "", *(f"**{x}**\n" for x in doc.answer[:label])]
    lines += [f"**{ANSWER_LABEL}**", ""]
    lines += [f"- {line}" for line in doc.answer[label + 1 :]]
    lines += ["", *(f"> **{flag}**" for flag in doc.flags), ""] if doc.flags else [""]
    for group in doc.groups:
        lines += [f"{heading} {group.title}", ""]
        lines += [f"- {a.text}" for a in group.answers] + [""]
        for condition in _conditions(group):
            chosen = [s for s in group.slices if s.figures.condition == condition]
            lines += [f"{heading}# {condition}", ""]
            lines += [f"> {w}" for s in chosen for w in s.flags]
            lines += ["", *_md_table(SLICE_HEADER, slice_rows(chosen)), ""]
        lines += [NOTE, ""]
    lines += [f"{heading} Method", ""]
    lines += [f"- **{term}**: {value}" for term, value in _method_rows(doc)]
    lines += ["", f"{heading} Cells ({_cells_count(doc)})", ""]
    lines += [*_md_table(CELL_HEADER, _cell_rows(doc)), ""]
    return "\n".join(lines)
