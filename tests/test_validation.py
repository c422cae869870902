"""The validation report's machinery on a tiny run (the full run is bench/validation.py)."""

import xml.etree.ElementTree as ET

import pytest
from asyncrun import in_thread

from pyapp.synthetic.report import calibration_svg, checks, render_markdown
from pyapp.synthetic.spec import SyntheticSpec
from pyapp.synthetic.validation import exact_wilson_coverage, validate_structure
from pyapp.tasks.taskset import TaskParams


def test_exact_wilson_coverage_at_six_trials():
    # k = 5 or 6 of 6 cover 0.95; k <= 4 does not: P = 0.95**6 + 6 * 0.95**5 * 0.05
    assert exact_wilson_coverage(0.95, 6) == pytest.approx(0.95**6 + 6 * 0.95**5 * 0.05)
    assert exact_wilson_coverage(0.5, 0) == 1.0


def test_a_tiny_validation_run_renders_its_report(tmp_path):
    def run():
        return validate_structure(
            SyntheticSpec("cancelling"), "design", TaskParams(), range(1, 3), 1, 4, lambda: 0.0
        )

    result = in_thread(run)
    keys = {(c.condition, c.predictor, c.target) for c in result.cells}
    assert ("controlled-chain", "state-aware", "all_steps") in keys
    assert ("model-only", "product", "final") in keys
    chain = next(c for c in result.cells if c.condition == "controlled-chain" and c.mc_n)
    assert chain.expected_brier == pytest.approx(chain.miscalibration + chain.irreducible)
    assert {c.repetitions for c in result.coverage} == {2}
    ET.fromstring(calibration_svg(result))  # well-formed
    text = render_markdown([result], "test", ["x.svg"], "<!-- notes -->\nkept")
    assert text.index("Expected outcomes") < text.index("Checks of the expectations")
    assert "never model evidence" in text and text.rstrip().endswith("kept")
    assert checks([result])
