"""The page's two plots as inline SVG text, drawn from a predictions document.

The same drawing as `site/plots.js` (same size, margins, colours, marker shapes, labels), so
a report looks like the page: calibration cells (mean predicted probability against observed
rate with the 95% Wilson interval, n beside each point) and predicted against observed cost
per held-out task, each with the y = x line. Only the numbers the document holds are drawn.
Every point carries a `<title>` with its numbers, and each series has its own marker shape,
so colour is never the only signal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pyapp.predict.metrics import CalibrationCell
from pyapp.predict.predictor import PredictionsDocument
from pyapp.report.markup import Markup, el

W, H = 760, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 270, 64, 56
COLOURS = {
    "model-only": "#1a73e8",
    "model-program": "#b3261e",
    "controlled-chain": "#137333",
    "controlled-chain (all steps)": "#8e24aa",
}
"""Each plotted series' colour, written once: `python -m pyapp schema` generates it into
site/lab_protocol.js (`PLOT_COLOURS`, with `PLOT_OTHER_COLOUR` and `PLOT_SHAPES`), which
site/plots.js draws with."""
OTHER_COLOUR = "#444"
"""The colour of a series `COLOURS` does not name."""
SHAPES = ("circle", "square", "diamond", "triangle")


def _n(value: float) -> str:
    """A coordinate: short, and without float noise."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def marker(shape: str, x: float, y: float, colour: str, title: str) -> Markup:
    r = 5
    style = {"fill": colour, "fill-opacity": "0.85", "stroke": "#000", "stroke-width": "0.5"}
    label = el("title", None, title)
    if shape == "square":
        box = {"x": _n(x - r), "y": _n(y - r), "width": 2 * r, "height": 2 * r}
        return el("rect", {**box, **style, "class": shape}, label)
    if shape == "diamond":
        points = f"{_n(x)},{_n(y - r - 1)} {_n(x + r + 1)},{_n(y)} {_n(x)},{_n(y + r + 1)} "
        points += f"{_n(x - r - 1)},{_n(y)}"
        return el("polygon", {"points": points, **style, "class": shape}, label)
    if shape == "triangle":
        points = f"{_n(x)},{_n(y - r - 1)} {_n(x + r + 1)},{_n(y + r)} {_n(x - r - 1)},{_n(y + r)}"
        return el("polygon", {"points": points, **style, "class": shape}, label)
    return el("circle", {"cx": _n(x), "cy": _n(y), "r": r, **style, "class": shape}, label)


def _text(
    x: float, y: float, text: str, size: int = 11, attrs: Mapping[str, object] | None = None
) -> Markup:
    return el("text", {"x": _n(x), "y": _n(y), "font-size": size, **(attrs or {})}, text)


def _line(x1: float, y1: float, x2: float, y2: float, **attrs: object) -> Markup:
    return el("line", {"x1": _n(x1), "y1": _n(y1), "x2": _n(x2), "y2": _n(y2), **attrs})


@dataclass(frozen=True)
class Frame:
    """A plot's axes: value → pixel in both directions."""

    x_max: float
    """Right end of the x axis."""
    y_max: float
    """Top end of the y axis."""

    def sx(self, v: float) -> float:
        return LEFT + (v / self.x_max) * (W - LEFT - RIGHT)

    def sy(self, v: float) -> float:
        plot_h = H - TOP - BOTTOM
        return TOP + plot_h - (v / self.y_max) * plot_h


