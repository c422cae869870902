"""What step 4 leads with (issue 41): the run's verdict from the study's flag function and
answer templates (`pyapp.browser.verdict`), and its one picture (`pyapp.report.skill_plot`)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from asyncrun import in_thread

from pyapp.browser import run_plots, run_verdict
from pyapp.cli.main import main
from pyapp.predict import answer, read_predictions, run_figures

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "tests" / "fixtures" / "runs" / "size-dependent"


def test_a_run_whose_outcomes_are_all_zero_says_so_in_its_first_line(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    model = "independent:p_add=1,p_sub=1,p_mul=1"  # every step fails
    argv = ["simulate", "--model", model, "--seeds", "3..3", "--out", str(out)]
    assert in_thread(main, argv) == 0  # asyncio inside: not in the browser tests' loop
    doc = read_predictions(json.loads((out / "seed-3" / "predictions.json").read_text()))
    drawn = run_plots(doc, doc.evidence)
    assert drawn is not None and drawn.verdict is not None
    verdict = drawn.verdict
    assert verdict.headline.startswith("DEGENERATE: all 14 held-out outcomes are 0")
    assert {r.product for r in verdict.rows} == {"cannot say"}
    assert all("constant" in (r.product_reason or "") for r in verdict.rows)
    assert verdict.flags  # every slice's flags, in words
    # the picture says "undefined" in words where skill against climatology is
    assert 'class="undefined"' in verdict.skill_svg


def test_the_verdict_rows_are_the_answer_templates_and_the_picture_draws_both_references() -> None:
    doc = read_predictions(json.loads((RUN / "predictions.json").read_text()))
    figures = run_figures(doc)
    verdict = run_verdict(figures, "synthetic validation model — not model evidence")
    assert verdict is not None
    assert not verdict.headline.startswith("DEGENERATE")
    for fig, row in zip(figures, verdict.rows, strict=True):
        product, aware = answer(fig, "product"), answer(fig, "state-aware")
        assert product is not None and aware is not None
        assert (row.condition, row.product, row.state_aware) == (
            fig.condition,
            product.verdict,
            aware.verdict,
        )
        assert f"{fig.condition}: product {product.verdict}" in verdict.headline
    svg = ET.fromstring(verdict.skill_svg)
    groups = svg.findall("g")
    # per condition: each predictor against climatology and against the frozen reference
    assert len(groups) == 4 * len(figures)
    verdicts = [t.text for t in svg.iter("text") if t.get("class") == "verdict"]
    assert len(verdicts) == 2 * len(figures)  # the climatology rows carry the verdict
    assert "Synthetic validation model — not model evidence." in verdict.skill_svg


def test_no_verdict_before_anything_is_scored() -> None:
    assert run_verdict([], None) is None
