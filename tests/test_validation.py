"""The validation report's machinery on tiny runs (the full run is bench/validation.py):
checks that can fail, intervals over seeds, power, the same-prior product, and a committed
docs/validation.md whose structure a quick regeneration reproduces."""

import importlib.util
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from asyncrun import in_thread

from pyapp.predict.state_aware import FEATURES, fit_logistic
from pyapp.report.figures import calibration_svg
from pyapp.report.plots import COLOURS
from pyapp.synthetic.checks import (
    MARGIN_P,
    all_checks,
    bootstrap_interval,
    calibration_checks,
    make_check,
    power_of,
    seeds_needed,
)
from pyapp.synthetic.language import parse_spec
from pyapp.synthetic.report import findings, render_markdown, report_skeleton
from pyapp.synthetic.validation import (
    _moment,
    exact_wilson_coverage,
    shrunk_rate,
    validate_structure,
)
from pyapp.tasks.taskset import TaskParams

ROOT = Path(__file__).resolve().parents[1]


def tiny(model, seeds=3, mc_seeds=1, draws=4):
    def run():
        return validate_structure(
            parse_spec(model),
            "design",
            TaskParams(),
            range(1, seeds + 1),
            mc_seeds,
            draws,
            lambda: 0.0,
        )

    return in_thread(run)


def test_exact_wilson_coverage_at_six_trials():
    # k = 5 or 6 of 6 cover 0.95; k <= 4 does not: P = 0.95**6 + 6 * 0.95**5 * 0.05
    assert exact_wilson_coverage(0.95, 6) == pytest.approx(0.95**6 + 6 * 0.95**5 * 0.05)
    assert exact_wilson_coverage(0.5, 0) == 1.0


def test_plug_in_moments_and_the_same_prior_rate():
    assert _moment(6, 0.9, 1) == pytest.approx(0.9)
    assert _moment(6, 0.9, 2) == pytest.approx(0.81 + 0.9 * 0.1 / 6)  # E p̂² = p² + p(1−p)/n
    assert _moment(6, 0.9, 4) > 0.9**4  # the plug-in product's upward bias
    rows = [((1.0,) + (0.0,) * (len(FEATURES) - 1), True)] * 6
    assert shrunk_rate(6, 6) == pytest.approx(1 / (1 + math.exp(-fit_logistic(rows)[0])))
    assert 0.5 < shrunk_rate(6, 6) < 1.0 and shrunk_rate(6, 3) == pytest.approx(0.5)


def test_a_tiny_validation_run_renders_its_report():
    result = tiny("cancelling", seeds=2)
    keys = {(c.condition, c.predictor, c.target) for c in result.cells}
    assert ("controlled-chain", "state-aware", "all_steps") in keys
    assert ("model-only", "product-shrunk", "final") in keys
    chain = next(c for c in result.cells if c.condition == "controlled-chain" and c.mc_n)
    assert chain.expected_brier == pytest.approx(chain.miscalibration + chain.irreducible)
    assert {c.repetitions for c in result.coverage} == {2}
    ET.fromstring(calibration_svg(result))  # well-formed
    text = render_markdown([result], "test", {"seeds": 2}, ["x.svg"])
    assert text.index("Expected outcomes") < text.index("Checks of the expectations")
    assert text.index("Margins and effect sizes") < text.index("## Findings")
    assert "never model evidence" in text and "| seeds | 2 |" in text
    checks = all_checks([result])
    assert any(c.statistic == "controlled-chain: final rate − all-step rate" for c in checks)


def test_the_validation_figure_is_the_pages_calibration_plot():
    """Each drawing once (issue 40): the validation figures are drawn by
    `pyapp.report.plots.calibration_series_svg`, the page's and the report's calibration
    plot — its cells, identity line and colours — a panel per condition and target."""
    svg = calibration_svg(tiny("cancelling", seeds=2))
    root = ET.fromstring(svg)
    assert (
        root.tag.endswith("svg") and svg.count("<svg") == 1 + 2 * 4
    )  # the file, each panel in its box
    assert svg.count('class="identity"') == 4 and 'class="cell ' in svg
    for predictor in ("product", "product-shrunk", "state-aware"):
        assert f'data-series="{predictor}"' in svg
        assert f'stroke="{COLOURS[predictor]}"' in svg


