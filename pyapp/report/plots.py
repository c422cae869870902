"""The two plots of a predictions document as inline SVG text: the page's and the report's.

One drawing for both: the page shows the SVG its Python worker draws here (the replies of
`sweep_predictions`, `trace_open` and `compare_runs` carry it, `pyapp.browser.viewer.run_plots`)
and `python -m pyapp report` embeds the same text. Calibration cells (mean predicted
probability against observed rate with the 95% Wilson interval, n beside each point) and
predicted against observed cost per held-out task, each with the y = x line; only the
conditions with held-out observations, and only the numbers the document holds. The
calibration plot draws both predictors (the product: filled markers; the state-aware
predictor: hollow), each "n=" label where it overlaps no other label or marker. The axes are
zoomed to the points (`calibration_domain`, `cost_domain`); runs compared side by side share
them. Every point carries a `<title>` with its numbers, and each series has its own marker
shape, so colour is never the only signal. The classes the page's tests read: `cell` and
`task` (points), `tick` (tick labels), `fixture` (the run's label), `identity` (y = x).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from pyapp.predict import CalibrationCell, ConditionResult, PredictionsDocument, wilson_interval
from pyapp.records import CONDITIONS
from pyapp.report.markup import Markup, el

W, H = 760, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 270, 64, 56
COLOURS: dict[str, str] = {
    **{c.name: c.colour for c in CONDITIONS if c.model},  # the conditions' own (one table)
    "controlled-chain (all steps)": "#8e24aa",
    "product": "#b06000",
    "state-aware": "#1a73e8",
    "product-shrunk": "#2a9d55",
    "observed": "#202124",
}
"""Each plotted series' colour, written once (the page draws no plot of its own)."""
OTHER_COLOUR = "#444"
"""The colour of a series `COLOURS` does not name."""
SHAPES = ("circle", "square", "diamond", "triangle")

Range = tuple[float, float]
Series = tuple[str, str, Sequence[CalibrationCell]]
"""A calibration series: (legend label, colour key, its cells)."""


def _n(value: float) -> str:
    """A coordinate: short, and without float noise."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def marker(
    shape: str, x: float, y: float, colour: str, title: str, cls: str = "", hollow: bool = False
) -> Markup:
    """A point: `shape` filled with `colour`, or `hollow` (white inside, a `colour` ring)."""
    r = 5
    style = {"fill": colour, "fill-opacity": "0.85", "stroke": "#000", "stroke-width": "0.5"}
    if hollow:
        style = {"fill": "#fff", "fill-opacity": "1", "stroke": colour, "stroke-width": "2"}
    label = el("title", None, title)
    classes = f"{cls} {shape}".strip()
    if shape == "square":
        box = {"x": _n(x - r), "y": _n(y - r), "width": 2 * r, "height": 2 * r}
        return el("rect", {**box, **style, "class": classes}, label)
    if shape == "diamond":
        points = f"{_n(x)},{_n(y - r - 1)} {_n(x + r + 1)},{_n(y)} {_n(x)},{_n(y + r + 1)} "
        points += f"{_n(x - r - 1)},{_n(y)}"
        return el("polygon", {"points": points, **style, "class": classes}, label)
    if shape == "triangle":
        points = f"{_n(x)},{_n(y - r - 1)} {_n(x + r + 1)},{_n(y + r)} {_n(x - r - 1)},{_n(y + r)}"
        return el("polygon", {"points": points, **style, "class": classes}, label)
    return el("circle", {"cx": _n(x), "cy": _n(y), "r": r, **style, "class": classes}, label)


def svg_text(
    x: float, y: float, text: str, size: int = 11, attrs: Mapping[str, object] | None = None
) -> Markup:
    return el("text", {"x": _n(x), "y": _n(y), "font-size": size, **(attrs or {})}, text)


def svg_line(x1: float, y1: float, x2: float, y2: float, **attrs: object) -> Markup:
    return el("line", {"x1": _n(x1), "y1": _n(y1), "x2": _n(x2), "y2": _n(y2), **attrs})


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values inside [lo, hi], about `count` of them (steps of 1, 2, 2.5, 5 times
    a power of ten)."""
    raw = (hi - lo) / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next((f * power for f in (1, 2, 2.5, 5, 10) if f * power >= raw), 10 * power)
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    k = first
    while k * step <= hi + 1e-9:
        v = k * step
        ticks.append(0.0 if abs(v) < 1e-12 else v)
        k += 1
    return ticks


