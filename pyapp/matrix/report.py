"""`DIR/report.html`: the matrix as one self-contained HTML file, built from the run
report's parts (`pyapp.report`: markup that escapes every text, the page's style and CSP,
its tables and its calibration plot).

Sections: evidence (which kinds of cells the matrix holds; fixture and synthetic cells are
never model evidence), a row per cell (status, evidence label, both predictors' Brier scores
with their intervals), the cells left out (their files do not re-derive), per model a
calibration plot with every cell's points (one point per non-empty calibration bin of each
cell, never a pooled score), the pooled rows, and the predictors' difference across seeds
(Compare's definition and words; a one-seed group says its interval is undefined).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pyapp import __version__
from pyapp.host import write_atomically
from pyapp.matrix.summary import (
    AcrossSeedsRow,
    CellRow,
    MatrixSummary,
    PooledRow,
    PredictorScores,
    read_cell,
)
from pyapp.predict import ACROSS_RUNS, ACROSS_RUNS_COLUMN, CalibrationCell
from pyapp.report import CSP, STYLE, Markup, calibration_series_svg, el, fmt, table


def brier(scores: PredictorScores | None, all_steps: bool = False) -> str:
    if scores is None:
        return "—"
    value = scores.brier_all_steps if all_steps else scores.brier_final_proxy
    interval = scores.brier_all_steps_interval if all_steps else scores.brier_final_interval
    if value is None:
        return "—"
    shown = fmt(value)
    return shown + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")


def cell_rows(rows: Sequence[CellRow]) -> Markup:
    body: list[list[object]] = []
    for row in rows:
        cell = row.cell
        base = [
            cell.name,
            cell.model,
            cell.backend,
            cell.seed,
            cell.preset,
            row.status,
            row.evidence,
        ]
        if not row.conditions:
            body.append([*base, "—", "—", "—", "—", "—", "—"])
        for c in row.conditions:
            condition = c.condition + (" [exploratory]" if c.exploratory else "")
            body.append(
                [
                    *base,
                    condition,
                    c.product.n,
                    brier(c.product),
                    brier(c.state_aware),
                    brier(c.product, True),
                    brier(c.state_aware, True),
                ]
            )
    headers = [
        "cell",
        "model",
        "backend",
        "seed",
        "preset",
        "status",
        "evidence",
        "condition",
        "n",
        "Brier final: product",
        "Brier final: state-aware",
        "Brier all steps: product",
        "Brier all steps: state-aware",
    ]
    return table(headers, body, "One row per cell and condition; [95% interval, descriptive]")


GROUP_HEADERS = ("model", "backend", "preset", "evidence", "condition")
"""What names a group of cells that differ in their seed alone (pooled and across-seeds rows)."""


def group_columns(r: PooledRow | AcrossSeedsRow) -> list[str]:
    return [r.model, r.backend, r.preset, r.evidence, r.condition]


def pooled_rows(rows: Sequence[PooledRow]) -> Markup:
    if not rows:
        return el("p", None, "No two cells differ in their seed alone: nothing is pooled.")
    body = [
        [
            *group_columns(r),
            ", ".join(str(s) for s in r.seeds),
            r.product.n,
            brier(r.product),
            brier(r.state_aware),
            brier(r.product, True),
            brier(r.state_aware, True),
        ]
        for r in rows
    ]
    headers = [
        *GROUP_HEADERS,
        "seeds pooled",
        "n",
        "Brier final: product",
        "Brier final: state-aware",
        "Brier all steps: product",
        "Brier all steps: state-aware",
    ]
    return table(headers, body, "Pooled over seeds; one evidence label per row")


def across_seeds_rows(rows: Sequence[AcrossSeedsRow], note: str) -> Markup:
    """The predictors' difference across seeds, one row per group of cells that differ in
    their seed alone, as Compare shows it."""
    if not rows:
        return el("p", None, "No cell is done: no difference across seeds yet.")
    body = [
        [
            *group_columns(r),
            ", ".join(str(s) for s in r.seeds) or "—",
            f"{len(r.differences)} runs" if len(r.differences) != 1 else "1 run",
            r.shown,
        ]
        for r in rows
    ]
    headers = [
        *GROUP_HEADERS,
        "seeds",
        "n",
        f"{ACROSS_RUNS}: {ACROSS_RUNS_COLUMN}",
    ]
    return table(headers, body, note)


def model_plots(
    rows: Sequence[CellRow],
    documents: Mapping[str, Sequence[tuple[str, Sequence[CalibrationCell]]]],
) -> Markup:
    """Per model: every cell's calibration points, one series per condition."""
    parts: list[Markup] = []
    for model in dict.fromkeys(r.cell.model for r in rows):
        series = documents.get(model, [])
        if not series:
            continue
        by_condition: dict[str, list[CalibrationCell]] = {}
        for condition, cells in series:
            by_condition.setdefault(condition, []).extend(cells)
        count = sum(1 for r in rows if r.cell.model == model and r.conditions)
        drawn = [(f"{k} ({count} cells)", k, tuple(v)) for k, v in by_condition.items()]
        parts.append(el("h3", None, f"{model}"))
        parts.append(calibration_series_svg(drawn, f"{model}: every cell's points"))
    return el("section", {"id": "calibration"}, el("h2", None, "Calibration per model"), *parts)