def test_no_svg_is_drawn_outside_the_plots() -> None:
    """Only `pyapp/report/plots.py` draws SVG shapes (the skill picture uses its parts)."""
    drawing = re.compile(r"<(circle|line|rect|polygon|path)\b|el\(\s*\"(circle|line|polygon)\"")
    found = [
        p.relative_to(ROOT).as_posix()
        for p in sorted((ROOT / "pyapp").rglob("*.py"))
        if drawing.search(p.read_text(encoding="utf-8"))
    ]
    assert found == ["pyapp/report/plots.py"]


def test_direction_and_equivalence_verdicts_need_the_interval():
    r = tiny("independent", seeds=2)
    clear = make_check(r, "s", "direction", "up", 0.05, 0.05, [0.04, 0.06, 0.05, 0.07, 0.03])
    assert clear.holds and clear.low > 0
    noisy = make_check(r, "s", "direction", "up", 0.05, 0.05, [0.4, -0.3, 0.2, -0.25, 0.1])
    assert noisy.estimate > 0 and not noisy.holds  # a positive mean is not enough
    # "calibrated" is equivalence: a wide interval around 0 is no evidence of calibration
    # (the old check called |gap| < 2 SE calibrated)
    wide = make_check(r, "s", "equivalence", "calibrated", MARGIN_P, 0.0, [0.2, -0.2, 0.1, -0.1])
    assert abs(wide.estimate) < 0.01 and not wide.holds
    tight = make_check(r, "s", "equivalence", "calibrated", MARGIN_P, 0.0, [0.01, -0.01] * 20)
    assert tight.holds and tight.power > 0.8
    assert bootstrap_interval([0.1, 0.2, 0.3]) == bootstrap_interval([0.1, 0.2, 0.3])


def test_power_grows_with_seeds_and_names_the_seeds_needed():
    assert power_of("direction", 0.042, None, 0.3, 400) > power_of(
        "direction", 0.042, None, 0.3, 40
    )
    n = seeds_needed("direction", 0.042, None, 0.3)
    assert (
        power_of("direction", 0.042, None, 0.3, n)
        >= 0.8
        > power_of("direction", 0.042, None, 0.3, n - 1)
    )
    assert seeds_needed("equivalence", MARGIN_P, 0.05, 0.3) is None  # expected outside margin


def test_a_biased_product_fails_the_calibration_check():
    # Fault injection: the same run, every product prediction raised by 0.2.
    r = tiny("independent", seeds=6, mc_seeds=0)
    honest = {c.statistic: c for c in calibration_checks(r)}
    biased_points = {
        key: [replace(p, predicted=min(1.0, p.predicted + 0.2)) for p in points]
        if key[3] == "product"
        else points
        for key, points in r.points.items()
    }
    biased = {c.statistic: c for c in calibration_checks(replace(r, points=biased_points))}
    statistic = "model-only (final): product mean p − observed"
    assert biased[statistic].estimate > honest[statistic].estimate + 0.1
    assert biased[statistic].holds is False  # equivalence within ±0.03 cannot hold


def test_findings_are_templated_from_the_numbers():
    r = tiny("depth", seeds=3)
    checks = all_checks([r])
    lines = findings(checks)
    depth = next(c for c in checks if c.statistic.startswith("model-only (final): product mean"))
    assert any(f"by {abs(depth.estimate):.3f}" in line for line in lines)
    moved = [replace(c, estimate=c.estimate - 0.5) if c is depth else c for c in checks]
    assert findings(moved) != lines


def test_the_committed_report_has_the_structure_of_a_quick_regeneration(tmp_path):
    path = ROOT / "bench" / "validation.py"
    spec = importlib.util.spec_from_file_location("bench_validation", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert in_thread(module.main, ["--quick", "--out", str(tmp_path)]) == 0
    fresh = report_skeleton((tmp_path / "validation.md").read_text(encoding="utf-8"))
    committed = report_skeleton((ROOT / "docs" / "validation.md").read_text(encoding="utf-8"))
    assert committed == fresh
    figures = sorted(p.name for p in (tmp_path / "validation").glob("*.svg"))
    assert figures == sorted(p.name for p in (ROOT / "docs" / "validation").glob("*.svg"))