def span(
    values: Iterable[float],
    floor: float = -math.inf,
    ceil: float = math.inf,
    min_width: float = 0.0,
) -> Range:
    """The axis range some values need: where they are, padded so that no point sits on the
    frame (where the tick labels are), at least `min_width` wide, within [floor, ceil]
    padded."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return (max(floor, 0.0), min(ceil, 1.0))
    lo, hi = min(finite), max(finite)
    if hi - lo < min_width:
        middle = (lo + hi) / 2
        lo = max(floor, middle - min_width / 2)
        hi = lo + min_width
        if hi > ceil:
            lo, hi = ceil - min_width, ceil
    pad = (hi - lo) * 0.08
    return (max(floor - pad, lo - pad), min(ceil + pad, hi + pad))


def tick_format(v: float, ticks: Sequence[float]) -> str:
    """A tick label with as many decimals as the step needs (0.05 apart: two)."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    if step >= 1:
        return f"{v:.0f}"
    exponent = Decimal(repr(float(f"{step:.3g}"))).as_tuple().exponent
    digits = min(4, max(0, -exponent)) if isinstance(exponent, int) else 4
    return f"{v:.{digits}f}"


@dataclass(frozen=True)
class Domain:
    """A plot's axes: the value ranges drawn, shared by runs drawn side by side."""

    x: Range
    """The x axis, low to high."""
    y: Range
    """The y axis, low to high."""


@dataclass(frozen=True)
class Frame:
    """A plot's axes: value → pixel in both directions."""

    domain: Domain
    """What the axes span."""

    def sx(self, v: float) -> float:
        lo, hi = self.domain.x
        return LEFT + (v - lo) / (hi - lo) * (W - LEFT - RIGHT)

    def sy(self, v: float) -> float:
        lo, hi = self.domain.y
        plot_h = H - TOP - BOTTOM
        return TOP + plot_h - (v - lo) / (hi - lo) * plot_h


def _ticks(f: Frame, fmt: Callable[[float, Sequence[float]], str]) -> list[Markup]:
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    out = []
    x_ticks, y_ticks = nice_ticks(*f.domain.x), nice_ticks(*f.domain.y)
    for xv in x_ticks:
        out.append(svg_line(f.sx(xv), TOP + plot_h, f.sx(xv), TOP + plot_h + 4, stroke="#666"))
        attrs = {"text-anchor": "middle", "class": "tick"}
        out.append(svg_text(f.sx(xv), TOP + plot_h + 16, fmt(xv, x_ticks), 11, attrs))
    for yv in y_ticks:
        out.append(svg_line(LEFT - 4, f.sy(yv), LEFT, f.sy(yv), stroke="#666"))
        attrs = {"text-anchor": "end", "class": "tick"}
        out.append(svg_text(LEFT - 7, f.sy(yv) + 4, fmt(yv, y_ticks), 11, attrs))
        grid = {"stroke": "#ddd", "stroke-width": 0.5}
        out.append(svg_line(LEFT, f.sy(yv), LEFT + plot_w, f.sy(yv), **grid))
    return out


