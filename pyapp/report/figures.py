"""The validation report's figures (docs/validation/*.svg, written by bench/validation.py):
one structure's calibration curves, drawn by the one calibration plot of `plots`.

`calibration_svg` is a pure function of a `StructureResult`: for each condition and target
a panel, each predictor one series of its calibration cells (observed rate against mean
predicted probability in 10 bins, Wilson bars, n beside each point), on whole axes so the
panels compare at a glance; the colours are `plots.COLOURS`, as on the page.
"""

from __future__ import annotations

from pyapp.report.plots import Series, calibration_panels_svg
from pyapp.synthetic import StructureResult

PANELS = (
    ("model-only", "final"),
    ("model-program", "final"),
    ("controlled-chain", "final"),
    ("controlled-chain", "all_steps"),
)
"""The panels of a structure's figure: (condition, target)."""
LABEL = "synthetic validation model — not model evidence"


def calibration_svg(result: StructureResult) -> str:
    """A structure's calibration curves: a panel per condition and target, a series per
    predictor (product, product-shrunk, state-aware), as one SVG file."""
    panels: list[tuple[str, list[Series]]] = []
    for condition, target in PANELS:
        cells = [c for c in result.cells if c.condition == condition and c.target == target]
        title = (
            f"{result.spec.structure} ({result.preset}, {len(result.seeds)} seeds): "
            f"{condition}, {target.replace('_', '-')}"
        )
        panels.append((title, [(c.predictor, c.predictor, c.curve) for c in cells]))
    return calibration_panels_svg(panels, LABEL)