def left_out(summary: MatrixSummary) -> Markup:
    """The cells left out of every row and number, with the reason (none: nothing)."""
    if not summary.left_out:
        return Markup("")
    items = [el("li", None, f"{row.cell}: {row.reason}") for row in summary.left_out]
    return el(
        "section",
        {"id": "left-out"},
        el("h2", None, "Left out"),
        el("p", None, "Cells of the plan whose files this report does not use:"),
        el("ul", None, *items),
    )


def render(
    summary: MatrixSummary, series: Mapping[str, Sequence[tuple[str, Sequence[CalibrationCell]]]]
) -> str:
    evidence = sorted({r.evidence for r in summary.cells if r.evidence})
    not_evidence = [e for e in evidence if e != "model"]
    banner = (
        f"Evidence in this matrix: {', '.join(evidence) or 'none yet'}. "
        + (f"{' and '.join(not_evidence)} cells are NOT model evidence. " if not_evidence else "")
        + "Cells of different evidence kinds are never pooled."
    )
    title = f"Composition Lab matrix — {summary.name or 'unnamed plan'}"
    head = el(
        "head",
        None,
        el("meta", {"charset": "utf-8"}),
        el("meta", {"http-equiv": "Content-Security-Policy", "content": CSP}),
        el("title", None, title),
        el("style", None, Markup(STYLE)),
    )
    done = sum(1 for r in summary.cells if r.status == "done")
    body = el(
        "body",
        None,
        el("h1", None, title),
        el(
            "p",
            {"class": "banner evidence-" + ("model" if not not_evidence else "fixture")},
            banner,
        ),
        el("p", {"class": "muted"}, f"{done} of {len(summary.cells)} cells done. {summary.note}"),
        el("section", {"id": "cells"}, el("h2", None, "Cells"), cell_rows(summary.cells)),
        left_out(summary),
        model_plots(summary.cells, series),
        el("section", {"id": "pooled"}, el("h2", None, "Pooled"), pooled_rows(summary.pooled)),
        el(
            "section",
            {"id": "across-seeds"},
            el("h2", None, "The predictors' difference across seeds"),
            across_seeds_rows(summary.across_seeds, summary.across_seeds_note),
        ),
        el(
            "footer",
            {"class": "muted"},
            f"Written by python -m pyapp matrix (pyapp "
            f"{__version__}). Each cell re-derives: python -m pyapp reproduce "
            "cells/NAME/.../trace.json --predictions .../predictions.json",
        ),
    )
    return "<!doctype html>\n" + el("html", {"lang": "en"}, head, body) + "\n"


def write_report(out: Path, summary: MatrixSummary) -> None:
    """report.html, its calibration points read from each done cell's predictions."""

    series: dict[str, list[tuple[str, Sequence[CalibrationCell]]]] = {}
    for row in summary.cells:
        doc = read_cell(out, row.cell) if row.predictions else None
        for result in doc.conditions if doc else ():
            condition = result.frozen.profile.condition
            found = series.setdefault(row.cell.model, [])
            found.append((condition, result.scores.calibration_final))
            if condition == "controlled-chain":
                key = "controlled-chain (all steps)"
                found.append((key, result.scores.calibration_all_steps))
    write_atomically(out / "report.html", render(summary, series))