def _frame(
    f: Frame, title: str, subtitle: str, label: str | None, labels: tuple[str, str]
) -> list[Markup]:
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    out = [svg_text(LEFT, 18, title, 14, {"font-weight": 600})]
    out.append(svg_text(LEFT, 34, subtitle, 11, {"fill": "#5f6368"}))
    if label:  # the run's evidence label (not model evidence)
        words = label[0].upper() + label[1:] + "."
        attrs = {"font-weight": 700, "fill": "#b06000", "class": "fixture"}
        out.append(svg_text(LEFT, 50, words, 11, attrs))
    box = {"x": LEFT, "y": TOP, "width": plot_w, "height": plot_h}
    out.append(el("rect", {**box, "fill": "none", "stroke": "#999"}))
    out += _ticks(f, tick_format)
    out.append(svg_text(LEFT + plot_w / 2, H - 14, labels[0], 12, {"text-anchor": "middle"}))
    mid = TOP + plot_h / 2
    rotate = {"text-anchor": "middle", "transform": f"rotate(-90 16 {_n(mid)})"}
    out.append(svg_text(16, mid, labels[1], 12, rotate))
    # y = x, where it crosses the plotted range
    low, high = max(f.domain.x[0], f.domain.y[0]), min(f.domain.x[1], f.domain.y[1])
    if high > low:
        dashed = {"stroke": "#777", "stroke-dasharray": "5 4", "class": "identity"}
        out.append(svg_line(f.sx(low), f.sy(low), f.sx(high), f.sy(high), **dashed))
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
    hollow: bool = False
    """Drawn hollow (the state-aware predictor's points)."""


def _legend(entries: Sequence[Entry], identity: bool = True) -> list[Markup]:
    x, y = W - RIGHT + 14, TOP + 6
    out = []
    for entry in entries:
        out.append(marker(entry.shape, x, y, entry.colour, entry.label, hollow=entry.hollow))
        out.append(svg_text(x + 10, y + 4, entry.label))
        y += 18
    if identity:
        out.append(svg_line(x - 6, y, x + 6, y, stroke="#777", **{"stroke-dasharray": "5 4"}))
        out.append(svg_text(x + 10, y + 4, "y = x (perfect)"))
    return out


def _svg(label: str, parts: Sequence[Markup]) -> Markup:
    """The SVG fills the width it is given (figure.plot svg); the viewBox keeps its shape."""
    attrs = {"viewBox": f"0 0 {W} {H}", "width": "100%", "role": "img"}
    return el(
        "svg",
        {**attrs, "aria-label": label, "preserveAspectRatio": "xMinYMin meet"},
        el("title", None, label),
        *parts,
    )


def scored(doc: PredictionsDocument) -> list[ConditionResult]:
    """The conditions drawn: those with held-out observations."""
    return [c for c in doc.conditions if c.observations]


PREDICTORS = ("product", "state-aware")
"""The two predictors a calibration plot draws, in legend order."""
HOLLOW = "state-aware"
"""The predictor drawn with hollow markers (the product's are filled): the predictor is
told by fill, the condition by colour and shape, so colour is never the only signal."""


def _series(doc: PredictionsDocument) -> list[Series]:
    """Both predictors' calibration cells per scored condition (final answer), and for
    controlled chains against all-step correctness too."""
    series: list[Series] = []
    for result in scored(doc):
        condition = result.frozen.profile.condition
        aware = result.state_aware.scores if result.state_aware is not None else None
        series.append((f"{condition} · product", condition, result.scores.calibration_final))
        if aware is not None:
            series.append((f"{condition} · state-aware", condition, aware.calibration_final))
        if condition == "controlled-chain":
            key = "controlled-chain (all steps)"
            series.append(("chain, all steps · product", key, result.scores.calibration_all_steps))
            if aware is not None:
                label = "chain, all steps · state-aware"
                series.append((label, key, aware.calibration_all_steps))
    return series


def _drawn(cells: Iterable[CalibrationCell]) -> list[CalibrationCell]:
    return [
        c for c in cells if c.n and c.mean_predicted is not None and c.observed_rate is not None
    ]


def series_domain(series: Iterable[Series]) -> Domain:
    """The calibration axes of some series: zoomed to where the cells and their Wilson bars
    are, never past [0, 1] but padded."""
    cells = [cell for _, _, cells in series for cell in _drawn(cells)]
    x = span((c.mean_predicted or 0.0 for c in cells), 0.0, 1.0, 0.1)
    ys = [v for c in cells for v in (c.observed_rate, c.wilson_low, c.wilson_high) if v is not None]
    return Domain(x, span(ys, 0.0, 1.0, 0.1))


def calibration_domain(docs: Iterable[PredictionsDocument]) -> Domain:
    """The calibration plot's axes for some documents (one, or every run compared)."""
    return series_domain(s for doc in docs for s in _series(doc))