def _frame(
    f: Frame,
    title: str,
    subtitle: str,
    label: str | None,
    labels: tuple[str, str],
    fmt: Callable[[float], str],
    ticks: int = 5,
) -> list[Markup]:
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    out = [_text(LEFT, 18, title, 14, {"font-weight": 600})]
    out.append(_text(LEFT, 34, subtitle, 11, {"fill": "#5f6368"}))
    if label is not None:
        out.append(
            _text(
                LEFT,
                50,
                label[0].upper() + label[1:] + ".",
                11,
                {"font-weight": 700, "fill": "#b06000", "class": "fixture"},
            )
        )
    box = {"x": LEFT, "y": TOP, "width": plot_w, "height": plot_h}
    out.append(el("rect", {**box, "fill": "none", "stroke": "#999"}))
    for i in range(ticks + 1):
        xv, yv = f.x_max * i / ticks, f.y_max * i / ticks
        out.append(_line(f.sx(xv), TOP + plot_h, f.sx(xv), TOP + plot_h + 4, stroke="#666"))
        out.append(_text(f.sx(xv), TOP + plot_h + 16, fmt(xv), 11, {"text-anchor": "middle"}))
        out.append(_line(LEFT - 4, f.sy(yv), LEFT, f.sy(yv), stroke="#666"))
        out.append(_text(LEFT - 7, f.sy(yv) + 4, fmt(yv), 11, {"text-anchor": "end"}))
        if 0 < i < ticks:
            out.append(
                _line(
                    LEFT, f.sy(yv), LEFT + plot_w, f.sy(yv), stroke="#ddd", **{"stroke-width": 0.5}
                )
            )
    out.append(_text(LEFT + plot_w / 2, H - 14, labels[0], 12, {"text-anchor": "middle"}))
    mid = TOP + plot_h / 2
    out.append(
        _text(
            16,
            mid,
            labels[1],
            12,
            {"text-anchor": "middle", "transform": f"rotate(-90 16 {_n(mid)})"},
        )
    )
    top = min(f.x_max, f.y_max)
    out.append(
        _line(
            f.sx(0),
            f.sy(0),
            f.sx(top),
            f.sy(top),
            stroke="#777",
            **{"stroke-dasharray": "5 4", "class": "identity"},
        )
    )
    return out


@dataclass(frozen=True)
class Entry:
    """One legend line."""

    label: str
    """What the series is."""
    colour: str
    """Its colour."""
    shape: str
    """Its marker shape (so that colour is not the only signal)."""


def _legend(entries: Sequence[Entry]) -> list[Markup]:
    x, y = W - RIGHT + 14, TOP + 6
    out = []
    for entry in entries:
        out.append(marker(entry.shape, x, y, entry.colour, entry.label))
        out.append(_text(x + 10, y + 4, entry.label))
        y += 18
    out.append(_line(x - 6, y, x + 6, y, stroke="#777", **{"stroke-dasharray": "5 4"}))
    out.append(_text(x + 10, y + 4, "y = x (perfect)"))
    return out


def _svg(label: str, parts: Sequence[Markup]) -> Markup:
    attrs = {"viewBox": f"0 0 {W} {H}", "width": W, "height": H, "role": "img"}
    return el("svg", {**attrs, "aria-label": label}, el("title", None, label), *parts)


def _series(doc: PredictionsDocument) -> list[tuple[str, str, tuple[CalibrationCell, ...]]]:
    series: list[tuple[str, str, tuple[CalibrationCell, ...]]] = []
    for result in doc.conditions:
        condition = result.frozen.profile.condition
        label = f"{condition} (final answer, naive proxy)"
        series.append((label, condition, result.scores.calibration_final))
        if condition == "controlled-chain":
            key = "controlled-chain (all steps)"
            series.append((key, key, result.scores.calibration_all_steps))
    return series


def calibration_svg(doc: PredictionsDocument, label: str | None) -> Markup:
    """Mean predicted probability (x) against observed rate (y) per non-empty cell."""
    return calibration_series_svg(_series(doc), label)


