"""The validation report's figures: one structure's calibration curves as an SVG.

`calibration_svg` is a pure function of a `StructureResult`: observed rate against predicted
probability in 10 bins (Wilson bars, area ∝ n) for each predictor, one panel per condition
and target.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pyapp.predict.metrics import CalibrationCell
from pyapp.synthetic.validation import Cell, StructureResult

_COLOURS = {"product": "#1f5fa8", "product-shrunk": "#2a9d55", "state-aware": "#d06000"}
_PANELS = (
    ("model-only", "final"),
    ("model-program", "final"),
    ("controlled-chain", "final"),
    ("controlled-chain", "all_steps"),
)


def _panel(x0: float, cells: Sequence[Cell], title: str) -> list[str]:
    size, top = 200.0, 40.0
    out = [
        f'<rect x="{x0}" y="{top}" width="{size}" height="{size}" fill="none" stroke="#999"/>',
        f'<line x1="{x0}" y1="{top + size}" x2="{x0 + size}" y2="{top}" stroke="#bbb" '
        'stroke-dasharray="4 3"/>',
        f'<text x="{x0}" y="{top - 8}" font-size="11">{title}</text>',
        f'<text x="{x0 + size / 2}" y="{top + size + 16}" font-size="10" '
        'text-anchor="middle">predicted</text>',
    ]
    for value in (0.0, 0.5, 1.0):
        out += [
            f'<text x="{x0 + value * size}" y="{top + size + 28}" font-size="9" '
            f'text-anchor="middle" fill="#666">{value:g}</text>',
            f'<text x="{x0 - 3}" y="{top + (1 - value) * size + 3}" font-size="9" '
            f'text-anchor="end" fill="#666">{value:g}</text>',
        ]
    for cell in cells:
        colour = _COLOURS[cell.predictor]
        for b in cell.curve:
            out += _point(x0, top, size, b, colour, cell.n)
    return out


def _point(
    x0: float, top: float, size: float, b: CalibrationCell, colour: str, n: int
) -> list[str]:
    if b.n == 0 or b.mean_predicted is None or b.observed_rate is None:
        return []
    assert b.wilson_low is not None and b.wilson_high is not None  # a bin with predictions
    x = x0 + b.mean_predicted * size
    y = top + (1 - b.observed_rate) * size
    r = 2 + 6 * math.sqrt(b.n / max(n, 1))
    low, high = top + (1 - b.wilson_high) * size, top + (1 - b.wilson_low) * size
    return [
        f'<line x1="{x:.1f}" y1="{low:.1f}" x2="{x:.1f}" y2="{high:.1f}" stroke="{colour}" '
        'stroke-opacity="0.5"/>',
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" fill="{colour}" fill-opacity="0.6"/>',
    ]


def calibration_svg(result: StructureResult) -> str:
    """Observed rate vs predicted probability (10 bins, Wilson bars, area ∝ n) per panel."""
    width = 40 + len(_PANELS) * 230
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="310" '
        f'font-family="sans-serif">',
        f'<text x="20" y="16" font-size="12" font-weight="bold">{result.spec.structure} '
        f"({result.preset}, {len(result.seeds)} seeds) — synthetic, not model evidence</text>",
        '<text x="20" y="302" font-size="10"><tspan fill="#1f5fa8">● product</tspan>  '
        '<tspan fill="#2a9d55">● product-shrunk</tspan>  '
        '<tspan fill="#d06000">● state-aware</tspan>  y: observed rate; dashed: '
        "perfect calibration</text>",
    ]
    for i, (condition, target) in enumerate(_PANELS):
        cells = [c for c in result.cells if c.condition == condition and c.target == target]
        parts += _panel(30 + i * 230, cells, f"{condition}, {target.replace('_', '-')}")
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