def calibration_svg(
    doc: PredictionsDocument, label: str | None, domain: Domain | None = None
) -> Markup:
    """Both predictors' mean predicted probability (x) against observed rate (y) per
    non-empty cell: filled markers the product, hollow ones the state-aware predictor."""
    return calibration_series_svg(_series(doc), label, domain, by_predictor=True)


def _style(series: Sequence[Series], by_predictor: bool) -> list[tuple[str, str, bool]]:
    """Each series' (colour, shape, hollow). By predictor: the colour key's shape, hollow for
    the state-aware predictor; otherwise a shape per series."""
    keys = list(dict.fromkeys(key for _, key, _ in series))
    out = []
    for i, (name, key, _) in enumerate(series):
        colour = COLOURS.get(key, OTHER_COLOUR)
        if by_predictor:
            out.append((colour, SHAPES[keys.index(key) % len(SHAPES)], name.endswith(HOLLOW)))
        else:
            out.append((colour, SHAPES[i % len(SHAPES)], False))
    return out


def calibration_series_svg(
    series: Sequence[Series],
    label: str | None,
    domain: Domain | None = None,
    by_predictor: bool = False,
    x_label: str | None = None,
    title: str = "Calibration: predicted probability vs observed outcome",
) -> Markup:
    """The calibration plot of any series: (legend label, colour key, calibration cells);
    the matrix report draws every cell's points of one model this way, the study both
    predictors of a slice (`x_label` then names them both). `by_predictor`: the series are
    pairs of predictors (labels ending `· product` / `· state-aware`)."""
    f = Frame(domain or series_domain(series))
    subtitle = "One point per non-empty cell; bars: 95% Wilson intervals (descriptive); n beside "
    subtitle += "each; " + ("whole axes." if domain == FULL else "axes zoomed to the cells.")
    if by_predictor:
        subtitle = "Both predictors (filled: product; hollow: state-aware), a point per "
        subtitle += "non-empty cell; bars: 95% Wilson intervals."
    x_label = x_label or "predicted probability" + (
        " (each predictor)" if by_predictor else " (product of primitive rates)"
    )
    parts = _frame(f, title, subtitle, label, (x_label, "observed rate"))
    entries = []
    points: list[tuple[float, float]] = []
    styles = _style(series, by_predictor)
    for i, ((name, key, cells), (colour, shape, hollow)) in enumerate(
        zip(series, styles, strict=True)
    ):
        entries.append(Entry(name, colour, shape, hollow))
        group = []
        for cell in _drawn(cells):
            predicted, observed = cell.mean_predicted or 0.0, cell.observed_rate or 0.0
            x = f.sx(predicted) + (i - (len(series) - 1) / 2) * 3  # overlapping series apart
            bar = {"stroke": colour, "stroke-width": 2}
            low, high = cell.wilson_low or 0.0, cell.wilson_high or 0.0  # drawn: never empty
            group.append(svg_line(x, f.sy(low), x, f.sy(high), **bar))
            for v in (low, high):
                group.append(svg_line(x - 4, f.sy(v), x + 4, f.sy(v), **bar))
            text = (
                f"{name}: bin [{cell.low:.1f}, {cell.high:.1f}), n = {cell.n}, "
                f"mean predicted {predicted:.3f}, observed {observed:.3f}, "
                f"Wilson [{low:.3f}, {high:.3f}]"
            )
            y = f.sy(observed)
            group.append(marker(shape, x, y, colour, text, "cell", hollow))
            points.append((x, y))
        parts.append(el("g", {"data-series": key, "data-predictor": _predictor(name)}, *group))
    counts = [f"n={c.n}" for _, _, cells in series for c in _drawn(cells)]
    parts += _n_labels(points, counts)
    return _svg(title, [*parts, *_legend(entries)])


def _predictor(name: str) -> str | None:
    """The predictor a series draws, from its label (None for other series)."""
    return next((p for p in PREDICTORS if name.endswith(f"· {p}")), None)


LABEL_H = 13.0
"""A label's height in px (10 px text: its box is 12.4 px high in DejaVu Sans)."""


def _label_width(text: str) -> float:
    return 7.0 * len(text)  # 10 px DejaVu Sans (the page's sans-serif): "n=4" is 21 px wide