def calibration_series_svg(
    series: Sequence[tuple[str, str, Sequence[CalibrationCell]]], label: str | None
) -> Markup:
    """The calibration plot of any series: (legend label, colour key, calibration cells);
    the matrix report draws every cell's points of one model this way."""
    title = "Calibration: predicted probability vs observed outcome"
    f = Frame(1.0, 1.0)
    parts = _frame(
        f,
        title,
        "One point per non-empty calibration cell; bars: 95% Wilson intervals (descriptive); "
        "n beside each point.",
        label,
        ("predicted probability (product of primitive rates)", "observed rate"),
        lambda v: f"{v:.1f}",
    )
    entries = []
    placed: list[tuple[float, float]] = []
    for i, (label, key, cells) in enumerate(series):
        colour, shape = COLOURS.get(key, OTHER_COLOUR), SHAPES[i % len(SHAPES)]
        entries.append(Entry(label, colour, shape))
        group = []
        for cell in cells:
            if not cell.n or cell.mean_predicted is None or cell.observed_rate is None:
                continue
            x = f.sx(cell.mean_predicted) + (i - (len(series) - 1) / 2) * 3
            bar = {"stroke": colour, "stroke-width": 2}
            group.append(_line(x, f.sy(cell.wilson_low), x, f.sy(cell.wilson_high), **bar))
            for v in (cell.wilson_low, cell.wilson_high):
                group.append(_line(x - 4, f.sy(v), x + 4, f.sy(v), **bar))
            text = (
                f"{label}: bin [{cell.low:.1f}, {cell.high:.1f}), n = {cell.n}, "
                f"mean predicted {cell.mean_predicted:.3f}, observed {cell.observed_rate:.3f}, "
                f"Wilson [{cell.wilson_low:.3f}, {cell.wilson_high:.3f}]"
            )
            y = f.sy(cell.observed_rate)
            group.append(marker(shape, x, y, colour, text))
            group.append(_text(x + 8, _label_y(x + 8, y, placed), f"n={cell.n}", 10))
        parts.append(el("g", {"data-series": key}, *group))
    return _svg(title, [*parts, *_legend(entries)])


def _label_y(x: float, y: float, placed: list[tuple[float, float]]) -> float:
    """The baseline of a point's "n=" label: just above the point, or the nearest line above
    or below it that no label already placed there uses (points of several series often fall
    on the same spot, and their labels would print over each other). Records the spot."""
    offsets = [-6.0] + [sign * step * 11.0 - 6.0 for step in range(1, 9) for sign in (1, -1)]
    for offset in offsets:
        spot = y + offset
        if all(abs(px - x) >= 36 or abs(py - spot) >= 11 for px, py in placed):
            break
    placed.append((x, spot))
    return spot


def nice_max(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5, 10 times a power of ten that is at least `value`."""
    if not value > 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next((s * power for s in (1, 2, 2.5, 5, 10) if s * power >= value), 10 * power)


def cost_svg(doc: PredictionsDocument, label: str | None) -> Markup:
    """Each held-out task's predicted cost (x) against its observed cost (y), in ms."""
    title = "Cost: predicted vs observed time per held-out task"
    points = []
    for result in doc.conditions:
        condition = result.frozen.profile.condition
        predicted = {p.task_id: p for p in result.predictions}
        for o in result.observations:
            p = predicted.get(o.task_id)
            if p is None or p.cost_ms is None or o.cost_ms is None:
                continue
            points.append((condition, o.task_id, p.cost_ms, o.cost_ms))
    top = nice_max(max([1.0, *(max(p[2], p[3]) for p in points)]))
    f = Frame(top, top)
    parts = _frame(
        f,
        title,
        "One point per held-out task: generation + execution wall time in ms; dashed: y = x.",
        label,
        ("predicted cost (ms): sum of primitive mean costs", "observed cost (ms)"),
        lambda v: str(round(v)) if top >= 100 else f"{v:.1f}",
    )
    conditions = list(dict.fromkeys(p[0] for p in points))
    entries = {
        c: Entry(c, COLOURS.get(c, OTHER_COLOUR), SHAPES[i % len(SHAPES)])
        for i, c in enumerate(conditions)
    }
    for condition, task, predicted_ms, observed_ms in points:
        e = entries[condition]
        text = f"{condition} {task}: predicted {predicted_ms:.1f} ms, observed {observed_ms:.1f} ms"
        parts.append(marker(e.shape, f.sx(predicted_ms), f.sy(observed_ms), e.colour, text))
    if not points:
        parts.append(_text(LEFT + 20, TOP + 30, "No held-out observation with both costs.", 12))
    return _svg(title, [*parts, *_legend(list(entries.values()))])