def _n_labels(points: Sequence[tuple[float, float]], texts: Sequence[str]) -> list[Markup]:
    """Each point's "n=" label at the nearest spot (right, left, above or below, then
    farther) where its box overlaps no other label, no marker and stays inside the frame;
    points of several series often fall on the same spot. A label moved away from its point
    is tied to it by a thin line."""
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    markers = [(x - 6, y - 6, 12.0, 12.0) for x, y in points]
    placed: list[tuple[float, float, float, float]] = []
    out = []
    for (x, y), text in zip(points, texts, strict=True):
        w = _label_width(text)
        box = (x + 8, y - LABEL_H / 2, w, LABEL_H)
        for candidate in _spots(x, y, w):
            inside = candidate[0] >= LEFT + 1 and candidate[0] + w <= LEFT + plot_w - 1
            inside = inside and TOP + 1 <= candidate[1] <= TOP + plot_h - LABEL_H - 1
            padded = (candidate[0] - 2, candidate[1], candidate[2] + 4, candidate[3])  # a gap
            if inside and not any(_overlaps(padded, b) for b in (*placed, *markers)):
                box = candidate
                break
        placed.append(box)
        if abs(box[1] + LABEL_H / 2 - y) > LABEL_H / 2:  # moved up or down: a leader line
            end_x = box[0] if box[0] > x else box[0] + w
            end_y = box[1] + LABEL_H / 2
            out.append(svg_line(x, y, end_x, end_y, stroke="#999", **{"stroke-width": 0.6}))
        attrs = {"class": "n-label"}
        out.append(svg_text(box[0], box[1] + LABEL_H - 2, text, 10, attrs))
    return out


def _spots(x: float, y: float, w: float) -> Iterable[tuple[float, float, float, float]]:
    """Candidate label boxes around a point, nearest first."""
    for ring in range(12):
        dy = ring * LABEL_H
        for bx, by in (
            (x + 8, y - LABEL_H / 2 - dy),
            (x + 8, y - LABEL_H / 2 + dy),
            (x - 8 - w, y - LABEL_H / 2 - dy),
            (x - 8 - w, y - LABEL_H / 2 + dy),
        ):
            yield (bx, by, w, LABEL_H)
        for bx in (x + 8 + w + 4, x - 8 - 2 * w - 4):
            yield (bx, y - LABEL_H / 2 - dy, w, LABEL_H)


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def _cost_points(doc: PredictionsDocument) -> list[tuple[str, str, float, float]]:
    points: list[tuple[str, str, float, float]] = []
    for result in scored(doc):
        condition = result.frozen.profile.condition
        predicted = {p.task_id: p for p in result.predictions}
        for o in result.observations:
            p = predicted.get(o.task_id)
            if p is None or p.cost_ms is None or o.cost_ms is None:
                continue
            points.append((condition, o.task_id, p.cost_ms, o.cost_ms))
    return points


def cost_domain(docs: Iterable[PredictionsDocument]) -> Domain:
    """The cost plot's axes (one range for both, so that y = x is the diagonal): from 0, up
    to where the points are."""
    values = [v for doc in docs for p in _cost_points(doc) for v in (p[2], p[3])]
    both = span([0.0, *values], floor=0.0, min_width=1.0)
    return Domain(both, both)


def cost_svg(doc: PredictionsDocument, label: str | None, domain: Domain | None = None) -> Markup:
    """Each held-out task's predicted cost (x) against its observed cost (y), in ms."""
    title = "Cost: predicted vs observed time per held-out task"
    points = _cost_points(doc)
    f = Frame(domain or cost_domain([doc]))
    parts = _frame(
        f,
        title,
        "One point per held-out task: generation + execution wall time in ms; dashed: y = x.",
        label,
        ("predicted cost (ms): sum of primitive mean costs", "observed cost (ms)"),
    )
    conditions = list(dict.fromkeys(p[0] for p in points))
    entries = {
        c: Entry(c, COLOURS.get(c, OTHER_COLOUR), SHAPES[i % len(SHAPES)])
        for i, c in enumerate(conditions)
    }
    for condition, task, predicted_ms, observed_ms in points:
        e = entries[condition]
        text = f"{condition} {task}: predicted {predicted_ms:.1f} ms, observed {observed_ms:.1f} ms"
        x, y = f.sx(predicted_ms), f.sy(observed_ms)
        parts.append(marker(e.shape, x, y, e.colour, text, "task"))
    if not points:
        parts.append(svg_text(LEFT + 20, TOP + 30, "No held-out observation with both costs.", 12))
    return _svg(title, [*parts, *_legend(list(entries.values()))])


def plots(
    docs: Sequence[tuple[PredictionsDocument, str | None]],
) -> list[tuple[Markup, Markup]]:
    """Each document's (calibration, cost) plots under its label, on axes shared by all of
    them (one document: its own zoomed axes)."""
    calibration = calibration_domain(d for d, _ in docs)
    cost = cost_domain(d for d, _ in docs)
    return [(calibration_svg(d, lb, calibration), cost_svg(d, lb, cost)) for d, lb in docs]


FULL = Domain((0.0, 1.0), (0.0, 1.0))
"""Both axes whole: calibration panels meant to be compared at a glance."""


def calibration_panels_svg(
    panels: Sequence[tuple[str, Sequence[Series]]], label: str | None, columns: int = 2
) -> str:
    """Several calibration plots (`calibration_series_svg`, each on `FULL` axes: a title and
    its series) as one standalone SVG file, `columns` to a row: the validation report's
    figures (`pyapp.report.figures`)."""
    rows = math.ceil(len(panels) / columns)
    width, height = columns * W, rows * H
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" font-family="sans-serif">'
    ]
    for i, (title, series) in enumerate(panels):
        x, y = (i % columns) * W, (i // columns) * H
        svg = calibration_series_svg(series, label, FULL, False, "predicted probability", title)
        box = f'x="{x}" y="{y}" width="{W}" height="{H}" viewBox="0 0 {W} {H}"'
        parts.append(f"<svg {box}>{svg}</svg>")  # the plot's 100% width is its box's
    return "\n".join([*parts, "</svg>"]) + "\n"


StepsPoint = tuple[int, int, int, float, float | None]
"""Success by steps: (steps, n, successes, mean product forecast, mean state-aware forecast)."""


def steps_svg(points: Sequence[StepsPoint], label: str | None, title: str) -> Markup:
    """Observed success rate (95% Wilson bars) and both predictors' mean forecast against
    the number of steps (operations composed): the study's success-by-steps plot."""
    steps = [p[0] for p in points]
    f = Frame(Domain(span(steps, 0.0, math.inf, 2.0), (-0.04, 1.04)))
    parts = _frame(
        f,
        title,
        "Observed rate with its 95% Wilson interval (n beside each); both predictors' mean "
        "forecast over the same tasks.",
        label,
        ("steps (operations composed)", "success rate / mean forecast"),
    )
    entries = [
        Entry("observed rate", COLOURS["observed"], "circle"),
        Entry("product, mean forecast", COLOURS["product"], "square"),
        Entry("state-aware, mean forecast", COLOURS["state-aware"], "diamond"),
    ]
    observed: list[tuple[float, float]] = []
    for step, n, hits, product, aware in points:
        low, high = wilson_interval(hits, n)
        x, rate = f.sx(step), hits / n if n else 0.0
        bar = {"stroke": COLOURS["observed"], "stroke-width": 2}
        parts.append(svg_line(x, f.sy(low), x, f.sy(high), **bar))
        text = f"{step} steps: {hits}/{n} right ({rate:.3f}), Wilson [{low:.3f}, {high:.3f}]"
        parts.append(marker("circle", x, f.sy(rate), COLOURS["observed"], text, "cell"))
        observed.append((x, f.sy(rate)))
        forecasts = [(product, entries[1])] + ([] if aware is None else [(aware, entries[2])])
        for value, entry in forecasts:
            words = f"{step} steps: {entry.label} {value:.3f}"
            parts.append(marker(entry.shape, x + 9, f.sy(value), entry.colour, words, "task"))
    parts += _n_labels(observed, [f"n={p[1]}" for p in points])
    shown = entries[: 2 if all(p[4] is None for p in points) else 3]
    return _svg(title, [*parts, *_legend(shown, identity=False)])
